"""Spatial contacts in the tree joint coordinates q of the spatial tmt, lagrange and recursive
formulations: the contact kit of the event loop (fmu_mb.dynamics.integrate; the functions of
fmu_mb.dynamics.impact_minimal.contact_kit, with the same signatures).

The gap rows follow from those in absolute coordinates (fmu_mb.mechanics.spatial.contacts) by
the chain rule through x = T(q) (fmu_mb.mechanics.spatial.tree): Dq_c = Dc Tq,
conv_q = Dc g + conv_c. With Mbar = Tq' M(x) Tq and the rows of the spatial tmt (cut joints,
drives, Euler-parameter normalisation; _spatial_tmt.rows) the impact is seed 000 ch.3 eq. 15
with Newton's restitution law,

    [ Mbar    Dq'  Dq_c' ] [ qd+ ]   [ Mbar qd-    ]
    [ Dq      0    0     ] [ r_k ] = [ -phi_t      ]
    [ Dq_c    0    0     ] [ r_c ]   [ -e Dq_c qd- ]

for the active set of impact.solve_impact, and a persistent contact is one more row
Dq_c qdd = -conv_q. Tq' removes only the tree joints' impulses, so r_c equals newton_euler's.
Frictionless; no Reduction Method in 3-D. Formulation recursive: the right-hand side and the
drift projection are the compiled spatial kernel's (fmu_mb.engine.spatial_kernel), the
persistent contacts' gap rows closed in C (sk_set_active); event location and the impacts
are these Python functions.
"""
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from ...errors import InputError
from ...linalg import solve_kkt_dense
from ...mechanics.spatial import tree as st
from ...mechanics.spatial.elements import kinetic_energy, mass_matrix
from .. import impact as _ne
from . import _minimal, _spatial_tmt


def contact_rows(model, q, qd):
    """gap (nc,), Dq_c (nc, n), conv_q (nc,) with gap'' = Dq_c qdd + conv_q."""
    x, xd, Tq, g = st.transform(model, q, qd)
    gap, Dc, conv = _ne.contact_rows(model, x, xd)
    return gap, Dc @ Tq, Dc @ g + conv


def gaps(model, q):
    return _ne.gaps(model, st.transform(model, q, np.zeros_like(q))[0])


def _extra(model, x, xd, Tq, g, active):
    ia = np.flatnonzero(active)
    n = Tq.shape[1]
    if not len(ia):
        return np.zeros(0), np.zeros((0, n)), np.zeros(0)
    gap, Dc, cv = _ne.contact_rows(model, x, xd)
    return gap[ia], Dc[ia] @ Tq, Dc[ia] @ g + cv[ia]


def _no_reduction(pas, locks):
    if pas is not None or locks:
        raise InputError("the Reduction Method is planar: spatial contacts use the impact "
                         "equations only")


def accelerations(model, equations, q, qd, t, u, active, pas=None, baumgarte=None,
                  locks=None):
    """Mbar qdd + Dq' lam + Dq_c' lam_c = fbar with the tmt rows and the active contacts'
    rows; impact.ContactDynamics (lam_c in model.contacts order, pushing < 0)."""
    _no_reduction(pas, locks)
    Mbar, fbar, x, xd, Tq, g = equations(model, q, qd, t, u)
    phi, Dq, conv, phi_t = _spatial_tmt.rows(model, q, qd, x, xd, Tq, g, t)
    res, J, cv = _extra(model, x, xd, Tq, g, active)
    A = np.vstack([Dq, J])
    b = -np.concatenate([conv, cv])
    if baumgarte is not None and len(b):
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (A @ qd + np.concatenate([phi_t, np.zeros(len(res))])) \
            - beta * beta * np.concatenate([phi, res])
    qdd, lam = solve_kkt_dense(Mbar, A, fbar, b)
    return _ne.contact_dynamics(model, qdd, lam, phi, Dq, active, None)


def impact(model, q, qd, t=0.0, closed=None, restitution=None, tol=1e-10):
    """qd+ after an impact at q: impact.ImpactResult with xd = qd+."""
    x, xd, Tq, g = st.transform(model, q, qd)
    gap, Dc, _ = _ne.contact_rows(model, x, xd)
    _, Dq, _, phi_t = _spatial_tmt.rows(model, q, qd, x, xd, Tq, g, t)
    Mbar = _spatial_tmt.with_armature(model, Tq.T @ mass_matrix(model, x) @ Tq)
    F = Mbar @ qd

    def solve(A, b):
        return solve_kkt_dense(Mbar, A, F, b)
    return _ne.solve_impact(model, qd, gap, Dc @ Tq, Dq, phi_t, solve, closed, restitution,
                            tol)


