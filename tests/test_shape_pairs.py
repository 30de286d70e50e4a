"""Shape pairs of two moving shapes (sphere, capsule, box) as contacts (kind shape_pair:
fmu_mb.mechanics.spatial.pairs, native/pairs.h, docs/shapes.md).

Checked against independent references: the features' gaps, points and normals against the
narrowphase (mechanics.shapes.collide); the normal and tangential rows and their convective
terms against finite differences of the gaps and of the slip velocities along random
motions; the C twin (pairs.h, compiled here alone) equal to the Python rows to 1e-12; the
compiled event loop (formulation recursive) equal to the Python loop (newton_euler) to 1e-9;
closed forms: two spheres head-on exchange momenta by Newton's restitution law, a sphere
resting on a box and a box resting on a box carry m g, a frictional sphere thrown onto a box
rolls at 5/7 of its speed."""
import ctypes
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import Box, Capsule, Cylinder, ModelBuilder, Sphere, cardan, simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.errors import ModelError
from fmu_mb.mechanics import shapes as sh
from fmu_mb.mechanics.contacts import contact_rows
from fmu_mb.mechanics.friction import tangent_rows
from fmu_mb.mechanics.spatial import rotations as rot
from fmu_mb.mechanics.spatial.pairs import ABSENT_GAP, pair_rows

NATIVE = Path(sh.__file__).resolve().parents[1] / "engine" / "native"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))

SHAPES = {"sphere": Sphere(0.25), "capsule": Capsule(0.15, 0.5),
          "box": Box((0.5, 0.35, 0.3)), "box2": Box((0.3, 0.6, 0.25))}
PAIRS = [("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"),
         ("sphere", "box"), ("box", "box2"), ("capsule", "box"), ("box", "sphere"),
         ("capsule", "sphere"), ("box", "capsule")]
TIGHT = dict(rtol=1e-11, atol=1e-13)


def two_bodies(a, b, mu=0.3, ground_a=False):
    """Shapes a and b (keys of SHAPES) on two free bodies (a on the ground: ground_a)."""
    mb = ModelBuilder("pair", gravity=(0, 0, -9.81))
    ba = mb.ground if ground_a else mb.body("A", mass=1.0, inertia=(0.1, 0.2, 0.15))
    bb = mb.body("B", mass=1.5, inertia=(0.12, 0.1, 0.2), position=(0, 0, 1))
    mb.shape(ba, SHAPES[a], name="sa", position=(0.01, 0.02, -0.03),
             orientation=cardan(0.2, 0.1, 0.3), friction=mu)
    mb.shape(bb, SHAPES[b], name="sb", position=(-0.02, 0.01, 0.02),
             orientation=cardan(-0.1, 0.4, 0.2))
    return mb.build()


