"""Constraint rows of the joints and drives: residual phi, Jacobian D, convective term conv.

Sign convention, written once (seed 000 ch.1 eq. 8 and 12):

    M xdd + D' lam = f - Dv' s,      D xdd = -conv,      conv = D_{k,pq} xd_p xd_q + phi_tt

so the constraint force acting on the bodies is -D' lam. Rows per joint (phi = 0):

- revolute: r_c(child_point) - r_p(parent_point), 2 rows [m]; lam in N;
- weld: the revolute rows plus phi_c - phi_p - angle0 (1 row [rad], lam in N.m);
- prismatic: (r_c - r_p) . n with n the axis normal fixed in the parent [m], and
  phi_c - phi_p - angle0 [rad]; lam in N and N.m;
- distance: |r_c - r_p| - length [m]; lam is the link tension [N];
- drive on a joint coordinate q: q(x) - f(t) [rad or m]; the driving effort along q is -lam.

`reactions()` maps lam to the force and torque that the parent exerts on the child at the
child's joint point, in the global frame.
"""
import numpy as np

from . import kinematics as kin


def extended(model, x):
    """x with the ground's three zero coordinates appended (see kinematics)."""
    if model.compiled.spatial:
        from .spatial import constraints as _spatial   # a planar model never loads it
        return _spatial.extended(x)
    out = np.zeros(x.shape[0] + 3)
    out[:-3] = x
    return out


def evaluate(model, x, xd, t, need_conv=True):
    """Constraint rows at (x, xd, t).

    Returns phi (m,), D (m, 3 nb), conv (m,), phi_t (m,) (time derivative at fixed x; nonzero
    only for drive rows). conv is None when need_conv is False.
    """
    C = model.compiled
    if C.spatial:
        from .spatial import constraints as _spatial   # a planar model never loads it
        return _spatial.evaluate(model, x, xd, t, need_conv)
    xe, xde = extended(model, x), extended(model, xd)
    m, ncol = C.n_rows, 3 * C.nb + 3
    phi = np.empty(m)
    D = np.zeros((m, ncol))
    conv = np.empty(m)
    phi_t = np.zeros(m)
    if len(C.pd):
        val, J, cv = kin.point_difference(C.pd, xe, xde)
        phi[C.pd_rows] = val
        D[C.pd_rows[:, :, None], C.pd.cols[:, None, :]] = J
        conv[C.pd_rows] = cv
    if len(C.ang):
        val, J, cv = kin.relative_angle(C.ang, xe, xde)
        _put(phi, D, conv, C.ang_rows, C.ang.cols, val - C.ang_offset, J, cv)
    if len(C.prj):
        val, J, cv = kin.projection(C.prj, xe, xde, C.prj_w0)
        _put(phi, D, conv, C.prj_rows, C.prj.cols, val, J, cv)
    if len(C.dst):
        val, J, cv = kin.distance(C.dst, xe, xde)
        _put(phi, D, conv, C.dst_rows, C.dst.cols, val - C.dst_length, J, cv)
    for row, kind, ps, extra, motion in C.drives:
        if kind == "angle":
            val, J, cv = kin.relative_angle(ps, xe, xde)
            val = val - extra
        else:
            val, J, cv = kin.projection(ps, xe, xde, extra)
        phi[row] = val[0] - motion.value(t)
        D[row, ps.cols[0]] = J[0]
        conv[row] = cv[0] - motion.acceleration(t)
        phi_t[row] = -motion.rate(t)
    return phi, D[:, :-3], (conv if need_conv else None), phi_t


def _put(phi, D, conv, rows, cols, val, J, cv):
    phi[rows] = val
    D[rows[:, None], cols] = J
    conv[rows] = cv


def joint_coordinates(model, x, xd):
    """Joint coordinates q_j and rates qd_j of the revolute and prismatic joints.

    Returns q (nq,), qd (nq,), J (nq, 3 nb) and conv (nq,) in `compiled.coord_joints` order
    (angles [rad] relative to angle0, positions [m] along the axis).
    """
    C = model.compiled
    if C.spatial:
        from .spatial import constraints as _spatial   # a planar model never loads it
        return _spatial.joint_coordinates(model, x, xd)
    xe, xde = extended(model, x), extended(model, xd)
    nq = len(C.coord_joints)
    q, qd, conv = np.zeros(nq), np.zeros(nq), np.zeros(nq)
    Jfull = np.zeros((nq, 3 * C.nb + 3))
    if len(C.coord_ang):
        val, J, cv = kin.relative_angle(C.coord_ang, xe, xde)
        pos = C.coord_ang_pos
        q[pos] = val - C.coord_ang_offset
        qd[pos] = kin.rate(J, C.coord_ang.cols, xde)
        Jfull[pos[:, None], C.coord_ang.cols] = J
        conv[pos] = cv
    if len(C.coord_prj):
        val, J, cv = kin.projection(C.coord_prj, xe, xde, C.coord_prj_w0)
        pos = C.coord_prj_pos
        q[pos] = val
        qd[pos] = kin.rate(J, C.coord_prj.cols, xde)
        Jfull[pos[:, None], C.coord_prj.cols] = J
        conv[pos] = cv
    return q, qd, Jfull[:, :-3], conv


def reactions(model, x, D, lam):
    """Force (fx, fy) [N] and torque [N.m] of the parent on the child of every joint.

    The constraint force on the bodies is -D' lam; the child's part is reduced to the child's
    joint point (so a revolute joint's torque is zero). Returns an array (n_joints, 3)
    (spatial: (n_joints, 6), force and torque in global axes).
    """
    if model.compiled.spatial:
        from .spatial import constraints as _spatial   # a planar model never loads it
        return _spatial.reactions(model, x, D, lam)
    out = np.zeros((len(model.joints), 3))
    for j, (joint, rows) in enumerate(zip(model.joints, model.compiled.joint_rows)):
        ci = model.body(joint.child).index if joint.child != "ground" else None
        if ci is None:
            # child is the ground: report minus the force on the parent
            pi = model.body(joint.parent).index
            F = D[rows, 3 * pi:3 * pi + 3].T @ lam[rows]
            r_arm = _arm(x, pi, joint.parent_point)
        else:
            F = -(D[rows, 3 * ci:3 * ci + 3].T @ lam[rows])
            r_arm = _arm(x, ci, joint.child_point)
        torque = F[2] - (r_arm[0] * F[1] - r_arm[1] * F[0])
        out[j] = (F[0], F[1], torque)
    return out


def _arm(x, i, point):
    phi = x[3 * i + 2]
    c, s = np.cos(phi), np.sin(phi)
    return np.array([c * point[0] - s * point[1], s * point[0] + c * point[1]])
