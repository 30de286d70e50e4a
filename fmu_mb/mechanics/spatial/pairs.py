"""Shape-pair contacts: one feature of two moving shapes (sphere, capsule, box), a contact
whose points move on both bodies (docs/shapes.md, "Shape pairs between bodies").

Contact kind "shape_pair": the feature `feature` (the narrowphase's id, mechanics.shapes) of
shape a (on `other`) against shape b (on `body`). Every feature is two core features, one
per shape, each a vertex (V: a sphere's centre, a capsule's end, a box vertex), an edge (E: a
capsule's core segment, a box edge; unit direction u fixed in its body) or a face (F: a box
face, unit outward normal m fixed in its body), with core points ca, cb, the unit normal n
from a to b and the core gap gc = n . (cb - ca); the shapes' surfaces are the cores thickened
by the radii ra, rb:

    gap = gc - ra - rb,   point_a = ca + ra n,   point_b = cb - rb n.

These equal the narrowphase's ContactPoint (tests/test_shape_pairs.py). A box edge-edge
feature exists only while its two edges are supports and its closest points lie inside both
edges; otherwise it is absent: gap ABSENT_GAP, zero rows (an open contact).

Rows. By the envelope theorem the gap's rate is that of the material points at the core
points: gap' = n . v_rel, v_rel = v_b(cb) - v_a(ca) (v_X(x) = v_X + w_X x (x - r_X), r_X the
body's reference point). Its convective term adds, besides the material points'
w x (w x rho), the turning of n and the motion of the core points on their bodies
(w_X = cX' - v_X(cX), along the edge or in the face):

    gap'' = Dc xdd + n . (w_b x (w_b x rho_b) - w_a x (w_a x rho_a)) + n' . v_rel
            + n . (w_b x w_b' - w_a x w_a')          (w_X' the point's motion w_X above)

with, per pair of core features (d = cb - ca; P = I - n n^T):
  V-V: w = 0, n' = P v_rel / gc;
  V-E: t' = -(u . v_rel + d . (w_b x u)), w_b = t' u, n' = P (v_rel + w_b) / gc (E-V alike);
  E-E: from d . ua = d . ub = 0: s' = (al - c be) / (1 - c^2), t' = (c al - be) / (1 - c^2),
       c = ua . ub, al = v_rel . ua + d . (w_a x ua), be = v_rel . ub + d . (w_b x ub);
       n' = P (ua' x ub + ua x ub') / |ua x ub| (n = +-unit(ua x ub), u' = w x u);
  V-F: n = -m_b turns with b: n' = w_b x n; d' = gc' n + gc n', w_b = d' - v_rel (F-V alike).
The tangential rows are the slip velocity of the surface points along t1, t2 = the tangent
basis of n (mechanics.friction.tangent_basis, its rate from n'); their convective terms
the same way with the surface points' motion on the bodies
(w_a + ra (n' - w_a x n), w_b - rb (n' - w_b x n)).

The C twin: native/pairs.h (included by the spatial kernel, kind 6).
"""
from dataclasses import dataclass

import numpy as np

from . import rotations as rot
from ..shapes import PARALLEL_TOL, SUPPORT_TOL, _edges, _up, _unit_or, segment_closest

V, E, F = 0, 1, 2
#: [m] the gap of an absent feature (a box edge-edge feature whose edges do not face)
ABSENT_GAP = 1.0e3
#: the kinds of the pairs taken, in the narrowphase's order (a, b)
KINDS = (("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"),
         ("sphere", "box"), ("capsule", "box"), ("box", "box"))


def features(kind_a, kind_b):
    """The feature ids of a pair (a, b) in the order of KINDS."""
    if kind_a == "box":
        return list(range(16 + 144))
    if kind_b == "box" and kind_a == "capsule":
        return list(range(2 + 8 + 12))
    return [0]


@dataclass
class Core:
    """One feature's core: points ca, cb (world), normal n (a to b), core gap gc = n.(cb-ca),
    radii ra, rb, the core feature types ta, tb (V, E, F) and their directions ua, ub (an
    edge's unit direction, a face's outward normal; unused for a vertex)."""

    ca: np.ndarray
    cb: np.ndarray
    n: np.ndarray
    gc: float
    ra: float
    rb: float
    ta: int
    tb: int
    ua: np.ndarray
    ub: np.ndarray


_Z = np.zeros(3)


