"""What the minimal-coordinate formulations (tmt, lagrange) share: the cut-joint constraint
rows in q, the constrained solve (seed 000 ch.2 eq. 20), projection, the initial state, and
the recovery of every Newton-Euler multiplier once the motion is known (seed 001's reaction
force problem).

Constraint rows in q: the cut joints' and drives' rows phi(x, t) of constraints.evaluate at
x = T(q), chained with Tq:  Dq = D_cut Tq,  conv_q = D_cut g + conv_cut.

    [ Mbar  Dq' ] [ qdd ]   [ fbar              ]
    [ Dq    0   ] [ lam ] = [ -conv_q (Baumgarte) ]
"""
from dataclasses import dataclass

import numpy as np

from ...mechanics import constraints
from ...mechanics.elements import applied_forces
from ...errors import AssemblyError, SingularSystemError
from ...linalg import (PROJECTION_RTOL, RANK_RTOL, kept_energy, projection_done,
                       projection_settled, schur_solve)
from ...mechanics.tree import tree_map

from ...linalg import LazyModule  # noqa: I100  (apart: scipy is imported on first use)
sla = LazyModule("scipy.linalg")       # imported when tmt or lagrange first solve

COORDINATES = "joint"


@dataclass(frozen=True, eq=False)
class Dynamics:
    """One solve in joint coordinates; lam_cut are the multipliers of the cut and drive rows
    (model.compiled rows `rows`); x, xd, xdd the absolute motion it implies; t, u the time
    and inputs it was solved at."""

    qdd: np.ndarray     # (n,) [rad/s2 or m/s2]
    lam_cut: np.ndarray
    rows: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    t: float
    u: np.ndarray


def cut_rows(model, x, xd, Tq, g, t, rows=None):
    """phi (mc,), Dq (mc, n), conv_q (mc,), phi_t (mc,) of the cut joints and drives (rows:
    their compiled rows, the planar tree's by default)."""
    rows = tree_map(model).cut_rows if rows is None else rows
    if len(rows) == 0:
        n = Tq.shape[1]
        z = np.zeros(0)
        return z, np.zeros((0, n)), z, z
    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    Dc = D[rows]
    return phi[rows], Dc @ Tq, Dc @ g + conv[rows], phi_t[rows]


def solve(model, Mbar, fbar, phi, Dq, conv, phi_t, qd, baumgarte):
    """Solve seed 000 ch.2 eq. 20 for qdd and the cut multipliers lam."""
    b = -conv
    if baumgarte is not None and len(b):
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (Dq @ qd + phi_t) - beta * beta * phi
    n, m = Mbar.shape[0], Dq.shape[0]
    try:
        c = sla.cho_factor(Mbar, lower=True, check_finite=False)
        d = np.abs(np.diag(c[0]))
        if n and d.min() ** 2 <= 1e-12 * d.max() ** 2:
            raise np.linalg.LinAlgError
        if m == 0:
            return sla.cho_solve(c, fbar, check_finite=False), np.zeros(0)
        MiDt = sla.cho_solve(c, Dq.T, check_finite=False)
        lam, _ = schur_solve(Dq @ MiDt, Dq @ sla.cho_solve(c, fbar, check_finite=False) - b)
        return sla.cho_solve(c, fbar - Dq.T @ lam, check_finite=False), lam
    except (np.linalg.LinAlgError, ValueError):
        pass
    # Mbar singular (a massless body): the full KKT matrix can still be regular
    K = np.zeros((n + m, n + m))
    K[:n, :n], K[:n, n:], K[n:, :n] = Mbar, Dq.T, Dq
    rhs = np.concatenate([fbar, b])
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    if not np.all(np.isfinite(sol)) or np.abs(K @ sol - rhs).max() > 1e-8 * (
            1.0 + np.abs(rhs).max()):
        raise SingularSystemError(f"model '{model.name}': the reduced mass matrix is singular "
                                  f"and the drives and cut joints do not fix the motion")
    return sol[:n], sol[n:]


def lam(model, dyn):
    """All Newton-Euler multipliers (model.compiled.n_rows): D' lam = f - M xdd at the motion
    of dyn (least squares, minimum norm for redundant rows, as newton_euler)."""
    C = model.compiled
    if C.n_rows == 0:
        return np.zeros(0)
    _, D, _, _ = constraints.evaluate(model, dyn.x, dyn.xd, dyn.t, need_conv=False)
    r = applied_forces(model, dyn.x, dyn.xd, dyn.t, dyn.u) - C.mass_diag * dyn.xdd
    y, _ = schur_solve(D @ D.T, D @ r)
    return y


def initial_state(model, form):
    """State(t0, q0, qd0, coords="joint") from the assembled model.x0, model.xd0."""
    from ..state import State

    tm = tree_map(model)
    q, qd, _, _ = constraints.joint_coordinates(model, model.x0, model.xd0)
    pos = {k: i for i, k in enumerate(model.compiled.coord_joints)}
    sel = [pos[k] for k in tm.joints]
    fr = [3 * b + c for b in tm.free for c in range(3)]
    q0 = np.concatenate([q[sel], model.x0[fr]])
    qd0 = np.concatenate([qd[sel], model.xd0[fr]])
    x, _ = form.absolute(model, q0, qd0)
    scale = 1.0 + np.abs(model.x0).max(initial=0.0)
    if np.abs(x - model.x0).max(initial=0.0) > 1e-8 * scale:
        raise AssemblyError(f"model '{model.name}': T(q0) does not reproduce the "
                                  f"assembled pose (error {np.abs(x - model.x0).max():.3g})")
    return State(model.t0, q0, qd0, 0.0, COORDINATES)


