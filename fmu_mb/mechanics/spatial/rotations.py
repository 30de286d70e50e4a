"""Euler parameters (unit quaternions) p = (e0, e1, e2, e3), scalar first (Haug, Nikravesh).

    A(p) = (e0^2 - e.e) I + 2 e e' + 2 e0 e~        rotation matrix, body axes -> global
    E(p) = [-e, e~ + e0 I],  G(p) = [-e, -e~ + e0 I]  (3 x 4),   A = E G'
    omega (global axes) = 2 E(p) p',   omega' (body axes) = 2 G(p) p'

A(p) s is a quadratic form in p; for a p that is not of unit length it is |p|^2 times the
rotation of p / |p|. The identities G(p) q = -G(q) p and E(p) q = -E(q) p (used for the
gyroscopic term and the convective terms) hold for any p, q.

Every function is vectorised over a leading axis k: p has shape (k, 4).
"""
import math

import numpy as np


def tilde(v):
    """Skew matrices v~ (k, 3, 3) with v~ w = v x w, for v (k, 3)."""
    k = v.shape[0]
    out = np.zeros((k, 3, 3))
    out[:, 0, 1], out[:, 0, 2] = -v[:, 2], v[:, 1]
    out[:, 1, 0], out[:, 1, 2] = v[:, 2], -v[:, 0]
    out[:, 2, 0], out[:, 2, 1] = -v[:, 1], v[:, 0]
    return out


def cross(a, b):
    """a x b for (k, 3) arrays (np.cross has a large per-call overhead at these sizes)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def rotate(p, s):
    """A(p) s for p (k, 4), s (k, 3) (the quadratic form: exact for any p)."""
    e0, e = p[:, 0:1], p[:, 1:]
    ee = (e * e).sum(axis=1)[:, None]
    es = (e * s).sum(axis=1)[:, None]
    return (e0 * e0 - ee) * s + 2.0 * es * e + 2.0 * e0 * cross(e, s)


def rotate_jacobian(p, s):
    """d(A(p) s)/dp, shape (k, 3, 4) (exact derivative of the quadratic form)."""
    e0, e = p[:, 0], p[:, 1:]
    J = np.empty((p.shape[0], 3, 4))
    J[:, :, 0] = 2.0 * (e0[:, None] * s + cross(e, s))
    es = (e * s).sum(axis=1)
    J[:, :, 1:] = 2.0 * (es[:, None, None] * np.eye(3) + e[:, :, None] * s[:, None, :]
                         - s[:, :, None] * e[:, None, :] - e0[:, None, None] * tilde(s))
    return J


def matrix(p):
    """Rotation matrices A(p) (k, 3, 3)."""
    k = p.shape[0]
    out = np.empty((k, 3, 3))
    for i in range(3):
        unit = np.zeros((k, 3))
        unit[:, i] = 1.0
        out[:, :, i] = rotate(p, unit)
    return out


def E_matrix(p):
    """E(p) (k, 3, 4): omega (global) = 2 E p'."""
    out = np.empty((p.shape[0], 3, 4))
    out[:, :, 0] = -p[:, 1:]
    out[:, :, 1:] = tilde(p[:, 1:]) + p[:, 0, None, None] * np.eye(3)
    return out


def G_matrix(p):
    """G(p) (k, 3, 4): omega' (body axes) = 2 G p'."""
    out = np.empty((p.shape[0], 3, 4))
    out[:, :, 0] = -p[:, 1:]
    out[:, :, 1:] = -tilde(p[:, 1:]) + p[:, 0, None, None] * np.eye(3)
    return out


def from_matrix(R):
    """Unit quaternion (e0, e1, e2, e3) with e0 >= 0 of one rotation matrix R (3, 3).

    Shepperd's method: the largest of 4 e0^2 = 1 + tr R and 4 e_i^2 = 1 - tr R + 2 R_ii
    gives the best-conditioned component, the others follow from sums and differences of
    the off-diagonal terms; normalised (so a nearly orthogonal R gives a nearly equal
    rotation). numpy only: a spatial FMU's start-up does not import scipy."""
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3):
        raise ValueError(f"expected a 3 x 3 rotation matrix, received shape {R.shape}")
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    i = int(np.argmax([R[0, 0], R[1, 1], R[2, 2], tr]))
    q = np.empty(4)
    if i == 3:
        q[0] = 1.0 + tr
        q[1] = R[2, 1] - R[1, 2]
        q[2] = R[0, 2] - R[2, 0]
        q[3] = R[1, 0] - R[0, 1]
    else:
        j, k = (i + 1) % 3, (i + 2) % 3
        q[1 + i] = 1.0 - tr + 2.0 * R[i, i]
        q[1 + j] = R[j, i] + R[i, j]
        q[1 + k] = R[k, i] + R[i, k]
        q[0] = R[k, j] - R[j, k]
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def cardan(alpha, beta, gamma):
    """Unit quaternion of the Cardan angles: A = Rx(alpha) Ry(beta) Rz(gamma) (rotations
    about the body's x, then new y, then new z axes) [rad]: the product of the three
    elementary quaternions, e0 >= 0."""
    qx = np.array([math.cos(alpha / 2), math.sin(alpha / 2), 0.0, 0.0])
    qy = np.array([math.cos(beta / 2), 0.0, math.sin(beta / 2), 0.0])
    qz = np.array([math.cos(gamma / 2), 0.0, 0.0, math.sin(gamma / 2)])
    q = _product(_product(qx, qy), qz)
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def _product(p, q):
    """Quaternion product p q (scalar first): the rotation q, then p."""
    p0, pv, q0, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[p0 * q0 - pv @ qv], p0 * qv + q0 * pv + np.cross(pv, qv)])


def cardan_angles(R):
    """Cardan angles (alpha, beta, gamma) of rotation matrices R (k, 3, 3), A = Rx Ry Rz;
    beta in [-pi/2, pi/2]."""
    alpha = np.arctan2(-R[:, 1, 2], R[:, 2, 2])
    beta = np.arcsin(np.clip(R[:, 0, 2], -1.0, 1.0))
    gamma = np.arctan2(-R[:, 0, 1], R[:, 0, 0])
    return alpha, beta, gamma


def frame_from_axis(axis):
    """A right-handed orthonormal frame (3, 3) whose third column is the unit `axis`; the
    first column is the global axis least aligned with it, made orthogonal."""
    z = np.asarray(axis, dtype=float)
    z = z / np.linalg.norm(z)
    helper = np.eye(3)[int(np.argmin(np.abs(z)))]
    x = helper - z * (helper @ z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)
