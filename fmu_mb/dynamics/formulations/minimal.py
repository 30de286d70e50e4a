"""Minimal-order equations for closed loops by coordinate partitioning (seed 001: a mechanism
reduced to its f true degrees of freedom, M(q) q'' + b = Q), planar and spatial.

The state is tmt's (all tree joint coordinates q and rates qd, consistent with the rows), but
only the f = n - rank(Dq) independent coordinates q_i are integrated. Dq is the Jacobian of
tmt's rows (cut joints, drives, and for spatial models the Euler-parameter normalisations).
With the dependent coordinates q_d (the best-conditioned columns of Dq, chosen by QR with
column pivoting at the current state):

    positions:      phi(q_i, q_d, t) = 0 solved for q_d by Newton at every evaluation
    velocities:     Dd qd_d = -(Di qd_i + phi_t)
    accelerations:  qdd = R qdd_i + s,  R = [I; -Dd^-1 Di],  s = [0; Dd^-1 b]  (Dq qdd = b)
                    (R' Mbar R) qdd_i = R' (fbar - Mbar s)        (Mbar, fbar: tmt's)

so R' Mbar R is the f x f mass matrix of the minimal-order equations, and the integrator sees
only (q_i, qd_i). After every accepted step the conditioning of Dd is checked; when it
degrades (a loop approaching a configuration where the chosen q_i stop describing it), the
independent coordinates are chosen again at the last accepted state and the integration
continues; when no choice is regular (Dq loses rank: a singular configuration of the
mechanism) a SingularSystemError names the time and the rank. Outputs, reactions, projection
and the initial state are tmt's.
"""
import numpy as np

from ...errors import DriftError, InputError, IntegrationError, SingularSystemError
from . import _minimal, _spatial_tmt
from . import tmt as _tmt
from ._minimal import COORDINATES, Dynamics  # noqa: F401  (part of the namespace)

#: the integrators of the reduced equations (scipy's steppers and rk4)
METHODS = ("rk4", "dopri5", "dop853", "radau")

#: switch the independent coordinates when cond(Dd) exceeds this (and a choice at least ten
#: times better exists) ...
RESELECT_COND = 1e3
#: ... and give up (singular configuration) when even the best choice exceeds this, or when
#: the step size collapses (below 1e-6 (1 + |t|) s) with a best choice worse than STALL_COND
SINGULAR_COND = 1e9
STALL_COND = 1e4

coordinates = _tmt.coordinates
accelerations = _tmt.accelerations
absolute = _tmt.absolute
initial_state = _tmt.initial_state
project = _tmt.project
lam = _tmt.lam
kinematics = _tmt.kinematics
reduced_equations = _tmt.reduced_equations


class _Reselect(Exception):
    """The current partition became ill-conditioned or its Newton solve failed."""


def rows(model, q, qd, t):
    """phi, Dq, conv_q, phi_t of every row tmt keeps (cut joints, drives, normalisations)."""
    x, xd, Tq, g = _tmt.kinematics(model, q, qd)
    if model.spatial:
        return _spatial_tmt.rows(model, q, qd, x, xd, Tq, g, t)
    return _minimal.cut_rows(model, x, xd, Tq, g, t)


def partition(model, q, t):
    """(independent, dependent) index arrays of q at (q, t): QR with column pivoting on Dq;
    the first rank(Dq) pivots are the dependent coordinates."""
    from scipy import linalg as sla

    n = q.shape[0]
    _, Dq, _, _ = rows(model, q, np.zeros(n), t)
    if Dq.shape[0] == 0:
        return np.arange(n), np.zeros(0, dtype=np.intp), 1.0
    _, R, piv = sla.qr(Dq, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > 1e-10 * d[0])) if d.size and d[0] > 0 else 0
    dep = np.sort(piv[:rank])
    ind = np.sort(piv[rank:])
    return ind, dep, _cond(Dq, dep, rank)


def _cond(Dq, dep, rank):
    """Conditioning of the dependent block: cond of the rank rows that Dd spans."""
    if rank == 0:
        return 1.0
    sv = np.linalg.svd(Dq[:, dep], compute_uv=False)
    return float(sv[0] / sv[rank - 1]) if sv[rank - 1] > 0 else np.inf


def independent_coordinates(model, state):
    """Names of the coordinates `minimal` integrates at `state` (f of them)."""
    ind, _, _ = partition(model, state.q, state.t)
    names = coordinates(model)
    return tuple(names[i] for i in ind)


