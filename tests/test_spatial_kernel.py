"""The spatial C kernel (formulation 'recursive' for spatial models,
fmu_mb/engine/native/spatial_kernel.c): force elements of every kind with their inputs,
tree rows declared against the placement order, cut joints of every kind closing loops;
accelerations against tmt and newton_euler at random consistent states, trajectories
against tmt, Bricard against the IFToMM reference, the suspensions through their FMU inputs."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, cardan, load_model, simulate
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.errors import InputError

from conftest import MODELS
from test_bricard import ref_at


def loaded_tree(cut=None):
    """Revolute, prismatic, spherical and weld joints, three of them declared from the body
    farther from the ground (reversed rows), a floating pair, and every force element: TSDA,
    RSDA, bushing, forces and torques in global and body axes, with inputs. cut: the kind of
    an extra joint that closes a loop (None: an open tree)."""
    mb = ModelBuilder("loaded", {}, gravity=(0.3, -9.81, 0.5))
    rot = cardan(0.3, -0.2, 0.5)
    b = [mb.body(f"b{i}", mass=1.0 + 0.1 * i, inertia=(0.1 + 0.01 * i, 0.2, 0.15),
                 position=(0.3 * i, -0.1 * i, 0.05 * i), orientation=rot if i % 2 else None)
         for i in range(1, 9)]
    mb.revolute("R", mb.ground, b[0], at=(0.0, 0.0, 0.0), axis=(0.2, 0.1, 1.0))
    mb.prismatic("P", b[1], b[0], at=(0.45, -0.15, 0.07), axis=(1.0, 0.3, 0.0))   # reverse
    mb.revolute("R2", b[2], b[1], at=(0.75, -0.25, 0.12), axis=(0.0, 1.0, 0.2))   # reverse
    mb.spherical("S", b[3], b[2], at=(1.05, -0.35, 0.18))                         # reverse
    mb.weld("W", b[4], b[3], at=(1.35, -0.45, 0.22))                              # reverse
    mb.spherical("S2", b[3], b[5], at=(1.65, -0.55, 0.27))
    mb.spherical("S3", b[6], b[7], at=(2.25, -0.75, 0.38))      # b7, b8 float freely
    mb.tsda("spring", mb.ground, b[5], a_point=(2.0, 0.5, 0.0), b_point=(0.02, 0.0, 0.01),
            stiffness=50.0, damping=0.5, free_length=0.4)
    mb.rsda("rsda", joint="R", stiffness=3.0, damping=0.1, free_angle=0.2)
    mb.rsda("rsda2", joint="R2", stiffness=2.0, damping=0.2)
    mb.bushing("bush", b[5], b[6], at=(2.0, -0.6, 0.3), stiffness=(40.0, 30.0, 20.0),
               rotational_stiffness=(5.0, 4.0, 3.0), damping=(0.5, 0.4, 0.3),
               rotational_damping=(0.05, 0.04, 0.03))
    mb.force("push", b[2], point=(0.05, 0.02, 0.0), direction=(0.0, 0.6, 0.8), value=1.5)
    mb.force("thrust", b[7], point=(0.0, 0.1, 0.0), direction=(1.0, 0.0, 0.0),
             frame="body", value=-0.5)
    mb.torque("motor", b[0], axis=(0.0, 0.0, 1.0), value=0.3)
    mb.torque("twist", b[5], reaction=b[3], axis=(1.0, 0.0, 0.0), frame="body", value=0.2)
    if cut == "distance":
        mb.distance("link", mb.ground, b[4], parent_point=(1.8, 0.3, 0.2),
                    child_point=(0.05, 0.0, 0.0))
    elif cut is not None:
        getattr(mb, cut)("cut", b[4], b[5], at=(1.9, -0.62, 0.31),
                         **({} if cut in ("spherical", "weld") else {"axis": (0.3, 0.2, 1.0)}),
                         **({"axis2": (1.0, -0.5, -0.2)} if cut == "universal" else {}))
    return mb.build()


REC, TMT, NE = (get_formulation(f) for f in ("recursive", "tmt", "newton_euler"))


def random_state(model, seed, spread):
    """A random consistent (q, qd): q0 + spread * noise and random qd, projected by tmt."""
    rng = np.random.default_rng(seed)
    s0 = TMT.initial_state(model)
    q = s0.q + spread * rng.standard_normal(s0.q.shape)
    qd = rng.standard_normal(s0.q.shape)
    y = TMT.project(model, np.concatenate([q, qd]), 0.0, 1e-13)
    n = q.shape[0]
    return y[:n], y[n:]


def _agree(model, seeds=(3, 4), spread=0.2):
    rng = np.random.default_rng(7)
    for seed in seeds:
        q, qd = random_state(model, seed, spread if not model.topology.cut_joints else 0.01)
        u = rng.standard_normal(len(model.inputs))
        a = TMT.accelerations(model, q, qd, 0.2, u)
        b = REC.accelerations(model, q, qd, 0.2, u)
        np.testing.assert_allclose(b.qdd, a.qdd, atol=1e-10 * (1.0 + np.abs(a.qdd).max()))
        x, xd = TMT.absolute(model, q, qd)
        xk, xdk = REC.absolute(model, q, qd)            # the kernel's forward kinematics
        np.testing.assert_allclose(xk, x, atol=1e-13 * (1.0 + np.abs(x).max()))
        np.testing.assert_allclose(xdk, xd, atol=1e-13 * (1.0 + np.abs(xd).max()))
        from fmu_mb.mechanics.spatial.elements import element_outputs
        for got, want in zip(REC.element_values(model, q, qd, u),
                             element_outputs(model, x, xd, u)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        if len(model.compiled.markers):
            from fmu_mb.mechanics.spatial.elements import marker_outputs
            np.testing.assert_allclose(REC.markers(model, q, qd), marker_outputs(model, x, xd),
                                       atol=1e-13 * (1.0 + np.abs(xd).max()))
        c = NE.accelerations(model, x, xd, 0.2, u)
        np.testing.assert_allclose(b.xdd, c.qdd, atol=1e-10 * (1.0 + np.abs(c.qdd).max()))
        # every input acts (in the open tree; a loop can lock an element's two bodies)
        for i in range(len(u) if not model.topology.cut_joints else 0):
            v = u.copy()
            v[i] += 1.0
            assert np.abs(REC.accelerations(model, q, qd, 0.2, v).qdd - b.qdd).max() > 1e-6


def test_every_force_element_on_reversed_rows_equals_tmt_and_newton_euler():
    model = loaded_tree()
    assert REC.supports(model)
    assert {e.kind for e in model.elements} == {"tsda", "rsda", "bushing", "force", "torque"}
    assert len(model.inputs) == 7
    _agree(model)


@pytest.mark.parametrize("cut", ["spherical", "revolute", "universal", "cylindrical",
                                 "prismatic", "weld", "distance"])
def test_cut_joints_of_every_kind_equal_tmt_and_newton_euler(cut):
    model = loaded_tree(cut)
    assert model.topology.cut_joints
    assert REC.supports(model)
    _agree(model, seeds=(3,))


@pytest.mark.parametrize("name", ["double_wishbone", "five_point_suspension", "bricard"])
def test_suspensions_and_bricard_accelerations_equal_tmt(name):
    model = load_model(MODELS / f"{name}.py")
    assert REC.supports(model)
    _agree(model, seeds=(1,))


def test_loop_trajectory_follows_tmt_and_stays_closed():
    """dop853 in C with projection after every step against tmt's scipy DOP853 on a loop of
    every element kind; the loop rows stay closed."""
    model = loaded_tree("revolute")
    kw = dict(rtol=1e-10, atol=1e-12, inputs={"push.h": 0.3, "motor.h": -0.1})
    ref = simulate(model, 0.3, 0.1, formulation="tmt", **kw)
    r = simulate(model, 0.3, 0.1, formulation="recursive", **kw)
    for c in ("b3.x", "b6.z", "b7.y", "b8.e1", "R.angle"):
        assert abs(r[c][-1] - ref[c][-1]) < 1e-7, c
    assert np.abs(r["constraint.residual"]).max() < 1e-10
    assert np.abs(r["constraint.velocity_residual"]).max() < 1e-9
    assert np.ptp(ref["b6.z"]) > 1e-3


def test_bricard_p3_at_10s_in_recursive():
    """The Bricard check in the compiled route: P3 at 10 s within 1e-6 m of the
    IFToMM A04 reference (redundant loop rows: S is singular, the eigen fallback runs)."""
    model = load_model(MODELS / "bricard.py")
    r = simulate(model, 10.0, 5.0, formulation="recursive")
    p3 = np.array([r["P3.x"][-1], r["P3.y"][-1], r["P3.z"][-1]])
    assert np.abs(p3 - ref_at(10.0)).max() < 1e-6


def test_double_wishbone_road_step_follows_newton_euler():
    model = load_model(MODELS / "double_wishbone.py")
    kw = dict(inputs={"tyre.h": -4.0e5 * 0.02, "coil_over.h": 300.0}, rtol=1e-10,
              atol=1e-10)
    a = simulate(model, 0.05, 0.025, formulation="newton_euler", **kw)
    b = simulate(model, 0.05, 0.025, formulation="recursive", **kw)
    for c in "xyz":
        col = f"wheel_centre.{c}"
        assert np.abs(a[col] - b[col]).max() < 1e-8, col
    assert a["wheel_centre.z"][-1] - a["wheel_centre.z"][0] > 1e-3


def test_recursive_refuses_drives_of_python_functions_naming_why():
    """Drives with a law as data run in the kernel (tests/test_spatial_contacts.py); a Motion
    of Python functions is refused, naming the drive."""
    from fmu_mb import Motion
    mb = ModelBuilder("driven", {}, gravity=(0.0, -9.81, 0.0))
    b = mb.body("b", mass=1.0, inertia=(0.1, 0.1, 0.1), position=(0.5, 0.0, 0.0))
    mb.revolute("R", mb.ground, b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.drive("turn", "R", Motion(lambda t: t, lambda t: 1.0, lambda t: 0.0))
    model = mb.build()
    assert not REC.supports(model)
    with pytest.raises(InputError, match="drive 'turn' follows a Motion of Python"):
        simulate(model, 0.1, formulation="recursive")


@pytest.mark.fmu
def test_default_double_wishbone_fmu_runs_the_kernel_and_its_inputs_reach_it(shared_fmu):
    """The default-built FMU chooses recursive (auto), and a road step through the input
    tyre.h and an actuator force coil_over.h move the wheel as newton_euler says."""
    pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    from fmpy import simulate_fmu
    from fmu_mb.dynamics.formulations import auto_choice

    model = load_model(MODELS / "double_wishbone.py")
    assert auto_choice(model)[0] == "recursive"
    fmu = shared_fmu(MODELS / "double_wishbone.py", "python")
    table = np.zeros(4, dtype=[("time", float), ("tyre.h", float), ("coil_over.h", float)])
    table["time"] = [0.0, 0.01, 0.01, 0.05]           # steps at 0.01 s (fmpy: held values)
    table["tyre.h"] = [0.0, 0.0, -4.0e5 * 0.02, -4.0e5 * 0.02]
    table["coil_over.h"] = [0.0, 0.0, 500.0, 500.0]
    names = ["wheel_centre.x", "wheel_centre.y", "wheel_centre.z"]
    r = simulate_fmu(str(fmu), stop_time=0.05, output_interval=0.005, input=table,
                     output=names)
    ref = simulate(model, 0.05, 0.005, formulation="newton_euler",
                   inputs={"tyre.h": lambda t: -8.0e3 if t >= 0.01 - 1e-12 else 0.0,
                           "coil_over.h": lambda t: 500.0 if t >= 0.01 - 1e-12 else 0.0})
    for name in names:
        np.testing.assert_allclose(r[name], ref[name], atol=1e-7, err_msg=name)
    assert r["wheel_centre.z"][-1] - r["wheel_centre.z"][0] > 1e-3     # the road lifted it
