"""Lagrange's equations in tree joint coordinates (seed 000 ch.2 eq. 9, 15, 20; seed 004).

    d/dt(dT/dqd) - dT/dq + dV/dq = Q - Dq' lam,     Dq qdd = -conv_q (cut joints, drives)

with T = 1/2 xd' M xd the kinetic energy, V = -sum m gravity . r the gravity potential, and Q
the generalised forces of the force elements and inputs by virtual power (seed 000 ch.2 eq.
11-15: Q = (dx/dq)' (f - f_gravity)). Expanding d/dt(dT/dqd) = M qdd + (d/dq dT/dqd) qd:

    M = d2T/dqd2,   M qdd = Q - dV/dq + dT/dq - (d/dq dT/dqd) qd

An independent route from the TMT module: the body poses x(q) are evaluated once in
truncated hyper-dual ("jet") arithmetic, x(q + eps1 e_i + eps2 qd) with eps1^2 = eps2^2 = 0,
which yields exactly dx/dq, the velocities dx/dq qd and the mixed second derivatives
d/dq_i (dx/dq qd); the energies and their derivatives are formed from those. No Jacobian of
the TMT module is used. Spatial models run through _spatial_lagrange (Lagrange's equations
with the Christoffel terms of Mbar(q) in the spatial tree coordinates).
"""
import sys

import numpy as np

from ...mechanics.elements import applied_forces
from ...mechanics.tree import tree_coordinates, tree_map
from . import _minimal
from . import _spatial_lagrange as _spatial
from . import _spatial_tmt
from ._minimal import COORDINATES, Dynamics  # noqa: F401  (part of the namespace)


# A jet is (v, d1, d2, d12): value (k,), d/dq (k, n), d/d(qd direction) (k,), mixed (k, n).
def _mul(a, b):
    av, a1, a2, a12 = a
    bv, b1, b2, b12 = b
    return (av * bv, av[:, None] * b1 + bv[:, None] * a1, av * b2 + a2 * bv,
            av[:, None] * b12 + a1 * b2[:, None] + b1 * a2[:, None] + a12 * bv[:, None])


def _lin(c1, a, c2, b):
    """c1 a + c2 b for per-row constants c1, c2 (k,)."""
    return tuple(c1.reshape((-1,) + (1,) * (u.ndim - 1)) * u
                 + c2.reshape((-1,) + (1,) * (w.ndim - 1)) * w for u, w in zip(a, b))


def _take(a, idx):
    return tuple(u[idx] for u in a)


def _sum_down(S, a):
    """S' a: add the joints' contributions along the tree (S: (nt, nb))."""
    return tuple(S.T @ u for u in a)


def _rotated(c, sn, s):
    """A(phi) s as two jets, for jets c = cos(phi), sn = sin(phi) and constant s (k, 2)."""
    return (_lin(s[:, 0], c, -s[:, 1], sn), _lin(s[:, 0], sn, s[:, 1], c))


def pose_jets(model, q, qd):
    """Jets of x(q): returns x (3 nb,), J = dx/dq (3 nb, n), xd = J qd (3 nb,),
    Jd = d/dq (J qd) (3 nb, n)."""
    tm = tree_map(model)
    nb, n = tm.nb, tm.n
    qt, qdt = tm.E @ q, tm.E @ qd
    zero_n = np.zeros((tm.nt, n))
    a = tm.sign * tm.revolute
    phi = np.zeros(nb + 1)
    phi[:nb] = tm.S.T @ (tm.sign * (tm.angle0 + qt * tm.revolute))
    phi1 = np.zeros((nb + 1, n))
    phi1[:nb] = tm.S.T @ (a[:, None] * tm.E)
    phi2 = phi1 @ qd
    c, sn = np.cos(phi), np.sin(phi)
    cos_j = (c, -sn[:, None] * phi1, -sn * phi2, -c[:, None] * phi1 * phi2[:, None])
    sin_j = (sn, c[:, None] * phi1, c * phi2, -sn[:, None] * phi1 * phi2[:, None])
    Apx, Apy = _rotated(_take(cos_j, tm.placed), _take(sin_j, tm.placed), tm.s_placed)
    Aox, Aoy = _rotated(_take(cos_j, tm.other), _take(sin_j, tm.other), tm.s_other)
    wx, wy = _rotated(_take(cos_j, tm.parent), _take(sin_j, tm.parent), tm.axis)
    q_j = (qt * tm.sign * tm.prismatic, tm.E * (tm.sign * tm.prismatic)[:, None],
           qdt * tm.sign * tm.prismatic, zero_n)
    one = np.ones(tm.nt)
    cx = _lin(one, _lin(one, Apx, -one, Aox), one, _mul(q_j, wx))
    cy = _lin(one, _lin(one, Apy, -one, Aoy), one, _mul(q_j, wy))
    rx, ry = _sum_down(tm.S, cx), _sum_down(tm.S, cy)
    x, J = np.empty(3 * nb), np.empty((3 * nb, n))
    xd, Jd = np.empty(3 * nb), np.empty((3 * nb, n))
    for k, jet in enumerate((rx, ry, (phi[:nb], phi1[:nb], phi2[:nb], np.zeros((nb, n))))):
        x[k::3], J[k::3], xd[k::3], Jd[k::3] = jet
    return x, J, xd, Jd


