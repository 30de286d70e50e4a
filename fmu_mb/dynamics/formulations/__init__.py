"""Formulations of the equations of motion, selectable by name.

Each is a small namespace with the same functions:
    accelerations(model, q, qd, t, u, baumgarte=None) -> Dynamics
    initial_state(model) -> State
    project(model, y, t, tol) -> y on the constraint manifold
    absolute(model, q, qd) -> (x, xd) absolute body coordinates
    lam(model, dyn) -> multipliers of every Newton-Euler constraint row
    native_advance(model, state, t_end, u, settings) -> (q, qd, h), or None; only
        formulations that integrate in compiled code have it (others: None attribute)
    native_stepper(model, settings, t, y, t_end, h, u) -> a stepper for the contact event
        loop (integrate._Stepper's interface), or None (likewise)
    supports(model) -> bool, or None for the formulations that run every model (recursive:
        trees, closed loops and contacts, no drives; fmu_mb.dynamics.kernel.supported says
        why not)
and tmt and lagrange also (for contacts, fmu_mb.dynamics.impact_minimal)
    equations(model, q, qd, t, u) -> Mbar, fbar, x, xd, Tq, g   (Mbar qdd = fbar + rows)
    kinematics(model, q, qd) -> x, xd, Tq, g

newton_euler works in absolute coordinates x; tmt, lagrange and recursive in the tree joint
coordinates (fmu_mb.mechanics.tree.tree_coordinates), tmt and lagrange with cut joints and drives as
constraint rows; recursive (the articulated-body algorithm in C, with the cut rows closed in C
and compiled steps between contact events) runs every model without drives.
"""
from types import SimpleNamespace

from ...errors import InputError
from ..state import State
from . import lagrange as _lagrange
from . import newton_euler as _ne
from . import recursive as _recursive
from . import tmt as _tmt

FORMULATIONS = ("newton_euler", "tmt", "lagrange", "recursive")


def _ne_initial(model):
    return State(model.t0, model.x0.copy(), model.xd0.copy(), 0.0, _ne.COORDINATES)


def _ne_project(model, y, t, tol):
    return _ne.project_absolute(model, y, t, tol)


_REGISTRY = {
    "newton_euler": SimpleNamespace(
        name="newton_euler", coordinates=_ne.coordinates, accelerations=_ne.accelerations,
        initial_state=_ne_initial, project=_ne_project, absolute=lambda model, q, qd: (q, qd),
        lam=lambda model, dyn: dyn.lam, native_advance=None, native_stepper=None,
        supports=None),
    **{mod.__name__.rsplit(".", 1)[1]: SimpleNamespace(
        name=mod.__name__.rsplit(".", 1)[1], coordinates=mod.coordinates,
        accelerations=mod.accelerations, initial_state=mod.initial_state,
        project=mod.project, absolute=mod.absolute, lam=mod.lam,
        native_advance=getattr(mod, "native_advance", None),
        native_stepper=getattr(mod, "native_stepper", None),
        supports=getattr(mod, "supports", None),
        equations=getattr(mod, "reduced_equations", None),
        kinematics=getattr(mod, "kinematics", None))
        for mod in (_tmt, _lagrange, _recursive)},
}


def get_formulation(name):
    """The formulation namespace called `name`; InputError lists the valid names."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown formulation {name!r}; formulations are "
                         f"{list(FORMULATIONS)}") from None
