"""Planar kinematics of body-fixed points, vectorised over many pairs of bodies.

Absolute coordinates x hold (x, y, phi) per moving body (seed 000 ch.1, seed 003). The ground
is stored as an extra body at index nb whose coordinates are all zero, so every primitive below
works on the *extended* vectors x_ext, xd_ext of length 3 (nb + 1); the ground's columns are
dropped when a Jacobian is assembled.

A point s fixed in body b (local frame) is at r_b + A(phi_b) s; its velocity is
v_b + perp(A s) omega_b and its acceleration a_b + perp(A s) omegad_b - A s omega_b^2, with
perp(v) = (-v_y, v_x). Each primitive returns

- val  : the scalar (or 2-vector) value,
- J    : its Jacobian with respect to [x_p, y_p, phi_p, x_c, y_c, phi_c], shape (k, 6)
         (or (k, 2, 6)), columns given by `PairSet.cols`,
- conv : the convective term d(J)/dt xd, so that val'' = J xdd + conv (seed 000: D_{k,pq}
         xd_p xd_q).

These are the constraint rows of the joints, the elongations of the force elements and the
joint coordinates alike, so one tested function serves all of them.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class PairSet:
    """k pairs (parent p, child c) of bodies with a local point on each.

    p, c : (k,) body indices (nb for the ground); sp, sc : (k, 2) local points [m];
    cols : (k, 6) column indices in x_ext of [x_p, y_p, phi_p, x_c, y_c, phi_c].
    """

    p: np.ndarray
    c: np.ndarray
    sp: np.ndarray
    sc: np.ndarray
    cols: np.ndarray

    @classmethod
    def make(cls, p, c, sp, sc):
        p = np.asarray(p, dtype=np.intp).reshape(-1)
        c = np.asarray(c, dtype=np.intp).reshape(-1)
        sp = np.asarray(sp, dtype=float).reshape(-1, 2)
        sc = np.asarray(sc, dtype=float).reshape(-1, 2)
        cols = np.stack([3 * p, 3 * p + 1, 3 * p + 2, 3 * c, 3 * c + 1, 3 * c + 2], axis=1)
        for a in (p, c, sp, sc, cols):
            a.setflags(write=False)
        return cls(p, c, sp, sc, cols)

    def __len__(self):
        return len(self.p)


def rotate(phi, s):
    """A(phi) s for arrays phi (k,) and s (k, 2)."""
    cs, sn = np.cos(phi), np.sin(phi)
    s0, s1 = s[:, 0], s[:, 1]
    a, b = cs * s0 - sn * s1, sn * s0 + cs * s1
    out = np.empty(a.shape + (2,))
    out[:, 0], out[:, 1] = a, b
    return out


def perp(v):
    """Rotate (k, 2) vectors by +90 degrees: perp(A s) = dA/dphi s."""
    out = np.empty((v.shape[0], 2))
    out[:, 0] = -v[:, 1]
    out[:, 1] = v[:, 0]
    return out


def cross(a, b):
    """z-component of a x b for (k, 2) arrays."""
    return a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]


def body_pose(x_ext, idx):
    """Positions (k, 2), angles (k,) of bodies idx in x_ext."""
    b = x_ext.reshape(-1, 3)[idx]
    return b[:, :2], b[:, 2]


def _frames(ps, x_ext, xd_ext):
    xb, vb = x_ext.reshape(-1, 3), xd_ext.reshape(-1, 3)
    bp, bc, vp, vc = xb[ps.p], xb[ps.c], vb[ps.p], vb[ps.c]
    phi_p, phi_c, w_p, w_c = bp[:, 2], bc[:, 2], vp[:, 2], vc[:, 2]
    Asp = rotate(phi_p, ps.sp)
    Asc = rotate(phi_c, ps.sc)
    d = bc[:, :2] + Asc - bp[:, :2] - Asp                       # point c minus point p
    dd = vc[:, :2] + perp(Asc) * w_c[:, None] - vp[:, :2] - perp(Asp) * w_p[:, None]
    acc = -Asc * (w_c ** 2)[:, None] + Asp * (w_p ** 2)[:, None]  # convective part of d''
    return Asp, Asc, phi_p, phi_c, w_p, w_c, d, dd, acc


def point_difference(ps, x_ext, xd_ext):
    """d = r_c(sc) - r_p(sp), both components (revolute and weld rows).

    Returns val (k, 2), J (k, 2, 6), conv (k, 2).
    """
    Asp, Asc, *_, d, dd, acc = _frames(ps, x_ext, xd_ext)
    k = len(ps)
    J = np.zeros((k, 2, 6))
    J[:, 0, 0] = -1.0
    J[:, 1, 1] = -1.0
    J[:, 0, 2] = Asp[:, 1]
    J[:, 1, 2] = -Asp[:, 0]
    J[:, 0, 3] = 1.0
    J[:, 1, 4] = 1.0
    J[:, 0, 5] = -Asc[:, 1]
    J[:, 1, 5] = Asc[:, 0]
    return d, J, acc


def relative_angle(ps, x_ext, xd_ext):
    """theta = phi_c - phi_p (seed 003: theta_ij = phi_j - phi_i). Returns val, J, conv."""
    _, phi_p = body_pose(x_ext, ps.p)
    _, phi_c = body_pose(x_ext, ps.c)
    k = len(ps)
    J = np.zeros((k, 6))
    J[:, 2] = -1.0
    J[:, 5] = 1.0
    return phi_c - phi_p, J, np.zeros(k)


def projection(ps, x_ext, xd_ext, w0):
    """(r_c(sc) - r_p(sp)) . A(phi_p) w0 : distance along a direction fixed in the parent.

    w0 : (k, 2) unit vectors in the parent frame. Prismatic rows (w0 normal to the axis) and
    the prismatic joint coordinate (w0 along the axis). Returns val, J (k, 6), conv.
    """
    # component by component (the (k, 2) products of _frames and the two-term scalar
    # products written out: the same operations in the same order, fewer array calls)
    xb, vb = x_ext.reshape(-1, 3), xd_ext.reshape(-1, 3)
    bp, bc, vp, vc = xb[ps.p], xb[ps.c], vb[ps.p], vb[ps.c]
    phi_p, w_p, w_c = bp[:, 2], vp[:, 2], vc[:, 2]
    cp, sp = np.cos(phi_p), np.sin(phi_p)
    cc, sc = np.cos(bc[:, 2]), np.sin(bc[:, 2])
    sp0, sp1, sc0, sc1 = ps.sp[:, 0], ps.sp[:, 1], ps.sc[:, 0], ps.sc[:, 1]
    ap0, ap1 = cp * sp0 - sp * sp1, sp * sp0 + cp * sp1          # A(phi_p) sp
    ac0, ac1 = cc * sc0 - sc * sc1, sc * sc0 + cc * sc1          # A(phi_c) sc
    d0 = bc[:, 0] + ac0 - bp[:, 0] - ap0                          # point c minus point p
    d1 = bc[:, 1] + ac1 - bp[:, 1] - ap1
    dd0 = vc[:, 0] + (-ac1) * w_c - vp[:, 0] - (-ap1) * w_p
    dd1 = vc[:, 1] + ac0 * w_c - vp[:, 1] - ap0 * w_p
    wc2, wp2 = w_c ** 2, w_p ** 2
    acc0 = (-ac0) * wc2 + ap0 * wp2                               # convective part of d''
    acc1 = (-ac1) * wc2 + ap1 * wp2
    w00, w01 = w0[:, 0], w0[:, 1]
    e0, e1 = cp * w00 - sp * w01, sp * w00 + cp * w01             # w = A(phi_p) w0
    val = d0 * e0 + d1 * e1
    J = np.empty((len(ps), 6))
    J[:, 0] = -e0
    J[:, 1] = -e1
    J[:, 2] = -((-ap1) * e0 + ap0 * e1) + (d0 * (-e1) + d1 * e0)
    J[:, 3] = e0
    J[:, 4] = e1
    J[:, 5] = (-ac1) * e0 + ac0 * e1
    conv = (acc0 * e0 + acc1 * e1) + 2.0 * w_p * (dd0 * (-e1) + dd1 * e0) - val * w_p ** 2
    return val, J, conv


def distance(ps, x_ext, xd_ext):
    """l = |r_c(sc) - r_p(sp)|: distance joints and translational spring-dampers (TSDA).

    Returns val (k,), J (k, 6), conv (k,). Undefined at l = 0 (callers guard it).
    """
    Asp, Asc, *_, d, dd, acc = _frames(ps, x_ext, xd_ext)
    length = np.sqrt(np.einsum("ij,ij->i", d, d))
    e = d / length[:, None]
    J = np.empty((len(ps), 6))
    J[:, 0:2] = -e
    J[:, 2] = -np.einsum("ij,ij->i", e, perp(Asp))
    J[:, 3:5] = e
    J[:, 5] = np.einsum("ij,ij->i", e, perp(Asc))
    edd = np.einsum("ij,ij->i", e, dd)
    conv = np.einsum("ij,ij->i", e, acc) + (np.einsum("ij,ij->i", dd, dd) - edd ** 2) / length
    return length, J, conv


def rate(J, cols, xd_ext):
    """Time derivative J xd of a primitive with Jacobian J (k, 6) or (k, r, 6)."""
    v = xd_ext[cols]
    if J.ndim == 3:
        return np.einsum("krj,kj->kr", J, v)
    return np.einsum("kj,kj->k", J, v)


def points(x_ext, xd_ext, body, s):
    """Global positions (k, 2) and velocities (k, 2) of local points s (k, 2) on bodies."""
    r, phi = body_pose(x_ext, body)
    v, w = body_pose(xd_ext, body)
    As = rotate(phi, s)
    return r + As, v + perp(As) * w[:, None]
