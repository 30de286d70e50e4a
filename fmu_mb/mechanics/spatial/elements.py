"""Spatial applied forces, mass matrix and energies (seed 000 sec. 1.3, seed 003; Haug's
Euler-parameter form of the Newton-Euler equations).

Per body, q = (r, p):

    M = diag(m I3, 4 G' J G),     f = (m gravity, 8 G(p')' J G(p') p) + element forces

with J the inertia tensor about the centre of mass in body axes. 4 G' J G is singular along p
(G p = 0): the normalisation row p . p = 1 makes the KKT system regular. The quadratic
velocity term follows from Lagrange's equations with T = 1/2 m r'.r' + 2 p'' G' J G p',
using G(p) p' = -G(p') p: d/dt(dT/dp') - dT/dp = 4 G'JG p'' + 8 G(p')'J G p' = ..., and
G p' = -G(p') p. It equals the gyroscopic term -omega' x (J omega') (body axes) mapped by 2 G'.

Force elements (element force s enters as -Dv' s, seed 000 eq. 12):
- TSDA: l = |r_b(sb) - r_a(sa)|, s = k (l - l0) + c l' + h, positive in tension [N];
- RSDA on a revolute joint: theta = the joint angle, s = k (theta - theta0) + c theta' + h
  [N.m] with theta - theta0 taken in (-pi, pi], acting to decrease theta;
- bushing between frame a (at sa, axes Fa) and frame b: e = (d . x_a, d . y_a, d . z_a,
  theta_x, theta_y, theta_z) with d = r_b(sb) - r_a(sa) and theta the small rotation of frame
  b relative to frame a (kinematics.JointFrames.small_rotation), in frame a's axes;
  s = K (e - e0) + C e' [N, N.m]: s acts on b against e (on b: -s, on a: +s);
- force: (value + h) along a unit direction (global or body axes) at a body point [N];
- torque: (value + h) about a unit direction (global or body axes) [N.m], the opposite torque
  on the reaction body.
"""
import numpy as np

from . import kinematics as kin
from . import rotations as rot
from .constraints import coordinate_term, extended, extended_rate


def _bodies(model, x, xd):
    nb = model.compiled.nb
    X, Xd = x.reshape(nb, kin.NQ), xd.reshape(nb, kin.NQ)
    return X[:, :3], X[:, 3:], Xd[:, :3], Xd[:, 3:]


def mass_matrix(model, x):
    """M (7 nb, 7 nb): blocks m I3 and 4 G' J G."""
    C = model.compiled
    nb = C.nb
    _, p, _, _ = _bodies(model, x, x)
    G = rot.G_matrix(p)
    Mp = 4.0 * np.einsum("kai,kab,kbj->kij", G, C.inertia, G)
    M = np.zeros((kin.NQ * nb, kin.NQ * nb))
    for b in range(nb):
        o = kin.NQ * b
        M[o:o + 3, o:o + 3] = C.mass[b] * np.eye(3)
        M[o + 3:o + 7, o + 3:o + 7] = Mp[b]
    return M


def wrap(a):
    """Angles into (-pi, pi]: the RSDA's theta - theta0, so that its spring has no jump where
    the joint angle (in (-pi, pi]) wraps."""
    return np.pi - (np.pi - a) % (2.0 * np.pi)


def _h(index, u):
    out = np.zeros(index.shape[0])
    has = index >= 0
    out[has] = u[index[has]]
    return out