class _Reduced:
    """The f-dimensional ODE of one partition: y = (q_i, qd_i)."""

    def __init__(self, model, ind, dep, q, u, tol):
        self.model, self.ind, self.dep, self.u, self.tol = model, ind, dep, u, tol
        self.q = q.copy()                 # last full q: Newton's starting point
        self.n = q.shape[0]

    def full(self, t, qi, qdi):
        """Full (q, qd) from the independent ones; raises _Reselect when Newton fails."""
        model, ind, dep, n = self.model, self.ind, self.dep, self.n
        q = self.q.copy()
        q[ind] = qi
        zero = np.zeros(n)
        scale = 1.0 + np.abs(q).max()
        for _ in range(25):
            phi, Dq, _, phi_t = rows(model, q, zero, t)
            err = np.abs(phi).max(initial=0.0)
            if err <= self.tol * scale:
                break
            Dd = Dq[:, dep]
            try:
                step = np.linalg.lstsq(Dd, phi, rcond=None)[0]
            except np.linalg.LinAlgError:
                raise _Reselect from None
            q[dep] -= step
            if not np.all(np.isfinite(q)):
                raise _Reselect
        else:
            raise _Reselect
        phi, Dq, _, phi_t = rows(model, q, zero, t)
        Dd, Di = Dq[:, dep], Dq[:, ind]
        qd = np.zeros(n)
        qd[ind] = qdi
        if len(dep):
            qd[dep] = np.linalg.lstsq(Dd, -(Di @ qdi + phi_t), rcond=None)[0]
        self.q = q
        return q, qd

    def rhs(self, t, y):
        f = len(self.ind)
        q, qd = self.full(t, y[:f], y[f:])
        model, ind, dep = self.model, self.ind, self.dep
        Mbar, fbar, x, xd, Tq, g = _tmt.reduced_equations(model, q, qd, t, self.u)
        if model.spatial:
            _, Dq, conv, _ = _spatial_tmt.rows(model, q, qd, x, xd, Tq, g, t)
        else:
            _, Dq, conv, _ = _minimal.cut_rows(model, x, xd, Tq, g, t)
        n = self.n
        R = np.zeros((n, f))
        R[ind, np.arange(f)] = 1.0
        s = np.zeros(n)
        if len(dep):
            Dd = Dq[:, dep]
            sol = np.linalg.lstsq(Dd, np.column_stack([Dq[:, ind], -conv]), rcond=None)[0]
            R[dep] = -sol[:, :f]
            s[dep] = sol[:, f]
        Mh = R.T @ Mbar @ R
        Qh = R.T @ (fbar - Mbar @ s)
        from scipy import linalg as sla

        try:
            qdd_i = sla.solve(Mh, Qh, assume_a="pos", check_finite=False) if f else np.zeros(0)
        except (np.linalg.LinAlgError, ValueError):
            raise SingularSystemError(f"model '{model.name}': the minimal-order mass matrix "
                                      f"R' Mbar R is singular at t = {t:.9g} s") from None
        return np.concatenate([y[f:], qdd_i])

    def det_sign(self, t):
        """Sign of det(Dd) at the last solved state (0 when Dd is not square: redundant rows)."""
        _, Dq, _, _ = rows(self.model, self.q, np.zeros(self.n), t)
        Dd = Dq[:, self.dep]
        if Dd.shape[0] != Dd.shape[1]:
            return 0.0
        return float(np.sign(np.linalg.det(Dd)))

    def condition(self, t):
        _, Dq, _, _ = rows(self.model, self.q, np.zeros(self.n), t)
        return _cond(Dq, self.dep, len(self.dep))