def motion(q, qd, t):
    """A motion through q with rate qd at t = 0, the Euler parameters kept unit."""
    out = q + t * qd
    for b in range(len(q) // 7):
        p = out[7 * b + 3:7 * b + 7]
        out[7 * b + 3:7 * b + 7] = p / np.linalg.norm(p)
    return out


def random_state(rng, nb, spread=0.3):
    q, qd = [], []
    for _ in range(nb):
        p = rot.cardan(*rng.uniform(-2, 2, 3))
        pd = rng.normal(size=4)
        pd -= (pd @ p) * p
        q += [rng.normal(scale=spread, size=3), p]
        qd += [rng.normal(size=3), pd]
    return np.concatenate(q), np.concatenate(qd)


def world_poses(m, q):
    out = {}
    for s in m.shapes:
        if s.body == "ground":
            A, r = np.eye(3), np.zeros(3)
        else:
            b = m.body(s.body).index
            A, r = rot.matrix(q[None, 7 * b + 3:7 * b + 7])[0], q[7 * b:7 * b + 3]
        out[s.name] = A @ np.array(s.rotation), r + A @ np.array(s.position)
    return out


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_features_are_the_narrowphase(a, b):
    """Every contact's gap is its narrowphase feature's (absent edge-edge features: not in
    the narrowphase, ABSENT_GAP); the contact point is the feature's point on b's surface."""
    m = two_bodies(a, b)
    assert {c.kind for c in m.contacts} == {"shape_pair"}
    rng = np.random.default_rng(3)
    present = 0
    for _ in range(30):
        q, qd = random_state(rng, 2)
        gap = contact_rows(m, q, qd)[0]
        pr = pair_rows(m.compiled.contacts.pairs, q, qd)
        P = world_poses(m, q)
        sa, sb = m.contacts[0].shapes
        ref = {c.id: c for c in sh.collide(sa, *P[sa.name], sb, *P[sb.name])}
        for k, c in enumerate(m.contacts):
            if c.feature in ref:
                present += 1
                assert gap[k] == pytest.approx(ref[c.feature].gap, abs=1e-12)
                assert np.abs(pr.point[k] - ref[c.feature].point_b).max() < 1e-12
            else:
                assert gap[k] == ABSENT_GAP
    assert present >= 30


def richardson1(f, h):
    """The central difference quotient of f at 0, extrapolated (error O(h^4))."""
    d = [(f(s) - f(-s)) / (2 * s) for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


def richardson(f, h):
    """The second difference quotient of f at 0, extrapolated (error O(h^4))."""
    d = [(f(s) - 2 * f(0.0) + f(-s)) / s ** 2 for s in (h, h / 2)]
    return (4 * d[1] - d[0]) / 3


@pytest.mark.parametrize("a,b", PAIRS[:6], ids=[f"{a}-{b}" for a, b in PAIRS[:6]])
def test_rows_and_convective_terms_equal_finite_differences(a, b):
    m = two_bodies(a, b)
    rng = np.random.default_rng(5)
    h = 2e-4
    for _ in range(8):
        q, qd = random_state(rng, 2)
        g0, Dc, conv = contact_rows(m, q, qd)
        Dt, conv_t = tangent_rows(m, q, qd)
        qdot = (motion(q, qd, 1e-6) - motion(q, qd, -1e-6)) / 2e-6
        qdd = richardson(lambda t: motion(q, qd, t), h)

        def gap(t):
            return contact_rows(m, motion(q, qd, t), qd)[0]

        def vt(t):
            qt = motion(q, qd, t)
            qdt = (motion(q, qd, t + 1e-6) - motion(q, qd, t - 1e-6)) / 2e-6
            return np.einsum("kij,j->ki", tangent_rows(m, qt, qdt)[0], qdt)
        # features that keep their kind over the stencil (a point crossing from a face to an
        # edge region changes the gap's curvature: its second difference is no derivative)
        ok = np.all([gap(s) < ABSENT_GAP for s in (-h, h)], axis=0) & (g0 < ABSENT_GAP)
        d1 = (gap(1e-6) - gap(-1e-6)) / 2e-6
        assert d1[ok] == pytest.approx((Dc @ qdot)[ok], abs=1e-8)
        g2 = richardson(gap, h)
        dvt = richardson1(vt, h)
        smooth = ok & (np.abs(g2 - (Dc @ qdd + conv)) < 1e-3)   # kind changes: outliers
        assert smooth.sum() >= 0.9 * ok.sum()
        assert g2[smooth] == pytest.approx((Dc @ qdd + conv)[smooth], rel=1e-7, abs=1e-6)
        ref = np.einsum("kij,j->ki", Dt, qdd) + conv_t
        # the tangent basis switches its axis where two |n_k| tie: outliers too
        smooth &= np.all(np.abs(dvt - ref) < 1e-3, axis=1)
        assert smooth.sum() >= 0.85 * ok.sum()
        assert dvt[smooth] == pytest.approx(ref[smooth], rel=1e-6, abs=1e-6)


def test_tangential_rows_are_the_material_slip_velocity():
    """v_t = t . (v_b(P) - v_a(P)) of the two bodies' material points at the contact point,
    from the poses' time derivatives (finite differences), t1, t2 the tangent basis of n."""
    from fmu_mb.mechanics.friction import tangent_basis
    m = two_bodies("sphere", "box")
    rng = np.random.default_rng(8)
    for _ in range(10):
        q, qd = random_state(rng, 2)
        Dt, _ = tangent_rows(m, q, qd)
        P = world_poses(m, q)
        sa, sb = m.contacts[0].shapes
        c = sh.collide(sa, *P[sa.name], sb, *P[sb.name])[0]
        vel = []
        for b in range(2):
            A = rot.matrix(q[None, 7 * b + 3:7 * b + 7])[0]
            dA = (rot.matrix(motion(q, qd, 1e-6)[None, 7 * b + 3:7 * b + 7])[0]
                  - rot.matrix(motion(q, qd, -1e-6)[None, 7 * b + 3:7 * b + 7])[0]) / 2e-6
            W = dA @ A.T
            w = np.array([W[2, 1], W[0, 2], W[1, 0]])
            v = (motion(q, qd, 1e-6) - motion(q, qd, -1e-6))[7 * b:7 * b + 3] / 2e-6
            vel.append((v, w, q[7 * b:7 * b + 3]))
        va = vel[0][0] + np.cross(vel[0][1], c.point_a - vel[0][2])
        vb = vel[1][0] + np.cross(vel[1][1], c.point_b - vel[1][2])
        t1, t2 = tangent_basis(c.normal)
        qn = motion(q, qd, 1e-6) - motion(q, qd, -1e-6)
        assert Dt[0] @ (qn / 2e-6) == pytest.approx([t1 @ (vb - va), t2 @ (vb - va)],
                                                    abs=1e-7)


# ------------------------------------------------------------------ the C twin
_HARNESS = r"""
#include "pairs.h"
int rows(int ka, const double *sa, const double *Fa, const double *spa, int kb,
         const double *sb, const double *Fb, const double *spb, int fid, const double *body,
         double *out) {
    /* body: r, A (row-major), v, w of a then of b (18 each) */
    mbp_body Ba = {body, body + 3, body + 12, body + 15};
    mbp_body Bb = {body + 18, body + 21, body + 30, body + 33};
    mbp_rows_t o;
    int ok = mbp_rows(ka, sa, Fa, spa, kb, sb, Fb, spb, fid, &Ba, &Bb, &o);
    out[0] = o.gap;
    for (int j = 0; j < 12; j++) {
        out[1 + j] = o.jn[j];
        out[14 + j] = o.jt[0][j];
        out[27 + j] = o.jt[1][j];
    }
    out[13] = o.gn;
    out[26] = o.gt[0];
    out[39] = o.gt[1];
    return ok;
}
"""


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("pairs")
    (d / "harness.c").write_text(_HARNESS)
    so = d / "harness.so"
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall", "-Werror",
                    "-Wno-unused-function", f"-I{NATIVE}", str(d / "harness.c"), "-o",
                    str(so), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.rows.restype = ctypes.c_int
    return lib


def _twist(E2, row_w, row_v):
    """A row on a body's 7 absolute coordinates from its (w, v) coefficients."""
    return np.concatenate([row_v, E2.T @ row_w])


@pytest.mark.parametrize("a,b", PAIRS[:6], ids=[f"{a}-{b}" for a, b in PAIRS[:6]])
def test_c_rows_equal_python(native, a, b):
    """pairs.h's gap, rows and convective terms (twist form) mapped to absolute coordinates
    equal pairs.py's to 1e-12 on random states, every feature."""
    m = two_bodies(a, b)
    rng = np.random.default_rng(11)
    P = ctypes.c_void_p
    for _ in range(10):
        q, qd = random_state(rng, 2)
        pr = pair_rows(m.compiled.contacts.pairs, q, qd)
        body, E2s = [], []
        for i in range(2):
            p, pd = q[7 * i + 3:7 * i + 7], qd[7 * i + 3:7 * i + 7]
            E2 = 2.0 * rot.E_matrix(p[None])[0]
            E2s.append(E2)
            body += [q[7 * i:7 * i + 3], rot.matrix(p[None])[0].reshape(-1), qd[7 * i:7 * i + 3],
                     E2 @ pd]
        body = np.ascontiguousarray(np.concatenate(body))
        for k, c in enumerate(m.contacts):
            sa, sb = c.shapes
            arr = [np.ascontiguousarray((tuple(s.size) + (0.0,) * 3)[:3], float)
                   for s in (sa, sb)]
            F = [np.ascontiguousarray(np.array(s.rotation, float).reshape(-1)) for s in (sa, sb)]
            sp = [np.ascontiguousarray(s.position, float) for s in (sa, sb)]
            out = np.zeros(40)
            ok = native.rows(sh.KIND_CODES[sa.kind], P(arr[0].ctypes.data), P(F[0].ctypes.data),
                             P(sp[0].ctypes.data), sh.KIND_CODES[sb.kind], P(arr[1].ctypes.data),
                             P(F[1].ctypes.data), P(sp[1].ctypes.data), c.feature,
                             P(body.ctypes.data), P(out.ctypes.data))
            assert bool(ok) == (pr.gap[k] < ABSENT_GAP)
            assert out[0] == pytest.approx(pr.gap[k], abs=1e-12)
            if not ok:
                continue
            for off, J, g in ((1, pr.J[k], pr.conv[k]), (14, pr.Jt[k, 0], pr.conv_t[k, 0]),
                              (27, pr.Jt[k, 1], pr.conv_t[k, 1])):
                j = out[off:off + 12]
                got = np.concatenate([_twist(E2s[0], j[:3], j[3:6]),
                                      _twist(E2s[1], j[6:9], j[9:12])])
                assert np.abs(got - J.reshape(-1)).max() < 1e-12
                assert out[off + 12] == pytest.approx(g, abs=1e-11)


# ------------------------------------------------------------------ the builder
def test_builder_lowers_pairs_and_filters_joined_bodies():
    mb = ModelBuilder("f", gravity=(0, 0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.1, 0.1))
    b = mb.body("b", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 1))
    c = mb.body("c", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0, 0, 2))
    mb.revolute("hinge", a, b, at=(0, 0, 0.5), axis=(1, 0, 0))
    mb.shape(a, Box((0.2, 0.2, 0.2)), name="ha")
    mb.shape(b, Capsule(0.1, 0.3), name="hb")
    mb.shape(c, Sphere(0.1), name="hc", friction=0.2)
    m = mb.build()
    pairs = {(p.a, p.b): p for p in m.shape_pairs}
    assert ("ha", "hb") not in pairs and ("hb", "ha") not in pairs   # joined: no contact
    assert len(pairs[("hc", "ha")].contacts) == 1              # sphere first: sphere - box
    assert pairs[("hc", "hb")].contacts == ("hc_hb_0",)
    assert {c.kind for c in m.contacts} == {"shape_pair"}
    assert m.contacts[0].friction == 0.2