def applied_forces(model, x, xd, t, u, gyroscopic=True):
    """f - Dv' s (7 nb,): gravity, the quadratic velocity (gyroscopic) term and the force
    elements, in the coordinates (r, p) of every body (gyroscopic=False: without the
    quadratic velocity term, which Lagrange's route forms from the kinetic energy itself)."""
    C = model.compiled
    nb = C.nb
    _, p, _, pd = _bodies(model, x, xd)
    f = np.zeros(kin.NQ * (nb + 1))
    F = f.reshape(nb + 1, kin.NQ)
    F[:nb, :3] = C.mass[:, None] * np.asarray(model.gravity)
    if gyroscopic:
        Gd = rot.G_matrix(pd)
        F[:nb, 3:] = 8.0 * np.einsum("kai,kab,kbj,kj->ki", Gd, C.inertia, Gd, p)
    xe, xde = extended(x), extended_rate(xd)
    B = kin.bodies(xe, xde)
    for s, term, pairs in _element_terms(C, B, u):
        kin.add(f, pairs.cols, -term.J * s[:, None])
    if len(C.frc_body):
        Fv, _ = _force_vectors(C, xe, u)
        pairs = kin.Pairs.make(C.frc_body, C.frc_body)
        pt = kin.vector(pairs, B, 0, C.frc_point, True)
        kin.add(f, pairs.cols[:, :7], np.einsum("ki,kij->kj", Fv, pt.J[:, :, :7]))
    if len(C.trq_body):
        n = _torque_vectors(C, xe, u)
        for body, sign in ((C.trq_body, 1.0), (C.trq_reaction, -1.0)):
            pb = xe.reshape(-1, kin.NQ)[body, 3:]
            Q = 2.0 * np.einsum("kij,ki->kj", rot.E_matrix(pb), sign * n)
            kin.add(f, kin.NQ * body[:, None] + np.arange(3, 7), Q)
    return f[:-kin.NQ]


def _element_terms(C, B, u):
    """(s (k,), Term (k,), pairs) for every scalar elongation of the TSDA, RSDA and bushings."""
    out = []
    if len(C.tsda.pairs):
        g = C.tsda
        term = kin.norm(g.frames(B).d())
        s = g.k * (term.val - g.e0) + g.c * term.rate + g.gain * _h(g.u, u)
        out.append((s, term, g.pairs))
    if len(C.rsda.pairs):
        g = C.rsda
        term = coordinate_term("revolute", g.frames(B))
        s = g.k * wrap(term.val - g.e0) + g.c * term.rate + _h(g.u, u)
        out.append((s, term, g.pairs))
    if len(C.bushing.pairs):
        g = C.bushing
        terms = bushing_terms(g.frames(B))
        e = np.stack([t.val for t in terms], axis=1) - g.e0
        ed = np.stack([t.rate for t in terms], axis=1)
        s = np.einsum("kij,kj->ki", g.K, e) + np.einsum("kij,kj->ki", g.C, ed)
        out += [(s[:, i], terms[i], g.pairs) for i in range(6)]
    return out


def bushing_terms(jf):
    """Elongations of a bushing: d . x_a, d . y_a, d . z_a and the small rotation vector."""
    d = jf.d()
    return [kin.dot(jf.axis(0, i), d) for i in range(3)] + jf.small_rotation()


def _directions(C, xe, body, dirs, body_frame):
    d = dirs.copy()
    if body_frame.any():
        p = xe.reshape(-1, kin.NQ)[body, 3:]
        d[body_frame] = rot.rotate(p, dirs)[body_frame]
    return d


def _force_vectors(C, xe, u):
    mag = C.frc_value + _h(C.frc_u, u)
    return _directions(C, xe, C.frc_body, C.frc_dir, C.frc_body_frame) * mag[:, None], mag


def _torque_vectors(C, xe, u):
    mag = C.trq_value + _h(C.trq_u, u)
    return _directions(C, xe, C.trq_body, C.trq_dir, C.trq_body_frame) * mag[:, None]


def element_outputs(model, x, xd, u):
    """Per element, in model.elements order, its output values: TSDA (force s [N], length
    [m]); cylinder (pushing force F = -s [N], length, stroke [m], stroke rate [m/s], its
    force on body b at the pin fx, fy, fz [N]); RSDA (torque s [N.m], angle [rad]); bushing (s: fx, fy, fz [N], tx, ty, tz [N.m],
    frame a's axes); force (magnitude [N]); torque (magnitude [N.m])."""
    C = model.compiled
    per = {}
    terms = _element_terms(C, kin.bodies(extended(x), extended_rate(xd)), u)
    k = 0
    if len(C.tsda.pairs):
        s, term, _ = terms[k]
        k += 1
        cyl = {e.name: e for e in model.elements if e.kind == "cylinder"}
        d = C.tsda.frames(kin.bodies(extended(x), extended_rate(xd))).d().val if cyl else None
        for i, name in enumerate(C.tsda.names):
            if name in cyl:      # F = -s, l, stroke, stroke rate, F d / l on body b
                F, ln = -s[i], term.val[i]
                per[name] = [F, ln, ln - cyl[name].free_value, term.rate[i],
                             *(F * d[i] / ln)]
            else:
                per[name] = [s[i], term.val[i]]
    if len(C.rsda.pairs):
        s, term, _ = terms[k]
        k += 1
        for i, name in enumerate(C.rsda.names):
            per[name] = [s[i], term.val[i]]
    if len(C.bushing.pairs):
        for i, name in enumerate(C.bushing.names):
            per[name] = [terms[k + j][0][i] for j in range(6)]
    for i, name in enumerate(C.frc_names):
        per[name] = [C.frc_value[i] + _h(C.frc_u, u)[i]]
    for i, name in enumerate(C.trq_names):
        per[name] = [C.trq_value[i] + _h(C.trq_u, u)[i]]
    return [per[e.name] for e in model.elements]


