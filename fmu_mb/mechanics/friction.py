"""Contact frames of the frictional contacts: tangent basis and tangential (slip) rows.

A point contact (planar "point_line", spatial "point_plane") is a sphere (circle) of radius r
centred at point C of `body` against a plane (line) through point A of `other` with unit
normal n fixed in `other`'s axes. The contact point is P = C - r n. The slip velocity is the
velocity of body's material point at P relative to other's material point at P, along the
tangent basis t_k fixed in `other`'s axes:

    v_t,k = t_k . (v_body(P) - v_other(P)) = d/dt [t_k . (C - A)] - r (w_body - w_other) . (n x t_k)

(the first part is the rate of the projection of C - A on t_k, as for the gap along n; the
second the rolling part). Tangent basis (docs/contacts-friction.md): planar t = e_z x n =
(-n_y, n_x); spatial t1 = the coordinate axis e_k with the smallest |n_k| (the first on a tie)
projected on the plane, normalised, and t2 = n x t1 (n, t1, t2 right-handed; n = e_z gives
t1 = e_x, t2 = e_y).

tangent_rows(model, x, xd) gives Dt (nc, kt, n) and conv_t (nc, kt) with v_t = Dt xd and
v_t' = Dt xdd + conv_t in absolute coordinates (kt = 1 planar, 2 spatial; zero rows for
distance limits and joint limits, which carry no friction).
"""
import numpy as np


def tangent_basis(n):
    """(t1, t2) unit vectors (3,) completing the unit normal n (3,) to a right-handed frame
    (n, t1, t2): t1 from the coordinate axis with the smallest |n_k| (first on a tie)."""
    n = np.asarray(n, float)
    k = int(np.argmin(np.abs(n)))
    e = np.zeros(3)
    e[k] = 1.0
    t1 = e - n[k] * n
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def planar_tangent(n):
    """t = e_z x n for a planar unit normal n (2,)."""
    return np.array([-n[1], n[0]])


def kt(model):
    """Tangent directions per contact: 1 planar, 2 spatial."""
    return 2 if model.compiled.spatial else 1


_LAST = [(None, None, None)]    # (model's compiled data, key, rows), replaced as one tuple


def tangent_rows(model, x, xd):
    """Dt (nc, kt, n) and conv_t (nc, kt): slip velocities v_t = Dt xd [m/s] of every contact
    (zero rows for contacts without a contact point) and v_t' = Dt xdd + conv_t. The last
    result is reused for the same model and numbers (the accelerations and the slip
    velocities of one event-function sample evaluate the same state); its arrays are
    read-only."""
    C = model.compiled
    key = x.tobytes() + xd.tobytes()
    last_c, last_key, last = _LAST[0]
    if last_c is C and last_key == key:
        return last
    Dt, conv = _rows3(model, x, xd) if C.spatial else _rows2(model, x, xd)
    Dt.setflags(write=False)
    conv.setflags(write=False)
    _LAST[0] = (C, key, (Dt, conv))
    return Dt, conv


def _rows2(model, x, xd):
    from . import constraints
    from . import kinematics as kin

    B = model.compiled.contacts
    n = 3 * model.compiled.nb
    Dt = np.zeros((B.n, 1, n + 3))
    conv = np.zeros((B.n, 1))
    if len(B.pl):
        xe, xde = constraints.extended(model, x), constraints.extended(model, xd)
        t0 = np.stack([-B.pl_w0[:, 1], B.pl_w0[:, 0]], axis=1)
        _, J, cv = kin.projection(B.pl, xe, xde, t0)
        r = B.pl_offset
        J = J.copy()
        J[:, 5] -= r                      # rolling: - r (w_body - w_other)
        J[:, 2] += r
        Dt[B.pl_pos[:, None], 0, B.pl.cols] = J
        conv[B.pl_pos, 0] = cv
    if B.pairs is not None:               # shape pairs: the surface points' slip
        from .planar_pairs import pair_rows
        pr = pair_rows(B.pairs, x, xd)
        for j, i in enumerate(pr.pos):
            Dt[i, 0, 3 * pr.ba[j]:3 * pr.ba[j] + 3] += pr.Jt[j, 0]
            Dt[i, 0, 3 * pr.bb[j]:3 * pr.bb[j] + 3] += pr.Jt[j, 1]
            conv[i, 0] = pr.conv_t[j]
    return Dt[:, :, :n], conv