def native_advance(model, state, t_end, u, settings):
    """Integrate only the independent coordinates from state.t to t_end; (q, qd, h)."""
    from ..integrate import _SCIPY, _over_budget

    if settings.method not in METHODS:
        raise InputError(f"model '{model.name}': formulation 'minimal' integrates with "
                         f"{list(METHODS)}, not with method {settings.method!r}; choose one of "
                         f"them, or formulation 'tmt' or 'newton_euler' for {settings.method!r}")
    steps = 0

    t, q, qd, h = float(state.t), state.q.copy(), state.qd.copy(), float(state.h)
    tol = 1e-3 * min(settings.rtol, settings.projection_tol)
    forced = None
    for _ in range(100):                  # partitions used within one call
        ind, dep, cond = forced if forced is not None else partition(model, q, t)
        forced = None
        if cond > SINGULAR_COND:
            raise SingularSystemError(
                f"model '{model.name}': singular configuration at t = {t:.9g} s: no choice of "
                f"{len(ind)} independent coordinates describes the mechanism (condition "
                f"number of the closure Jacobian {cond:.3g}); use formulation 'tmt' or "
                f"'newton_euler', which pass through it")
        red = _Reduced(model, ind, dep, q, u, max(tol, 1e-14))
        after = None
        f = len(ind)
        y = np.concatenate([q[ind], qd[ind]])
        try:
            if settings.method == "rk4":
                t, y, h = _rk4(red, t, y, t_end, settings.step)
            else:
                import scipy.integrate

                cls = getattr(scipy.integrate, _SCIPY[settings.method])
                first = min(h, t_end - t) if h > 0 else None
                solver = cls(red.rhs, t, y, t_end, rtol=settings.rtol, atol=settings.atol,
                             max_step=settings.max_step, first_step=first)
                sign_prev = red.det_sign(t)
                while solver.status == "running":
                    steps += 1
                    _over_budget(settings, model, solver.t, t_end, steps, solver.h_abs)
                    t_prev, y_prev = solver.t, solver.y.copy()
                    try:
                        msg = solver.step()
                    except _Reselect:
                        t, y = t_prev, y_prev
                        raise
                    if solver.status == "failed":
                        raise IntegrationError(f"model '{model.name}': the {settings.method} "
                                               f"integrator failed at t = {solver.t:.9g} s: "
                                               f"{msg}")
                    t, y, h = solver.t, solver.y, solver.h_abs
                    sign = red.det_sign(t)
                    if sign * sign_prev < 0:          # Dd passed through a singular matrix
                        after = (red.q.copy(), t)     # a choice regular on the far side
                        _crossed(model, red, solver, t_prev, t, f)
                        t, y = t_prev, y_prev         # the partition's own singularity:
                        raise _Reselect               # choose again before it
                    sign_prev = sign
                    if solver.status == "running" and red.condition(t) > RESELECT_COND:
                        q, qd = red.full(t, y[:f], y[f:])
                        c_now, best = red.condition(t), partition(model, q, t)[2]
                        if best < 0.1 * c_now:
                            raise _Reselect
                        if best > SINGULAR_COND or (h < 1e-6 * (1.0 + abs(t))
                                                    and best > STALL_COND):
                            raise SingularSystemError(
                                f"model '{model.name}': singular configuration at t = "
                                f"{t:.9g} s: the step size collapses and no choice of "
                                f"{f} independent coordinates is regular (condition number "
                                f"of the closure Jacobian {best:.3g}); use formulation "
                                f"'tmt' or 'newton_euler'")
        except _Reselect:
            try:
                q, qd = red.full(t, y[:f], y[f:]) if _finite(y) else (q, qd)
            except _Reselect:
                raise SingularSystemError(
                    f"model '{model.name}': at t = {t:.9g} s the closure cannot be solved for "
                    f"the dependent coordinates (a singular configuration); use formulation "
                    f"'tmt' or 'newton_euler'") from None
            new = partition(model, q, t)
            if np.array_equal(new[0], ind) and after is not None:
                new = partition(model, *after)
            if np.array_equal(new[0], ind):
                raise SingularSystemError(
                    f"model '{model.name}': at t = {t:.9g} s the closure cannot be solved "
                    f"for the dependent coordinates and no other choice of independent "
                    f"coordinates is better (condition number {new[2]:.3g}): a singular "
                    f"configuration") from None
            forced = new
            h = 0.0
            continue
        q, qd = red.full(t, y[:f], y[f:])
        return q, qd, h
    raise DriftError(f"model '{model.name}': the independent coordinates had to be chosen "
                     f"again 100 times before t = {t_end:.9g} s")


def _crossed(model, red, solver, t0, t1, f):
    """det(Dd) changed sign over the step [t0, t1]: a singular configuration of the mechanism
    when the best choice of independent coordinates is ill-conditioned somewhere in the step
    (SingularSystemError), else only of the current choice (the caller chooses again)."""
    worst = 0.0
    for tk in np.linspace(t0, t1, 9)[1:-1]:
        yk = solver.dense_output()(tk)
        try:
            qk, _ = red.full(tk, yk[:f], yk[f:])
        except _Reselect:
            worst = np.inf
            break
        worst = max(worst, partition(model, qk, tk)[2])
    if worst > STALL_COND:
        raise SingularSystemError(
            f"model '{model.name}': singular configuration between t = {t0:.9g} s and "
            f"{t1:.9g} s: the closure Jacobian loses rank (condition number of the best choice "
            f"of {f} independent coordinates {worst:.3g}); use formulation 'tmt' or "
            f"'newton_euler'")


def _finite(y):
    return bool(np.all(np.isfinite(y)))


def _rk4(red, t, y, t_end, step):
    nsteps = max(1, int(np.ceil((t_end - t) / step - 1e-9)))
    dt = (t_end - t) / nsteps
    for k in range(nsteps):
        tk = t + k * dt
        k1 = red.rhs(tk, y)
        k2 = red.rhs(tk + dt / 2, y + dt / 2 * k1)
        k3 = red.rhs(tk + dt / 2, y + dt / 2 * k2)
        k4 = red.rhs(tk + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return t_end, y, dt