def potential_energy(model, x):
    """Gravity potential -m gravity . r plus spring energies 1/2 k (e - e0)^2 [J]."""
    C = model.compiled
    r, _, _, _ = _bodies(model, x, x)
    V = -float(np.sum(C.mass * (r @ np.asarray(model.gravity))))
    B = kin.bodies(extended(x), np.zeros(x.shape[0] + kin.NQ))
    if len(C.tsda.pairs):
        term = kin.norm(C.tsda.frames(B).d())
        V += float(np.sum(0.5 * C.tsda.k * (term.val - C.tsda.e0) ** 2))
    if len(C.rsda.pairs):
        term = coordinate_term("revolute", C.rsda.frames(B))
        V += float(np.sum(0.5 * C.rsda.k * wrap(term.val - C.rsda.e0) ** 2))
    if len(C.bushing.pairs):
        terms = bushing_terms(C.bushing.frames(B))
        e = np.stack([t.val for t in terms], axis=1) - C.bushing.e0
        V += float(0.5 * np.einsum("ki,kij,kj->", e, C.bushing.K, e))
    return V


def kinetic_energy(model, x, xd):
    """1/2 m r'.r' + 1/2 omega' J omega' with omega' = 2 G p' (body axes) [J], plus the
    rotors' 1/2 a q'^2 of the joints with armature a (ModelBuilder.armature)."""
    C = model.compiled
    _, p, rd, pd = _bodies(model, x, xd)
    w = 2.0 * np.einsum("kij,kj->ki", rot.G_matrix(p), pd)
    T = 0.5 * float(np.sum(C.mass * np.sum(rd * rd, axis=1))
                    + np.einsum("ki,kij,kj->", w, C.inertia, w))
    if any(j.armature for j in model.joints):
        from .constraints import joint_coordinates
        _, qd, _, _ = joint_coordinates(model, x, xd)
        arm = np.array([model.joints[k].armature for k in C.coord_joints])
        T += 0.5 * float(np.sum(arm * qd * qd))
    return T


def angular_velocity(model, x, xd):
    """omega (nb, 3), global axes: 2 E(p) p'."""
    _, p, _, pd = _bodies(model, x, xd)
    return 2.0 * np.einsum("kij,kj->ki", rot.E_matrix(p), pd)


def body_outputs(model, x, xd):
    """Per body (nb, 16): r, p, Cardan angles, r', omega (global axes)."""
    r, p, rd, _ = _bodies(model, x, xd)
    a, b, c = rot.cardan_angles(rot.matrix(p))
    return np.concatenate([r, p, np.stack([a, b, c], axis=1), rd,
                           angular_velocity(model, x, xd)], axis=1)


def marker_outputs(model, x, xd):
    """Per marker (n, 6): global position and velocity."""
    C = model.compiled
    if not len(C.markers):
        return np.zeros((0, 6))
    # r + A(p) s and r' + d(A(p) s)/dp p' of the markers' bodies only (kin.bodies would
    # prepare every body's rotation and its derivatives)
    X, Xd = extended(x).reshape(-1, kin.NQ), extended_rate(xd).reshape(-1, kin.NQ)
    b, s = C.markers.p, C.marker_points
    p = X[b, 3:]
    pos = X[b, :3] + rot.rotate(p, s)
    vel = Xd[b, :3] + np.einsum("kij,kj->ki", rot.rotate_jacobian(p, s), Xd[b, 3:])
    return np.concatenate([pos, vel], axis=1)
