"""A work budget for one call of the Python integrators (an FMU's doStep or initialisation).

Counted work, not wall time, so that results stay deterministic: every right-hand side of an
explicit or scipy integrator (Radau's finite-difference Jacobians included), every event
function evaluation of the contact loop, every projection and every Newton evaluation of the
implicit methods charges `unit` (an estimate of its cost in milliseconds of a 2020s x86-64
core, from the model's size). Past the limit the call raises WorkBudgetError, whose message
says which setting or input is the likely cause; the caller's state is untouched (advance()
is a pure function).

    with work_budget(limit=1000.0, unit=0.6, settings=settings, inputs=u, model=model):
        new = advance(model, state, t_end, u, settings)

Outside a `with work_budget(...)` block nothing is counted (simulate() and advance() in a
user's process run unbounded, as before).
"""
import contextlib
import threading

import numpy as np

from ..errors import IntegrationError

_LOCAL = threading.local()


class WorkBudgetError(IntegrationError):
    """The work budget of one call was used up (see fmu_mb.dynamics.work)."""


def unit_cost(model):
    """Estimated cost [ms] of one right-hand side of the Python formulations of `model`: a
    fixed Python overhead and a part growing with the model's absolute coordinates."""
    bodies = len(model.bodies)
    return 0.5 + (0.06 if model.spatial else 0.03) * bodies * (7 if model.spatial else 3)


class _Budget:
    def __init__(self, limit, unit, settings, inputs, model, span):
        self.limit, self.unit, self.spent = float(limit), float(unit), 0.0
        self.settings, self.inputs, self.model, self.span = settings, inputs, model, span

    def cause(self):
        s, m = self.settings, self.model
        if s is not None and s.method in ("rk4", "euler", "generalized_alpha", "trapezoidal"):
            return (f"solver.method = '{s.method}' with solver.step = {float(s.step):.6g} s "
                    f"needs too many steps for the interval: solver.step too small or the "
                    f"communication step too long")
        if s is not None and (s.rtol < 1e-12 or s.atol < 1e-14):
            return (f"the tolerances solver.rtol = {float(s.rtol):.3g} and solver.atol = "
                    f"{float(s.atol):.3g} are too small; raise them")
        long = f"the communication step of {self.span:.6g} s too long, " if self.span else ""
        text = (f"the motion needs very short steps: {long}an input too large, a stiffness "
                f"or damping too high or a mass too small")
        u = np.asarray(self.inputs if self.inputs is not None else [], dtype=float).ravel()
        if m is not None and u.size and m.inputs:
            k = int(np.argmax(np.abs(u)))
            text += f" (the largest input is '{m.inputs[k].name}' = {float(u[k]):.6g})"
        return text + "; check them, or take shorter communication steps"


def charge(count=1):
    """Charge `count` evaluations to the current budget, if any; WorkBudgetError past it."""
    b = getattr(_LOCAL, "budget", None)
    if b is None:
        return
    b.spent += b.unit * count
    if b.spent > b.limit:
        _LOCAL.budget = None             # the error's own clean-up charges nothing
        raise WorkBudgetError(f"the work budget of one call (about {b.limit / 1000:.3g} s of "
                              f"computing, {int(b.spent / b.unit)} evaluations) was used up: "
                              f"{b.cause()}")


@contextlib.contextmanager
def work_budget(limit, unit, settings=None, inputs=None, model=None, span=None):
    """Count the work of the Python integrators in this thread within the block (limit and
    unit in the same units, e.g. ms; settings, inputs, model and the interval's length `span`
    [s] for the message); nested blocks: the inner one counts."""
    saved = getattr(_LOCAL, "budget", None)
    _LOCAL.budget = _Budget(limit, unit, settings, inputs, model, span)
    try:
        yield _LOCAL.budget
    finally:
        _LOCAL.budget = saved