def project(model, form, y, t, tol, active, pas=None, locks=None):
    """Project y = (q, qd) onto the cut, drive and normalisation rows and the active contacts'
    gap rows (minimum-norm steps in q, then the velocities)."""
    _no_reduction(pas, locks)
    if not np.any(active):
        return form.project(model, y, t, tol)
    tm = st.tree_map(model)

    def extra(q, x, Tq):
        k = len(tm.norm)
        idx = tm.norm[:, None] + np.arange(4)
        P = q[idx]
        Jn = np.zeros((k, tm.n))
        Jn[np.arange(k)[:, None], idx] = 2.0 * P
        zx = np.zeros_like(x)
        res, J, _ = _extra(model, x, zx, Tq, zx, active)
        return (np.concatenate([(P * P).sum(1) - 1.0, res]), np.vstack([Jn, J]),
                np.zeros(k + len(res)))
    n = tm.n
    qd = np.array(y[n:], float)
    y = _minimal.project(model, y, t, tol, st.transform, extra=extra, cut=tm.cut_rows,
                         n=tm.n)
    # the velocities: the change of least kinetic energy from the given qd (an inelastic
    # impulse on the rows, as newton_euler's projection), not the minimum-norm change in q
    q = y[:n]
    x, xd, Tq, g = st.transform(model, q, qd)
    _, Dq, _, phi_t = _spatial_tmt.rows(model, q, qd, x, xd, Tq, g, t)
    _, J, _ = _extra(model, x, xd, Tq, g, active)
    Mbar = _spatial_tmt.with_armature(model, Tq.T @ mass_matrix(model, x) @ Tq)
    qd = solve_kkt_dense(Mbar, np.vstack([Dq, J]), Mbar @ qd,
                         np.concatenate([-phi_t, np.zeros(J.shape[0])]))[0]
    return np.concatenate([q, qd])


@lru_cache(maxsize=None)
def contact_kit(name):
    """The contact kit of formulation `name` (tmt, lagrange, recursive) for spatial models."""
    from . import get_formulation

    form = get_formulation(name)
    equations = (_spatial_tmt.reduced_equations if name == "recursive"
                 else form.equations)

    def kinetic(model, q, qd):
        x, xd = st.transform(model, q, qd)[:2]
        return kinetic_energy(model, x, xd)

    def unavailable(*a, **k):
        raise InputError("the Reduction Method is planar: spatial contacts use the impact "
                         "equations only")

    def acc(model, q, qd, t, u, active, pas=None, baumgarte=None, locks=None):
        if name == "recursive":          # the C kernel, the persistent contacts as rows
            from ...engine.spatial_kernel import spatial_kernel

            _no_reduction(pas, locks)
            ia = np.flatnonzero(active)
            qdd, lam = spatial_kernel(model).contact_accelerations(q, qd, t, u, ia, baumgarte)
            lam_c = np.zeros(len(model.contacts))
            lam_c[ia] = lam
            return _ne.ContactDynamics(qdd, np.zeros(0), lam_c, None, None)
        return accelerations(model, equations, q, qd, t, u, active, pas, baumgarte, locks)

    def proj(model, y, t, tol, active, pas=None, locks=None):
        if name == "recursive" and np.any(active):
            from ...engine.spatial_kernel import spatial_kernel

            _no_reduction(pas, locks)
            n = y.shape[0] // 2
            return np.concatenate(spatial_kernel(model).contact_project(
                y[:n], y[n:], t, tol, np.flatnonzero(active)))
        return project(model, form, y, t, tol, active, pas, locks)

    def unit_gaps(model, q):
        # the compiled kernel poses a body by A(p / |p|) (its rows and right-hand side):
        # the gaps of the same pose, also between steps on the dense output, where |p| is
        # 1 only to the interpolation error
        tm = st.tree_map(model)
        if len(tm.norm):
            q = np.array(q, float)
            idx = tm.norm[:, None] + np.arange(4)
            q[idx] /= np.linalg.norm(q[idx], axis=1)[:, None]
        return gaps(model, q)

    return SimpleNamespace(
        gaps=unit_gaps if name == "recursive" else gaps, contact_rows=contact_rows,
        accelerations=acc,
        impact=impact,
        project=proj,
        kinetic=kinetic, singular_position=unavailable, criterion=unavailable,
        joint_coordinates=unavailable, set_joint_rate=unavailable, restitute=unavailable,
        effective_mass=unavailable, pass_tuple=lambda model, st_: None,
        locks=lambda model, st_: {})