def test_cylinder_box_is_refused_naming_the_pair():
    mb = ModelBuilder("r", gravity=(0, 0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.1, 0.1))
    mb.shape(mb.ground, Box((1, 1, 0.1)), name="table")
    mb.shape(a, Cylinder(0.1, 0.3), name="can")
    with pytest.raises(ModelError, match="'table'.*'can'|'can'.*'table'"):
        mb.build()


# ------------------------------------------------------------------ closed forms, C = Python
def compare(c, p, skip=()):
    """Every output of two runs equal to 1e-9 (relative to max(1, |value|))."""
    assert c.dtype.names == p.dtype.names
    for n in c.dtype.names:
        if n not in skip:
            assert np.abs(c[n] - p[n]).max() <= 1e-9 * max(1.0, np.abs(p[n]).max()), n


def both(m, t_end, h, **kw):
    """The compiled event loop (recursive) and the Python loop (newton_euler)."""
    c = simulate(m, t_end, h, settings=Settings(formulation="recursive", **TIGHT), **kw)
    p = simulate(m, t_end, h, settings=Settings(formulation="newton_euler", **TIGHT), **kw)
    return c, p


def test_two_spheres_head_on_exchange_momenta_by_newtons_law():
    """Two balls (frictional: the shape_pair contact) on a line, no gravity: after the impact
    v1' = (m1 v1 + m2 v2 - m2 e (v1 - v2)) / (m1 + m2), v2' = (... + m1 e (v1 - v2)) / ...;
    no spin arises (head-on: no tangential slip)."""
    m1, m2, e, v1, v2 = 1.0, 2.5, 0.6, 2.0, -0.5
    mb = ModelBuilder("balls", gravity=(0, 0, 0))
    # the impact at t = 0.77 / 2.5 = 0.308 s, between communication points: at a point itself
    # the sample would show the state before or after it by rounding
    a = mb.body("a", mass=m1, inertia=(0.01,) * 3, position=(-0.52, 0, 0), velocity=(v1, 0, 0))
    b = mb.body("b", mass=m2, inertia=(0.02,) * 3, position=(0.5, 0, 0), velocity=(v2, 0, 0))
    mb.shape(a, Sphere(0.1), name="sa", friction=0.4, restitution=e)
    mb.shape(b, Sphere(0.15), name="sb", friction=0.4, restitution=e)
    m = mb.build()
    assert [c.kind for c in m.contacts] == ["shape_pair"]
    c, p = both(m, 0.6, 0.05)
    compare(c, p)
    t_hit = (1.02 - 0.25) / (v1 - v2)
    P = m1 * v1 + m2 * v2
    for res in (c, p):
        after = res["time"] > t_hit + 1e-9
        assert res["a.vx"][after] == pytest.approx((P - m2 * e * (v1 - v2)) / (m1 + m2),
                                                   abs=1e-10)
        assert res["b.vx"][after] == pytest.approx((P + m1 * e * (v1 - v2)) / (m1 + m2),
                                                   abs=1e-10)
        assert np.abs(res["a.wy"]).max() < 1e-12 and np.abs(res["b.vy"]).max() < 1e-12
        assert res["sa_sb_0.impacts"][-1] == 1


