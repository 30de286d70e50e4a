"""Planar shape pairs of two moving shapes (circle, segment, rectangle) as contacts (kind
shape_pair: fmu_mb.mechanics.planar_pairs, docs/shapes.md).

Checked against independent references: the features' gaps, points and normals against the
narrowphase (mechanics.shapes.collide); the normal and tangential rows and their convective
terms against finite differences of the gaps and of the slip velocities along random
motions; the slip row against the material velocities of the two bodies at the contact
point; the C twin (native/planar_pairs.h, compiled here alone) equal to the Python rows to
1e-12; closed forms: two discs head-on exchange momenta by Newton's restitution law, a disc
resting on a rectangle and a rectangle stacked on a rectangle carry their weights."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import Circle, ModelBuilder, Rectangle, Segment, simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.mechanics import shapes as sh
from fmu_mb.mechanics.contacts import contact_rows
from fmu_mb.mechanics.friction import tangent_rows
from fmu_mb.mechanics.planar_pairs import pair_rows

SHAPES = {"circle": Circle(0.25), "segment": Segment(0.6, 0.1),
          "rectangle": Rectangle((0.5, 0.3)), "rectangle2": Rectangle((0.3, 0.6)),
          "circle2": Circle(0.15), "segment2": Segment(0.4, 0.05)}
PAIRS = [("circle", "circle2"), ("circle", "segment"), ("segment", "segment2"),
         ("circle", "rectangle"), ("segment", "rectangle"), ("rectangle", "rectangle2"),
         ("rectangle", "circle"), ("segment", "circle")]
IDS = [f"{a}-{b}" for a, b in PAIRS]
TIGHT = dict(rtol=1e-11, atol=1e-13)


def two_bodies(a, b, mu=0.3, ground_a=False):
    """Shapes a and b (keys of SHAPES) on two free bodies (a on the ground: ground_a)."""
    mb = ModelBuilder("pair", gravity=(0.0, -9.81))
    ba = mb.ground if ground_a else mb.body("A", mass=1.0, inertia=0.1)
    bb = mb.body("B", mass=1.5, inertia=0.12, position=(0.0, 1.0))
    mb.shape(ba, SHAPES[a], name="sa", position=(0.03, -0.02), angle=0.3, friction=mu)
    mb.shape(bb, SHAPES[b], name="sb", position=(-0.02, 0.04), angle=-0.5)
    return mb.build()


def world_poses(m, q):
    out = {}
    for s in m.shapes:
        if s.body == "ground":
            r, phi = np.zeros(2), 0.0
        else:
            b = m.body(s.body).index
            r, phi = q[3 * b:3 * b + 2], q[3 * b + 2]
        A = np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]])
        out[s.name] = A @ np.array(s.rotation), r + A @ np.array(s.position)
    return out


def random_state(rng, nb, spread=0.35):
    q = np.concatenate([np.r_[rng.normal(scale=spread, size=2), rng.uniform(-3, 3)]
                        for _ in range(nb)])
    return q, rng.normal(size=3 * nb), rng.normal(size=3 * nb)


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
def test_features_are_the_narrowphase(a, b):
    """Every contact's gap, contact point (b's surface) and normal are its narrowphase
    feature's; segment - segment: the smallest of the four features is the narrowphase's
    single closest-point feature (where the cores do not cross)."""
    m = two_bodies(a, b)
    assert {c.kind for c in m.contacts} == {"shape_pair"}
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        q, qd, _ = random_state(rng, 2)
        gap = contact_rows(m, q, qd)[0]
        pr = pair_rows(m.compiled.contacts.pairs, q, qd)
        P = world_poses(m, q)
        sa, sb = m.contacts[0].shapes
        ref = sh.collide(sa, *P[sa.name], sb, *P[sb.name])
        if sa.kind == sb.kind == "segment":
            if ref[0].gap > -0.1:                   # the cores apart
                assert gap.min() == pytest.approx(ref[0].gap, abs=1e-12)
                checked += 1
            continue
        ref = {c.id: c for c in ref}
        for k, c in enumerate(m.contacts):
            r = ref[c.feature]
            assert gap[k] == pytest.approx(r.gap, abs=1e-12)
            assert np.abs(pr.point[k] - r.point_b).max() < 1e-12
            assert np.abs(pr.normal[k] - r.normal).max() < 1e-12
            checked += 1
    assert checked >= 30


def richardson1(f, h):
    d = [(f(s) - f(-s)) / (2 * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


def richardson(f, h):
    d = [(f(s) - 2 * f(0.0) + f(-s)) / s ** 2 for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
@pytest.mark.parametrize("ground_a", [False, True], ids=["moving", "ground"])
def test_rows_and_convective_terms_equal_finite_differences(a, b, ground_a):
    """Along q(t) = q + t qd + t^2/2 qdd: gap' = Dc qd, gap'' = Dc qdd + conv,
    v_t' = Dt qdd + conv_t (difference quotients, Richardson-extrapolated)."""
    m = two_bodies(a, b, ground_a=ground_a)
    nb = 1 if ground_a else 2
    rng = np.random.default_rng(5)
    h = 2e-4
    total = good = 0
    for _ in range(10):
        q, qd, qdd = random_state(rng, nb)

        def path(t):
            return q + t * qd + 0.5 * t * t * qdd

        def gap(t):
            return contact_rows(m, path(t), qd + t * qdd)[0]

        def vt(t):
            v = qd + t * qdd
            return tangent_rows(m, path(t), v)[0][:, 0, :] @ v

        g0, Dc, conv = contact_rows(m, q, qd)
        Dt, conv_t = tangent_rows(m, q, qd)
        d1 = richardson1(gap, 1e-5)
        g2 = richardson(gap, h)
        dvt = richardson1(vt, h)
        ref2, reft = Dc @ qdd + conv, Dt[:, 0, :] @ qdd + conv_t[:, 0]
        # a feature changing its kind within the stencil (a point passing from an edge's
        # region to a corner's) has no second derivative there: outliers
        smooth = (np.abs(g2 - ref2) < 1e-3) & (np.abs(dvt - reft) < 1e-3)
        total += len(g0)
        good += smooth.sum()
        assert d1 == pytest.approx(Dc @ qd, abs=1e-7)
        assert g2[smooth] == pytest.approx(ref2[smooth], rel=1e-7, abs=1e-6)
        assert dvt[smooth] == pytest.approx(reft[smooth], rel=1e-7, abs=1e-6)
    assert good >= 0.9 * total


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
def test_tangential_row_is_the_material_slip_velocity(a, b):
    """v_t = t . (v_B(P_b) - v_A(P_a)) of the bodies' material points at the surface points
    P_b (the contact point) and P_a = P_b - gap n, t = e_z x n, from the velocities of the
    rigid motions (independent of the rows)."""
    m = two_bodies(a, b)
    rng = np.random.default_rng(7)
    for _ in range(10):
        q, qd, _ = random_state(rng, 2)
        pr = pair_rows(m.compiled.contacts.pairs, q, qd)
        vt = tangent_rows(m, q, qd)[0][:, 0, :] @ qd
        for k in range(len(m.contacts)):
            n = pr.normal[k]
            vel = []
            for b_, P in ((pr.ba[k], pr.point[k] - pr.gap[k] * n), (pr.bb[k], pr.point[k])):
                r, w = q[3 * b_:3 * b_ + 2], qd[3 * b_ + 2]
                d = P - r
                vel.append(qd[3 * b_:3 * b_ + 2] + w * np.array([-d[1], d[0]]))
            assert vt[k] == pytest.approx(np.array([-n[1], n[0]]) @ (vel[1] - vel[0]),
                                          abs=1e-12)


