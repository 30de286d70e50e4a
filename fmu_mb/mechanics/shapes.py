"""Collision shapes in body axes and their narrowphase (docs/shapes.md).

A shape is a descriptor (Sphere, Capsule, Box, Cylinder, Plane spatial; Circle, Segment,
Rectangle, Line planar) placed on a body by ModelBuilder.shape at a pose in body axes; the
Model keeps them as ShapeItem records (model.shapes). Every shape has its own frame: a sphere,
box or circle is centred at its origin; a capsule's or cylinder's axis is the shape z axis
(planar: a segment lies along the shape x axis); a plane's free side is +z of its frame
through its origin (planar: a line's free side is +y).

The narrowphase `collide(a, Ra, pa, b, Rb, pb)` turns a pair of shapes at world poses (R: the
shape axes as columns, p: the shape origin) into ContactPoint records: the point on each
surface, the unit normal from a to b, the gap g = signed distance along it (< 0: overlap) and
a feature id that stays the same while the same features touch. The same algorithms are in C
(fmu_mb/engine/native/geometry.h, mbg_collide), equal to 1e-12.
"""
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import numpy as np

#: kind -> code shared with geometry.h (MBG_SPHERE ...)
KIND_CODES = {"sphere": 0, "capsule": 1, "box": 2, "cylinder": 3, "plane": 4,
              "circle": 5, "segment": 6, "rectangle": 7, "line": 8}
SPATIAL_KINDS = ("sphere", "capsule", "box", "cylinder", "plane")
PLANAR_KINDS = ("circle", "segment", "rectangle", "line")
#: the size tuple of each kind (ShapeItem.size), in this order [m]
SIZE_FIELDS = {"sphere": ("radius",), "capsule": ("radius", "length"),
               "box": ("a", "b", "c"), "cylinder": ("radius", "length"), "plane": (),
               "circle": ("radius",), "segment": ("length", "radius"),
               "rectangle": ("a", "b"), "line": ()}

PARALLEL_TOL = 1e-9      # |u x w| below which two box edges count as parallel
SUPPORT_TOL = 1e-12      # an edge is a support edge when both face normals beside it face n
COINCIDENT = 1e-12       # [m] two points closer than this have no direction (fallback normal)


# ------------------------------------------------------------------ shape descriptors
@dataclass(frozen=True)
class Sphere:
    """Sphere of `radius` centred at the shape origin."""
    radius: float
    kind: ClassVar[str] = "sphere"

    @property
    def size(self):
        return (self.radius,)


@dataclass(frozen=True)
class Capsule:
    """Points within `radius` of the segment of `length` along the shape z axis, centred."""
    radius: float
    length: float
    kind: ClassVar[str] = "capsule"

    @property
    def size(self):
        return (self.radius, self.length)


@dataclass(frozen=True)
class Box:
    """Box of edges size = (a, b, c) along the shape x, y, z axes, centred."""
    size: tuple
    kind: ClassVar[str] = "box"


@dataclass(frozen=True)
class Cylinder:
    """Solid cylinder of `radius`, its axis of `length` along the shape z axis, centred."""
    radius: float
    length: float
    kind: ClassVar[str] = "cylinder"

    @property
    def size(self):
        return (self.radius, self.length)


@dataclass(frozen=True)
class Plane:
    """Half-space below the plane through the shape origin; `normal` (body axes) points to
    the free side (the shape frame's z axis is made to point along it)."""
    normal: tuple = (0.0, 0.0, 1.0)
    kind: ClassVar[str] = "plane"
    size: ClassVar[tuple] = ()


@dataclass(frozen=True)
class Circle:
    """Disc of `radius` centred at the shape origin (planar)."""
    radius: float
    kind: ClassVar[str] = "circle"

    @property
    def size(self):
        return (self.radius,)