def project(model, y, t, tol, kinematics, extra=None, weighted=False, cut=None, n=None):
    """Project y = (q, qd) onto the cut and drive rows: Newton with minimum-norm steps on
    phi(T(q), t) = 0, then qd onto Dq qd = -phi_t. kinematics(model, q, qd) -> x, xd, Tq, g.
    extra(q, x, Tq) -> (res (k,), J (k, n), rate (k,)) adds rows res = 0, J qd = rate
    (persistent contacts, fmu_mb.dynamics.impact_minimal; spatial normalisation rows). cut, n:
    the cut rows and the number of coordinates (default: the planar tree's). weighted: the velocity change of least
    kinetic energy (minimum Mbar-norm, an inelastic impulse on the rows) instead of the
    minimum-norm change in q."""
    rows = tree_map(model).cut_rows if cut is None else cut
    if len(rows) == 0 and extra is None:
        return y
    n = tree_map(model).n if n is None else n
    q, qd = y[:n].copy(), y[n:]
    zero = np.zeros(n)
    prev = prev_step = np.inf
    for it in range(12):
        x, _, Tq, _ = kinematics(model, q, zero)
        phi, D, _, phi_t = constraints.evaluate(model, x, np.zeros_like(x), t, need_conv=False)
        phi, Dq, b = phi[rows], D[rows] @ Tq, -phi_t[rows]
        if extra is not None:
            res, J, rate = extra(q, x, Tq)
            phi, Dq = np.concatenate([phi, res]), np.vstack([Dq, J])
            b = np.concatenate([b, rate])
        err = np.abs(phi).max(initial=0.0)
        scale = 1.0 + np.abs(x).max()
        if projection_done(model, t, it, err, prev, tol, scale):
            # go on while the correction is above tolerance (linalg.projection_settled:
            # near a singular pose a small residual hides a position error residual / sigma).
            # A settled correction is not taken here: the contact phases decide on the sign
            # of a force that is zero to rounding at rest (test_impact_minimal's pendulum
            # hanging at the wall), and a rounding-size change of q flips it
            dq = _min_norm(model, Tq, Dq, phi, PROJECTION_RTOL)
            step = np.abs(dq).max(initial=0.0)
            if projection_settled(it, step, prev_step, tol, scale):
                break
        else:
            dq = _min_norm(model, Tq, Dq, phi, PROJECTION_RTOL)
        q -= dq
        prev, prev_step = err, np.abs(dq).max(initial=0.0)
    if weighted:
        Mbar = Tq.T @ (model.compiled.mass_diag[:, None] * Tq)
        z = np.zeros(b.shape[0])
        return np.concatenate([q, solve(model, Mbar, Mbar @ qd, z, Dq, -b, z, qd, None)[0]])
    r = Dq @ qd - b
    dqd = _min_norm(model, Tq, Dq, r, PROJECTION_RTOL)
    gain = 1.0
    if not model.compiled.spatial and not model.drives:
        # the kinetic energy the hard cut removes beyond the multipliers' cut-off, given back
        # (linalg.kept_energy; native/kernel.c, whose planar kernel prescribes the drives)
        Mbar = Tq.T @ (model.compiled.mass_diag[:, None] * Tq)
        gain = kept_energy(lambda v: 0.5 * v @ Mbar @ v, qd, dqd,
                           _min_norm(model, Tq, Dq, r, RANK_RTOL))
    return np.concatenate([q, gain * (qd - dqd)])


def _min_norm(model, Tq, Dq, r, rtol=RANK_RTOL):
    """The change dq of least kinetic-energy norm dq' Mbar dq with Dq dq = r (least squares
    if inconsistent): Mbar^-1 Dq' (Dq Mbar^-1 Dq')^+ r, the joint-coordinate image of
    newton_euler's minimum M-norm correction. A singular Mbar (massless bodies) falls back to
    the minimum Euclidean norm in q, as do spatial models (their Euler-parameter coordinates
    carry normalisation rows that a kinetic-energy metric does not see). rtol: schur_solve's
    cut-off (PROJECTION_RTOL in the projections)."""
    if model.compiled.spatial:
        y, _ = schur_solve(Dq @ Dq.T, r, rtol)
        return Dq.T @ y
    Mbar = Tq.T @ (model.compiled.mass_diag[:, None] * Tq)
    try:
        c = sla.cho_factor(Mbar, lower=True, check_finite=False)
        d = np.abs(np.diag(c[0]))
        if d.size and d.min() ** 2 > 1e-12 * d.max() ** 2:
            MiDt = sla.cho_solve(c, Dq.T, check_finite=False)
            y, _ = schur_solve(Dq @ MiDt, r, rtol)
            return MiDt @ y
    except (np.linalg.LinAlgError, ValueError):
        pass
    y, _ = schur_solve(Dq @ Dq.T, r, rtol)
    return Dq.T @ y


def dae_terms(model, q, qd, t, u, reduced_equations):
    """The index-3 DAE in joint coordinates (formulations.dae): Mbar(q) qdd + Dq' lam = fbar,
    Phi_cut(T(q), t) = 0 with the cut joints' and drives' rows, from the formulation's
    reduced_equations(model, q, qd, t, u) -> Mbar, fbar, x, xd, Tq, g."""
    from .dae import DaeTerms

    Mbar, fbar, x, xd, Tq, g = reduced_equations(model, q, qd, t, u)
    phi, Dq, conv, phi_t = cut_rows(model, x, xd, Tq, g, t)
    return DaeTerms(Mbar, fbar, phi, Dq, phi_t, conv)
