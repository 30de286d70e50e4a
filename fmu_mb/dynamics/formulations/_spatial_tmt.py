"""TMT in spatial tree joint coordinates (seed 001's minimal-order equations with the cut
joints as multiplier rows; fmu_mb.mechanics.spatial.tree for x = T(q), Tq, g).

    Mbar = Tq' M(x) Tq + diag(armature),   fbar = Tq' (f(x, xd) - M(x) g)
    Mbar qdd + Dq' lam = fbar,   Dq qdd = -conv_q

M and f are newton_euler's Euler-parameter mass matrix and forces (gyroscopic term included);
by virtual power the body normalisation rows drop out (T keeps |p_body| = product of the
|p_rel| along the path). The rows are the cut joints and drives (Dq = D_cut Tq,
conv_q = D_cut g + conv_cut) and one normalisation row q_p . q_p = 1 per Euler-parameter
coordinate set (spherical joints, floating roots). Mbar can be singular along such a set
(a spherical joint at a body's centre of mass), so the system is solved in the augmented form
of linalg.solve_kkt_dense. The multipliers of every Newton-Euler row are recovered from the
motion: D' lam = f - M xdd, the solution in the range of D, which is also newton_euler's
minimum-norm choice for redundant rows.
"""
import numpy as np

from ...errors import AssemblyError
from ...linalg import schur_solve, solve_kkt_dense
from ...mechanics import constraints
from ...mechanics.elements import applied_forces
from ...mechanics.spatial import tree as st
from ...mechanics.spatial.elements import mass_matrix
from . import _minimal
from ._minimal import COORDINATES, Dynamics


def coordinates(model):
    return st.tree_map(model).names


def reduced_equations(model, q, qd, t, u):
    """Mbar (n, n), fbar (n,) and x, xd, Tq, g."""
    x, xd, Tq, g = st.transform(model, q, qd)
    M = mass_matrix(model, x)
    f = applied_forces(model, x, xd, t, u)
    return with_armature(model, Tq.T @ (M @ Tq)), Tq.T @ (f - M @ g), x, xd, Tq, g


def with_armature(model, Mbar):
    """Mbar + diag(armature) (the joints' reflected rotor inertias, ModelBuilder.armature)."""
    if any(j.armature for j in model.joints):
        return Mbar + np.diag(st.armature_diagonal(model))
    return Mbar


def rows(model, q, qd, x, xd, Tq, g, t):
    """phi, Dq, conv_q, phi_t of the cut joints and drives, then the normalisation rows."""
    tm = st.tree_map(model)
    n = tm.n
    phi, Dq, conv, phi_t = _minimal.cut_rows(model, x, xd, Tq, g, t, tm.cut_rows)
    k = len(tm.norm)
    if k == 0:
        return phi, Dq, conv, phi_t
    idx = tm.norm[:, None] + np.arange(4)
    P, Pd = q[idx], qd[idx]
    Dn = np.zeros((k, n))
    Dn[np.arange(k)[:, None], idx] = 2.0 * P
    return (np.concatenate([phi, (P * P).sum(1) - 1.0]), np.vstack([Dq, Dn]),
            np.concatenate([conv, 2.0 * (Pd * Pd).sum(1)]), np.concatenate([phi_t, np.zeros(k)]))


def accelerations(model, q, qd, t, u, baumgarte=None):
    return solve(model, q, qd, t, u, *reduced_equations(model, q, qd, t, u), baumgarte)


def solve(model, q, qd, t, u, Mbar, fbar, x, xd, Tq, g, baumgarte):
    """Dynamics of Mbar qdd + Dq' lam = fbar with the cut, drive and normalisation rows
    (augmented form, linalg.solve_kkt_dense); shared with the spatial lagrange."""
    phi, Dq, conv, phi_t = rows(model, q, qd, x, xd, Tq, g, t)
    b = -conv
    if baumgarte is not None and len(b):
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (Dq @ qd + phi_t) - beta * beta * phi
    qdd, lam_all = solve_kkt_dense(Mbar, Dq, fbar, b)
    cut = st.tree_map(model).cut_rows
    return Dynamics(qdd, lam_all[:len(cut)], cut, x, xd, Tq @ qdd + g, t, u)


def absolute(model, q, qd):
    x, xd, _, _ = st.transform(model, np.asarray(q, float), np.asarray(qd, float))
    return x, xd


def kinematics(model, q, qd):
    return st.transform(model, q, qd)


def lam(model, dyn):
    """All Newton-Euler multipliers: D' lam = f - M xdd (the solution in the range of D)."""
    C = model.compiled
    if C.n_rows == 0:
        return np.zeros(0)
    _, D, _, _ = constraints.evaluate(model, dyn.x, dyn.xd, dyn.t, need_conv=False)
    r = applied_forces(model, dyn.x, dyn.xd, dyn.t, dyn.u) - mass_matrix(model, dyn.x) @ dyn.xdd
    y, _ = schur_solve(D @ D.T, D @ r)
    return y


def initial_state(model):
    """q0 from the relative poses of the assembled model.x0, qd0 from Tq qd0 = xd0."""
    from ..state import State

    tm = st.tree_map(model)
    q0 = st.initial_coordinates(model, tm)
    x, _, Tq, _ = st.transform(model, q0, np.zeros(tm.n))
    scale = 1.0 + np.abs(model.x0).max(initial=0.0)
    if np.abs(x - model.x0).max(initial=0.0) > 1e-8 * scale:
        raise AssemblyError(f"model '{model.name}': T(q0) does not reproduce the assembled "
                            f"pose (error {np.abs(x - model.x0).max():.3g})")
    qd0 = np.linalg.lstsq(Tq, model.xd0, rcond=None)[0] if tm.n else np.zeros(0)
    vscale = 1.0 + np.abs(model.xd0).max(initial=0.0)
    if np.abs(Tq @ qd0 - model.xd0).max(initial=0.0) > 1e-8 * vscale:
        raise AssemblyError(f"model '{model.name}': the assembled velocities are not those of "
                            f"a motion of the tree joints")
    return State(model.t0, q0, qd0, 0.0, COORDINATES)


def project(model, y, t, tol):
    """Newton onto the cut, drive and normalisation rows, then qd onto their rates."""
    tm = st.tree_map(model)

    def norm_rows(q, x, Tq):
        k = len(tm.norm)
        idx = tm.norm[:, None] + np.arange(4)
        P = q[idx]
        J = np.zeros((k, tm.n))
        J[np.arange(k)[:, None], idx] = 2.0 * P
        return (P * P).sum(1) - 1.0, J, np.zeros(k)

    return _minimal.project(model, y, t, tol, st.transform,
                            extra=norm_rows if len(tm.norm) else None,
                            cut=tm.cut_rows, n=tm.n)
