"""Spatial tmt (tree joint coordinates, fmu_mb.mechanics.spatial.tree): x = T(q), Tq and the
convective term g against finite differences for every joint kind (forward and reverse,
floating root); accelerations and every reaction against newton_euler at random consistent
states; Bricard (IFToMM A04) at 10 s against the reference; heavy top and the suspensions
against newton_euler."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, cardan, load_model, simulate
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.errors import InputError
from fmu_mb.mechanics.spatial import tree as st
from fmu_mb.tools.cli import main
from fmu_mb.tools.viz import read_csv

from conftest import MODELS
from test_bricard import ref_at


def every_kind(cut=True):
    """A tree with every spatial joint kind, some declared against the placement order
    (parent placed from the child), a floating subtree, a spring and a cut distance joint."""
    mb = ModelBuilder("kinds", {}, gravity=(0.3, -9.81, 0.5))
    rot = cardan(0.3, -0.2, 0.5)
    b = [mb.body(f"b{i}", mass=1.0 + 0.1 * i, inertia=(0.1 + 0.01 * i, 0.2, 0.15),
                 position=(0.3 * i, -0.1 * i, 0.05 * i), orientation=rot if i % 2 else None)
         for i in range(1, 9)]
    mb.revolute("R", mb.ground, b[0], at=(0.0, 0.0, 0.0), axis=(0.2, 0.1, 1.0))
    mb.prismatic("P", b[1], b[0], at=(0.45, -0.15, 0.07), axis=(1.0, 0.3, 0.0))   # reverse
    mb.cylindrical("C", b[1], b[2], at=(0.75, -0.25, 0.12), axis=(0.0, 1.0, 0.2))
    mb.universal("U", b[2], b[3], at=(1.05, -0.35, 0.18), axis=(0.0, 0.0, 1.0),
                 axis2=(1.0, 0.0, 0.0))
    mb.spherical("S", b[4], b[3], at=(1.35, -0.45, 0.22))                         # reverse
    mb.weld("W", b[5], b[4], at=(1.65, -0.55, 0.27))                              # reverse
    mb.spherical("S2", b[6], b[7], at=(2.25, -0.75, 0.38))      # b7, b8 float freely
    mb.tsda("spring", mb.ground, b[6], a_point=(2.0, 0.5, 0.0), b_point=(0.0, 0.0, 0.0),
            stiffness=50.0, damping=0.5)
    mb.rsda("rsda", joint="R", stiffness=3.0, damping=0.1)
    if cut:
        mb.distance("link", mb.ground, b[5], parent_point=(1.8, 0.3, 0.2),
                    child_point=(0.05, 0.0, 0.0))
    return mb.build()


@pytest.fixture(scope="module")
def kinds():
    return every_kind()


def random_state(model, seed):
    """A random consistent (q, qd): random q and qd, projected onto every row."""
    tmt = get_formulation("tmt")
    rng = np.random.default_rng(seed)
    s0 = tmt.initial_state(model)
    q = s0.q + 0.2 * rng.standard_normal(s0.q.shape)
    qd = rng.standard_normal(s0.q.shape)
    y = tmt.project(model, np.concatenate([q, qd]), 0.0, 1e-13)
    n = q.shape[0]
    return y[:n], y[n:]


def test_coordinates_name_every_kind(kinds):
    names = st.tree_map(kinds).names
    assert names[:11] == ("R.angle", "P.position", "C.angle", "C.position", "U.angle1",
                          "U.angle2", "S.e0", "S.e1", "S.e2", "S.e3", "S2.e0")
    assert names[-7:] == tuple(f"b7.{c}" for c in ("x", "y", "z", "e0", "e1", "e2", "e3"))
    assert "link" in kinds.topology.cut_joints


def test_T_reproduces_the_assembled_pose_and_velocities(kinds):
    s = get_formulation("tmt").initial_state(kinds)
    x, xd = get_formulation("tmt").absolute(kinds, s.q, s.qd)
    np.testing.assert_allclose(x, kinds.x0, atol=1e-12)
    np.testing.assert_allclose(xd, kinds.xd0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_jacobian_and_convective_term_against_finite_differences(kinds, seed):
    rng = np.random.default_rng(seed)
    q0 = get_formulation("tmt").initial_state(kinds).q
    n = q0.shape[0]
    q, qd = q0 + 0.3 * rng.standard_normal(n), rng.standard_normal(n)
    x, xd, Tq, g = st.transform(kinds, q, qd)
    h = 1e-6
    Tfd = np.column_stack([(st.transform(kinds, q + h * e, qd)[0]
                            - st.transform(kinds, q - h * e, qd)[0]) / (2 * h)
                           for e in np.eye(n)])
    np.testing.assert_allclose(Tq, Tfd, atol=1e-8)
    np.testing.assert_allclose(xd, Tq @ qd, atol=1e-13)
    # g = d/dt (Tq qd) at constant qd: the derivative of xd along q' = qd
    gfd = (st.transform(kinds, q + h * qd, qd)[1] - st.transform(kinds, q - h * qd, qd)[1]) / (2 * h)
    np.testing.assert_allclose(g, gfd, atol=1e-7 * (1 + np.abs(g).max()))
    assert np.abs(g).max() > 0.1                        # a real test: the term is not zero


@pytest.mark.parametrize("seed", [3, 4])
def test_accelerations_and_reactions_equal_newton_euler(kinds, seed):
    tmt, ne = get_formulation("tmt"), get_formulation("newton_euler")
    q, qd = random_state(kinds, seed)
    x, xd = tmt.absolute(kinds, q, qd)
    u = kinds.input_vector({"spring.h": 2.0}) if kinds.inputs else np.zeros(0)
    dyn = tmt.accelerations(kinds, q, qd, 0.3, u)
    ref = ne.accelerations(kinds, x, xd, 0.3, u)
    np.testing.assert_allclose(dyn.xdd, ref.qdd, atol=1e-9 * (1 + np.abs(ref.qdd).max()))
    np.testing.assert_allclose(tmt.lam(kinds, dyn), ref.lam, atol=1e-8 * (1 + np.abs(ref.lam).max()))


def test_bricard_at_10s_agrees_with_the_reference(tmp_path):
    """The command line: `python -m fmu_mb simulate models/bricard.py --formulation tmt
    --stop-time 10` agrees with newton_euler (and the reference) to 1e-6 m in P3 at 10 s."""
    out = tmp_path / "b.csv"
    assert main(["simulate", str(MODELS / "bricard.py"), "--formulation", "tmt", "--stop-time",
                 "10", "--output-interval", "5", "--quiet", "-o", str(out)]) == 0
    r = read_csv(out)
    k = int(np.flatnonzero(np.isclose(r["time"], 10.0))[0])
    p3 = np.array([r["P3.x"][k], r["P3.y"][k], r["P3.z"][k]])
    assert np.abs(p3 - ref_at(10.0)).max() < 1e-6


def test_heavy_top_nutating_with_spin_motor_agrees_with_newton_euler():
    model = load_model(MODELS / "heavy_top.py", precession_offset=0.8)
    kw = dict(inputs={"spin_motor.h": 0.02}, rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.6, 0.2, formulation="newton_euler", **kw)
    b = simulate(model, 0.6, 0.2, formulation="tmt", **kw)
    for name in ("tip.x", "tip.y", "tip.z", "top.wx", "top.wz", "pivot.fz", "pivot.tx"):
        assert np.abs(a[name] - b[name]).max() < 1e-7 * (1 + np.abs(a[name]).max()), name
    assert np.ptp(b["tip.z"]) > 1e-3                    # it nutates


@pytest.mark.parametrize("name", ["double_wishbone", "five_point_suspension"])
def test_suspensions_over_a_road_step_agree_with_newton_euler(name):
    model = load_model(MODELS / f"{name}.py")
    kw = dict(inputs={"tyre.h": -4.0e5 * 0.02}, rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.05, 0.025, formulation="newton_euler", **kw)
    b = simulate(model, 0.05, 0.025, formulation="tmt", **kw)
    for c in "xyz":
        col = f"wheel_centre.{c}"
        assert np.abs(a[col] - b[col]).max() < 1e-8
    assert a["wheel_centre.z"][-1] - a["wheel_centre.z"][0] > 1e-3   # the wheel moved
    forces = [f for f in a.dtype.names if f.endswith((".fx", ".fz", ".tx"))]
    for f in forces:
        assert np.abs(a[f] - b[f]).max() < 1e-5 * (1 + np.abs(a[f]).max()), f


# ------------------------------------------------------------------ spatial recursive (C)
def open_tree():
    """Every joint kind of the spatial kernel, declared away from the ground, a floating
    subtree; gravity only."""
    mb = ModelBuilder("open_tree", {}, gravity=(0.3, -9.81, 0.5))
    rot = cardan(0.3, -0.2, 0.5)
    b = [mb.body(f"b{i}", mass=1.0 + 0.1 * i, inertia=(0.1 + 0.01 * i, 0.2, 0.15),
                 position=(0.3 * i, -0.1 * i, 0.05 * i), orientation=rot if i % 2 else None)
         for i in range(1, 8)]
    mb.revolute("R", mb.ground, b[0], at=(0.0, 0.0, 0.0), axis=(0.2, 0.1, 1.0))
    mb.prismatic("P", b[0], b[1], at=(0.45, -0.15, 0.07), axis=(1.0, 0.3, 0.0))
    mb.spherical("S", b[1], b[2], at=(0.75, -0.25, 0.12))
    mb.weld("W", b[2], b[3], at=(1.05, -0.35, 0.18))
    mb.revolute("R2", b[1], b[4], at=(1.2, -0.3, 0.2), axis=(0.0, 1.0, 1.0))
    mb.spherical("S2", b[5], b[6], at=(2.25, -0.75, 0.38))     # b6, b7 float freely
    return mb.build()


@pytest.mark.parametrize("make", [open_tree,
                                  lambda: load_model(MODELS / "spatial_chain.py", N=6,
                                                     joint="spherical", link_radius=0.03),
                                  lambda: load_model(MODELS / "spatial_chain.py", N=6)])
def test_recursive_accelerations_equal_tmt_and_newton_euler(make):
    model = make()
    tmt, rec, ne = (get_formulation(f) for f in ("tmt", "recursive", "newton_euler"))
    u = np.zeros(0)
    for seed in (5, 6):
        q, qd = random_state(model, seed)
        a = tmt.accelerations(model, q, qd, 0.0, u)
        b = rec.accelerations(model, q, qd, 0.0, u)
        scale = 1.0 + np.abs(a.qdd).max()
        np.testing.assert_allclose(b.qdd, a.qdd, atol=1e-10 * scale)
        x, xd = tmt.absolute(model, q, qd)
        c = ne.accelerations(model, x, xd, 0.0, u).qdd
        np.testing.assert_allclose(b.xdd, c, atol=1e-10 * (1.0 + np.abs(c).max()))


def test_recursive_integrators_in_c_follow_tmt():
    """dop853, dopri5 and rk4 in C against tmt's scipy DOP853 on a tree with spherical joints
    and a floating subtree; the Euler parameters stay unit."""
    model = open_tree()
    ref = simulate(model, 0.3, 0.3, formulation="tmt", rtol=1e-11, atol=1e-12)
    for method, kw, tol in (("dop853", dict(rtol=1e-11, atol=1e-12), 1e-8),
                            ("dopri5", dict(rtol=1e-10, atol=1e-12), 1e-6),
                            ("rk4", dict(step=1e-3), 1e-6)):
        r = simulate(model, 0.3, 0.3, formulation="recursive", method=method, **kw)
        for c in ("b3.x", "b5.z", "b7.y", "b7.e1"):
            assert abs(r[c][-1] - ref[c][-1]) < tol, (method, c)
        p = np.array([r[f"b3.e{i}"][-1] for i in range(4)])
        assert abs(p @ p - 1.0) < 1e-12
    assert np.ptp(ref["b7.y"]) > 0.1                     # the floating pair falls


def test_recursive_refuses_tree_joints_it_lacks_naming_why():
    """Loops and force elements run in the kernel now (tests/test_spatial_kernel.py); a
    cylindrical or universal joint in the spanning tree does not."""
    with pytest.raises(InputError, match="joint 'C' of the spanning tree is cylindrical"):
        simulate(every_kind(), 0.1, formulation="recursive")