@dataclass(frozen=True)
class Segment:
    """Segment of `length` along the shape x axis, centred, thickened by `radius` (a
    capsule; radius 0: a bare segment) (planar)."""
    length: float
    radius: float = 0.0
    kind: ClassVar[str] = "segment"

    @property
    def size(self):
        return (self.length, self.radius)


@dataclass(frozen=True)
class Rectangle:
    """Rectangle of edges size = (a, b) along the shape x, y axes, centred (planar)."""
    size: tuple
    kind: ClassVar[str] = "rectangle"


@dataclass(frozen=True)
class Line:
    """Half-plane below the line through the shape origin; `normal` (body axes) points to the
    free side (planar)."""
    normal: tuple = (0.0, 1.0)
    kind: ClassVar[str] = "line"
    size: ClassVar[tuple] = ()


# ------------------------------------------------------------------ model records
@dataclass(frozen=True)
class ShapeItem:
    """A shape on a body, as the Model keeps it (model.shapes).

    name: the shape's name; body: the body it is fixed to ("ground" for the ground);
    kind: one of KIND_CODES; size: dimensions in the order of SIZE_FIELDS[kind] [m];
    position: the shape origin in body axes (3,) spatial or (2,) planar [m];
    rotation: the shape axes in body axes, as columns of a (3, 3) or (2, 2) nested tuple;
    friction, restitution: the shape's coefficients (None: take the other shape's, see
    pair_coefficients)."""

    name: str
    body: str
    kind: str
    size: tuple
    position: tuple
    rotation: tuple
    friction: Optional[float] = None
    restitution: Optional[float] = None

    @property
    def dims(self) -> dict:
        """The size as a dict, e.g. {"a": 0.4, "b": 0.25, "c": 0.15} for a box."""
        return dict(zip(SIZE_FIELDS[self.kind], self.size))

    @property
    def spatial(self) -> bool:
        return self.kind in SPATIAL_KINDS


@dataclass(frozen=True)
class ShapePair:
    """A pair of shapes that may touch (after the pair filter), as the Model keeps it
    (model.shape_pairs): shape names a and b, their bodies, the coefficients of the pair, how
    the engine treats it (`lowering`: "points" = fixed body points lowered to point contacts),
    and the names of the contacts it became (model.contacts)."""

    a: str
    b: str
    body_a: str
    body_b: str
    friction: float
    restitution: float
    lowering: str
    contacts: tuple = field(default=())


def pair_coefficients(a, b, default_restitution=1.0):
    """(friction, restitution) of a pair: per coefficient the larger of the two shapes'
    values (MuJoCo's rule for friction), a None taking the other's; both None: friction 0 and
    restitution `default_restitution`."""
    def comb(x, y, default):
        vals = [v for v in (x, y) if v is not None]
        return max(vals) if vals else default
    return (comb(a.friction, b.friction, 0.0),
            comb(a.restitution, b.restitution, default_restitution))


# ------------------------------------------------------------------ narrowphase
@dataclass(frozen=True)
class ContactPoint:
    """One contact point of a shape pair (a, b), world coordinates: point_a on a's surface,
    point_b on b's, normal: unit, from a to b; gap: signed distance along the normal [m]
    (< 0: overlap); id: the feature pair (stable while the same features touch)."""

    id: int
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    gap: float


def _cp(i, pa, pb, n, gap):
    return ContactPoint(int(i), np.asarray(pa, float), np.asarray(pb, float),
                        np.asarray(n, float), float(gap))


def _clamp01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


def _unit_or(d, fallback):
    l = float(np.sqrt(d @ d))
    if l > COINCIDENT:
        return d / l, l
    return np.asarray(fallback, float), 0.0


