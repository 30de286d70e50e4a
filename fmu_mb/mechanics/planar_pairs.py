"""Planar shape-pair contacts: one feature of two moving planar shapes (circle, segment,
rectangle), a contact whose points move on both bodies (docs/shapes.md, "Shape pairs between
bodies"); the planar twin of mechanics.spatial.pairs.

Contact kind "shape_pair" (planar): the feature `feature` of shape a (on `other`) against
shape b (on `body`). Every feature is one core point X of one shape (a circle's centre, a
segment's end, a rectangle's corner) against the core of the other (a point, a segment, a
rectangle), the nearest point Q of that core, the unit normal n from a to b and the core gap
gc = n . (cb - ca) (ca, cb: X and Q, a's first); the surfaces are the cores thickened by the
radii ra, rb:

    gap = gc - ra - rb,   point_a = ca + ra n,   point_b = cb - rb n.

Features (ids as the narrowphase mechanics.shapes where it has several):
  circle - circle        0: centre against centre;
  circle - segment       0: centre against the segment's core;
  segment - segment      0, 1: a's ends against b's core; 2, 3: b's ends against a's core
                         (the narrowphase's single feature is the smallest of these four for
                         cores that do not cross);
  circle - rectangle     0: centre against the rectangle;
  segment - rectangle    0, 1: the segment's ends against the rectangle; 2-5: the corners
                         against the segment's core;
  rectangle - rectangle  0-3: a's corners against b; 4-7: b's corners against a.

The nearest point Q is a vertex (the other core is a point, or X is nearest to a segment's end
or a rectangle's corner: the normal n = unit(cb - ca), "free") or lies on a segment's interior
or a rectangle's edge (the normal is that edge's, fixed in the body of the edge, "fixed").

Rows. gap' = n . v_rel, v_rel = v_b(cb) - v_a(ca) (v_X(x) = v_X + w_X x (x - r_X), the planar
cross w x r = w (-r_y, r_x)); gap'' = Dc xdd + conv with

    conv = n . (-w_b^2 rho_b + w_a^2 rho_a) + n' . v_rel + n . (w_b x m_b - w_a x m_a)

where m_X is the motion of the core point on its body: free: m = 0, n' = P v_rel / gc
(P = I - n n^T); fixed in b: n' = w_b x n, m_b = d' - v_rel with d' = (n . v_rel) n + gc n';
fixed in a: n' = w_a x n, m_a = v_rel - d'. The tangential row is the slip velocity of the
surface points along t = e_z x n (mechanics.friction.planar_tangent), t' = e_z x n', with the
surface points' motions m_a + ra (n' - w_a x n), m_b - rb (n' - w_b x n).

The C twin: native/planar_pairs.h.
"""
from dataclasses import dataclass

import numpy as np

from .shapes import COINCIDENT

#: [m] the gap of an absent feature (none in the plane; kept as the spatial pairs')
ABSENT_GAP = 1.0e3
FREE, FIXED_A, FIXED_B = 0, 1, 2
#: the kinds of the pairs taken, in the narrowphase's order (a, b)
KINDS = (("circle", "circle"), ("circle", "segment"), ("segment", "segment"),
         ("circle", "rectangle"), ("segment", "rectangle"), ("rectangle", "rectangle"))
_COUNT = {("circle", "circle"): 1, ("circle", "segment"): 1, ("segment", "segment"): 4,
          ("circle", "rectangle"): 1, ("segment", "rectangle"): 6,
          ("rectangle", "rectangle"): 8}


def features(kind_a, kind_b):
    """The feature ids of a pair (a, b) in the order of KINDS."""
    return list(range(_COUNT[(kind_a, kind_b)]))


@dataclass
class Core:
    """One feature's core: points ca, cb (world), normal n (a to b), core gap gc, radii ra, rb
    and where the normal is fixed (FREE, FIXED_A, FIXED_B)."""

    ca: np.ndarray
    cb: np.ndarray
    n: np.ndarray
    gc: float
    ra: float
    rb: float
    fixed: int


def _perp(v):
    """e_z x v (also w x v for w = 1)."""
    return np.array([-v[1], v[0]])


def _cross(a, b):
    return float(a[0] * b[1] - a[1] * b[0])