def coordinates(model):
    """Names of q: '<joint>.angle' / '<joint>.position' of the tree joints."""
    if model.spatial:
        return _spatial_tmt.coordinates(model)
    return tree_coordinates(model)


def equations(model, q, qd, t, u):
    """M (n, n) and the right-hand side h (n,) of M qdd = h (before cut-joint forces):
    h = Q - dV/dq + dT/dq - (d/dq dT/dqd) qd. Also returns x, xd, J, Jd."""
    x, J, xd, Jd = pose_jets(model, q, qd)
    m = model.compiled.mass_diag
    gx, gy = model.gravity
    p = m * xd                                   # momenta in x
    M = J.T @ (m[:, None] * J)                   # d2T/dqd2
    dT_dq = Jd.T @ p                             # sum m xd . d(xd)/dq
    dp_dq_qd = Jd.T @ p + J.T @ (m * (Jd @ qd))  # d/dq (dT/dqd) qd
    f_gravity = np.zeros_like(x)
    f_gravity[0::3], f_gravity[1::3] = m[0::3] * gx, m[1::3] * gy
    dV_dq = -(J.T @ f_gravity)                   # V = -sum m gravity . r
    Q = J.T @ (applied_forces(model, x, xd, t, u) - f_gravity)
    return M, Q - dV_dq + dT_dq - dp_dq_qd, x, xd, J, Jd


def accelerations(model, q, qd, t, u, baumgarte=None):
    """Solve Lagrange's equations with the cut-joint and drive rows for qdd and lam."""
    if model.spatial:
        return _spatial.accelerations(model, q, qd, t, u, baumgarte)
    M, h, x, xd, J, Jd = equations(model, q, qd, t, u)
    g = Jd @ qd
    phi, Dq, conv, phi_t = _minimal.cut_rows(model, x, xd, J, g, t)
    qdd, lam_cut = _minimal.solve(model, M, h, phi, Dq, conv, phi_t, qd, baumgarte)
    return Dynamics(qdd, lam_cut, tree_map(model).cut_rows, x, xd, J @ qdd + g, t, u)


def kinematics(model, q, qd):
    """x, xd, J = dx/dq and g = (d/dq J qd) qd from the jets (the shape of tree.transform)."""
    if model.spatial:
        return _spatial.kinematics(model, q, qd)
    x, J, xd, Jd = pose_jets(model, q, qd)
    return x, xd, J, Jd @ qd


def reduced_equations(model, q, qd, t, u):
    """M (n, n), h (n,) of M qdd = h (+ cut rows) and x, xd, J, g: the shape of
    tmt.reduced_equations, by Lagrange's route."""
    if model.spatial:
        return _spatial.reduced_equations(model, q, qd, t, u)
    M, h, x, xd, J, Jd = equations(model, q, qd, t, u)
    return M, h, x, xd, J, Jd @ qd


def absolute(model, q, qd):
    """(x, xd) from the jets of x(q)."""
    if model.spatial:
        return _spatial.absolute(model, np.asarray(q, float), np.asarray(qd, float))
    x, _, xd, _ = pose_jets(model, np.asarray(q, float), np.asarray(qd, float))
    return x, xd


def initial_state(model):
    if model.spatial:                   # q0 from the assembled relative poses, as tmt
        return _spatial_tmt.initial_state(model)
    return _minimal.initial_state(model, sys.modules[__name__])


def project(model, y, t, tol):
    if model.spatial:                   # a kinematic projection: the same as tmt's
        return _spatial_tmt.project(model, y, t, tol)
    return _minimal.project(model, y, t, tol, kinematics)


def lam(model, dyn):
    """Every Newton-Euler multiplier, recovered from the motion of dyn (as tmt)."""
    if model.spatial:
        return _spatial_tmt.lam(model, dyn)
    return _minimal.lam(model, dyn)


def dae_terms(model, q, qd, t, u):
    """The index-3 DAE of this formulation (formulations.dae), from reduced_equations."""
    return _minimal.dae_terms(model, q, qd, t, u, reduced_equations)