def test_builder_lowers_planar_pairs():
    mb = ModelBuilder("lower")
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=1.0, inertia=0.1, position=(1.0, 0.0))
    c = mb.body("c", mass=1.0, inertia=0.1, position=(2.0, 0.0))
    mb.revolute("j", b, c, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0))
    mb.shape(a, Rectangle((0.2, 0.1)), name="ra")
    mb.shape(b, Segment(0.3, 0.05), name="sb")
    mb.shape(c, Circle(0.1), name="cc", friction=0.2)
    m = mb.build()
    names = [x.name for x in m.contacts]
    # segment - rectangle: 6 features (the segment first, the narrowphase's order); circle -
    # rectangle 1; b and c are joined: filtered out
    assert names == [f"sb_ra_{i}" for i in range(6)] + ["cc_ra_0"]
    assert m.contacts[0].body == "a" and m.contacts[0].other == "b"
    assert m.contacts[-1].friction == 0.2


def both(m, t_end, h):
    return simulate(m, t_end, h, settings=Settings(formulation="newton_euler", **TIGHT))


def test_two_discs_head_on_exchange_momenta_by_newtons_law():
    """Two frictional discs on a line, no gravity: after the impact
    v1' = (m1 v1 + m2 v2 - m2 e (v1 - v2)) / (m1 + m2), v2' = (... + m1 e (v1 - v2)) / ...;
    no spin (head-on: no slip)."""
    m1, m2, e, v1, v2 = 1.0, 2.5, 0.6, 2.0, -0.5
    mb = ModelBuilder("discs", gravity=(0.0, 0.0))
    a = mb.body("a", mass=m1, inertia=0.01, position=(-0.5, 0.0), velocity=(v1, 0.0))
    b = mb.body("b", mass=m2, inertia=0.02, position=(0.5, 0.0), velocity=(v2, 0.0))
    mb.shape(a, Circle(0.1), name="sa", friction=0.4, restitution=e)
    mb.shape(b, Circle(0.15), name="sb", friction=0.4, restitution=e)
    m = mb.build()
    assert [c.kind for c in m.contacts] == ["shape_pair"]
    res = both(m, 0.6, 0.05)
    t_hit = (1.0 - 0.25) / (v1 - v2)
    P = m1 * v1 + m2 * v2
    after = res["time"] > t_hit + 1e-9
    assert after.sum() >= 5
    assert res["a.vx"][after] == pytest.approx((P - m2 * e * (v1 - v2)) / (m1 + m2), abs=1e-10)
    assert res["b.vx"][after] == pytest.approx((P + m1 * e * (v1 - v2)) / (m1 + m2), abs=1e-10)
    assert np.abs(res["a.omega"]).max() < 1e-12 and np.abs(res["b.vy"]).max() < 1e-12
    assert res["sa_sb_0.impacts"][-1] == 1