def _box_point(x, R, p, h):
    """(q, outward unit normal, dist, type, direction) of point x against the box: the
    nearest surface point's feature: a face (F, its normal), an edge (E, its direction) or a
    vertex (V); inside the box: the nearest face (shapes.point_box)."""
    local = R.T @ (x - p)
    q = np.minimum(np.maximum(local, -h), h)
    out = q != local
    m = int(out.sum())
    if m:
        d = local - q
        dist = float(np.sqrt(d @ d))
        nl = d / dist
        if m == 1:
            typ, u = F, R @ nl
        elif m == 2:
            typ, u = E, R[:, int(np.flatnonzero(~out)[0])]
        else:
            typ, u = V, _Z
    else:
        depth = h - np.abs(local)
        i = int(np.argmin(depth))
        s = 1.0 if local[i] >= 0.0 else -1.0
        q = local.copy()
        q[i] = s * h[i]
        nl = np.zeros(3)
        nl[i] = s
        dist = -float(depth[i])
        typ, u = F, R @ nl
    return p + R @ q, R @ nl, dist, typ, u


def _vertex(R, p, h, v):
    s = np.array([1.0 if v >> (2 - i) & 1 else -1.0 for i in range(3)])
    return p + R @ (s * h)


def _core(kind, R, p, s):
    if kind == "capsule":
        u = 0.5 * s[1] * R[:, 2]
        return p - u, p + u, s[0], R[:, 2]
    return p, p, s[0], _Z


def _cross(a, b):
    """a x b of two 3-vectors (np.cross is slow on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def feature(kind_a, sa, Ra, pa, kind_b, sb, Rb, pb, fid, edges=None):
    """Core of feature fid of shapes a, b (kinds in the order of KINDS) at world poses;
    None for an absent feature. edges: the two boxes' shapes._edges, when computed."""
    if kind_b in ("sphere", "capsule"):
        a0, a1, ra, ua = _core(kind_a, Ra, pa, sa)
        b0, b1, rb, ub = _core(kind_b, Rb, pb, sb)
        s, t, ca, cb = segment_closest(a0, a1, b0, b1)
        ta = E if kind_a == "capsule" and 0.0 < s < 1.0 else V
        tb = E if kind_b == "capsule" and 0.0 < t < 1.0 else V
        n, l = _unit_or(cb - ca, _up(Rb))
        return Core(ca, cb, n, l, ra, rb, ta, tb, ua, ub)
    hb = 0.5 * np.asarray(sb, float)
    if kind_a == "sphere":
        q, nb, dist, tb, ub = _box_point(pa, Rb, pb, hb)
        return Core(pa, q, -nb, dist, sa[0], 0.0, V, tb, _Z, ub)
    if kind_a == "capsule":
        return _capsule_box(sa, Ra, pa, Rb, pb, hb, fid)
    ha = 0.5 * np.asarray(sa, float)
    if fid < 8:
        x = _vertex(Ra, pa, ha, fid)
        q, nb, dist, tb, ub = _box_point(x, Rb, pb, hb)
        return Core(x, q, -nb, dist, 0.0, 0.0, V, tb, _Z, ub)
    if fid < 16:
        x = _vertex(Rb, pb, hb, fid - 8)
        q, na, dist, ta, ua = _box_point(x, Ra, pa, ha)
        return Core(q, x, na, dist, 0.0, 0.0, ta, V, ua, _Z)
    ea, eb = divmod(fid - 16, 12)
    if edges is None:
        edges = _edges(Ra, pa, ha), _edges(Rb, pb, hb)
    _, ka, ka1, ka2, sa1, sa2, a0, a1 = edges[0][ea]
    _, kb, kb1, kb2, sb1, sb2, b0, b1 = edges[1][eb]
    n = _cross(Ra[:, ka], Rb[:, kb])
    ln = float(np.sqrt(n @ n))
    if ln < PARALLEL_TOL:
        return None
    n = n / ln
    if sa1 * (n @ Ra[:, ka1]) + sa2 * (n @ Ra[:, ka2]) < 0.0:
        n = -n
    if not (sa1 * (n @ Ra[:, ka1]) > SUPPORT_TOL and sa2 * (n @ Ra[:, ka2]) > SUPPORT_TOL
            and -sb1 * (n @ Rb[:, kb1]) > SUPPORT_TOL
            and -sb2 * (n @ Rb[:, kb2]) > SUPPORT_TOL and n @ (pb - pa) >= 0.0):
        return None
    s, t, ca, cb = segment_closest(a0, a1, b0, b1)
    if not (0.0 < s < 1.0 and 0.0 < t < 1.0):
        return None
    return Core(ca, cb, n, float(n @ (cb - ca)), 0.0, 0.0, E, E, Ra[:, ka], Rb[:, kb])