def _point_core(x, kind, R, p, s):
    """(q, n, dist, fixed) of point x against the core of a shape (kind, R, p, size s):
    q the core's nearest point, n the unit normal from the core towards x, dist the signed
    distance (n . (x - q); < 0 inside a rectangle), fixed: n is fixed in the core's body."""
    if kind == "circle":
        return _free(x, p, R)
    if kind == "segment":
        u = R[:, 0]
        h = 0.5 * s[0]
        t = float(u @ (x - p))
        if -h < t < h:
            d = x - (p + t * u)
            m = _perp(u)
            side = 1.0 if m @ d >= 0.0 else -1.0
            return p + t * u, side * m, float(side * (m @ d)), True
        return _free(x, p + (h if t >= h else -h) * u, R)
    h = 0.5 * np.asarray(s, float)
    local = R.T @ (x - p)
    q = np.minimum(np.maximum(local, -h), h)
    out = q != local
    m = int(out.sum())
    if m == 2:                                  # nearest a corner
        return _free(x, p + R @ q, R)
    if m == 1:                                  # nearest an edge, outside
        i = int(np.flatnonzero(out)[0])
        nl = np.zeros(2)
        nl[i] = 1.0 if local[i] > 0.0 else -1.0
        return p + R @ q, R @ nl, float(abs(local[i]) - h[i]), True
    depth = h - np.abs(local)                   # inside: the nearest edge
    i = int(np.argmin(depth))
    sg = 1.0 if local[i] >= 0.0 else -1.0
    q = local.copy()
    q[i] = sg * h[i]
    nl = np.zeros(2)
    nl[i] = sg
    return p + R @ q, R @ nl, -float(depth[i]), True


def _free(x, q, R):
    d = x - q
    l = float(np.sqrt(d @ d))
    if l > COINCIDENT:
        return q, d / l, l, False
    return q, R[:, -1].copy(), 0.0, False


def _points(kind, R, p, s):
    """(core points, radius) of a shape: circle centre; segment ends; rectangle corners in
    the vertex order of mechanics.shapes._vertices."""
    if kind == "circle":
        return [p], s[0]
    if kind == "segment":
        u = 0.5 * s[0] * R[:, 0]
        return [p - u, p + u], s[1]
    h = 0.5 * np.asarray(s, float)
    return [p + R @ (np.array([1.0 if v >> (1 - i) & 1 else -1.0 for i in range(2)]) * h)
            for v in range(4)], 0.0


def _radius(kind, s):
    return s[0] if kind == "circle" else (s[1] if kind == "segment" else 0.0)


def feature(kind_a, sa, Ra, pa, kind_b, sb, Rb, pb, fid):
    """Core of feature fid of shapes a, b (kinds in the order of KINDS) at world poses."""
    pts_a, ra = _points(kind_a, Ra, pa, sa)
    rb = _radius(kind_b, sb)
    na = len(pts_a)
    if fid < na:                                # a point of a against b's core
        x = pts_a[fid]
        q, nq, dist, fixed = _point_core(x, kind_b, Rb, pb, sb)
        return Core(x, q, -nq, dist, ra, rb, FIXED_B if fixed else FREE)
    pts_b, _ = _points(kind_b, Rb, pb, sb)     # a point of b against a's core
    x = pts_b[fid - na]
    q, nq, dist, fixed = _point_core(x, kind_a, Ra, pa, sa)
    return Core(q, x, nq, dist, ra, rb, FIXED_A if fixed else FREE)


def motion(c, ra_, va, wa, rb_, vb, wb):
    """(v_rel, n', m_a, m_b) of core c with bodies a, b at reference points ra_, rb_,
    velocities va, vb (2,) and angular velocities wa, wb."""
    n = c.n
    vrel = vb + wb * _perp(c.cb - rb_) - va - wa * _perp(c.ca - ra_)
    ma, mb = np.zeros(2), np.zeros(2)
    if c.fixed == FREE:
        nd = (vrel - (n @ vrel) * n) / c.gc if abs(c.gc) > 1e-300 else np.zeros(2)
        return vrel, nd, ma, mb
    nd = (wb if c.fixed == FIXED_B else wa) * _perp(n)
    dd = (n @ vrel) * n + c.gc * nd
    if c.fixed == FIXED_B:
        mb = dd - vrel
    else:
        ma = vrel - dd
    return vrel, nd, ma, mb


