"""Formulations of the equations of motion, selectable by name.

Each is a small namespace with the same functions:
    accelerations(model, q, qd, t, u, baumgarte=None) -> Dynamics
    initial_state(model) -> State
    project(model, y, t, tol) -> y on the constraint manifold
    absolute(model, q, qd) -> (x, xd) absolute body coordinates
"""
from types import SimpleNamespace

from ..errors import InputError
from . import newton_euler as _ne

FORMULATIONS = ("newton_euler",)


def _ne_initial(model):
    from ..integrate import State

    return State(model.t0, model.x0.copy(), model.xd0.copy(), 0.0, _ne.COORDINATES)


def _ne_project(model, y, t, tol):
    from ..integrate import project_absolute

    return project_absolute(model, y, t, tol)


_REGISTRY = {
    "newton_euler": SimpleNamespace(
        name="newton_euler", coordinates=_ne.coordinates, accelerations=_ne.accelerations,
        initial_state=_ne_initial, project=_ne_project, absolute=lambda model, q, qd: (q, qd),
        lam=lambda model, dyn: dyn.lam),
}


def get_formulation(name):
    """The formulation namespace called `name`; InputError lists the valid names."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown formulation {name!r}; formulations are "
                         f"{list(FORMULATIONS)}") from None
