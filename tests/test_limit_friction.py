"""A frictional joint against its joint limit (a persistent limit contact on a joint with
Coulomb friction): the pendulum that swings onto its stop and is held there (the limit
carries the whole reaction: friction 0, state 0), the one thrown onto its stop that is then
held by its friction (the limit releases; state 1, the friction balancing gravity), the one
that slides back off its stop and comes to rest, and the Unitree Z1 arm of
example-robot-data in its default pose (two joints start pressed on their stops, the
gripper sticks at its stop throughout). The Python event loop (formulation newton_euler) is
checked against closed forms (the impact time and speed from the equation of motion
integrated by scipy, the static torque balance at rest, the energy balance); the compiled
loop (formulation recursive, planar and spatial) and the engine library equal it to 1e-9 at
every output point."""
import math
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from conftest import engine_equals, once, same_outputs
from fmu_mb import ModelBuilder, simulate
from fmu_mb.dynamics.integrate import Settings
from test_joint_friction import pendulum

G = 9.81
REFERENCE = Settings(formulation="newton_euler", rtol=1e-11, atol=1e-13)
COMPILED = Settings(formulation="recursive", rtol=1e-11, atol=1e-13)
#: the bob's moment of inertia about the pin: m L^2 + 0.01 (its own inertia), m = L = 1
INERTIA = 1.0 + 0.01


def thrown(spatial, w0, fc, lower, m=1.0, length=1.0):
    """test_joint_friction's pendulum (a point-like bob at `length` below a frictional pin)
    started at the bottom with the joint rate w0 [rad/s] towards its lower limit `lower`
    (restitution 0); the joint angle is the bob's angle from the vertical."""
    if spatial:
        mb = ModelBuilder("thrown3", gravity=(0.0, 0.0, -G))
        b = mb.body("bob", mass=m, inertia=(0.01, 0.01, 0.01), position=(0.0, 0.0, -length))
        mb.revolute("pin", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0),
                    friction=fc)
    else:
        mb = ModelBuilder("thrown2", gravity=(0.0, -G))
        b = mb.body("bob", mass=m, inertia=0.01, position=(0.0, -length))
        mb.revolute("pin", "ground", b, child_point=(0.0, length), friction=fc)
    mb.initial("pin", rate=w0)
    mb.joint_limit("stop", "pin", lower=lower, upper=1.0, restitution=0.0)
    return mb.build()


def swing_to(th0, w0, fc, th_stop):
    """(time, rate) at which the bob, from angle th0 with rate w0 < 0, reaches th_stop < th0:
    I th'' = -m g L sin th + F_c (the friction opposes the motion), integrated by scipy."""
    def hit(t, y):
        return y[0] - th_stop
    hit.terminal = True
    sol = solve_ivp(lambda t, y: [y[1], (-G * math.sin(y[0]) + fc) / INERTIA], (0.0, 5.0),
                    [th0, w0], events=hit, rtol=1e-12, atol=1e-14)
    assert sol.t_events[0].size == 1
    return float(sol.t_events[0][0]), float(sol.y_events[0][0][1])


CASES = {
    # swings from 0.5 rad onto its stop at 0.3 rad (joint angle -0.2), held by it
    "held2": (lambda: pendulum(False, 0.5, 1.0, limit=-0.2), 1.0, 0.05),
    "held3": (lambda: pendulum(True, 0.5, 1.0, limit=-0.2), 1.0, 0.1),
    # thrown onto its stop at -0.3 rad; held there by its friction (4 N.m > m g L sin 0.3)
    "stuck2": (lambda: thrown(False, -2.0, 4.0, -0.3), 1.0, 0.1),
    "stuck3": (lambda: thrown(True, -2.0, 4.0, -0.3), 1.0, 0.1),
    # thrown onto its stop; slides back off it (2 N.m < m g L sin 0.3) and comes to rest
    "back3": (lambda: thrown(True, -2.0, 2.0, -0.3), 2.0, 0.1),
}


def reference(name):
    """The Python loop's outputs of a case, computed once per process (callers only read)."""
    make, t_end, dt = CASES[name]
    return once(("limit_friction", name), lambda: simulate(make(), t_end, dt,
                                                             settings=REFERENCE))