@dataclass(frozen=True)
class PairRows:
    """Per planar shape-pair contact k (model.contacts position pos[k]): bodies ba, bb (index;
    nb = the ground), gap (k,), J (k, 2, 3) the normal row on a's and b's coordinates
    (x, y, phi), conv (k,), Jt (k, 2, 3) the tangential row, conv_t (k,), point (k, 2) b's
    surface point, normal (k, 2)."""

    pos: np.ndarray
    ba: np.ndarray
    bb: np.ndarray
    gap: np.ndarray
    J: np.ndarray
    conv: np.ndarray
    Jt: np.ndarray
    conv_t: np.ndarray
    point: np.ndarray
    normal: np.ndarray


def compile_pairs(contacts, idx):
    """(pos, body a, body b, contact) of the shape-pair contacts, or None (idx: body name ->
    index, the ground nb)."""
    items = [(k, idx[c.other], idx[c.body], c) for k, c in enumerate(contacts)
             if c.kind == "shape_pair"]
    if not items:
        return None
    pos, ba, bb, cs = zip(*items)
    return (np.array(pos, np.intp), np.array(ba, np.intp), np.array(bb, np.intp), cs)


def _rot(phi):
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _body(x, xd, b):
    """(r, A, v, w) of body b at absolute coordinates (3 per body; beyond: the ground)."""
    if 3 * b >= len(x):
        return np.zeros(2), np.eye(2), np.zeros(2), 0.0
    return x[3 * b:3 * b + 2], _rot(x[3 * b + 2]), xd[3 * b:3 * b + 2], float(xd[3 * b + 2])


def pair_rows(pairs, x, xd):
    """PairRows of the compiled planar shape-pair contacts at absolute coordinates x, xd."""
    pos, ba, bb, cs = pairs
    k = len(pos)
    gap, conv, conv_t = np.full(k, ABSENT_GAP), np.zeros(k), np.zeros(k)
    J, Jt = np.zeros((k, 2, 3)), np.zeros((k, 2, 3))
    point, normal = np.zeros((k, 2)), np.zeros((k, 2))
    for i, c in enumerate(cs):
        sa, sb = c.shapes
        r_a, A_a, v_a, w_a = _body(x, xd, ba[i])
        r_b, A_b, v_b, w_b = _body(x, xd, bb[i])
        Ra, pa = A_a @ np.array(sa.rotation), r_a + A_a @ np.array(sa.position)
        Rb, pb = A_b @ np.array(sb.rotation), r_b + A_b @ np.array(sb.position)
        co = feature(sa.kind, sa.size, Ra, pa, sb.kind, sb.size, Rb, pb, c.feature)
        n = co.n
        gap[i] = co.gc - co.ra - co.rb
        normal[i] = n
        vrel, nd, ma, mb = motion(co, r_a, v_a, w_a, r_b, v_b, w_b)
        rho_a, rho_b = co.ca - r_a, co.cb - r_b
        _rows(J[i], n, rho_a, rho_b)
        conv[i] = (n @ (w_a * w_a * rho_a - w_b * w_b * rho_b) + nd @ vrel
                   + n @ (w_b * _perp(mb) - w_a * _perp(ma)))
        qa, qb = co.ca + co.ra * n, co.cb - co.rb * n
        rho_a, rho_b = qa - r_a, qb - r_b
        vs = v_b + w_b * _perp(rho_b) - v_a - w_a * _perp(rho_a)
        sa_ = ma + co.ra * (nd - w_a * _perp(n))
        sb_ = mb - co.rb * (nd - w_b * _perp(n))
        t, td = _perp(n), _perp(nd)
        _rows(Jt[i], t, rho_a, rho_b)
        conv_t[i] = (t @ (w_a * w_a * rho_a - w_b * w_b * rho_b) + td @ vs
                     + t @ (w_b * _perp(sb_) - w_a * _perp(sa_)))
        point[i] = qb
    return PairRows(pos, ba, bb, gap, J, conv, Jt, conv_t, point, normal)


def _rows(out, e, rho_a, rho_b):
    """out (2, 3): the row of e . (v_b(rho_b) - v_a(rho_a)) on a's and b's (x, y, phi)."""
    out[0, :2] = -e
    out[0, 2] = -_cross(rho_a, e)
    out[1, :2] = e
    out[1, 2] = _cross(rho_b, e)
