"""Lagrange's equations of the second kind in spatial tree joint coordinates (seed 000 ch.2
eq. 9, 15, 20; seed 001's q): an independent route to the equations _spatial_tmt solves.

    d/dt(dT/dqd) - dT/dq + dV/dq = Q - Dq' lam,    T = 1/2 qd' Mbar(q) qd
    Mbar qdd = Q - dV/dq + dT/dq - Mbar' qd        (Mbar' = d/dt Mbar = sum_k dMbar/dq_k qd_k)

i.e. Mbar qdd + (dMbar/dq qd) qd - 1/2 qd' (dMbar/dq) qd = Q - dV/dq: the velocity terms are
the Christoffel symbols of Mbar, formed from the derivatives of the mass matrix, never from
newton_euler's gyroscopic force or the tree's convective term g.

Per body (Euler-parameter form of newton_euler, the same T): v = Tr qd the velocity of the
centre of mass, w = Kw qd with Kw = 2 G(p) Tp the angular velocity in body axes, so

    T = 1/2 sum_b (m v.v + w' J w),    Mbar = sum_b (m Tr' Tr + Kw' J Kw)
    Mbar' = sum_b m (Tr'' Tr + Tr' Tr'') + Kw'' J Kw + Kw' J Kw''   (Kw'' = 2 G(p') Tp + 2 G(p) Tp')
    dT/dq = sum_b m (dv/dq)' v + (dw/dq)' J w,   dv/dq = Tr',  dw/dq = 2 G(p) Tp' + 2 dG(p)w/dp Tp

(' = d/dt, Tr, Tp the rows of Tq for r and p). The one second derivative of the tree
Tq' = d/dt Tq = d(Tq qd)/dq (symmetric second derivatives) comes from one complex-step
evaluation of the tree transform (fmu_mb.mechanics.spatial.tree.transform, reused for x and
Tq): T(q + i h qd) = x + i h xd, Tq(q + i h qd) = Tq + i h Tq', exact to round-off for
h = 1e-20 (no subtraction). dG(p)w/dp has columns G(e_k) w (G is linear in p). Q = Tq' f with
f the element forces by virtual power, V = -sum m gravity . r. The rows (cut joints, drives,
one Euler-parameter normalisation per spherical joint or floating root, conv_q with g = Tq' qd)
and the solve are _spatial_tmt's. T(q, qd) off the normalisation manifold is an extension;
Lagrange's equations with the normalisation rows give the motion of T on the manifold.
"""
import numpy as np

from ...mechanics.spatial import rotations as rot
from ...mechanics.spatial import tree as st
from ...mechanics.spatial.elements import applied_forces
from . import _spatial_tmt

#: complex-step size: Im f(q + i h v) / h = f'(q) v with an error h^2 |v|^2 f'''
_H = 1e-20
#: G(e_k) (4, 3, 4) for the unit quaternions e_k: G(p) = sum_k p_k G(e_k)
_G_UNIT = rot.G_matrix(np.eye(4))


def jets(model, q, qd):
    """x, xd, Tq (7 nb, n) and Tq' = d/dt Tq, by one complex-step evaluation of the tree's
    positions and Jacobian (its own convective term is not used: qd = 0 there)."""
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    xc, _, Tc, _ = st.transform(model, q + 1j * _H * qd, np.zeros_like(q))
    return xc.real, xc.imag / _H, Tc.real, Tc.imag / _H


def kinematics(model, q, qd):
    """x, xd, Tq and g = Tq' qd (the shape of tree.transform) from jets."""
    x, xd, Tq, Tdot = jets(model, q, qd)
    return x, xd, Tq, Tdot @ np.asarray(qd, float)


def energy_terms(model, q, qd):
    """Mbar (n, n), Mbar' = d/dt Mbar (n, n), dT/dq (n,) and x, xd, Tq, Tq' (module doc)."""
    x, xd, Tq, Tdot = jets(model, q, qd)
    C = model.compiled
    nb, n = C.nb, q.shape[0]
    T3, D3 = Tq.reshape(nb, st.NQ, n), Tdot.reshape(nb, st.NQ, n)
    Tr, Tp, Dr, Dp = T3[:, :3], T3[:, 3:], D3[:, :3], D3[:, 3:]
    P = x.reshape(nb, st.NQ)[:, 3:]
    Pd = xd.reshape(nb, st.NQ)[:, 3:]
    m, J = C.mass, C.inertia
    G, Gd = rot.G_matrix(P), rot.G_matrix(Pd)
    Kw = 2.0 * np.einsum("bij,bjn->bin", G, Tp)                       # w = Kw qd
    Kw_t = 2.0 * (np.einsum("bij,bjn->bin", Gd, Tp) + np.einsum("bij,bjn->bin", G, Dp))
    dGw = np.einsum("kij,bj->bik", _G_UNIT, Pd)                        # d(G(p) w)/dp at w = p'
    dw_dq = 2.0 * (np.einsum("bij,bjn->bin", G, Dp) + np.einsum("bik,bkn->bin", dGw, Tp))
    JKw = np.einsum("bij,bjn->bin", J, Kw)
    Mbar = np.einsum("b,bin,bim->nm", m, Tr, Tr) + np.einsum("bin,bim->nm", Kw, JKw)
    Mbar = _spatial_tmt.with_armature(model, Mbar)   # T += 1/2 a qd^2: no velocity term
    MTt = np.einsum("b,bin,bim->nm", m, Dr, Tr) + np.einsum("bin,bim->nm", Kw_t, JKw)
    Mbar_t = MTt + MTt.T                           # Kw' J Kw'' = (Kw'' J Kw)' (J symmetric)
    v = np.einsum("bin,n->bi", Tr, qd)
    w = np.einsum("bin,n->bi", Kw, qd)
    dT_dq = (np.einsum("b,bin,bi->n", m, Dr, v)
             + np.einsum("bin,bij,bj->n", dw_dq, J, w))
    return Mbar, Mbar_t, dT_dq, x, xd, Tq, Tdot


def reduced_equations(model, q, qd, t, u):
    """Mbar (n, n), h (n,) of Mbar qdd = h (+ rows) and x, xd, Tq, g: the shape of
    tmt.reduced_equations, by Lagrange's route: h = Q - dV/dq + dT/dq - Mbar' qd."""
    Mbar, Mbar_t, dT_dq, x, xd, Tq, Tdot = energy_terms(model, q, qd)
    C = model.compiled
    f_gravity = np.zeros_like(x)
    f_gravity.reshape(C.nb, st.NQ)[:, :3] = C.mass[:, None] * np.asarray(model.gravity)
    dV_dq = -(Tq.T @ f_gravity)                    # V = -sum m gravity . r
    Q = Tq.T @ (applied_forces(model, x, xd, t, u, gyroscopic=False) - f_gravity)
    return Mbar, Q - dV_dq + dT_dq - Mbar_t @ qd, x, xd, Tq, Tdot @ qd


def accelerations(model, q, qd, t, u, baumgarte=None):
    """qdd and the cut multipliers: Lagrange's equations with _spatial_tmt's rows."""
    return _spatial_tmt.solve(model, q, qd, t, u, *reduced_equations(model, q, qd, t, u),
                              baumgarte)


def absolute(model, q, qd):
    """(x, xd) = (T(q), Tq qd) for the outputs: the tree's real evaluation (the complex one
    leaves round-off of h^2 = 1e-40 in x where the pose is exactly zero)."""
    return _spatial_tmt.absolute(model, q, qd)