def segment_closest(p1, q1, p2, q2):
    """Closest points of the segments p1-q1 and p2-q2 (any dimension): (s, t, c1, c2) with
    c1 = p1 + s (q1 - p1), c2 = p2 + t (q2 - p2); s = 0 for parallel segments (Ericson,
    Real-Time Collision Detection, sec. 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    if a <= 1e-300 and e <= 1e-300:
        s = t = 0.0
    elif a <= 1e-300:
        s, t = 0.0, _clamp01(f / e)
    else:
        c = d1 @ r
        if e <= 1e-300:
            s, t = _clamp01(-c / a), 0.0
        else:
            b = d1 @ d2
            denom = a * e - b * b
            s = _clamp01((b * f - c * e) / denom) if denom > 1e-14 * a * e else 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t, s = 0.0, _clamp01(-c / a)
            elif t > 1.0:
                t, s = 1.0, _clamp01((b - c) / a)
    return s, t, p1 + s * d1, p2 + t * d2


def point_box(x, R, p, h):
    """Signed distance of point x to the box (axes R columns, centre p, half edges h):
    (q, n, dist): q the nearest surface point, n the box's outward unit normal there (along
    x - q outside; the nearest face's inside), dist < 0 inside."""
    local = R.T @ (x - p)
    dim = len(h)
    q = np.minimum(np.maximum(local, -h), h)
    if np.any(q != local):
        d = local - q
        dist = float(np.sqrt(d @ d))
        nl = d / dist
    else:
        depth = h - np.abs(local)
        i = int(np.argmin(depth))
        s = 1.0 if local[i] >= 0.0 else -1.0
        q = local.copy()
        q[i] = s * h[i]
        nl = np.zeros(dim)
        nl[i] = s
        dist = -float(depth[i])
    return p + R @ q, R @ nl, dist


def _vertices(R, p, h):
    """Box vertices (2^dim, dim); vertex v has sign + along axis i when bit (dim-1-i) of v is
    set (3-D: v = 4 ix + 2 iy + iz)."""
    dim = len(h)
    out = []
    for v in range(1 << dim):
        s = np.array([1.0 if v >> (dim - 1 - i) & 1 else -1.0 for i in range(dim)])
        out.append(p + R @ (s * h))
    return out


# ---- against a plane (3-D) or a line (2-D): the plane is shape a, n its frame's last axis
def _plane_points(Ra, pa, pts, radius, ids):
    n = Ra[:, -1]
    out = []
    for i, c in zip(ids, pts):
        dn = n @ (c - pa)
        out.append(_cp(i, c - dn * n, c - radius * n, n, dn - radius))
    return out


def plane_sphere(Ra, pa, sb, Rb, pb):
    return _plane_points(Ra, pa, [pb], sb[0], [0])


def plane_capsule(Ra, pa, sb, Rb, pb):
    u = 0.5 * sb[1] * Rb[:, 2]
    return _plane_points(Ra, pa, [pb - u, pb + u], sb[0], [0, 1])


def plane_box(Ra, pa, sb, Rb, pb):
    return _plane_points(Ra, pa, _vertices(Rb, pb, 0.5 * np.asarray(sb, float)), 0.0,
                         range(8))


def plane_cylinder(Ra, pa, sb, Rb, pb):
    """The lowest rim point of each end circle (id 0 at -length/2, 1 at +length/2); with the
    axis along the normal, the rim point along the shape's -x axis."""
    n, ax = Ra[:, 2], Rb[:, 2]
    d = n - (n @ ax) * ax
    w, l = _unit_or(d, Rb[:, 0])
    rim = sb[0] * w
    u = 0.5 * sb[1] * ax
    return _plane_points(Ra, pa, [pb - u - rim, pb + u - rim], 0.0, [0, 1])


def line_circle(Ra, pa, sb, Rb, pb):
    return _plane_points(Ra, pa, [pb], sb[0], [0])


def line_segment(Ra, pa, sb, Rb, pb):
    u = 0.5 * sb[0] * Rb[:, 0]
    return _plane_points(Ra, pa, [pb - u, pb + u], sb[1], [0, 1])


def line_rectangle(Ra, pa, sb, Rb, pb):
    return _plane_points(Ra, pa, _vertices(Rb, pb, 0.5 * np.asarray(sb, float)), 0.0,
                         range(4))