def test_sphere_resting_on_a_box_carries_its_weight():
    m_, g = 2.0, 9.81
    mb = ModelBuilder("sob", gravity=(0, 0, -g))
    ball = mb.body("ball", mass=m_, inertia=(0.008,) * 3, position=(0.05, 0.02, 0.2))
    mb.shape(mb.ground, Box((1.0, 1.0, 0.2)), name="table", friction=0.4, restitution=0.5)
    mb.shape(ball, Sphere(0.1), name="shell")
    c, p = both(mb.build(), 0.5, 0.05)
    compare(c, p)
    for res in (c, p):
        assert res["shell_table_0.force"][1:] == pytest.approx(m_ * g, rel=1e-12)
        assert np.abs(res["ball.z"] - 0.2).max() < 1e-12
        assert res["shell_table_0.state"][-1] == 1.0           # sticking


@pytest.mark.parametrize("yaw", [0.0, 0.7])
def test_capsule_resting_on_a_box_face_carries_its_weight(yaw):
    """A capsule lying on a box fixed to the ground (its axis along the face, turned by yaw
    about z, its centre off the face's centre): its two core ends carry the weight, half
    each (the centre of mass midway), nothing moves; the compiled loop = the Python loop."""
    m_, g, r = 1.2, 9.81, 0.05
    mb = ModelBuilder("cob", gravity=(0, 0, -g))
    rod = mb.body("rod", mass=m_, inertia=(0.002, 0.01, 0.01), position=(0.05, -0.03, r),
                  orientation=cardan(0.0, 0.0, yaw))
    mb.shape(mb.ground, Box((1.0, 0.8, 0.2)), name="table", position=(0, 0, -0.1),
             friction=0.5, restitution=0.5)
    mb.shape(rod, Capsule(r, 0.4), name="rod_c", orientation=cardan(0.0, np.pi / 2, 0.0))
    m = mb.build()
    assert len(m.contacts) == 22
    c, p = both(m, 0.3, 0.05)
    compare(c, p)
    for res in (c, p):
        for end in (0, 1):
            assert res[f"rod_c_table_{end}.force"][1:] == pytest.approx(m_ * g / 2, rel=1e-10)
            assert res[f"rod_c_table_{end}.state"][-1] == 1.0
        assert sum(res[f"rod_c_table_{k}.force"][-1] for k in range(22)) == pytest.approx(
            m_ * g, rel=1e-12)
        for x in ("x", "y", "z"):
            assert np.abs(res[f"rod.{x}"] - res[f"rod.{x}"][0]).max() < 1e-12


