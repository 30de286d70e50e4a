"""Time integration with drift control: `advance(model, state, t_end, u, settings)`.

The index-1 form (seed 000 eq. 12) is an ODE in y = (x, xd). Methods:

- "rk4": classical Runge-Kutta, fixed step (the interval is split into equal steps of at
  most `settings.step`, so any communication step works);
- "dopri5" (Dormand-Prince 5(4)) and "dop853" (8(5,3)): adaptive, error-controlled, with
  dense output (scipy's RK45 and DOP853 steppers);
- "radau": implicit Radau IIA of order 5 for stiff models (scipy's Radau).

Drift control (seed 000 sec. 1.5 shows the drift of the index-reduced DAE):
"projection" (default) projects x onto Phi(x, t) = 0 by Newton with minimum M-norm steps and
then xd onto D xd = -Phi_t after every step; "baumgarte" adds -2 alpha Phi' - beta^2 Phi to
the acceleration constraint; "none" integrates the raw index-1 ODE.

Inputs u are held constant over the call (zero-order hold, as in FMI co-simulation).
`advance` is a pure function: it returns a new State and never changes its arguments, so a
failed call leaves the caller's state intact.
"""
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.integrate import DOP853, RK45, Radau

from . import constraints
from .errors import DriftError, InputError, IntegrationError
from .formulations import get_formulation
from .linalg import min_norm_correction

METHODS = ("rk4", "dopri5", "dop853", "radau")
STABILIZATIONS = ("projection", "baumgarte", "none")
_SCIPY = {"dopri5": RK45, "dop853": DOP853, "radau": Radau}


@dataclass(frozen=True)
class Settings:
    """Solver settings.

    method : one of METHODS; formulation : "newton_euler" (more with the minimal-coordinate
    formulations); step : fixed step of rk4 [s]; rtol, atol : tolerances of the adaptive
    methods; max_step : largest adaptive step [s]; stabilization : one of STABILIZATIONS;
    baumgarte : (alpha, beta) [1/s]; projection_tol : target |Phi| after projection [m, rad].
    """

    method: str = "dop853"
    formulation: str = "newton_euler"
    step: float = 1e-3
    rtol: float = 1e-9
    atol: float = 1e-11
    max_step: float = math.inf
    stabilization: str = "projection"
    baumgarte: tuple = (10.0, 10.0)
    projection_tol: float = 1e-13

    def __post_init__(self):
        _choice("method", self.method, METHODS)
        _choice("stabilization", self.stabilization, STABILIZATIONS)
        get_formulation(self.formulation)
        for name in ("step", "rtol", "atol", "max_step", "projection_tol"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v > 0 and not math.isnan(v)):
                raise InputError(f"solver setting '{name}' must be a number > 0, received {v!r}")


def _choice(name, value, valid):
    if value not in valid:
        raise InputError(f"solver setting '{name}': unknown value {value!r}; valid values are "
                         f"{list(valid)}")


@dataclass(frozen=True, eq=False)
class State:
    """Time t [s], coordinates q and rates qd of the formulation's coordinate set, and the
    step-size hint h [s] the adaptive methods continue with (part of the state so that a saved
    and restored state continues bit-identically). Arrays are read-only."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    h: float = 0.0
    coords: str = "absolute"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        for a in (self.q, self.qd):
            a.setflags(write=False)

    def to_dict(self):
        """A JSON-able dict that restores exactly (floats as hex strings)."""
        return {"t": self.t.hex(), "q": [v.hex() for v in self.q.tolist()],
                "qd": [v.hex() for v in self.qd.tolist()], "h": float(self.h).hex(),
                "coords": self.coords, "extra": dict(self.extra)}

    @classmethod
    def from_dict(cls, d):
        return cls(float.fromhex(d["t"]), np.array([float.fromhex(v) for v in d["q"]]),
                   np.array([float.fromhex(v) for v in d["qd"]]), float.fromhex(d["h"]),
                   d["coords"], dict(d.get("extra", {})))


def initial_state(model, settings=None):
    """The model's assembled initial state in the coordinates of settings.formulation."""
    settings = settings or Settings()
    form = get_formulation(settings.formulation)
    return form.initial_state(model)