def _grouped(names):
    return [pytest.param(n, marks=pytest.mark.xdist_group(f"limit_friction_{n}"))
            for n in names]


def _consistent(r, joint, stop, fc):
    """The joint's friction within its bound and the limit's force compressive throughout."""
    assert np.all(np.abs(r[f"{joint}.friction"]) <= fc * (1.0 + 1e-12))
    assert np.all(r[f"{stop}.force"] >= -1e-12)


@pytest.mark.parametrize("name", _grouped(["held2", "held3"]))
def test_a_pendulum_swinging_onto_its_stop_is_held_by_it(name):
    """From rest at 0.5 rad the bob slips (m g L sin 0.5 > F_c = 1 N.m) to its stop at 0.3
    rad, reached at the time and speed of the equation of motion; the plastic impact takes
    its kinetic energy; then it rests on the stop: rate 0, the limit's force the gravity
    torque m g L sin 0.3 (static balance), the friction 0 (state 0, held), the friction's
    loss F_c 0.2 and the energy balance closed."""
    r = reference(name)
    fc = 1.0
    t_hit, w_hit = swing_to(0.5, 0.0, fc, 0.3)
    assert abs(r["stop_lower.last_time"][-1] - t_hit) < 1e-9
    assert abs(r["stop_lower.last_impulse"][-1] - INERTIA * abs(w_hit)) < 1e-9
    assert abs(r["stop_lower.energy_loss"][-1] - 0.5 * INERTIA * w_hit ** 2) < 1e-9
    after = r["time"] > t_hit
    assert set(r["pin.friction_state"][~after]) == {2.0}
    assert set(r["pin.friction_state"][after]) == {0.0}
    assert np.all(r["stop_lower.active"][after] == 1.0)
    assert np.abs(r["pin.angle"][after] + 0.2).max() < 1e-12
    assert np.abs(r["pin.rate"][after]).max() < 1e-12
    assert np.abs(r["stop_lower.force"][after] - G * math.sin(0.3)).max() < 1e-9
    assert np.all(r["pin.friction"][after] == 0.0)
    assert abs(r["pin.friction_loss"][-1] - fc * 0.2) < 1e-9
    drop = G * (math.cos(0.3) - math.cos(0.5))          # the potential energy released
    assert abs(r["stop_lower.energy_loss"][-1] + r["pin.friction_loss"][-1] - drop) < 1e-9
    assert abs(r["energy.total"][-1] - r["energy.total"][0] + drop) < 1e-9
    _consistent(r, "pin", "stop_lower", fc)


@pytest.mark.parametrize("name", _grouped(["stuck2", "stuck3"]))
def test_a_pendulum_thrown_onto_its_stop_is_held_by_its_friction(name):
    """Thrown at -2 rad/s from the bottom onto its stop at -0.3 rad with F_c = 4 N.m: it
    reaches the stop at the time and speed of the equation of motion; the gravity torque
    there, m g L sin 0.3 < F_c, pulls it off the stop, so the limit releases and the joint
    sticks (state 1) with the friction balancing gravity, m g L sin(-0.3); the stop is not
    hit again (the gap at rest on it, within rounding of 0, is no new impact)."""
    r = reference(name)
    fc = 4.0
    t_hit, w_hit = swing_to(0.0, -2.0, fc, -0.3)
    assert abs(r["stop_lower.last_time"][-1] - t_hit) < 1e-9
    assert abs(r["stop_lower.energy_loss"][-1] - 0.5 * INERTIA * w_hit ** 2) < 1e-9
    after = r["time"] > t_hit
    assert set(r["stop_lower.impacts"][after]) == {1.0}
    assert set(r["pin.friction_state"][~after]) == {2.0}
    assert set(r["pin.friction_state"][after]) == {1.0}
    assert np.all(r["stop_lower.active"] == 0.0)
    assert np.abs(r["pin.angle"][after] + 0.3).max() < 1e-12
    assert np.abs(r["pin.rate"][after]).max() < 1e-12
    assert np.abs(r["pin.friction"][after] - G * math.sin(-0.3)).max() < 1e-9
    _consistent(r, "pin", "stop_lower", fc)