def test_ball_on_the_table_slips_then_rolls_at_five_sevenths():
    """models/table_ball.py on the table: slip ends at t* = 2 v0 / (7 mu g), then
    v_x = r w_y = 5/7 v0 (to 1e-8 relative); the compiled loop equals the Python loop."""
    import table_ball
    v0, mu, r, g = 1.5, 0.3, 0.05, 9.81
    m = table_ball.build()
    c, p = both(m, 0.3, 0.02)
    compare(c, p, skip=("ball.alpha", "ball.gamma"))
    t_star = 2 * v0 / (7 * mu * g)
    for row in c:
        t = row["time"]
        if t < t_star - 1e-9:
            assert abs(row["ball.vx"] - (v0 - mu * g * t)) <= 1e-8 * v0
            assert row["ball_shell_table_top_0.state"] == 2.0
        elif t > t_star + 1e-9:
            assert abs(row["ball.vx"] - 5 / 7 * v0) <= 1e-8 * v0
            assert abs(row["ball.vx"] - r * row["ball.wy"]) <= 1e-8 * v0
            assert row["ball_shell_table_top_0.state"] == 1.0


def test_ball_rolls_off_the_table_onto_the_floor():
    """Past the edge (x = L/2) the ball leaves the table and lands on the floor z = -H,
    still rolling: its centre ends at z = r - H."""
    import table_ball
    m = table_ball.build()
    res = simulate(m, 2.5, 0.05, settings=Settings(formulation="recursive"))
    assert res["ball.x"][-1] > 0.6 + 0.05
    assert res["ball_shell_table_top_0.gap"][-1] > 0.05
    assert res["floor_ball_shell_0.impacts"][-1] >= 1
    assert res["ball.z"][-1] == pytest.approx(0.05 - 0.4, abs=1e-9)


