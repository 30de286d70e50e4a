"""Spatial constraint rows: residual phi, Jacobian D, convective term conv, phi_t.

The same equations as the planar rows (fmu_mb.mechanics.constraints, seed 000 ch.1 eq. 12):

    M q'' + D' lam = f - Dv' s,      D q'' = -conv

with q = (r, p) per body. Rows per joint, from the joint frames (x, y, z axes and a point on
parent and child, coinciding at the reference pose; kinematics.JointFrames), phi = 0:

- spherical: d = r_c(sc) - r_p(sp) (3 rows) [m];
- revolute (axis z): d, x_p . z_c, y_p . z_c;
- universal (parent axis z_p, child axis z_c): d, z_p . z_c;
- cylindrical (axis z): x_p . d, y_p . d, x_p . z_c, y_p . z_c;
- prismatic (axis z): the cylindrical rows and x_p . y_c;
- weld (fixed): d, x_p . z_c, y_p . z_c, x_p . y_c;
- distance: |d| - length (lam is the link tension [N]);
- per body the Euler-parameter normalisation p . p - 1 (last rows);
- drive on a revolute angle or prismatic position q: q(x) - f(t);
- coupler of two joint coordinates: q_a(x) - ratio q_b(x) - offset.
"""
import numpy as np

from . import kinematics as kin
from . import rotations as rot

ROWS = {"spherical": 3, "revolute": 5, "universal": 4, "cylindrical": 4, "prismatic": 5,
        "weld": 6, "distance": 1}
FREEDOM = {"spherical": 3, "revolute": 1, "universal": 2, "cylindrical": 2, "prismatic": 1,
           "weld": 0, "distance": 5}


def extended(x):
    """x with the ground's coordinates (r = 0, p = (1, 0, 0, 0)) appended."""
    out = np.zeros(x.shape[0] + kin.NQ)
    out[:-kin.NQ] = x
    out[-4] = 1.0
    return out


def extended_rate(xd):
    out = np.zeros(xd.shape[0] + kin.NQ)
    out[:-kin.NQ] = xd
    return out


def joint_terms(kind, jf, length=None):
    """The scalar Terms (k, n_rows) of the rows of joints of one kind, in row order."""
    d = jf.d() if kind != "cylindrical" and kind != "prismatic" else None
    xp, yp = jf.axis(0, 0), jf.axis(0, 1)
    terms = []
    if kind in ("spherical", "revolute", "universal", "weld"):
        terms += [_component(d, i) for i in range(3)]
    if kind in ("cylindrical", "prismatic"):
        dd = jf.d()
        terms += [kin.dot(xp, dd), kin.dot(yp, dd)]
    if kind in ("revolute", "cylindrical", "prismatic", "weld"):
        zc = jf.axis(1, 2)
        terms += [kin.dot(xp, zc), kin.dot(yp, zc)]
    if kind in ("prismatic", "weld"):
        terms.append(kin.dot(xp, jf.axis(1, 1)))
    if kind == "universal":
        terms.append(kin.dot(jf.axis(0, 2), jf.axis(1, 2)))
    if kind == "distance":
        n = kin.norm(d)
        terms.append(kin.Term(n.val - length, n.J, n.rate, n.conv))
    return terms


def _component(v, i):
    return kin.Term(v.val[:, i], v.J[:, i, :], v.rate[:, i], v.conv[:, i])


def coordinate_term(kind, jf):
    """Joint coordinate Term: "revolute" angle [rad] or "prismatic" position z_p . d [m];
    universal joint: "universal1" the turn of the child's axis z_c about the parent's axis z_p
    (from x_p), "universal2" the turn of the child about z_c (x_c from z_p) [rad]."""
    if kind == "revolute":
        return jf.rotation_angle()
    if kind == "universal1":
        zc = jf.axis(1, 2)
        return kin.angle(kin.dot(jf.axis(0, 0), zc), kin.dot(jf.axis(0, 1), zc))
    if kind == "universal2":
        zp = jf.axis(0, 2)
        return kin.angle(kin.dot(jf.axis(1, 0), zp), kin.dot(jf.axis(1, 1), zp).scale(-1.0))
    return kin.dot(jf.axis(0, 2), jf.d())