def advance(model, state, t_end, u=None, settings=None):
    """Integrate from state.t to t_end with inputs u held constant; return the new State.

    Raises InputError (bad t_end or u), IntegrationError (step failure, non-finite state),
    DriftError (projection cannot restore the constraints, e.g. a lock-up).
    """
    settings = settings or Settings()
    uvec = model.input_vector(u)
    t0 = state.t
    if not isinstance(t_end, (int, float)) or not math.isfinite(t_end):
        raise InputError(f"advance: t_end must be a finite number, received {t_end!r}")
    if t_end < t0:
        raise InputError(f"advance: t_end = {t_end!r} is before the current time {t0!r}; "
                         f"expected t_end >= t")
    if not (np.all(np.isfinite(state.q)) and np.all(np.isfinite(state.qd))):
        raise InputError(f"advance: the state at t = {t0!r} holds non-finite coordinates; "
                         f"expected finite q and qd")
    if t_end == t0:
        return state
    form = get_formulation(settings.formulation)
    n = state.q.shape[0]
    baum = settings.baumgarte if settings.stabilization == "baumgarte" else None

    def rhs(t, y):
        qdd = form.accelerations(model, y[:n], y[n:], t, uvec, baumgarte=baum).qdd
        return np.concatenate([y[n:], qdd])

    project = settings.stabilization == "projection"
    y = np.concatenate([state.q, state.qd])
    if settings.method == "rk4":
        y, h = _rk4(rhs, t0, y, t_end, settings.step, model, form, project, settings)
    else:
        y, h = _adaptive(rhs, t0, y, t_end, state.h, model, form, project, settings)
    return replace(state, t=float(t_end), q=y[:n].copy(), qd=y[n:].copy(), h=float(h))


def _check(y, t, model):
    if not np.all(np.isfinite(y)):
        raise IntegrationError(f"model '{model.name}': the state became non-finite at "
                               f"t = {t:.9g} s (NaN or infinity); the step was rejected")


def _rk4(rhs, t, y, t_end, step, model, form, project, settings):
    nsteps = max(1, math.ceil((t_end - t) / step - 1e-9))
    dt = (t_end - t) / nsteps
    for k in range(nsteps):
        tk = t + k * dt
        k1 = rhs(tk, y)
        k2 = rhs(tk + dt / 2, y + dt / 2 * k1)
        k3 = rhs(tk + dt / 2, y + dt / 2 * k2)
        k4 = rhs(tk + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        tn = t_end if k == nsteps - 1 else t + (k + 1) * dt
        _check(y, tn, model)
        if project:
            y = form.project(model, y, tn, settings.projection_tol)
    return y, dt


def _adaptive(rhs, t, y, t_end, h, model, form, project, settings):
    cls = _SCIPY[settings.method]
    first = min(h, t_end - t) if h > 0 else None
    try:
        solver = cls(rhs, t, y, t_end, rtol=settings.rtol, atol=settings.atol,
                     max_step=settings.max_step, first_step=first)
    except ValueError as exc:
        raise IntegrationError(f"model '{model.name}': cannot start the integrator at "
                               f"t = {t:.9g} s: {exc}") from None
    while solver.status == "running":
        msg = solver.step()
        if solver.status == "failed":
            raise IntegrationError(f"model '{model.name}': the {settings.method} integrator "
                                   f"failed at t = {solver.t:.9g} s: {msg}")
        _check(solver.y, solver.t, model)
        if project:
            yp = form.project(model, solver.y, solver.t, settings.projection_tol)
            if not np.array_equal(yp, solver.y):
                solver.y = yp
                solver.f = rhs(solver.t, yp)
    return solver.y, solver.h_abs


#: largest relative residual a stalled position projection may end with (singular poses)
PROJECTION_ACCEPT = 1e-10


def project_absolute(model, y, t, tol):
    """Project y = (x, xd) onto Phi(x, t) = 0 and D xd = -Phi_t (minimum M-norm changes)."""
    C = model.compiled
    if C.n_rows == 0:
        return y
    n = 3 * C.nb
    x, xd = y[:n].copy(), y[n:]
    Minv = C.inv_mass_diag
    zero = np.zeros(n)
    scale = 1.0 + np.abs(x).max()
    prev = np.inf
    for it in range(12):
        phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
        err = np.abs(phi).max()
        if err <= tol * scale:
            break
        # near a singular configuration Newton stalls at the conditioning floor: accept a
        # stalled residual that is still tiny, fail on one that is not (a lock-up)
        stalled = it >= 2 and err > 0.5 * prev
        if (stalled or it == 11) and err <= PROJECTION_ACCEPT * scale:
            break
        if stalled or it == 11 or not np.isfinite(err):
            raise DriftError(f"model '{model.name}': cannot restore the constraints at "
                             f"t = {t:.9g} s (residual {err:.3g}); the mechanism may have "
                             f"locked up or left its assembly branch")
        prev = err
        x -= min_norm_correction(Minv, D, phi)
    if it:
        phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
    xd = xd - min_norm_correction(Minv, D, D @ xd + phi_t)
    return np.concatenate([x, xd])