def box_stack():
    """A box (body) resting on a box fixed to the ground, turned by 0.3 rad about z."""
    mb = ModelBuilder("stack", gravity=(0, 0, -9.81))
    top = mb.body("top", mass=1.5, inertia=(0.01, 0.012, 0.014), position=(0.03, 0.01, 0.075),
                  orientation=cardan(0.0, 0.0, 0.3))
    mb.shape(mb.ground, Box((0.6, 0.5, 0.2)), name="base", position=(0, 0, -0.1))
    mb.shape(top, Box((0.2, 0.25, 0.15)), name="lid", friction=0.5, restitution=0.3)
    return mb.build()


def test_box_stacked_on_a_box_rests_carrying_its_weight():
    """The lid's four bottom vertices on the base's top face (redundant rows, minimum-norm
    forces): no motion, the normal forces sum to m g, the other 156 features open."""
    m = box_stack()
    assert len(m.contacts) == 160
    c = simulate(m, 0.5, 0.05, settings=Settings(formulation="recursive", **TIGHT))
    assert np.abs(c["top.z"] - 0.075).max() < 1e-9 and np.abs(c["top.x"] - 0.03).max() < 1e-9
    names = [n for n in c.dtype.names if n.endswith(".force")]
    total = sum(c[n][-1] for n in names)
    assert total == pytest.approx(1.5 * 9.81, rel=1e-9)
    assert sum(c[n.replace(".force", ".active")][-1] for n in names) == 4
    p = simulate(m, 0.1, 0.05, settings=Settings(formulation="newton_euler", **TIGHT))
    compare(c[:len(p)], p)


# ------------------------------------------------------------------ native FMUs
@pytest.fixture(scope="module")
def table_ball_reference():
    """models/table_ball.py by the Python loop (newton_euler, rtol 1e-11), 1.0 s: the slip, the
    rolling and the ball leaving the table's edge."""
    import table_ball
    return simulate(table_ball.build(), 1.0, 0.01,
                    settings=Settings(formulation="newton_euler", **TIGHT))