def evaluate(model, x, xd, t, need_conv=True):
    """Constraint rows at (x, xd, t): phi (m,), D (m, 7 nb), conv (m,) or None, phi_t (m,)."""
    C = model.compiled
    xe, xde = extended(x), extended_rate(xd)
    B = kin.bodies(xe, xde)
    m, n_ext = C.n_rows, xe.shape[0]
    phi, conv, phi_t = np.empty(m), np.zeros(m), np.zeros(m)
    D = np.zeros((m, n_ext))
    for g in C.joint_groups:
        jf = g.frames(B)
        for r, term in enumerate(joint_terms(g.kind, jf, g.length)):
            rows = g.rows[:, r]
            phi[rows] = term.val
            kin.put(D, rows, g.pairs.cols, term.J)
            conv[rows] = term.conv
    for row, g, motion in C.drives:
        term = coordinate_term(g.kind, g.frames(B))
        res = term.val[0] - motion.value(t)
        if g.kind == "revolute":                  # the angle is measured in (-pi, pi]
            res = (res + np.pi) % (2.0 * np.pi) - np.pi
        phi[row] = res
        kin.put(D, np.array([row]), g.pairs.cols, term.J)
        conv[row] = term.conv[0] - motion.acceleration(t)
        phi_t[row] = -motion.rate(t)
    for row, ga, gb, ratio, offset in C.couplers:
        ta = coordinate_term(ga.kind, ga.frames(B))
        tb = coordinate_term(gb.kind, gb.frames(B))
        res = ta.val[0] - ratio * tb.val[0] - offset
        if ga.kind == "revolute":                 # angles are measured in (-pi, pi]
            res = (res + np.pi) % (2.0 * np.pi) - np.pi
        phi[row] = res
        D[row, ga.pairs.cols[0]] += ta.J[0]          # (the joints may share a body)
        D[row, gb.pairs.cols[0]] -= ratio * tb.J[0]
        conv[row] = ta.conv[0] - ratio * tb.conv[0]
    nb = C.nb
    p = x.reshape(nb, kin.NQ)[:, 3:]
    pd = xd.reshape(nb, kin.NQ)[:, 3:]
    rows = C.norm_rows
    phi[rows] = np.einsum("ki,ki->k", p, p) - 1.0
    cols = kin.NQ * np.arange(nb)[:, None] + np.arange(3, 7)
    D[rows[:, None], cols] = 2.0 * p
    conv[rows] = 2.0 * np.einsum("ki,ki->k", pd, pd)
    return phi, D[:, :-kin.NQ], (conv if need_conv else None), phi_t


def joint_coordinates(model, x, xd):
    """Coordinates q_j and rates qd_j of the revolute (angle in (-pi, pi]) and prismatic
    joints, with their Jacobian (nq, 7 nb) and convective terms, compiled.coord_joints order."""
    C = model.compiled
    xe, xde = extended(x), extended_rate(xd)
    B = kin.bodies(xe, xde)
    nq = len(C.coord_joints)
    q, qd, conv = np.zeros(nq), np.zeros(nq), np.zeros(nq)
    J = np.zeros((nq, xe.shape[0]))
    for g in C.coord_groups:
        term = coordinate_term(g.kind, g.frames(B))
        pos = g.rows[:, 0]
        q[pos], qd[pos], conv[pos] = term.val - g.length, term.rate, term.conv
        kin.put(J, pos, g.pairs.cols, term.J)
    return q, qd, J[:, :-kin.NQ], conv


def generalized_to_wrench(p, Q):
    """Force F (3) and torque n (3, global axes, about the centre of mass) of a generalised
    force Q (7) = (Q_r, Q_p) of one body: Q_p = 2 E' n + (a part along p, which only the
    normalisation row feels), so n = E Q_p / 2 for a unit p."""
    E = rot.E_matrix(p[None])[0]
    return Q[:3], 0.5 * E @ Q[3:]


def reactions(model, x, D, lam):
    """Force (fx, fy, fz) [N] and torque (tx, ty, tz) [N.m] of the parent on the child of
    every joint at the child's joint point, global axes: the child's part of -D' lam (the
    parent's part with the opposite sign when the child is the ground). (n_joints, 6)."""
    C = model.compiled
    out = np.zeros((len(model.joints), 6))
    X = x.reshape(C.nb, kin.NQ)
    for j, (joint, rows) in enumerate(zip(model.joints, C.joint_rows)):
        if joint.child != "ground":
            b, s, sign = model.body(joint.child).index, joint.child_point, -1.0
        else:
            b, s, sign = model.body(joint.parent).index, joint.parent_point, 1.0
        Q = sign * (D[rows, kin.NQ * b:kin.NQ * b + kin.NQ].T @ lam[rows])
        F, n = generalized_to_wrench(X[b, 3:], Q)
        arm = rot.rotate(X[b, 3:][None], np.asarray(s, float)[None])[0]
        out[j, :3], out[j, 3:] = F, n - np.cross(arm, F)
    return out