# ---- round shapes: a core point or segment thickened by a radius; coincident cores take
# the last axis of b's frame as normal (a's for a rectangle corner on a segment's core)
def _round(i, ca, ra, cb, rb, up):
    n, l = _unit_or(cb - ca, up)
    return _cp(i, ca + ra * n, cb - rb * n, n, l - ra - rb)


def _up(R):
    """The fallback normal of coincident core points: the last axis of a shape's frame."""
    return R[:, -1]


def sphere_sphere(Ra, pa, sa, Rb, pb, sb):
    return [_round(0, pa, sa[0], pb, sb[0], _up(Rb))]


def _core(kind, R, p, s):
    """(end0, end1, radius) of a capsule's or segment's core segment."""
    if kind == "capsule":
        u = 0.5 * s[1] * R[:, 2]
        return p - u, p + u, s[0]
    u = 0.5 * s[0] * R[:, 0]
    return p - u, p + u, s[1]


def _point_segment(x, e0, e1):
    d = e1 - e0
    dd = d @ d
    t = _clamp01(((x - e0) @ d) / dd) if dd > 1e-300 else 0.0
    return e0 + t * d


def sphere_capsule(Ra, pa, sa, Rb, pb, sb, kind_b="capsule"):
    e0, e1, rb = _core(kind_b, Rb, pb, sb)
    return [_round(0, pa, sa[0], _point_segment(pa, e0, e1), rb, _up(Rb))]


def capsule_capsule(Ra, pa, sa, Rb, pb, sb, kind="capsule"):
    a0, a1, ra = _core(kind, Ra, pa, sa)
    b0, b1, rb = _core(kind, Rb, pb, sb)
    _, _, ca, cb = segment_closest(a0, a1, b0, b1)
    return [_round(0, ca, ra, cb, rb, _up(Rb))]


def sphere_box(Ra, pa, sa, Rb, pb, sb):
    q, nb, dist = point_box(pa, Rb, pb, 0.5 * np.asarray(sb, float))
    n = -nb
    return [_cp(0, pa + sa[0] * n, q, n, dist - sa[0])]


def _vertex_features(Ra, pa, ha, Rb, pb, hb, first, radius=0.0):
    """Each vertex of box a against box b (ids first + v): the normal from a to b."""
    out = []
    for v, x in enumerate(_vertices(Ra, pa, ha)):
        q, nb, dist = point_box(x, Rb, pb, hb)
        out.append((first + v, x, q, -nb, dist))
    return out


def _edges(R, p, h):
    """The 12 edges of a box: (id, axis k, signs s1 s2 of the two other axes, end0, end1);
    id = 4 k + 2 [s1 > 0] + [s2 > 0]."""
    out = []
    for k in range(3):
        k1, k2 = (k + 1) % 3, (k + 2) % 3
        for m in range(4):
            s1 = 1.0 if m & 2 else -1.0
            s2 = 1.0 if m & 1 else -1.0
            c = p + R[:, k1] * (s1 * h[k1]) + R[:, k2] * (s2 * h[k2])
            out.append((4 * k + m, k, k1, k2, s1, s2, c - R[:, k] * h[k], c + R[:, k] * h[k]))
    return out