def test_disc_resting_on_a_rectangle_carries_its_weight():
    m_, g = 2.0, 9.81
    mb = ModelBuilder("dor", gravity=(0.0, -g))
    disc = mb.body("disc", mass=m_, inertia=0.01, position=(0.05, 0.2))
    mb.shape(mb.ground, Rectangle((1.0, 0.2)), name="table", friction=0.4, restitution=0.5)
    mb.shape(disc, Circle(0.1), name="rim")
    res = both(mb.build(), 0.5, 0.05)
    assert res["rim_table_0.force"][1:] == pytest.approx(m_ * g, rel=1e-12)
    assert np.abs(res["disc.y"] - 0.2).max() < 1e-12
    assert res["rim_table_0.state"][-1] == 1.0              # sticking


def test_rectangle_stacked_on_a_rectangle_rests_carrying_its_weight():
    """A rectangle lying flat on a rectangle body that lies on the ground rectangle: the two
    lower corners of each carry the weight above them (their sum: m g, by symmetry half each)
    and nothing moves."""
    g, m1, m2 = 9.81, 1.0, 3.0
    mb = ModelBuilder("stack", gravity=(0.0, -g))
    lower = mb.body("lower", mass=m1, inertia=0.02, position=(0.0, 0.15))
    upper = mb.body("upper", mass=m2, inertia=0.01, position=(0.05, 0.35))
    mb.shape(mb.ground, Rectangle((2.0, 0.2)), name="floor", position=(0.0, -0.1))
    mb.shape(lower, Rectangle((0.6, 0.3)), name="lo", friction=0.5)
    mb.shape(upper, Rectangle((0.3, 0.1)), name="up", friction=0.5)
    m = mb.build()
    res = both(m, 0.3, 0.05)
    for b, y in (("lower", 0.15), ("upper", 0.35)):
        assert np.abs(res[f"{b}.y"] - y).max() < 1e-12
        assert np.abs(res[f"{b}.x"] - res[f"{b}.x"][0]).max() < 1e-12
    names = res.dtype.names

    def force(prefix):
        return sum(res[f"{n[:-len('.force')]}.force"][-1] for n in names
                   if n.startswith(prefix) and n.endswith(".force"))
    assert force("up_lo_") + force("lo_up_") == pytest.approx(m2 * g, rel=1e-10)
    assert force("lo_floor_") + force("floor_lo_") == pytest.approx((m1 + m2) * g, rel=1e-10)


