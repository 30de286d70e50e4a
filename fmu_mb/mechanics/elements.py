"""Applied forces: gravity, force elements (seed 000 sec. 1.3, seed 003) and actuators.

Element v has an elongation e_v = D_v(x) (a length or a relative angle) with Jacobian D_v,i
and an element force s_v; it enters the equations of motion as -D_v' s (seed 000 eq. 12).
TSDA: s = k (l - l0) + c l' + h (tension positive); RSDA: s = k (theta - theta0) + c theta' + h
with theta = phi_b - phi_a (seed 003). Pure forces and torques enter directly.
"""
import numpy as np

from . import kinematics as kin
from .constraints import extended


def applied_forces(model, x, xd, t, u):
    """f - D_v' s: generalised applied forces in x [N, N, N.m per body], shape (3 nb,).

    u : (n_inputs,) input values (actuator terms h). Spatial models: mechanics.spatial.
    """
    C = model.compiled
    if C.spatial:
        from .spatial import elements as _spatial   # a planar model never loads it
        return _spatial.applied_forces(model, x, xd, t, u)
    n = 3 * C.nb
    f = np.zeros(n + 3)
    gx, gy = model.gravity
    m = C.mass_diag[0::3]
    f[0:n:3] = m * gx
    f[1:n:3] = m * gy
    xe, xde = extended(model, x), extended(model, xd)
    if len(C.tsda):
        s, J = _tsda(C, xe, xde, u)
        f += np.bincount(C.tsda.cols.ravel(), (-J * s[:, None]).ravel(), minlength=n + 3)
    if len(C.rsda):
        s, J = _rsda(C, xe, xde, u)
        f += np.bincount(C.rsda.cols.ravel(), (-J * s[:, None]).ravel(), minlength=n + 3)
    if len(C.frc_body):
        F = _force_vectors(C, xe, u)
        r, phi = kin.body_pose(xe, C.frc_body)
        As = kin.rotate(phi, C.frc_point)
        b = C.frc_body
        np.add.at(f, 3 * b, F[:, 0])
        np.add.at(f, 3 * b + 1, F[:, 1])
        np.add.at(f, 3 * b + 2, kin.cross(As, F))
    if len(C.trq_body):
        T = C.trq_value + _h(C.trq_u, u)
        np.add.at(f, 3 * C.trq_body + 2, T)
        np.add.at(f, 3 * C.trq_reaction + 2, -T)
    return f[:n]


def _h(index, u):
    out = np.zeros(index.shape[0])
    has = index >= 0
    out[has] = u[index[has]]
    return out


def _tsda(C, xe, xde, u):
    length, J, _ = kin.distance(C.tsda, xe, xde)
    ld = kin.rate(J, C.tsda.cols, xde)
    s = C.tsda_k * (length - C.tsda_l0) + C.tsda_c * ld + _h(C.tsda_u, u)
    if C.tsda_gain is not None:                 # hydraulic cylinders: s = c l' - F_hyd
        s = s - C.tsda_gain @ u
    return s, J


def _rsda(C, xe, xde, u):
    theta, J, _ = kin.relative_angle(C.rsda, xe, xde)
    thetad = kin.rate(J, C.rsda.cols, xde)
    s = C.rsda_k * (theta - C.rsda_theta0) + C.rsda_c * thetad + _h(C.rsda_u, u)
    return s, J


def _force_vectors(C, xe, u):
    mag = C.frc_value + _h(C.frc_u, u)
    d = C.frc_dir.copy()
    if C.frc_body_frame.any():
        _, phi = kin.body_pose(xe, C.frc_body)
        rot = kin.rotate(phi, C.frc_dir)
        d[C.frc_body_frame] = rot[C.frc_body_frame]
    return d * mag[:, None]