def box_box(Ra, pa, sa, Rb, pb, sb):
    """Vertex-face features (ids 0-7: a's vertices against b, 8-15: b's against a) and
    edge-edge features (id 16 + 12 ea + eb) where both edges are supports along their common
    normal n (a's edge the farthest along n, b's the farthest along -n), n points from a's
    centre towards b's (the side of larger separation on the axis, as in the separating-axis
    test) and the closest points lie inside both edges."""
    ha, hb = 0.5 * np.asarray(sa, float), 0.5 * np.asarray(sb, float)
    out = [_cp(i, x, q, n, d) for i, x, q, n, d in _vertex_features(Ra, pa, ha, Rb, pb, hb, 0)]
    for i, x, q, n, d in _vertex_features(Rb, pb, hb, Ra, pa, ha, 8):
        out.append(_cp(i, q, x, -n, d))
    eb_list = _edges(Rb, pb, hb)
    for ea, ka, ka1, ka2, sa1, sa2, a0, a1 in _edges(Ra, pa, ha):
        for eb, kb, kb1, kb2, sb1, sb2, b0, b1 in eb_list:
            n = np.cross(Ra[:, ka], Rb[:, kb])
            ln = float(np.sqrt(n @ n))
            if ln < PARALLEL_TOL:
                continue
            n = n / ln
            if sa1 * (n @ Ra[:, ka1]) + sa2 * (n @ Ra[:, ka2]) < 0.0:
                n = -n
            if not (sa1 * (n @ Ra[:, ka1]) > SUPPORT_TOL and sa2 * (n @ Ra[:, ka2]) > SUPPORT_TOL
                    and -sb1 * (n @ Rb[:, kb1]) > SUPPORT_TOL
                    and -sb2 * (n @ Rb[:, kb2]) > SUPPORT_TOL and n @ (pb - pa) >= 0.0):
                continue
            s, t, ca, cb = segment_closest(a0, a1, b0, b1)
            if not (0.0 < s < 1.0 and 0.0 < t < 1.0):
                continue
            out.append(_cp(16 + 12 * ea + eb, ca, cb, n, n @ (cb - ca)))
    return out


def capsule_box(Ra, pa, sa, Rb, pb, sb):
    """The capsule's core ends against the box (ids 0, 1), the box's vertices against the
    core (ids 2-9) and core - box edge features (id 10 + eb) where the edge is a support
    along their common normal n (the farthest along -n; n from the capsule's centre towards
    the box's side) and the closest points lie inside the core and the edge."""
    e0, e1, r = _core("capsule", Ra, pa, sa)
    hb = 0.5 * np.asarray(sb, float)
    out = []
    for i, e in enumerate((e0, e1)):
        q, nb, dist = point_box(e, Rb, pb, hb)
        n = -nb
        out.append(_cp(i, e + r * n, q, n, dist - r))
    for v, x in enumerate(_vertices(Rb, pb, hb)):
        out.append(_round(2 + v, _point_segment(x, e0, e1), r, x, 0.0, _up(Ra)))
    ua = Ra[:, 2]
    for eb, kb, kb1, kb2, sb1, sb2, b0, b1 in _edges(Rb, pb, hb):
        n = np.cross(ua, Rb[:, kb])
        ln = float(np.sqrt(n @ n))
        if ln < PARALLEL_TOL:
            continue
        n = n / ln
        if sb1 * (n @ Rb[:, kb1]) + sb2 * (n @ Rb[:, kb2]) > 0.0:
            n = -n
        if not (-sb1 * (n @ Rb[:, kb1]) > SUPPORT_TOL and -sb2 * (n @ Rb[:, kb2]) > SUPPORT_TOL
                and n @ (pb - pa) >= 0.0):
            continue
        s_, t, ca, cb = segment_closest(e0, e1, b0, b1)
        if not (0.0 < s_ < 1.0 and 0.0 < t < 1.0):
            continue
        out.append(_cp(10 + eb, ca + r * n, cb, n, n @ (cb - ca) - r))
    return out


def circle_rectangle(Ra, pa, sa, Rb, pb, sb):
    return sphere_box(Ra, pa, sa, Rb, pb, sb)


def segment_rectangle(Ra, pa, sa, Rb, pb, sb):
    """The segment's ends against the rectangle (ids 0, 1) and the rectangle's corners against
    the segment (ids 2-5)."""
    e0, e1, r = _core("segment", Ra, pa, sa)
    hb = 0.5 * np.asarray(sb, float)
    out = []
    for i, e in enumerate((e0, e1)):
        q, nb, dist = point_box(e, Rb, pb, hb)
        n = -nb
        out.append(_cp(i, e + r * n, q, n, dist - r))
    for v, x in enumerate(_vertices(Rb, pb, hb)):
        out.append(_round(2 + v, _point_segment(x, e0, e1), r, x, 0.0, _up(Ra)))
    return out


