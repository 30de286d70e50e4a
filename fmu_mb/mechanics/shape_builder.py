"""The shape half of ModelBuilder (mixed into fmu_mb.mechanics.builder.ModelBuilder):
collision shapes on bodies, the pair filter, and the lowering of shape pairs to the engine's
contacts (docs/shapes.md).

mb.shape(body, Box((a, b, c)), position=..., orientation=..., friction=mu, restitution=e)
fixes a shape to a body (or to the ground) in body axes. At build() every pair of shapes on
two different bodies that passes the filter (not both on the ground; bodies joined by a joint
do not touch unless mb.collide(a, b) says so; mb.collide(a, b, False) keeps two bodies, or
two shapes, apart) becomes contacts of model.contacts. Pairs whose contact points are fixed
body points are lowered to today's point contacts, exact:

    plane/line  - sphere/circle     one point_plane/point_line at the centre, offset radius
    plane/line  - capsule/segment   two, at the ends of the core segment, offset radius
    plane/line  - box/rectangle     one per vertex (8 / 4), offset 0
    sphere - sphere, circle - circle  one point_point between the centres, distance ra + rb
                                      (frictionless)
    sphere, capsule, box pairs      one shape_pair contact per narrowphase feature (1; capsule
                                    - box 22, box - box 160), the contact points moving on both
                                    bodies
                                    (mechanics.spatial.pairs)
    circle, segment, rectangle      one shape_pair contact per feature (1; segment - segment
      pairs (planar)                4, segment - rectangle 6, rectangle - rectangle 8)
                                    (mechanics.planar_pairs)
    ground plane - cylinder         two rim_plane contacts, the end circles (their rim point
                                    moves on the body: mechanics.spatial.rim)

with the pair's friction and restitution (shapes.pair_coefficients) on each contact
(docs/contacts-friction.md, "For shapes"), named <shape a>_<shape b>_<feature id> (the
narrowphase's feature ids). The other pairs of the narrowphase (the cylinder's, but for
one on the ground's plane) are refused with a message naming the pair."""
import math
from dataclasses import replace

import numpy as np

from ..errors import ModelError
from .model import GROUND, Contact
from .shapes import (PLANAR_KINDS, SPATIAL_KINDS, ShapeItem, ShapePair, pair_coefficients,
                     supported)
from .validation import number

_FLAT = {"plane", "line"}
_ROUND_POINT = {"sphere", "circle"}