@pytest.mark.slow
@pytest.mark.parametrize("version", [2, 3])
def test_table_ball_native_fmu_equals_the_python_loop(version, session_fmus, table_ball_reference):
    """The native FMU of models/table_ball.py in fmpy, its solver.rtol and
    solver.atol set to 1e-11 and 1e-13, equals the Python event loop at every communication
    point to 1e-9, the ball's orientation to 1e-8 (FMI 2.0 and 3.0). At the default rtol 1e-9
    each loop's own integration error (against itself at rtol 1e-11) reaches 1e-9 in the
    ball's vz as it leaves the table's edge, with opposite signs in the two formulations, so
    both run at rtol 1e-11 here; at the default settings the FMU equals the compiled loop
    in-process (formulation recursive, the same C code) to 1e-12."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu
    import table_ball
    models = Path(__file__).resolve().parents[1] / "models"
    path = session_fmus(models / "table_ball.py", fmi=version, kind="native")
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.01,
                          start_values={"solver.rtol": TIGHT["rtol"],
                                        "solver.atol": TIGHT["atol"]})
    ref = table_ball_reference
    assert r["time"][-1] == pytest.approx(1.0)
    names = [n for n in ref.dtype.names if n != "time"]
    assert set(names) <= set(r.dtype.names)
    # the ball's orientation to 1e-8, as in tests/test_friction_c_loop.py's rolling ball: the
    # compiled loop integrates its free joint's quaternion, the Python loop the body's Euler
    # parameters (different rotation coordinates)
    angles = {f"ball.{a}" for a in ("alpha", "beta", "gamma", "e0", "e1", "e2", "e3")}
    for n in names:
        tol = 1e-8 if n in angles else 1e-9
        assert np.abs(r[n] - ref[n]).max() <= tol * max(1.0, np.abs(ref[n]).max()), n
    assert r["ball_shell_table_top_0.state"][50] == 1.0           # rolling on the table
    assert r["ball_shell_table_top_0.gap"][-1] > 0.01             # off the edge
    d = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.01)
    c = simulate(table_ball.build(), 1.0, 0.01, settings=Settings(formulation="recursive"))
    for n in names:
        assert np.abs(d[n] - c[n]).max() <= 1e-12 * max(1.0, np.abs(c[n]).max()), n


def test_box_sliding_on_a_box_decelerates_at_mu_g():
    """The lid thrown along x on the base slides on its four bottom vertices (redundant
    rows): x(t) = x0 + v0 t - mu g t^2 / 2 until it sticks at t = v0 / (mu g), then rests."""
    v0, mu, g = 0.8, 0.5, 9.81
    mb = ModelBuilder("slide", gravity=(0, 0, -g))
    top = mb.body("top", mass=1.5, inertia=(0.01, 0.012, 0.014), position=(-0.1, 0.0, 0.075),
                  velocity=(v0, 0.0, 0.0))
    mb.shape(mb.ground, Box((0.8, 0.5, 0.2)), name="base", position=(0, 0, -0.1))
    mb.shape(top, Box((0.2, 0.25, 0.15)), name="lid", friction=mu, restitution=0.0)
    m = mb.build()
    res = simulate(m, 0.3, 0.02, settings=Settings(formulation="recursive", **TIGHT))
    t_stop = v0 / (mu * g)
    for row in res:
        t = min(row["time"], t_stop)
        assert row["top.x"] == pytest.approx(-0.1 + v0 * t - 0.5 * mu * g * t * t, abs=1e-9)
        assert abs(row["top.z"] - 0.075) < 1e-9 and abs(row["top.wy"]) < 1e-9
    p = simulate(m, 0.04, 0.02, settings=Settings(formulation="newton_euler", **TIGHT))
    compare(res[:len(p)], p)


def box_drop(mu):
    """The lid dropped turning onto the base, a box fixed to the ground."""
    mb = ModelBuilder("drop", gravity=(0, 0, -9.81))
    top = mb.body("top", mass=1.5, inertia=(0.01, 0.012, 0.014), position=(0.03, 0.01, 0.25),
                  orientation=cardan(0.4, 0.3, 0.5), angular_velocity=(1.0, -2.0, 0.5))
    mb.shape(mb.ground, Box((0.8, 0.7, 0.2)), name="base", position=(0, 0, -0.1))
    mb.shape(top, Box((0.2, 0.25, 0.15)), name="lid", friction=mu, restitution=0.4)
    return mb.build()


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_box_tumbling_on_a_box_ends_at_rest_on_a_face(mu):
    """The lid dropped turning onto the base (vertex-face features, impacts, frictional or
    not): the mechanical energy never grows, and it ends at rest on a face (z = c / 2)."""
    res = simulate(box_drop(mu), 1.5, 0.02, settings=Settings(formulation="recursive", **TIGHT))
    assert np.diff(res["energy.total"]).max() <= 1e-9
    assert sum(res[n][-1] for n in res.dtype.names if n.endswith(".impacts")) > 4
    assert res["top.z"][-1] == pytest.approx(0.075, abs=1e-9)
    assert abs(res["top.vz"][-1]) < 1e-9 and abs(res["top.wx"][-1]) < 1e-9


@pytest.mark.slow
def test_box_tumbling_on_a_box_compiled_loop_equals_the_python_loop():
    """The frictional box drop's first 0.4 s (impacts with friction, sliding, sticking on
    the moving features): every output of the compiled loop equals the Python loop's to
    1e-9 (the Python loop takes about two minutes: 160 contacts evaluated one by one)."""
    c, p = both(box_drop(0.5), 0.4, 0.02)
    assert sum(c[n][-1] for n in c.dtype.names if n.endswith(".impacts")) > 4
    compare(c, p)