def _rows3(model, x, xd):
    from . import spatial
    from .spatial import kinematics as kin
    from .spatial import rotations as rot
    from .spatial.constraints import extended, extended_rate

    Bk = model.compiled.contacts
    xe, xde = extended(x), extended_rate(xd)
    nq = kin.NQ
    Dt = np.zeros((Bk.n, 2, xe.shape[0]))
    conv = np.zeros((Bk.n, 2))
    if len(Bk.pl_pos):
        del spatial
        B = kin.bodies(xe, xde)
        g = Bk.pl
        d = g.frames(B).d()
        r = Bk.pl_radius
        p_idx, c_idx = g.pairs.p, g.pairs.c
        E_p = 2.0 * rot.E_matrix(B.p[p_idx])          # w = E2 p'
        E_c = 2.0 * rot.E_matrix(B.p[c_idx])
        w_p = np.einsum("kij,kj->ki", E_p, B.pd[p_idx])
        w_c = np.einsum("kij,kj->ki", E_c, B.pd[c_idx])
        t = (kin.vector(g.pairs, B, 0, Bk.pl_t1, False),
             kin.vector(g.pairs, B, 0, Bk.pl_t2, False))
        other = (1, 0)
        sign = (1.0, -1.0)                # n x t1 = t2, n x t2 = -t1
        for k in range(2):
            proj = kin.dot(t[k], d)
            J = proj.J.copy()
            u = t[other[k]]               # w . (n x t_k) = sign_k w . t_other
            c = -r[:, None] * sign[k]     # v_t,k += c (w_c - w_p) . u
            J[:, nq + 3:nq + 7] += c * np.einsum("ki,kij->kj", u.val, E_c)
            J[:, 3:7] -= c * np.einsum("ki,kij->kj", u.val, E_p)
            # d/dt (u . w_rel) = u' . w_rel + u . (E2 p'') (E(p') p' = 0)
            cv = proj.conv + c[:, 0] * np.einsum("ki,ki->k", u.rate, w_c - w_p)
            kin.put(Dt[:, k, :], Bk.pl_pos, g.pairs.cols, J)
            conv[Bk.pl_pos, k] = cv
    if Bk.rim is not None:                # rim contacts: the material point at the rim point
        from .spatial.rim import rim_rows
        rr = rim_rows(Bk.rim, x, xd)
        for j, (i, b) in enumerate(zip(rr.pos, rr.body)):
            Dt[i, :, 7 * b:7 * b + 7] = rr.Jt[j]
            conv[i] = rr.conv_t[j]
    if Bk.pairs is not None:              # shape pairs: the surface points' slip
        from .spatial.pairs import pair_rows
        pr = pair_rows(Bk.pairs, x, xd)
        for j, i in enumerate(pr.pos):
            Dt[i, :, 7 * pr.ba[j]:7 * pr.ba[j] + 7] += pr.Jt[j, :, 0]
            Dt[i, :, 7 * pr.bb[j]:7 * pr.bb[j] + 7] += pr.Jt[j, :, 1]
            conv[i] = pr.conv_t[j]
    return Dt[:, :, :-nq], conv


def joint_friction(model):
    """(names, pos, bound) of the joints with Coulomb friction: names in model.joints order,
    pos (nj,) their coordinates' places in compiled.coord_joints, bound (nj,) [N.m or N]."""
    ks = [k for k, j in enumerate(model.joints) if getattr(j, "friction", 0.0) > 0.0]
    cj = list(model.compiled.coord_joints)
    return ([model.joints[k].name for k in ks], np.array([cj.index(k) for k in ks], np.intp),
            np.array([model.joints[k].friction for k in ks], float))