# ------------------------------------------------------------------ the C twin
NATIVE = Path(sh.__file__).resolve().parents[1] / "engine" / "native"
_HARNESS = r"""
#include "planar_pairs.h"
/* body: r(2), phi, v(2), w per body (a, b); out: gap, jn(6), gn, jt(6), gt, point(2), n(2) */
int rows(int ka, const double *sa, const double *Fa, const double *spa, int kb,
         const double *sb, const double *Fb, const double *spb, int fid, const double *body,
         double *out) {
    mbpp_body B[2];
    for (int i = 0; i < 2; i++) {
        const double *x = body + 6 * i;
        mbpp_body b = {{x[0], x[1]}, cos(x[2]), sin(x[2]), {x[3], x[4]}, x[5]};
        B[i] = b;
    }
    mbpp_rows_t o;
    if (fid < 0 || fid >= mbpp_count(ka, kb)) return 0;
    mbpp_rows(ka, sa, Fa, spa, kb, sb, Fb, spb, fid, &B[0], &B[1], &o);
    out[0] = o.gap;
    for (int j = 0; j < 6; j++) { out[1 + j] = o.jn[j]; out[8 + j] = o.jt[j]; }
    out[7] = o.gn;
    out[14] = o.gt;
    for (int j = 0; j < 2; j++) { out[15 + j] = o.point[j]; out[17 + j] = o.n[j]; }
    return 1;
}
"""


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("ppairs")
    (d / "harness.c").write_text(_HARNESS)
    so = d / "harness.so"
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall", "-Werror",
                    "-Wno-unused-function", f"-I{NATIVE}", str(d / "harness.c"), "-o",
                    str(so), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.rows.restype = ctypes.c_int
    return lib


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
@pytest.mark.parametrize("ground_a", [False, True], ids=["moving", "ground"])
def test_c_rows_equal_python(native, a, b, ground_a):
    """planar_pairs.h's gap, rows, convective terms, contact point and normal equal
    planar_pairs.py's to 1e-12 on random states, every feature."""
    m = two_bodies(a, b, ground_a=ground_a)
    rng = np.random.default_rng(11)
    P = ctypes.c_void_p
    for _ in range(20):
        q, qd, _ = random_state(rng, 1 if ground_a else 2)
        pr = pair_rows(m.compiled.contacts.pairs, q, qd)
        qe, qde = np.r_[q, 0.0, 0.0, 0.0], np.r_[qd, 0.0, 0.0, 0.0]
        for k, c in enumerate(m.contacts):
            sa, sb = c.shapes
            ia, ib = int(pr.ba[k]), int(pr.bb[k])
            ia, ib = (len(q) // 3 if i >= len(q) // 3 else i for i in (ia, ib))
            body = np.ascontiguousarray(np.concatenate(
                [np.r_[qe[3 * i:3 * i + 3], qde[3 * i:3 * i + 3]] for i in (ia, ib)]))
            arr = [np.ascontiguousarray((tuple(s.size) + (0.0,))[:2], float) for s in (sa, sb)]
            F = [np.ascontiguousarray(np.array(s.rotation, float).reshape(-1)) for s in (sa, sb)]
            sp = [np.ascontiguousarray(s.position, float) for s in (sa, sb)]
            out = np.zeros(19)
            assert native.rows(sh.KIND_CODES[sa.kind], P(arr[0].ctypes.data),
                               P(F[0].ctypes.data), P(sp[0].ctypes.data),
                               sh.KIND_CODES[sb.kind], P(arr[1].ctypes.data),
                               P(F[1].ctypes.data), P(sp[1].ctypes.data), c.feature,
                               P(body.ctypes.data), P(out.ctypes.data))
            assert out[0] == pytest.approx(pr.gap[k], abs=1e-12)
            assert np.abs(out[1:7] - pr.J[k].reshape(-1)).max() < 1e-12
            assert np.abs(out[8:14] - pr.Jt[k].reshape(-1)).max() < 1e-12
            assert out[7] == pytest.approx(pr.conv[k], abs=1e-11)
            assert out[14] == pytest.approx(pr.conv_t[k], abs=1e-11)
            assert np.abs(out[15:17] - pr.point[k]).max() < 1e-12
            assert np.abs(out[17:19] - pr.normal[k]).max() < 1e-12


# ------------------------------------------------------------------ friction, closed forms
def test_disc_thrown_on_a_rectangle_slips_then_rolls_at_two_thirds():
    """A uniform disc (J = m r^2 / 2) set down on a rectangle body's top with speed v0 and no
    spin: sliding friction mu m g decelerates it and spins it up until v = r w at
    t* = v0 / (3 mu g), after which it rolls at 2/3 v0 (the rectangle on the ground)."""
    m_, r, g, mu, v0 = 1.5, 0.1, 9.81, 0.3, 1.2
    mb = ModelBuilder("roll", gravity=(0.0, -g))
    disc = mb.body("disc", mass=m_, inertia=0.5 * m_ * r * r, position=(-0.8, 0.2 + r),
                   velocity=(v0, 0.0))
    mb.shape(mb.ground, Rectangle((2.0, 0.4)), name="table", position=(0.0, 0.0), angle=0.0,
             friction=mu, restitution=0.0)
    mb.shape(disc, Circle(r), name="rim")
    res = simulate(mb.build(), 0.6, 0.02, settings=Settings(formulation="newton_euler",
                                                             **TIGHT))
    ts = v0 / (3 * mu * g)
    t = res["time"]
    before, after = t < ts - 1e-9, t > ts + 1e-9
    assert before.sum() >= 5 and after.sum() >= 5
    assert res["disc.vx"][before] == pytest.approx(v0 - mu * g * t[before], rel=1e-9)
    assert res["disc.omega"][before] == pytest.approx(-2 * mu * g * t[before] / r, rel=1e-9)
    assert res["disc.vx"][after] == pytest.approx(2 * v0 / 3, rel=1e-9)
    assert res["disc.omega"][after] == pytest.approx(-2 * v0 / (3 * r), rel=1e-9)
    assert np.abs(res["disc.y"] - 0.2 - r).max() < 1e-12
    assert res["rim_table_0.force"][1:] == pytest.approx(m_ * g, rel=1e-9)


def test_block_sliding_on_a_block_decelerates_at_mu_g():
    """A rectangle sliding flat on a rectangle fixed to the ground, on its two lower corners:
    x' = v0 - mu g t until it stops at v0 / (mu g), then it sticks."""
    g, mu, v0, m_ = 9.81, 0.4, 1.0, 2.0
    mb = ModelBuilder("slide", gravity=(0.0, -g))
    blk = mb.body("blk", mass=m_, inertia=0.02, position=(-0.3, 0.05), velocity=(v0, 0.0))
    mb.shape(mb.ground, Rectangle((2.0, 0.2)), name="base", position=(0.0, -0.1),
             friction=mu, restitution=0.0)
    mb.shape(blk, Rectangle((0.3, 0.1)), name="blk_r")
    res = simulate(mb.build(), 0.4, 0.02, settings=Settings(formulation="newton_euler",
                                                             **TIGHT))
    t = res["time"]
    ts = v0 / (mu * g)
    before, after = t < ts - 1e-9, t > ts + 1e-9
    assert before.sum() >= 5 and after.sum() >= 5
    assert res["blk.vx"][before] == pytest.approx(v0 - mu * g * t[before], rel=1e-9, abs=1e-12)
    assert np.abs(res["blk.vx"][after]).max() < 1e-9
    assert res["blk.x"][-1] == pytest.approx(-0.3 + v0 * v0 / (2 * mu * g), rel=1e-9)
    assert np.abs(res["blk.y"] - 0.05).max() < 1e-12
    assert np.abs(res["blk.omega"]).max() < 1e-9


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_rectangle_tumbling_onto_a_rectangle_never_gains_energy_and_rests_on_a_face(mu):
    """A spinning rectangle dropped on a ground rectangle (e = 0.3): the total energy never
    grows; it ends lying on a long face (y = half height, angle 0); frictionless, its
    horizontal momentum is kept (vx = 0.3 m/s), with friction it ends at rest."""
    mb = ModelBuilder("tumble", gravity=(0.0, -9.81))
    b = mb.body("b", mass=1.0, inertia=(0.4 ** 2 + 0.2 ** 2) / 12, position=(0.0, 0.6),
                angle=0.5, velocity=(0.3, 0.0), angular_velocity=2.0)
    mb.shape(mb.ground, Rectangle((3.0, 0.2)), name="floor", position=(0.0, -0.1),
             friction=mu, restitution=0.3)
    mb.shape(b, Rectangle((0.4, 0.2)), name="box")
    res = simulate(mb.build(), 1.5, 0.02, settings=Settings(formulation="newton_euler"))
    assert np.diff(res["energy.total"]).max() < 1e-9
    assert res["b.y"][-1] == pytest.approx(0.1, abs=1e-9)
    assert abs(res["b.phi"][-1]) < 1e-9 and abs(res["b.omega"][-1]) < 1e-9
    assert res["b.vx"][-1] == pytest.approx(0.3 if mu == 0.0 else 0.0, abs=1e-9)


# ------------------------------------------------------------------ the compiled loop
def scene(kind):
    """Frictionless scenes of every planar pair between moving bodies (and the ground),
    gravity -y, restitution 0.5."""
    mb = ModelBuilder("scene", gravity=(0.0, -9.81))
    floor = dict(name="floor", position=(0.0, -0.1), restitution=0.5)
    mb.shape(mb.ground, Rectangle((4.0, 0.2)), **floor)
    lo = mb.body("lo", mass=2.0, inertia=0.05, position=(0.0, 0.2), angle=0.1)
    hi = mb.body("hi", mass=1.0, inertia=0.02, position=(0.1, 0.7), angle=0.6,
                 velocity=(-0.2, 0.0), angular_velocity=1.5)
    shapes = {"circle": Circle(0.12), "segment": Segment(0.5, 0.06),
              "rectangle": Rectangle((0.45, 0.18))}
    ka, kb = kind.split("-")
    mb.shape(lo, shapes[ka], name="a")
    mb.shape(hi, shapes[kb], name="b")
    return mb.build()


SCENES = ["circle-segment", "segment-segment", "segment-rectangle", "rectangle-rectangle",
          "circle-rectangle", "rectangle-circle"]


@pytest.mark.parametrize("kind", SCENES)
def test_compiled_loop_equals_the_python_loop(kind):
    """The planar kernel's event loop (formulation recursive, R_PAIR rows of
    native/planar_pairs.h) equals the Python loop (newton_euler) to 1e-9 at every
    communication point, through impacts, persistent contacts and releases."""
    m = scene(kind)
    assert "shape_pair" in {c.kind for c in m.contacts}
    c = simulate(m, 0.6, 0.02, settings=Settings(formulation="recursive", **TIGHT))
    p = simulate(m, 0.6, 0.02, settings=Settings(formulation="newton_euler", **TIGHT))
    for name in c.dtype.names:
        assert np.abs(c[name] - p[name]).max() < 1e-9, name
    assert sum(c[n][-1] for n in c.dtype.names if n.endswith(".impacts")) >= 2
