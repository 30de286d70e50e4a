"""Shapes on bodies (ModelBuilder.shape), the pair filter and the lowering of shape pairs to
point contacts (fmu_mb.mechanics.shape_builder): the lowered contacts' gaps equal the
narrowphase's at random poses of the bodies; the tumbling box with a Box shape moves exactly
as with eight corner points; the filter and the refusals."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import (Box, Capsule, Circle, Cylinder, Line, ModelBuilder, ModelError, Plane,
                    Rectangle, Segment, Sphere, cardan, simulate)
from fmu_mb.mechanics.contacts import gaps
from fmu_mb.mechanics.shapes import collide
from fmu_mb.mechanics.spatial import rotations as rot

MODELS = Path(__file__).resolve().parents[1] / "models"


def spatial_scene(enabled=True):
    mb = ModelBuilder("scene", gravity=(0.0, 0.0, -9.81))
    one = mb.body("one", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    two = mb.body("two", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(1, 0, 1))
    mb.shape(mb.ground, Plane(normal=(0.1, -0.2, 1.0)), name="floor", position=(0, 0, -0.1))
    mb.shape(one, Box((0.4, 0.3, 0.2)), position=(0.1, 0.0, 0.05),
             orientation=cardan(0.3, -0.2, 0.1))
    mb.shape(one, Sphere(0.15), name="ball1", position=(-0.2, 0.1, 0.0))
    mb.shape(two, Capsule(0.1, 0.5), orientation=cardan(1.0, 0.2, 0.0))
    mb.shape(two, Sphere(0.2), name="ball2", position=(0.0, 0.3, 0.1))
    mb.shape(two, Plane(normal=(0, 1, 0)), name="wall", position=(0, -0.5, 0))
    mb.collide("one", "two", False)             # the bodies apart, three shape pairs touch
    for a, b in (("ball1", "ball2"), ("wall", "one_box"), ("ball1", "wall")):
        mb.collide(a, b, enabled)
    return mb.build()


def world(model, x, body):
    if body == "ground":
        d = 3 if model.spatial else 2
        return np.eye(d), np.zeros(d)
    q = x[model.body_slice(body)]
    if model.spatial:
        return rot.matrix(q[None, 3:])[0], q[:3]
    c, s = np.cos(q[2]), np.sin(q[2])
    return np.array([[c, -s], [s, c]]), q[:2]


def check_lowering(model, rng, moves):
    """At random body poses the gaps of each pair's contacts equal the narrowphase's."""
    shapes = {s.name: s for s in model.shapes}
    names = [c.name for c in model.contacts]
    for _ in range(moves):
        x = np.array(model.x0, float)
        for b in model.bodies:
            sl = model.body_slice(b.name)
            if model.spatial:
                x[sl] = np.concatenate([rng.uniform(-1, 1, 3), rot.cardan(*rng.uniform(-3, 3, 3))])
            else:
                x[sl] = rng.uniform(-1, 1, 3) * (1, 1, 3)
        g = gaps(model, x)
        assert model.shape_pairs
        for pair in model.shape_pairs:
            poses = []
            for sname in (pair.a, pair.b):
                s = shapes[sname]
                R, p = world(model, x, s.body)
                poses += [s, R @ np.array(s.rotation), p + R @ np.array(s.position)]
            ref = {c.id: c.gap for c in collide(*poses)}
            got = {int(n.rsplit("_", 1)[1]): g[names.index(n)] for n in pair.contacts}
            assert got.keys() == ref.keys()
            for k in ref:
                assert got[k] == pytest.approx(ref[k], abs=1e-12)


def test_spatial_lowering_equals_narrowphase():
    m = spatial_scene(enabled=True)
    kinds = {(p.a, p.b) for p in m.shape_pairs}
    # floor-box, floor-ball1, floor-capsule, floor-ball2, ball1-ball2, wall-box, wall-ball1
    assert kinds == {("floor", "one_box"), ("floor", "ball1"), ("floor", "two_capsule"),
                     ("floor", "ball2"), ("ball1", "ball2"), ("wall", "one_box"),
                     ("wall", "ball1")}
    assert len(m.contacts) == 8 + 1 + 2 + 1 + 1 + 8 + 1
    check_lowering(m, np.random.default_rng(1), 20)


def test_planar_lowering_equals_narrowphase():
    mb = ModelBuilder("flat")
    one = mb.body("one", mass=1.0, inertia=0.1, position=(0, 1))
    two = mb.body("two", mass=1.0, inertia=0.1, position=(1, 1))
    mb.shape(mb.ground, Line(normal=(0.2, 1.0)), name="floor")
    mb.shape(one, Rectangle((0.4, 0.3)), position=(0.1, 0.05), angle=0.4)
    mb.shape(one, Circle(0.15), name="c1", position=(-0.2, 0.1))
    mb.shape(two, Segment(0.5, 0.1), angle=1.0)
    mb.shape(two, Circle(0.2), name="c2")
    mb.shape(two, Line(normal=(-1, 0)), name="wall", position=(-0.5, 0), angle=0.3)
    mb.collide(one, two, False)
    for a, b in (("c1", "c2"), ("wall", "one_rectangle"), ("c1", "wall")):
        mb.collide(a, b)
    m = mb.build()
    assert {(p.a, p.b) for p in m.shape_pairs} == {
        ("floor", "one_rectangle"), ("floor", "c1"), ("floor", "two_segment"), ("floor", "c2"),
        ("c1", "c2"), ("wall", "one_rectangle"), ("wall", "c1")}
    check_lowering(m, np.random.default_rng(2), 20)


def test_model_shapes_for_the_viewer():
    m = spatial_scene(enabled=True)
    box = next(s for s in m.shapes if s.kind == "box")
    assert (box.name, box.body, box.dims) == ("one_box", "one", {"a": 0.4, "b": 0.3, "c": 0.2})
    assert box.position == (0.1, 0.0, 0.05)
    assert np.allclose(np.array(box.rotation), rot.matrix(cardan(0.3, -0.2, 0.1)[None])[0])
    floor = next(s for s in m.shapes if s.name == "floor")
    n = np.array([0.1, -0.2, 1.0])
    assert np.allclose(np.array(floor.rotation)[:, 2], n / np.linalg.norm(n))


def joined_spheres(rule=None):
    """Two bodies with a sphere each, joined by a spherical joint; rule: mb.collide's enabled
    for the pair (None: no rule)."""
    mb = ModelBuilder("joined", gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    b = mb.body("b", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0.5, 0, 1))
    mb.spherical("j", a, b, at=(0.25, 0, 1))
    mb.shape(a, Sphere(0.2))
    mb.shape(b, Sphere(0.2))
    if rule is not None:
        mb.collide(b, a, rule)
    return mb.build()


def test_pair_filter():
    assert not any("ball1_ball2" in c.name for c in spatial_scene(enabled=False).contacts)
    assert joined_spheres().contacts == ()        # joined by a joint: no contact by default
    assert joined_spheres(False).contacts == ()
    m = joined_spheres(True)
    assert [c.name for c in m.contacts] == ["a_sphere_b_sphere_0"]
    assert m.contacts[0].offset == pytest.approx(0.4)


def test_coefficients_of_a_pair():
    mb = ModelBuilder("coef", gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    mb.shape(mb.ground, Plane(), friction=0.3)
    mb.shape(a, Sphere(0.2), friction=0.5, restitution=0.4)
    m = mb.build()
    (p,) = m.shape_pairs
    assert (p.friction, p.restitution) == (0.5, 0.4)
    assert m.contacts[0].restitution == 0.4


def test_refusals():
    mb = ModelBuilder("bad", gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    b = mb.body("b", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 3))
    with pytest.raises(ModelError, match="expected a shape of a spatial model"):
        mb.shape(a, Circle(0.1))
    with pytest.raises(ModelError, match="unknown body body 'nope'"):
        mb.shape("nope", Sphere(0.1))
    with pytest.raises(ModelError, match="radius must be > 0"):
        mb.shape(a, Sphere(0.0))
    with pytest.raises(ModelError, match=r"a box takes size=\(a, b, c\)"):
        mb.shape(a, Box((1.0, 2.0)))
    with pytest.raises(ModelError, match="restitution must be in"):
        mb.shape(a, Sphere(0.1), restitution=1.5)
    mb.shape(a, Cylinder(0.1, 0.2))          # cylinder - box: no narrowphase
    mb.shape(b, Box((0.2, 0.2, 0.2)))
    with pytest.raises(ModelError, match=r"no contact between a cylinder and a box.*"
                                         r"mb.collide\('a', 'b', False\)"):
        mb.build()
    mb.collide(a, b, False)
    mb.build()                                # filtered out: builds
    p = ModelBuilder("badp")
    c = p.body("c", mass=1.0, inertia=0.1)
    d = p.body("d", mass=1.0, inertia=0.1, position=(1.0, 0.0))
    p.shape(c, Rectangle((0.2, 0.1)), name="rc")
    p.shape(d, Circle(0.1), name="cd")
    # planar pairs of moving shapes: shape_pair contacts (mechanics.planar_pairs)
    assert [x.kind for x in p.build().contacts] == ["shape_pair"]
    p.collide(c, d, False)
    with pytest.raises(ModelError, match="expected a shape of a planar model"):
        p.shape(c, Sphere(0.1))
    with pytest.raises(ModelError, match="orientation belong"):
        p.shape(c, Circle(0.1), orientation=(1, 0, 0, 0))


def test_cylinder_on_a_plane_of_a_body_refused():
    """A cylinder's rims on the ground plane run (tests/test_rim.py); on a plane fixed to a
    moving body they are refused, naming the pair."""
    mb = ModelBuilder("wheel_on_cart", gravity=(0.0, 0.0, -9.81))
    w = mb.body("w", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    cart = mb.body("cart", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 0))
    mb.shape(cart, Plane(), name="deck")
    mb.shape(w, Cylinder(0.3, 0.05), name="tyre")
    with pytest.raises(ModelError,
                       match="'deck' \\(plane on cart\\) and 'tyre'.*move on the bodies"):
        mb.build()


def test_tumbling_box_shape_equals_corner_points():
    """The Box shape against the ground Plane moves exactly as eight corner points of radius
    0 (the corners variant), bit for bit."""
    sys.path.insert(0, str(MODELS))
    try:
        import tumbling_box
    finally:
        sys.path.remove(str(MODELS))
    corners = simulate(tumbling_box.build(r=0.0), 1.0)
    box = simulate(tumbling_box.build(shape="box"), 1.0)
    assert len(tumbling_box.build(shape="box").contacts) == 8
    for k in ("box.x", "box.y", "box.z", "box.e0", "box.e1", "box.e2", "box.e3", "box.vx",
              "box.vz"):
        assert np.array_equal(corners[k], box[k])
    assert box["box.z"].min() < 0.2          # it did land