def element_outputs(model, x, xd, u):
    """Per element, in model.elements order: (force or torque s, elongation e) .

    TSDA: (s [N], length l [m]); RSDA: (s [N.m], theta [rad]); force: (magnitude [N], 0);
    torque: (torque [N.m], 0).
    """
    C = model.compiled
    if C.spatial:
        from .spatial import elements as _spatial   # a planar model never loads it
        return _spatial.element_outputs(model, x, xd, u)
    xe, xde = extended(model, x), extended(model, xd)
    out = np.zeros((len(model.elements), 2))
    kinds = [e.kind for e in model.elements]
    idx = {k: [i for i, kk in enumerate(kinds) if kk == k] for k in ("tsda", "rsda", "force",
                                                                    "torque")}
    idx["tsda"] = [i for i, kk in enumerate(kinds) if kk in ("tsda", "cylinder")]
    if idx["tsda"]:
        s, _ = _tsda(C, xe, xde, u)
        length, _, _ = kin.distance(C.tsda, xe, xde)
        out[idx["tsda"]] = np.stack([s, length], axis=1)
    if idx["rsda"]:
        s, _ = _rsda(C, xe, xde, u)
        theta, _, _ = kin.relative_angle(C.rsda, xe, xde)
        out[idx["rsda"]] = np.stack([s, theta], axis=1)
    if idx["force"]:
        out[idx["force"], 0] = C.frc_value + _h(C.frc_u, u)
    if idx["torque"]:
        out[idx["torque"], 0] = C.trq_value + _h(C.trq_u, u)
    return out


def cylinder_outputs(model, x, xd, u):
    """Per cylinder (model.elements order): pushing force F = -s [N], length l [m], stroke
    l - min_length [m], stroke rate l' [m/s], and the force the cylinder exerts on body b at
    its pin (fx, fy) = F d / l, d = r_b - r_a (global frame; -(fx, fy) on body a) [N];
    shape (n_cylinders, 6)."""
    C = model.compiled
    kinds = [e.kind for e in model.elements if e.kind in ("tsda", "cylinder")]
    rows = [i for i, k in enumerate(kinds) if k == "cylinder"]
    if not rows:
        return np.zeros((0, 6))
    xe, xde = extended(model, x), extended(model, xd)
    s, J = _tsda(C, xe, xde, u)
    length, _, _ = kin.distance(C.tsda, xe, xde)
    ld = kin.rate(J, C.tsda.cols, xde)
    lmin = np.array([e.free_value for e in model.elements if e.kind == "cylinder"])
    ra, _ = kin.points(xe, xde, C.tsda.p, C.tsda.sp)
    rb, _ = kin.points(xe, xde, C.tsda.c, C.tsda.sc)
    F = -s[rows]
    d = (rb - ra)[rows] / length[rows, None]
    return np.stack([F, length[rows], length[rows] - lmin, ld[rows], F * d[:, 0],
                     F * d[:, 1]], axis=1)


def potential_energy(model, x):
    """Gravity potential -m g . r plus spring energies 1/2 k (e - e0)^2 [J]."""
    C = model.compiled
    if C.spatial:
        from .spatial import elements as _spatial   # a planar model never loads it
        return _spatial.potential_energy(model, x)
    n = 3 * C.nb
    m = C.mass_diag[0::3]
    gx, gy = model.gravity
    V = -float(np.sum(m * (gx * x[0:n:3] + gy * x[1:n:3])))
    xe = extended(model, x)
    zero = np.zeros_like(xe)
    if len(C.tsda):
        length, _, _ = kin.distance(C.tsda, xe, zero)
        V += float(np.sum(0.5 * C.tsda_k * (length - C.tsda_l0) ** 2))
    if len(C.rsda):
        theta, _, _ = kin.relative_angle(C.rsda, xe, zero)
        V += float(np.sum(0.5 * C.rsda_k * (theta - C.rsda_theta0) ** 2))
    return V


def mass_times(model, x, a):
    """M(x) a: the mass matrix (diagonal planar, block-diagonal in x spatial) times a."""
    if model.compiled.spatial:
        from .spatial import elements as _spatial   # a planar model never loads it
        return _spatial.mass_matrix(model, x) @ a
    return model.compiled.mass_diag * a


def kinetic_energy(model, xd, x=None):
    """1/2 xd' M xd [J] (x is needed by spatial models, whose M depends on it)."""
    if model.compiled.spatial:
        from .spatial import elements as _spatial   # a planar model never loads it
        return _spatial.kinetic_energy(model, x, xd)
    return 0.5 * float(np.dot(model.compiled.mass_diag * xd, xd))