@pytest.mark.parametrize("name", _grouped(["back3"]))
def test_a_pendulum_sliding_back_off_its_stop_rests_where_friction_balances(name):
    """With F_c = 2 N.m < m g L sin 0.3 the bob stopped on its stop slides back off it (the
    limit releases, the joint slips along +th) and stops at th_r where the energy released
    equals the friction's work, m g L (cos th_r - cos 0.3) = F_c (th_r + 0.3); it sticks
    there (|m g L sin th_r| < F_c), the friction balancing gravity."""
    r = reference(name)
    fc = 2.0
    t_hit, w_hit = swing_to(0.0, -2.0, fc, -0.3)
    assert abs(r["stop_lower.last_time"][-1] - t_hit) < 1e-9
    th_r = brentq(lambda th: G * (math.cos(th) - math.cos(0.3)) - fc * (th + 0.3), -0.29, 0.0)
    assert G * abs(math.sin(th_r)) < fc
    assert abs(r["pin.angle"][-1] - th_r) < 1e-9
    assert r["pin.friction_state"][-1] == 1.0 and abs(r["pin.rate"][-1]) < 1e-12
    assert abs(r["pin.friction"][-1] - G * math.sin(th_r)) < 1e-9
    assert set(r["stop_lower.impacts"]) == {0.0, 1.0} and np.all(r["stop_lower.active"] == 0)
    # the friction's loss: F_c over the whole path, 0.3 + (th_r + 0.3)
    assert abs(r["pin.friction_loss"][-1] - fc * (0.3 + th_r + 0.3)) < 1e-9
    _consistent(r, "pin", "stop_lower", fc)


@pytest.mark.parametrize("name", _grouped(list(CASES)))
def test_the_compiled_loop_equals_the_python_loop(name):
    make, t_end, dt = CASES[name]
    ref = reference(name)
    res = simulate(make(), t_end, dt, settings=COMPILED)
    same_outputs(res, ref)


@pytest.mark.parametrize("name", _grouped(["held2", "held3", "back3"]))
def test_the_engine_library_equals_the_python_loop(name):
    """The engine library (the native FMU's code) step by step against the Python loop."""
    from fmu_mb.engine.data import supported
    from fmu_mb.engine.engine import Engine

    make, t_end, dt = CASES[name]
    model = make()
    assert supported(model) is None
    eng = Engine(model)
    eng.set_settings(REFERENCE)
    eng.initialize()
    engine_equals(eng, reference(name), dt)


# ---------------------------------------------------------------------- the Unitree Z1
Z1 = "z1_description/urdf/z1.urdf"
Z1_END, Z1_DT = 0.3, 0.01


