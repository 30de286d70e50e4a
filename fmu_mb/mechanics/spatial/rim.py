"""Rim contacts: the end circle of a cylinder (a disc, a wheel) on a plane fixed to the ground,
a contact whose point moves on the body (docs/shapes.md).

Contact kind "rim_plane": the circle of radius R centred at C (point, body axes) in the plane
normal to the unit axis a (axis, body axes) against the plane through A (other_point) with
unit normal n (normal), both fixed in the ground. With w = unit(n - (n.a) a), the rim point
nearest the plane is P = C - R w and

    gap = n . (C - A) - R |n - (n.a) a|                       [m]

a smooth function of the pose while the circle is not parallel to the plane (|n.a| < 1). By
the envelope theorem the gap's rate is that of the body's material point at P:
gap' = n . (v + w x rho), rho = P - r (r the centre of mass), so the normal row is a point
row at the current P; its convective term adds the motion of P on the body:

    gap'' = Dc xdd + n . (w x rho'),  rho' = w x (C - r) - R w_dot,
    w_dot = (I - w w^T) d' / |d|,  d' = -(n . a') a - (n . a) a',  a' = w x a

(w the angular velocity; E(p') p' = 0 keeps no other term). The tangential rows are those of
the same material point along the ground-fixed basis of fmu_mb.mechanics.friction. The C
twin is kind 5 of the spatial kernel (native/spatial_kernel.c: rim_point) and of the engine's
contact outputs (native/engine_spatial.h: spatial_contact_term).
"""
from dataclasses import dataclass

import numpy as np

from . import rotations as rot


@dataclass(frozen=True)
class RimRows:
    """Per rim contact k (model.contacts position pos[k]): gap (k,), J (k, 7) the normal row on
    the body's 7 coordinates, conv (k,), Jt (k, 2, 7), conv_t (k, 2), point (k, 3) P."""

    pos: np.ndarray
    body: np.ndarray
    gap: np.ndarray
    J: np.ndarray
    conv: np.ndarray
    Jt: np.ndarray
    conv_t: np.ndarray
    point: np.ndarray


def compile_rims(contacts, idx, tangent_basis):
    """(pos, body index, C, a, A, n, R, t1, t2) arrays of the rim contacts, or None;
    tangent_basis: fmu_mb.mechanics.friction.tangent_basis (passed in: that module imports
    this one)."""
    items = [(k, idx[c.body], c.point, c.axis, c.other_point, c.normal, c.offset)
             for k, c in enumerate(contacts) if c.kind == "rim_plane"]
    if not items:
        return None
    pos, body, C, a, A, n, R = (np.array(v) for v in zip(*items))
    t = np.array([np.concatenate(tangent_basis(v)) for v in n]).reshape(-1, 2, 3)
    return pos.astype(np.intp), body.astype(np.intp), C, a, A, n, R.astype(float), t


def rim_rows(rims, x, xd):
    """RimRows of the compiled rims at absolute coordinates x, xd (7 per body)."""
    pos, body, C, a_l, A0, n, R, t = rims
    k = len(pos)
    gap, conv = np.zeros(k), np.zeros(k)
    J, Jt, conv_t = np.zeros((k, 7)), np.zeros((k, 2, 7)), np.zeros((k, 2))
    point = np.zeros((k, 3))
    for i in range(k):
        q, qd = x[7 * body[i]:7 * body[i] + 7], xd[7 * body[i]:7 * body[i] + 7]
        r, p, pd = q[:3], q[3:], qd[3:]
        Am = rot.matrix(p[None])[0]
        E2 = 2.0 * rot.E_matrix(p[None])[0]
        w_ang = E2 @ pd
        c = r + Am @ C[i]
        a = Am @ a_l[i]
        na = n[i] @ a
        d = n[i] - na * a
        ld = float(np.sqrt(d @ d))
        w = d / ld
        P = c - R[i] * w
        rho = P - r
        gap[i] = n[i] @ (c - A0[i]) - R[i] * ld
        ad = np.cross(w_ang, a)
        dd = -(n[i] @ ad) * a - na * ad
        wd = (dd - w * (w @ dd)) / ld
        rho_d = np.cross(w_ang, c - r) - R[i] * wd
        J[i, :3] = n[i]
        J[i, 3:] = E2.T @ np.cross(rho, n[i])
        conv[i] = n[i] @ np.cross(w_ang, rho_d)
        for j in range(2):
            Jt[i, j, :3] = t[i, j]
            Jt[i, j, 3:] = E2.T @ np.cross(rho, t[i, j])
            conv_t[i, j] = t[i, j] @ np.cross(w_ang, rho_d)
        point[i] = P
    return RimRows(pos, body, gap, J, conv, Jt, conv_t, point)