def _vec2(where, arg, value):
    """A planar 2-vector of finite numbers, as a tuple (ModelError naming arg otherwise)."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: {arg} must be a finite 2-vector (x, y), received {value!r}")
    return tuple(float(v) for v in a)


def _rotation2(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


class ShapeItems:
    """Builder calls for collision shapes; ModelBuilder keeps the list self._shapes and the
    dict self._collide (("bodies" or "shapes", frozenset of two names) -> True/False)."""

    def shape(self, body, shape, *, name=None, position=None, orientation=None, angle=None,
              friction=None, restitution=None):
        """Fix a collision shape to `body` (a body name or mb.ground) and return its name.

        shape: a descriptor of fmu_mb.mechanics.shapes (spatial: Sphere, Capsule, Box,
            Cylinder, Plane; planar: Circle, Segment, Rectangle, Line).
        position: the shape origin in body axes [m] (default the body's origin).
        orientation: spatial: the shape axes in body axes, a quaternion (e0, e1, e2, e3) or a
            3 x 3 rotation matrix; angle: planar: the shape x axis's angle to the body's [rad].
            A Plane's normal (Line's) is turned by the orientation too.
        friction: Coulomb coefficient mu >= 0; restitution: Newton's e in [0, 1]; None takes
            the other shape's value in a pair (the larger of two given values is used; both
            None: friction 0, restitution 1).
        name: default <body>_<kind>, numbered from 2 when taken.
        """
        kind = getattr(shape, "kind", None)
        kinds = SPATIAL_KINDS if self.spatial else PLANAR_KINDS
        where = f"shape {name!r} on {body!r}" if name is not None else f"shape on {body!r}"
        if kind not in kinds:
            what = "spatial" if self.spatial else "planar"
            raise ModelError(f"{where}: expected a shape of a {what} "
                             f"model ({', '.join(k.capitalize() for k in kinds)} of "
                             f"fmu_mb.mechanics.shapes), received {shape!r}")
        body = self._body_ref(where, "body", body)
        if name is None:
            name, k = f"{body}_{kind}", 2
            while name in self._names:
                name, k = f"{body}_{kind}{k}", k + 1
        where = f"shape '{name}'"
        # a float's own object is kept: the parameter compiler's traced floats (Sym) then
        # carry through to the contact points (fmu_mb.engine.params)
        size = []
        for i, v in enumerate(shape.size):
            checked = number(where, f"size[{i}]", v, nonneg=True)
            size.append(v if isinstance(v, float) else checked)
        size = tuple(size)
        if kind in ("box", "rectangle") and len(size) != (3 if kind == "box" else 2):
            edges = "a, b, c" if kind == "box" else "a, b"
            raise ModelError(f"{where}: a {kind} takes size=({edges}) "
                             f"edge lengths [m], received {shape.size!r}")
        if kind in ("sphere", "circle") and size[0] <= 0.0:
            raise ModelError(f"{where}: radius must be > 0, received {size[0]}")
        if self.spatial:
            from .spatial.builder import orientation_quaternion, vec3
            from .spatial import rotations as rot
            self._not_here(where, "spatial", angle=angle)
            p = np.array(vec3(where, "position", (0, 0, 0) if position is None else position))
            q = orientation_quaternion(where, (1.0, 0.0, 0.0, 0.0) if orientation is None
                                       else orientation)
            R = rot.matrix(np.array([q]))[0]
            if kind == "plane":
                R = R @ rot.frame_from_axis(vec3(where, "normal", shape.normal, unit=True))
        else:
            self._not_here(where, "planar", orientation=orientation)
            p = np.array(_vec2(where, "position", (0.0, 0.0) if position is None else position))
            R = _rotation2(number(where, "angle", 0.0 if angle is None else angle))
            if kind == "line":
                n = np.array(_vec2(where, "normal", shape.normal), float)
                ln = float(np.hypot(*n))
                if ln < 1e-12:
                    raise ModelError(f"{where}: normal must be a nonzero vector, received "
                                     f"{shape.normal!r}")
                n = n / ln
                R = R @ np.array([[n[1], n[0]], [-n[0], n[1]]])
        mu = None if friction is None else number(where, "friction", friction, nonneg=True)
        e = None if restitution is None else number(where, "restitution", restitution)
        if e is not None and not 0.0 <= e <= 1.0:
            raise ModelError(f"{where}: restitution must be in [0, 1], received {e}")
        self._claim(name, "shape")
        self._shapes.append(ShapeItem(name, body, kind, size, tuple(map(float, p)),
                                      tuple(map(tuple, R.tolist())), mu, e))
        return name

    def collide(self, a, b, enabled=True):
        """The pair filter: bodies a and b (body names or mb.ground), or shapes a and b (shape
        names), touch (enabled=True) or never do (False). A rule for two shapes overrides
        the rule for their bodies; by default all pairs of bodies touch except two bodies
        joined by a joint (a rule enabled=True lets them touch too)."""
        where = f"collide({a!r}, {b!r})"
        shapes = {s.name for s in self._shapes}
        if a in shapes and b in shapes:
            key = ("shapes", frozenset((a, b)))
        else:
            a = self._body_ref(where, "a", a)
            b = self._body_ref(where, "b", b)
            key = ("bodies", frozenset((a, b)))
        if a == b:
            raise ModelError(f"{where}: a and b are the same {key[0][:-1]} '{a}'")
        self._collide[key] = bool(enabled)

    # ------------------------------------------------------------------ at build()
    def _shape_pairs(self):
        """The pairs that pass the filter, in declaration order, as (shape a, shape b)."""
        joined = {frozenset((j.parent, j.child)) for j in self._joints}
        out = []
        for i, a in enumerate(self._shapes):
            for b in self._shapes[i + 1:]:
                if a.body == b.body:
                    continue
                key = frozenset((a.body, b.body))
                rule = self._collide.get(("bodies", key), key not in joined)
                if not self._collide.get(("shapes", frozenset((a.name, b.name))), rule):
                    continue
                out.append((a, b))
        return out

    def _lower_shapes(self):
        """Contacts for every filtered shape pair (appended to self._contacts) and the
        ShapePair records; refuses pairs that the engine cannot take."""
        pairs = []
        for a, b in self._shape_pairs():
            if a.kind in _FLAT and b.kind in _FLAT:
                continue                    # two half-spaces: no contact points
            if b.kind in _FLAT and a.kind not in _FLAT:
                a, b = b, a                 # the plane first
            where = (f"shapes '{a.name}' ({a.kind} on {a.body}) and '{b.name}' ({b.kind} on "
                     f"{b.body})")
            if not supported(a.kind, b.kind):
                raise ModelError(f"{where}: no contact between a {a.kind} and a {b.kind}; "
                                 f"keep the bodies apart with mb.collide({a.body!r}, "
                                 f"{b.body!r}, False)")
            mu, e = pair_coefficients(a, b)
            base = f"{a.name}_{b.name}"
            if a.kind in _FLAT and b.body == GROUND:
                raise ModelError(f"{where}: a shape on the ground against a plane on a body "
                                 f"is not supported; put the plane on the ground and the "
                                 f"shape on the body, or keep them apart with "
                                 f"mb.collide({a.body!r}, {b.body!r}, False)")
            if a.kind in _FLAT and b.kind != "cylinder":
                items = self._flat_contacts(a, b, e, mu)
            elif a.kind == "plane" and b.kind == "cylinder" and a.body == GROUND:
                items = self._rim_contacts(a, b, e, mu)
            elif a.kind in _ROUND_POINT and b.kind in _ROUND_POINT and mu == 0.0:
                items = [(0, Contact("", "point_point", a.body, b.body, a.position, b.position,
                                     (0.0,) * len(a.position), a.size[0] + b.size[0], 1.0,
                                     restitution=e))]
            elif {(a.kind, b.kind), (b.kind, a.kind)} & set(_pairs()[0] + _pairs()[1]):
                PAIR_KINDS, PLANAR_PAIR_KINDS, pair_features, planar_features = _pairs()
                kinds = PAIR_KINDS if self.spatial else PLANAR_PAIR_KINDS
                if (a.kind, b.kind) not in kinds:
                    a, b = b, a             # the narrowphase's order
                    base = f"{a.name}_{b.name}"
                feats = pair_features if self.spatial else planar_features
                normal = (0.0, 0.0, 1.0) if self.spatial else (0.0, 1.0)
                items = [(fid, Contact("", "shape_pair", b.body, a.body, b.position,
                                       a.position, normal, 0.0, restitution=e,
                                       friction=mu, shapes=(a, b), feature=fid))
                         for fid in feats(a.kind, b.kind)]
            else:
                raise ModelError(f"{where}: the contact points of a {a.kind} and a {b.kind} "
                                 f"move on the bodies; the engine takes a plane or line "
                                 f"against sphere, capsule, box, circle, segment, rectangle, "
                                 f"a cylinder on the ground's plane, the spatial pairs of "
                                 f"sphere, capsule and box and the planar "
                                 f"pairs of circle, segment and rectangle so far. "
                                 f"Keep the bodies apart with mb.collide({a.body!r}, "
                                 f"{b.body!r}, False) or the shapes with "
                                 f"mb.collide({a.name!r}, {b.name!r}, False)")
            names = []
            for fid, c in items:
                cname = f"{base}_{fid}"
                self._claim(cname, "contact")
                self._contacts.append(replace(c, name=cname))
                names.append(cname)
            pairs.append(ShapePair(a.name, b.name, a.body, b.body, mu, e, "points",
                                   tuple(names)))
        return tuple(pairs)

    def _rim_contacts(self, a, b, e, mu):
        """The two end circles of cylinder b (ids 0 at -length/2, 1 at +length/2; one circle,
        id 0, for a disc of length 0) against the ground plane a: rim_plane contacts
        (mechanics.spatial.rim)."""
        Rb, pb = np.array(b.rotation, float), np.array(b.position, float)
        axis = Rb[:, 2]
        n = tuple(float(row[-1]) for row in a.rotation)
        return [(i, Contact("", "rim_plane", b.body, a.body,
                            tuple(float(v) for v in pb + s * 0.5 * b.size[1] * axis),
                            tuple(map(float, a.position)), n, float(b.size[0]),
                            restitution=e, friction=mu, axis=tuple(map(float, axis))))
                for i, s in enumerate((-1.0, 1.0) if b.size[1] > 0.0 else (0.0,))]

    def _flat_contacts(self, a, b, e, mu):
        """Point contacts of the fixed points of shape b on the plane (line) a: (feature id,
        Contact) with the points in b's body axes and the plane in a's."""
        Rb, pb, d = b.rotation, b.position, len(b.position)
        n = tuple(row[-1] for row in a.rotation)

        def at(local):               # b's body axes; plain arithmetic (traced floats pass)
            return tuple(pb[i] + sum(Rb[i][j] * local[j] for j in range(d)) for i in range(d))
        if b.kind in ("sphere", "circle"):
            pts, r = [pb], b.size[0]
        elif b.kind in ("capsule", "segment"):
            k, half, r = ((2, 0.5 * b.size[1], b.size[0]) if b.kind == "capsule"
                          else (0, 0.5 * b.size[0], b.size[1]))
            pts = [at([s * half if j == k else 0.0 for j in range(d)]) for s in (-1.0, 1.0)]
        else:
            h, r = [0.5 * v for v in b.size], 0.0
            pts = [at([(1.0 if v >> (d - 1 - j) & 1 else -1.0) * h[j] for j in range(d)])
                   for v in range(1 << d)]          # the vertex order of shapes._vertices
        kind = "point_plane" if self.spatial else "point_line"
        return [(i, Contact("", kind, b.body, a.body, tuple(map(float, x)), a.position, n,
                            float(r), restitution=e, friction=mu))
                for i, x in enumerate(pts)]


def _pairs():
    """(spatial pair kinds, planar pair kinds, spatial features, planar features), loaded only
    when a model has a pair of moving shapes."""
    from .planar_pairs import KINDS as planar_kinds, features as planar_features
    from .spatial.pairs import KINDS as kinds, features
    return kinds, planar_kinds, features, planar_features