def z1_model():
    pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")
    from test_import_urdf import ROBOTS
    from fmu_mb.importers.urdf import load_urdf

    if ROBOTS is None:
        pytest.skip("pip example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(ROBOTS / Z1)


def z1_reference():
    return once(("limit_friction", "z1"),
                lambda: simulate(z1_model(), Z1_END, Z1_DT, settings=REFERENCE))


Z1_GROUP = pytest.mark.xdist_group("limit_friction_z1")


@Z1_GROUP
def test_the_z1_in_its_default_pose_rests_on_its_stops():
    """The Z1 from its URDF's default pose (every joint at 0, at rest): the shoulder
    (joint2) and elbow (joint3) start at their stops at rest, pressed into them (their
    gravity torques exceed F_c), so the stops are persistent from t0 and hold them (state 0:
    friction 0, the limits' forces compressive), with no impact (a free start would find one
    where the rounding-size gap closes); the gripper sits at its upper stop sticking
    throughout, its stop carrying no force; joint4 slips; every friction within its
    bound."""
    model = z1_model()
    r = z1_reference()
    bound = {j.name: j.friction for j in model.joints if j.friction}
    assert len(bound) == 7
    t = r["time"]
    for j in ("joint2", "joint3"):
        assert set(r[f"{j}.friction_state"]) == {0.0}
        assert np.all(r[f"{j}.friction"] == 0.0)
    for stop in ("joint2_limit_lower", "joint3_limit_upper"):
        assert set(r[f"{stop}.active"]) == {1.0}
        assert np.all(r[f"{stop}.force"] > 0.1)
        assert set(r[f"{stop}.impacts"]) == {0.0}
    assert set(r["jointGripper.friction_state"]) == {1.0}
    assert set(r["jointGripper_limit_upper.impacts"]) == {0.0}
    assert np.abs(r["jointGripper_limit_upper.gap"]).max() < 1e-15
    assert set(r["joint4.friction_state"][t > 0]) == {2.0}
    for j, fc in bound.items():
        assert np.all(np.abs(r[f"{j}.friction"]) <= fc * (1.0 + 1e-12)), j
        assert np.all(np.diff(r[f"{j}.friction_loss"]) >= -1e-12), j
    for c in model.contacts:
        assert np.all(r[f"{c.name}.force"] >= -1e-12), c.name


@Z1_GROUP
def test_the_z1_compiled_loop_and_engine_library_equal_the_python_loop():
    """The compiled loop (in-process, formulation recursive) and the engine library step by
    step equal the Python loop to 1e-9 at every output point."""
    from fmu_mb.engine.data import supported
    from fmu_mb.engine.engine import Engine

    model = z1_model()
    ref = z1_reference()
    same_outputs(simulate(model, Z1_END, Z1_DT, settings=COMPILED), ref)
    assert supported(model) is None
    eng = Engine(model)
    eng.set_settings(REFERENCE)
    eng.initialize()
    engine_equals(eng, ref, Z1_DT)


# ---------------------------------------------------------------------- a native FMU
HELD3 = ('"""A spatial pendulum with a frictional pin that swings onto its stop and is held by\n'
         'it, and one thrown onto its stop that its friction holds."""\n'
         "import math\n\n"
         "from fmu_mb import ModelBuilder\n\n\n"
         "def build(**overrides):\n"
         '    mb = ModelBuilder("held3_native", overrides, gravity=(0.0, 0.0, -9.81))\n'
         '    bob = mb.body("bob", mass=1.0, inertia=(0.01, 0.01, 0.01),\n'
         "                  position=(math.sin(0.5), 0.0, -math.cos(0.5)))\n"
         '    mb.revolute("pin", "ground", bob, at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0),\n'
         "                friction=1.0)\n"
         '    mb.joint_limit("stop", "pin", lower=-0.2, upper=1.0, restitution=0.0)\n'
         '    bob2 = mb.body("bob2", mass=1.0, inertia=(0.01, 0.01, 0.01), position=(3.0, 0.0, -1.0))\n'
         '    mb.revolute("pin2", "ground", bob2, at=(3.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0),\n'
         "                friction=4.0)\n"
         '    mb.initial("pin2", rate=-2.0)\n'
         '    mb.joint_limit("stop2", "pin2", lower=-0.3, upper=1.0, restitution=0.0)\n'
         "    return mb.build()\n")


@pytest.mark.slow
def test_a_native_fmu_of_pendulums_on_their_stops_equals_the_python_loop(shared_build,
                                                                           session_fmus):
    """The native FMU (FMI 2.0, co-simulation) of the two spatial pendulums above in fmpy at
    the reference's tolerances: every output at every point equals the newton_euler Python
    loop's to 1e-9; the first rests held by its stop (state 0), the second stuck (state 1)."""
    fmpy = pytest.importorskip("fmpy")
    from fmu_mb import load_model

    def make(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "held3_native.py").write_text(HELD3)
        return out / "held3_native.py"
    f = shared_build("test_limit_friction held3_native.py " + HELD3, make)
    fmu = session_fmus(f, fmi=2, kind="native")
    ref = simulate(load_model(f), 1.0, 0.1, settings=REFERENCE)
    r = fmpy.simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1,
                          start_values={"solver.rtol": 1e-11, "solver.atol": 1e-13})
    assert len(r) == len(ref) and np.abs(r["time"] - ref["time"]).max() < 1e-12
    for n in ref.dtype.names[1:]:
        err = np.abs(r[n] - ref[n]).max() / max(1.0, np.abs(ref[n]).max())
        assert err <= 1e-9, (n, err)
    assert r["pin.friction_state"][-1] == 0 and r["pin2.friction_state"][-1] == 1
    assert abs(r["stop_lower.force"][-1] - G * math.sin(0.3)) < 1e-9
    assert abs(r["pin2.friction"][-1] - G * math.sin(-0.3)) < 1e-9