def _capsule_box(sa, Ra, pa, Rb, pb, hb, fid):
    """Feature fid of a capsule (a) against a box (b), as shapes.capsule_box: 0, 1 the core's
    ends against the box; 2-9 the box's vertices against the core; 10 + eb the core against
    the box's edge eb (None when that edge is no support or the closest points leave the
    core or the edge)."""
    e0, e1, ra, ua = _core("capsule", Ra, pa, sa)
    if fid < 2:
        x = e1 if fid else e0
        q, nb, dist, tb, ub = _box_point(x, Rb, pb, hb)
        return Core(x, q, -nb, dist, ra, 0.0, V, tb, _Z, ub)
    if fid < 10:
        x = _vertex(Rb, pb, hb, fid - 2)
        d = e1 - e0
        dd = d @ d
        t = min(max(((x - e0) @ d) / dd, 0.0), 1.0) if dd > 1e-300 else 0.0
        q = e0 + t * d
        n, l = _unit_or(x - q, _up(Ra))
        return Core(q, x, n, l, ra, 0.0, E if 0.0 < t < 1.0 else V, V, ua, _Z)
    _, kb, kb1, kb2, sb1, sb2, b0, b1 = _edges(Rb, pb, hb)[fid - 10]
    n = _cross(ua, Rb[:, kb])
    ln = float(np.sqrt(n @ n))
    if ln < PARALLEL_TOL:
        return None
    n = n / ln
    if sb1 * (n @ Rb[:, kb1]) + sb2 * (n @ Rb[:, kb2]) > 0.0:
        n = -n
    if not (-sb1 * (n @ Rb[:, kb1]) > SUPPORT_TOL and -sb2 * (n @ Rb[:, kb2]) > SUPPORT_TOL
            and n @ (pb - pa) >= 0.0):
        return None
    s, t, ca, cb = segment_closest(e0, e1, b0, b1)
    if not (0.0 < s < 1.0 and 0.0 < t < 1.0):
        return None
    return Core(ca, cb, n, float(n @ (cb - ca)), ra, 0.0, E, E, ua, Rb[:, kb])


def motion(c, ra_, va, wa, rb_, vb, wb):
    """(v_rel, n', w_a, w_b) of core c with bodies a, b at reference points ra_, rb_,
    velocities va, vb and angular velocities wa, wb (world)."""
    n, d, gc = c.n, c.cb - c.ca, c.gc
    vrel = vb + _cross(wb, c.cb - rb_) - va - _cross(wa, c.ca - ra_)
    wpa, wpb = np.zeros(3), np.zeros(3)
    P = np.eye(3) - np.outer(n, n)
    if c.ta == F or c.tb == F:
        if c.tb == F:
            nd = _cross(wb, n)
        else:
            nd = _cross(wa, n)
        dd = (n @ vrel) * n + gc * nd
        if c.tb == F:
            wpb = dd - vrel
        else:
            wpa = vrel - dd
        return vrel, nd, wpa, wpb
    if c.ta == E and c.tb == E:
        ua, ub = c.ua, c.ub
        cc = ua @ ub
        al = vrel @ ua + d @ _cross(wa, ua)
        be = vrel @ ub + d @ _cross(wb, ub)
        den = 1.0 - cc * cc
        sd, td = (al - cc * be) / den, (cc * al - be) / den
        wpa, wpb = sd * ua, td * ub
        cr = _cross(ua, ub)
        lc = float(np.sqrt(cr @ cr))
        crd = _cross(_cross(wa, ua), ub) + _cross(ua, _cross(wb, ub))
        sg = 1.0 if n @ cr >= 0.0 else -1.0
        return vrel, sg * (P @ crd) / lc, wpa, wpb
    if c.tb == E:
        wpb = -(vrel @ c.ub + d @ _cross(wb, c.ub)) * c.ub
    elif c.ta == E:
        wpa = (vrel @ c.ua + d @ _cross(wa, c.ua)) * c.ua
    dd = vrel + wpb - wpa
    nd = P @ dd / gc if abs(gc) > 1e-300 else np.zeros(3)
    return vrel, nd, wpa, wpb


def tangents(n, nd):
    """t1, t2 of mechanics.friction.tangent_basis (repeated here: that module imports this
    package) and their rates for the normal's rate nd (the coordinate axis e_k kept)."""
    k = int(np.argmin(np.abs(n)))
    t1 = -n[k] * n
    t1[k] += 1.0
    l1 = float(np.sqrt(t1 @ t1))
    t1 /= l1
    u = -(nd[k] * n + n[k] * nd)
    t1d = (u - (t1 @ u) * t1) / l1
    return (t1, _cross(n, t1)), (t1d, _cross(nd, t1) + _cross(n, t1d))


@dataclass(frozen=True)
class PairRows:
    """Per shape-pair contact k (model.contacts position pos[k]): bodies ba, bb (index; nb =
    the ground), gap (k,), J (k, 2, 7) the normal row on a's and b's 7 coordinates, conv (k,),
    Jt (k, 2, 2, 7) the tangential rows t1, t2 on a's and b's coordinates, conv_t (k, 2),
    point (k, 3) the contact point (b's surface point)."""

    pos: np.ndarray
    ba: np.ndarray
    bb: np.ndarray
    gap: np.ndarray
    J: np.ndarray
    conv: np.ndarray
    Jt: np.ndarray
    conv_t: np.ndarray
    point: np.ndarray