def rectangle_rectangle(Ra, pa, sa, Rb, pb, sb):
    """Each corner of a against b (ids 0-3) and of b against a (ids 4-7)."""
    ha, hb = 0.5 * np.asarray(sa, float), 0.5 * np.asarray(sb, float)
    out = [_cp(i, x, q, n, d) for i, x, q, n, d in _vertex_features(Ra, pa, ha, Rb, pb, hb, 0)]
    for i, x, q, n, d in _vertex_features(Rb, pb, hb, Ra, pa, ha, 4):
        out.append(_cp(i, q, x, -n, d))
    return out


def _sized(f, **kw):
    return lambda Ra, pa, sa, Rb, pb, sb: f(Ra, pa, sa, Rb, pb, sb, **kw)


def _planar(f):
    return lambda Ra, pa, sa, Rb, pb, sb: f(Ra, pa, sb, Rb, pb)


#: (kind a, kind b) -> function of (Ra, pa, sa, Rb, pb, sb); the reversed pairs swap
PAIRS = {
    ("plane", "sphere"): _planar(plane_sphere),
    ("plane", "capsule"): _planar(plane_capsule),
    ("plane", "box"): _planar(plane_box),
    ("plane", "cylinder"): _planar(plane_cylinder),
    ("sphere", "sphere"): sphere_sphere,
    ("sphere", "capsule"): sphere_capsule,
    ("capsule", "capsule"): capsule_capsule,
    ("sphere", "box"): sphere_box,
    ("capsule", "box"): capsule_box,
    ("box", "box"): box_box,
    ("line", "circle"): _planar(line_circle),
    ("line", "segment"): _planar(line_segment),
    ("line", "rectangle"): _planar(line_rectangle),
    ("circle", "circle"): sphere_sphere,
    ("circle", "segment"): _sized(sphere_capsule, kind_b="segment"),
    ("segment", "segment"): _sized(capsule_capsule, kind="segment"),
    ("circle", "rectangle"): circle_rectangle,
    ("segment", "rectangle"): segment_rectangle,
    ("rectangle", "rectangle"): rectangle_rectangle,
}


def supported(kind_a, kind_b):
    """True when the narrowphase has the pair (in either order)."""
    return (kind_a, kind_b) in PAIRS or (kind_b, kind_a) in PAIRS


def collide(a, Ra, pa, b, Rb, pb):
    """Contact points of shapes a and b (anything with .kind and .size: a descriptor or a
    ShapeItem) at world poses (R (d, d): shape axes as columns, p (d,): shape origin).

    Returns a list of ContactPoint sorted by id, every candidate feature of the pair whatever
    its gap (the caller keeps those below its margin). Raises ValueError for a pair the
    narrowphase does not have."""
    Ra, pa, Rb, pb = (np.asarray(v, float) for v in (Ra, pa, Rb, pb))
    sa, sb = tuple(float(v) for v in a.size), tuple(float(v) for v in b.size)
    f = PAIRS.get((a.kind, b.kind))
    if f is not None:
        out = f(Ra, pa, sa, Rb, pb, sb)
    else:
        f = PAIRS.get((b.kind, a.kind))
        if f is None:
            raise ValueError(f"narrowphase: no contact between a {a.kind} and a {b.kind}; "
                             f"pairs are {sorted(PAIRS)}")
        out = [ContactPoint(c.id, c.point_b, c.point_a, -c.normal, c.gap)
               for c in f(Rb, pb, sb, Ra, pa, sa)]
    return sorted(out, key=lambda c: c.id)


def distance(a, Ra, pa, b, Rb, pb):
    """Signed distance of two shapes: the smallest gap of their contact points [m] (exact for
    separated shapes; for overlapping boxes the smallest feature depth)."""
    return min(c.gap for c in collide(a, Ra, pa, b, Rb, pb))