def compile_pairs(contacts, idx):
    """(pos, body a, body b, contact) of the shape-pair contacts, or None (idx: body name ->
    index, the ground nb)."""
    items = [(k, idx[c.other], idx[c.body], c) for k, c in enumerate(contacts)
             if c.kind == "shape_pair"]
    if not items:
        return None
    pos, ba, bb, cs = zip(*items)
    return (np.array(pos, np.intp), np.array(ba, np.intp), np.array(bb, np.intp), cs)


def _body(x, xd, b):
    """(r, A, v, w, E2) of body b at absolute coordinates (7 per body; beyond: the ground)."""
    if 7 * b >= len(x):
        return _Z, np.eye(3), _Z, _Z, None
    q, qd = x[7 * b:7 * b + 7], xd[7 * b:7 * b + 7]
    E2 = 2.0 * rot.E_matrix(q[None, 3:])[0]
    return q[:3], rot.matrix(q[None, 3:])[0], qd[:3], E2 @ qd[3:], E2


def pair_rows(pairs, x, xd):
    """PairRows of the compiled shape-pair contacts at absolute coordinates x, xd."""
    pos, ba, bb, cs = pairs
    k = len(pos)
    gap, conv = np.full(k, ABSENT_GAP), np.zeros(k)
    J, Jt, conv_t = np.zeros((k, 2, 7)), np.zeros((k, 2, 2, 7)), np.zeros((k, 2))
    point = np.zeros((k, 3))
    bodies, poses = {}, {}
    for i, c in enumerate(cs):
        sa, sb = c.shapes
        for b in (ba[i], bb[i]):
            if b not in bodies:
                bodies[b] = _body(x, xd, b)
        r_a, A_a, v_a, w_a, E_a = bodies[ba[i]]
        r_b, A_b, v_b, w_b, E_b = bodies[bb[i]]
        key = (sa.name, sb.name)
        if key not in poses:
            Ra, pa = A_a @ np.array(sa.rotation), r_a + A_a @ np.array(sa.position)
            Rb, pb = A_b @ np.array(sb.rotation), r_b + A_b @ np.array(sb.position)
            edges = None
            if sa.kind == "box" and sb.kind == "box":
                edges = (_edges(Ra, pa, 0.5 * np.asarray(sa.size, float)),
                         _edges(Rb, pb, 0.5 * np.asarray(sb.size, float)))
            poses[key] = Ra, pa, Rb, pb, edges
        Ra, pa, Rb, pb, edges = poses[key]
        co = feature(sa.kind, sa.size, Ra, pa, sb.kind, sb.size, Rb, pb, c.feature, edges)
        if co is None:
            continue
        n = co.n
        gap[i] = co.gc - co.ra - co.rb
        vrel, nd, wpa, wpb = motion(co, r_a, v_a, w_a, r_b, v_b, w_b)
        rho_a, rho_b = co.ca - r_a, co.cb - r_b
        _rows(J[i], n, rho_a, rho_b, E_a, E_b)
        conv[i] = (n @ (_cross(w_b, _cross(w_b, rho_b)) - _cross(w_a, _cross(w_a, rho_a)))
                   + nd @ vrel + n @ (_cross(w_b, wpb) - _cross(w_a, wpa)))
        qa, qb = co.ca + co.ra * n, co.cb - co.rb * n
        rho_a, rho_b = qa - r_a, qb - r_b
        vs = v_b + _cross(w_b, rho_b) - v_a - _cross(w_a, rho_a)
        sa_ = wpa + co.ra * (nd - _cross(w_a, n))
        sb_ = wpb - co.rb * (nd - _cross(w_b, n))
        ts, tds = tangents(n, nd)
        for j, (t, td) in enumerate(zip(ts, tds)):
            _rows(Jt[i, j], t, rho_a, rho_b, E_a, E_b)
            conv_t[i, j] = (t @ (_cross(w_b, _cross(w_b, rho_b))
                                 - _cross(w_a, _cross(w_a, rho_a)))
                            + td @ vs
                            + t @ (_cross(w_b, sb_) - _cross(w_a, sa_)))
        point[i] = qb
    return PairRows(pos, ba, bb, gap, J, conv, Jt, conv_t, point)


def _rows(out, a, rho_a, rho_b, E_a, E_b):
    """out (2, 7): the row of a . (v_b(rho_b) - v_a(rho_a)) on a's and b's coordinates."""
    if E_a is not None:
        out[0, :3] = -a
        out[0, 3:] = -E_a.T @ _cross(rho_a, a)
    if E_b is not None:
        out[1, :3] = a
        out[1, 3:] = E_b.T @ _cross(rho_b, a)
