"""Joint Coulomb friction in the compiled event loop (native/event_loop.h with the planar
kernel's operations in native/events.c: sticking joints' rate rows R_JRATE, slipping joints'
forces -F_c s0, the stick/slip events, the coupled rest states of friction.h and the
dissipated energy) against the Python event loop of formulation newton_euler (absolute
coordinates: the other formulation of the same law) to 1e-9 at every output point, on the
models of tests/test_joint_friction.py and tests/test_joint_friction_c.py and a URDF arm with
<dynamics friction>; the native FMU (FMI 2.0 and 3.0 in fmpy) of a spinning disc stops at the
closed-form time I w0 / F_c."""
import math

import numpy as np
import pytest

from conftest import engine_equals, once, same_outputs
from fmu_mb import ModelBuilder, simulate
from fmu_mb.dynamics.integrate import Settings
from test_joint_friction import double_pendulum as dp_at, pendulum, rotor, slider, spring_rotor
from test_joint_friction_c import arm3_builder, double_pendulum, slider_crank_arm

G = 9.81
REFERENCE = Settings(formulation="newton_euler", rtol=1e-11, atol=1e-13)
COMPILED = Settings(formulation="recursive", rtol=1e-11, atol=1e-13)

CASES = [
    (lambda: rotor(False, 2.9, 0.5, 0.5), 4.0, 0.25),             # slips, stops at 2.9 s
    (lambda: slider(False, 0.5, 3.0), 1.0, 0.1),                  # slides
    (lambda: slider(False, 0.2, 3.0), 1.0, 0.1),                  # sticks
    (lambda: spring_rotor(False, 2.0, 0.2, 0.75), 7.0, 0.25),      # Coulomb-damped oscillator
    (lambda: pendulum(False, 0.6, 0.3), 2.5, 0.1),                # swings, comes to rest
    (lambda: pendulum(False, 0.5, 1.0, limit=-0.2), 1.0, 0.1),    # held by its limit
    (lambda: double_pendulum(), 3.0, 0.05),                       # coupled stick / slip
    (lambda: dp_at(1.2, -0.7, 2.0, 1.5), 2.0, 0.05),
    (slider_crank_arm, 2.0, 0.05),
]


#: the cases the engine library is compared on too (below): each case's tests carry one
#: xdist_group, so that pytest-xdist runs them on one worker and the Python loop runs once
ENGINE_CASES = (3, 5, 6, 8)


def _case(i):
    if i not in ENGINE_CASES:
        return CASES[i]
    return pytest.param(*CASES[i], marks=pytest.mark.xdist_group(f"joint_friction_native_{i}"))


def reference(make, t_end, dt):
    """The Python loop's outputs of a case, computed once per process (callers only read)."""
    return once(("joint_friction_native", make, t_end, dt),
                lambda: simulate(make(), t_end, dt, settings=REFERENCE))


@pytest.mark.parametrize("make, t_end, dt", [_case(i) for i in range(len(CASES))])
def test_compiled_loop_equals_the_python_loop(make, t_end, dt):
    model = make()
    ref = reference(make, t_end, dt)
    res = simulate(model, t_end, dt, settings=COMPILED)
    same_outputs(res, ref)


def arm3_moving(f1=0.3, f2=0.5, f3=2.0):
    """test_joint_friction_c's skew revolute-revolute-prismatic arm started moving: its
    joints slip, coupled through the mass matrix."""
    mb = arm3_builder(f1, f2, f3, name="arm3m")
    mb.initial("j1", rate=1.5)
    mb.initial("j2", value=0.4, rate=-1.0)
    mb.initial("j3", rate=0.5)
    return mb.build()


def urdf_arm(tmp_path, **overrides):
    """test_joint_friction_c's two-link URDF arm (<dynamics friction> at both joints, the
    elbow with limits) from a pose and rates given as its parameters."""
    pytest.importorskip("yourdfpy")
    from fmu_mb.importers.urdf import load_urdf
    from test_joint_friction_c import URDF2

    p = tmp_path / "arm2.urdf"
    p.write_text(URDF2)
    return load_urdf(p, overrides=overrides)


SPATIAL_CASES = [
    (lambda tmp: rotor(True, 2.9, 0.5, 0.5), 3.5, 0.25),        # slips, stops at 2.9 s
    (lambda tmp: slider(True, 0.5, 3.0), 1.0, 0.1),             # slides
    (lambda tmp: slider(True, 0.2, 3.0), 1.0, 0.1),             # sticks
    (lambda tmp: arm3_moving(), 1.0, 0.05),                     # three coupled joints slip
    (lambda tmp: urdf_arm(tmp, **{"elbow.q0": 2.8, "elbow.qd0": 4.0, "shoulder.q0": 0.3}),
     1.0, 0.05),                                                # both stop and stick
    pytest.param(lambda tmp: spring_rotor(True, 2.0, 0.2, 0.75), 7.0, 0.25,
                 marks=pytest.mark.slow),                       # Coulomb-damped oscillator
    pytest.param(lambda tmp: pendulum(True, 0.6, 0.3), 2.5, 0.1,
                 marks=pytest.mark.slow),                       # swings, comes to rest
    pytest.param(lambda tmp: urdf_arm(tmp, **{"shoulder.q0": 0.8, "elbow.qd0": 3.0}), 2.0,
                 0.05, marks=pytest.mark.slow),
]


#: the spatial cases the engine library is compared on too (ENGINE_SPATIAL below): as
#: ENGINE_CASES, one xdist_group per case and its Python loop computed once
ENGINE_SPATIAL_CASES = range(5)


def _spatial_case(i):
    if i not in ENGINE_SPATIAL_CASES:
        return SPATIAL_CASES[i]
    return pytest.param(*SPATIAL_CASES[i],
                        marks=pytest.mark.xdist_group(f"joint_friction_native_spatial_{i}"))


def spatial_reference(make, t_end, dt, tmp_path):
    """The Python loop's outputs of a spatial case, computed once per process (callers only
    read)."""
    return once(("joint_friction_native spatial", make, t_end, dt),
                lambda: simulate(make(tmp_path), t_end, dt, settings=REFERENCE))


@pytest.mark.parametrize("make, t_end, dt", [_spatial_case(i) for i in range(len(SPATIAL_CASES))])
def test_the_spatial_compiled_loop_equals_the_python_loop(make, t_end, dt, tmp_path):
    """The spatial event loop (native/spatial_events.c: the sticking joints' rate rows of
    the spatial kernel, the slipping joints' forces on their velocity coordinates) against
    the Python loop of formulation newton_euler, every output at every point to 1e-9."""
    model = make(tmp_path)
    ref = spatial_reference(make, t_end, dt, tmp_path)
    res = simulate(model, t_end, dt, settings=COMPILED)
    same_outputs(res, ref)


def test_the_spatial_events_happen(tmp_path):
    """The spatial comparisons pass through slip -> stick events (the disc at 2.9 s, the URDF
    arm's joints), and the slider that sticks sticks throughout."""
    disc = simulate(rotor(True, 2.9, 0.5, 0.5), 3.5, 0.25, settings=COMPILED)
    t = disc["time"]
    assert set(disc["hub.friction_state"][t < 2.9]) == {2.0}
    assert set(disc["hub.friction_state"][t > 2.9]) == {1.0}
    assert np.abs(disc["hub.friction_loss"][-1] - 0.5 * 0.5 * 2.9 ** 2) < 1e-9
    arm = simulate(urdf_arm(tmp_path, **{"elbow.q0": 2.8, "elbow.qd0": 4.0,
                                         "shoulder.q0": 0.3}), 1.0, 0.05, settings=COMPILED)
    for j in ("shoulder", "elbow"):
        s = arm[f"{j}.friction_state"]
        assert s[0] == 2.0 and s[-1] == 1.0
    stuck = simulate(slider(True, 0.2, 3.0), 1.0, 0.1, settings=COMPILED)
    assert set(stuck["slide.friction_state"]) == {1.0}


@pytest.mark.parametrize("make, t_end, dt", [_case(i) for i in ENGINE_CASES])
def test_the_engine_library_equals_the_python_loop(make, t_end, dt):
    """The engine library (the native FMU's code: its records, joint outputs and reactions
    with the friction torques) step by step against the Python loop."""
    from fmu_mb.engine.data import supported
    from fmu_mb.engine.engine import Engine

    model = make()
    assert supported(model) is None
    ref = reference(make, t_end, dt)
    eng = Engine(model)
    eng.set_settings(REFERENCE)
    eng.initialize()
    engine_equals(eng, ref, dt)


def test_the_events_happen():
    """The comparisons above pass through stick -> slip and slip -> stick: the double
    pendulum's joints change state both ways, the oscillator sticks for good, the pendulum
    on its limit is held (state 0)."""
    dp = simulate(double_pendulum(), 3.0, 0.05, settings=COMPILED)
    for j in ("j1", "j2"):
        s = dp[f"{j}.friction_state"]
        assert set(s) == {1.0, 2.0} and (np.diff(s) > 0).any() and (np.diff(s) < 0).any()
    osc = simulate(spring_rotor(False, 2.0, 0.2, 0.75), 7.0, 0.25, settings=COMPILED)
    assert osc["hub.friction_state"][-1] == 1.0 and (osc["hub.friction_state"] == 2.0).any()
    held = simulate(pendulum(False, 0.5, 1.0, limit=-0.2), 1.0, 0.1, settings=COMPILED)
    assert held["pin.friction_state"][-1] == 0.0


def test_cut_joints_and_refused_combinations_keep_their_refusal():
    """The engine library runs spatial joint friction (engine.data.supported is None); a
    frictional cut joint of a planar or spatial closed loop stays in Python (the native
    build names why), and so do the combinations no formulation runs (a driven frictional
    joint, friction with armature)."""
    from fmu_mb.engine.data import supported
    from fmu_mb.mechanics.motion import constant_rate

    assert supported(rotor(True)) is None and supported(arm3_moving()) is None
    mb = ModelBuilder("loop", gravity=(0.0, -G))
    a = mb.body("a", mass=1.0, inertia=0.1, position=(0.5, 0.0))
    b = mb.body("b", mass=1.0, inertia=0.1, position=(1.0, -0.5), angle=-math.pi / 2)
    c = mb.body("c", mass=1.0, inertia=0.1, position=(1.5, 0.0))
    mb.revolute("r0", "ground", a, child_point=(-0.5, 0.0))
    mb.revolute("r1", a, b, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0))
    mb.revolute("r2", b, c, parent_point=(0.5, 0.0), child_point=(0.0, -0.5),
                friction=0.5)                  # (the tree's cut joint)
    mb.revolute("r3", c, "ground", parent_point=(0.5, 0.0), child_point=(2.0, 0.0))
    m = mb.build()
    why = supported(m)
    assert why is not None and "['r2']" in why and "cut joints" in why
    mb = ModelBuilder("loop3", gravity=(0.0, 0.0, -G))
    bodies = [mb.body(f"b{i}", mass=1.0, inertia=(0.1, 0.1, 0.1), position=p)
              for i, p in enumerate([(0.0, 0.0, -0.5), (0.5, 0.0, -1.0), (1.0, 0.0, -0.5)])]
    y = (0.0, 1.0, 0.0)
    mb.revolute("r0", "ground", bodies[0], at=(0.0, 0.0, 0.0), axis=y)
    mb.revolute("r1", bodies[0], bodies[1], at=(0.0, 0.0, -1.0), axis=y)
    mb.revolute("r2", bodies[1], bodies[2], at=(1.0, 0.0, -1.0), axis=y, friction=0.5)
    mb.revolute("r3", bodies[2], "ground", at=(1.0, 0.0, 0.0), axis=y)
    m3 = mb.build()
    why = supported(m3)
    assert m3.topology.cut_joints == ("r2",) and "['r2']" in why and "cut joints" in why
    mb = ModelBuilder("driven3", gravity=(0.0, 0.0, -G))
    d = mb.body("disc", mass=1.0, inertia=(0.1, 0.1, 0.1))
    mb.revolute("hub", "ground", d, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=0.5)
    mb.drive("spin", "hub", constant_rate(1.0))
    why = supported(mb.build())
    assert "['hub']" in why and "a drive" in why


ROTOR = ('"""A disc on a revolute joint with Coulomb friction."""\n'
         "from fmu_mb import ModelBuilder\n\n\n"
         "def build(**overrides):\n"
         '    mb = ModelBuilder("rotor_native", overrides, gravity=(0.0, -9.81))\n'
         '    fc = mb.param("fc", 0.25, "N.m", "friction bound")\n'
         '    b = mb.body("disc", mass=2.0, inertia=0.5, angular_velocity=2.9)\n'
         '    mb.revolute("hub", "ground", b, friction=fc)\n'
         "    return mb.build()\n")


ROTOR_RANGED = ROTOR.replace('"friction bound")', '"friction bound", min=0.01, max=10.0)')


@pytest.fixture(scope="module")
def rotor_file(shared_build):
    """The disc's model file (its bound a parameter in [0.01, 10] N.m, which the parameter
    program compiles) at one path per test run, so that its FMUs are built once."""
    def make(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "rotor_native.py").write_text(ROTOR_RANGED)
        return out / "rotor_native.py"
    return shared_build("test_joint_friction_native rotor_native.py " + ROTOR_RANGED, make)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["native", "native3"])
def test_a_native_fmu_disc_stops_at_the_closed_form_time(rotor_file, shared_fmu, how):
    """The native FMU (FMI 2.0 and 3.0, co-simulation only) in fmpy: w = w0 - F_c / I t until
    t* = I w0 / F_c = 5.8 s, then sticking for good (friction_state 1, rate 0); the dissipated
    energy is the initial kinetic energy; the variables are the Python FMU's."""
    import zipfile

    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu

    from fmu_mb import load_model
    from fmu_mb.dynamics.outputs import output_spec

    f = rotor_file
    out = shared_fmu(f, how)
    assert out is not None and validate_fmu(str(out)) == []
    with zipfile.ZipFile(out) as z:
        xml = z.read("modelDescription.xml").decode()
    assert "<ModelExchange" not in xml
    for v in output_spec(load_model(f)):
        if v.name.startswith("hub.friction"):
            assert f'name="{v.name}"' in xml
    w0, fc, inertia = 2.9, 0.25, 0.5
    t_stop = inertia * w0 / fc
    r = fmpy.simulate_fmu(str(out), stop_time=7.7, output_interval=0.07)
    t = r["time"]
    slipping = t < t_stop - 1e-9
    assert np.abs(r["hub.rate"][slipping] - (w0 - fc / inertia * t[slipping])).max() < 1e-9
    assert np.abs(r["hub.rate"][~slipping]).max() < 1e-9
    assert set(r["hub.friction_state"][slipping]) == {2}
    assert set(r["hub.friction_state"][~slipping]) == {1}
    assert abs(r["hub.friction_loss"][-1] - 0.5 * inertia * w0 ** 2) < 1e-9
    # the stop time from the rate's straight line before it: t* to 1e-9 s
    k = np.flatnonzero(slipping)[-1]
    t_est = t[k] + r["hub.rate"][k] * inertia / fc
    assert abs(t_est - t_stop) < 1e-9


def test_a_parameter_sets_the_engine_bound(tmp_path):
    """The bound follows the parameters (the parameter program patches DJFRIC and
    mbe_set_parameters remakes the event loop with it): with F_c = 0.5 N.m instead of the
    built 0.25 the disc stops at I w0 / F_c = 2.9 s, as the model built at F_c = 0.5 does in
    the Python loop; a bound of 0 (no friction: other outputs) stays outside the range."""
    from fmu_mb import load_model
    from fmu_mb.engine.engine import Engine
    from fmu_mb.engine.params import program_for
    from fmu_mb.errors import InputError
    from fmu_mb.mechanics.loader import load_module

    f = tmp_path / "rotor_native.py"
    f.write_text(ROTOR_RANGED)
    data, prog = program_for(load_module(f), n_verify=1, n_wide=1)
    assert prog.compiled == ("fc",)
    for fc in (0.5, 0.1):
        eng = Engine(blob=data.to_bytes(program=prog), name="rotor_native")
        eng.set_settings(COMPILED)
        eng.set_parameters([fc])
        eng.initialize()
        ref = simulate(load_model(f, fc=fc), 3.5, 0.5, settings=REFERENCE)
        engine_equals(eng, ref, 0.5)
        rate = ref["hub.rate"]
        t = ref["time"]
        assert np.abs(rate - np.maximum(2.9 - fc / 0.5 * t, 0.0)).max() < 1e-9
    with pytest.raises(InputError, match="'fc' = 0 is outside its range"):
        eng.set_parameters([0.0])
    eng.do_step(0.5)                    # the bound 0.1 is kept: slipping on at t = 4 s
    out = eng.outputs()
    names = list(ref.dtype.names[1:])
    assert abs(out[names.index("hub.rate")] - (2.9 - 0.1 / 0.5 * 4.0)) < 1e-9
    assert out[names.index("hub.friction")] == -0.1
    assert out[names.index("hub.friction_state")] == 2.0



@pytest.mark.slow
@pytest.mark.parametrize("how", ["native", "native3"])
def test_a_native_fmu_runs_at_the_friction_parameter_it_is_given(rotor_file, shared_fmu, how):
    """fc set before initialisation (fmi2SetReal / fmi3SetFloat64 by fmpy's start_values)
    to 0.5 N.m, twice the built value: every output at every point is the Python loop's of
    the model built at fc = 0.5 (the disc stops at I w0 / F_c = 2.9 s, not at 5.8 s); a
    value outside the parameter's range is refused by the FMU with an error, not run."""
    fmpy = pytest.importorskip("fmpy")
    from fmu_mb import load_model

    out = shared_fmu(rotor_file, how)
    fc = 0.5
    r = fmpy.simulate_fmu(str(out), stop_time=4.0, output_interval=0.1,
                          start_values={"fc": fc})
    ref = simulate(load_model(rotor_file, fc=fc), 4.0, 0.1, settings=REFERENCE)
    assert np.abs(r["time"] - ref["time"]).max() < 1e-12
    for n in ref.dtype.names[1:]:
        assert np.abs(r[n] - ref[n]).max() <= 1e-9 * max(1.0, np.abs(ref[n]).max()), n
    t = ref["time"]
    assert np.abs(r["hub.rate"] - np.maximum(2.9 - fc / 0.5 * t, 0.0)).max() < 1e-9
    assert set(r["hub.friction_state"][t > 2.9 + 1e-9]) == {1}
    from fmpy.fmi1 import FMICallException

    with pytest.raises(FMICallException):
        fmpy.simulate_fmu(str(out), stop_time=1.0, start_values={"fc": 0.0})


def test_the_spatial_loop_refuses_bad_joint_data():
    """sk_events_set_joint_friction refuses a bad kind, body, velocity coordinate or bound
    (ERR_ARGS, nothing set: the loop then takes good data)."""
    from fmu_mb.engine.spatial_kernel import (joint_friction_data, library,
                                              spatial_contact_events)

    model = arm3_moving()
    ev = spatial_contact_events(model)
    assert ev.nj == 3
    lib = library()
    base = ev._base
    e = np.zeros(1)
    h = lib.sk_events_create(base.handle, e.ctypes.data, 0)
    assert h
    try:
        ji, jd, jq, jnu, jb, jlim = joint_friction_data(model)

        def call(ji=ji, jd=jd, jq=jq, jnu=jnu, jb=jb):
            return lib.sk_events_set_joint_friction(h, 3, ji.ctypes.data, jd.ctypes.data,
                                                    jq.ctypes.data, jnu.ctypes.data,
                                                    jb.ctypes.data, jlim.ctypes.data)
        bad_kind, bad_body, bad_nu, bad_q = ji.copy(), ji.copy(), jnu.copy(), jq.copy()
        bad_kind[1, 0] = 3
        bad_body[2, 2] = 99
        bad_nu[0] = 99
        bad_q[0] = -1
        bad_jd = jd.copy()
        bad_jd[1, 4] = np.nan
        assert call(ji=bad_kind) != 0 and call(ji=bad_body) != 0 and call(jnu=bad_nu) != 0
        assert call(jd=bad_jd) != 0
        assert call(jb=np.array([1.0, 0.0, 1.0])) != 0 and call(jb=jb * np.nan) != 0
        assert call(jq=bad_q) != 0
        assert call() == 0
    finally:
        lib.sk_events_free(h)


@pytest.mark.slow
def test_a_native_fmu_reset_takes_the_new_friction_parameter(rotor_file, shared_fmu, tmp_path):
    """fmi2Reset, then fc set anew before the next initialisation: each run has the rate of
    its own bound, w0 - F_c / I t (the engine's bounds follow every mbe_set_parameters);
    fc set after initialisation is refused with an error, the run going on at its bound."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Slave

    out = shared_fmu(rotor_file, "native")
    md = fmpy.read_model_description(str(out))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzipped = fmpy.extract(str(out), str(tmp_path / "x"))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="r")
    fmu.instantiate()
    try:
        for fc in (0.5, 0.1, 0.25):
            fmu.setupExperiment(startTime=0.0)
            fmu.setReal([vr["fc"]], [fc])
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
            fmu.doStep(0.0, 1.0)
            rate, fr = fmu.getReal([vr["hub.rate"], vr["hub.friction"]])
            assert abs(rate - (2.9 - fc / 0.5 * 1.0)) < 1e-9 and fr == -fc, fc
            with pytest.raises(FMICallException):
                fmu.setReal([vr["fc"]], [1.0])
            fmu.doStep(1.0, 0.5)
            rate = fmu.getReal([vr["hub.rate"]])[0]
            assert abs(rate - (2.9 - fc / 0.5 * 1.5)) < 1e-9, fc
            fmu.reset()
    finally:
        fmu.freeInstance()


# ---------------------------------------------------------------------- spatial, engine library
def reversed_pendulum(spatial, th0=0.4, fc=5.0, flip=True):
    """A bob at 1 m below a frictional pin, at rest at th0 [rad] from the vertical, its pin
    declared from the bob (parent) to the ground (child) when flip: the tree row then runs
    from the joint's child to its parent, and the joint's coordinate is minus the bob's
    angle. Within the bound (m g sin(th0) <= fc) it sticks, the friction torque on the
    coordinate (the torque the joint applies to its child) balancing gravity's."""
    s, c = math.sin(th0), math.cos(th0)
    name = ("rpend" if flip else "pend") + ("3" if spatial else "2")
    if spatial:
        mb = ModelBuilder(name, gravity=(0.0, 0.0, -G))
        b = mb.body("bob", mass=1.0, inertia=(0.01, 0.01, 0.01), position=(s, 0.0, -c))
        pc = (b, "ground") if flip else ("ground", b)
        mb.revolute("pin", *pc, at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0), friction=fc)
    else:
        mb = ModelBuilder(name, gravity=(0.0, -G))
        b = mb.body("bob", mass=1.0, inertia=0.01, position=(s, -c))
        if flip:
            mb.revolute("pin", b, "ground", parent_point=(-s, c), friction=fc)
        else:
            mb.revolute("pin", "ground", b, child_point=(-s, c), friction=fc)
    return mb.build()


def reversed_rotor(w0=2.9, fc=0.5, inertia=0.5):
    """The spatial disc of test_joint_friction.rotor on a hub declared from the disc to the
    ground: the joint's rate is -w, its friction +F_c while the disc slips."""
    mb = ModelBuilder("rrotor3", gravity=(0.0, 0.0, -G))
    b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, inertia), angular_velocity=(0.0, 0.0, w0))
    mb.revolute("hub", b, "ground", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=fc)
    return mb.build()


ENGINE_SPATIAL = [_spatial_case(i) for i in ENGINE_SPATIAL_CASES] + [
    (lambda tmp: reversed_pendulum(True, 0.9, 0.3), 2.5, 0.1),   # reversed: swings, stops
    (lambda tmp: reversed_rotor(), 3.5, 0.25),                   # reversed: slips, sticks
]


@pytest.mark.parametrize("make, t_end, dt", ENGINE_SPATIAL)
def test_the_engine_library_runs_spatial_joint_friction_as_the_python_loop(make, t_end, dt,
                                                                           tmp_path):
    """The engine library (the native FMU's code: A_ISJF, the spatial event loop's joints,
    their outputs and the friction torques in the reactions) step by step against the
    Python loop of formulation newton_euler: every output (motion, joint reactions, the
    joints' friction, state and loss) at every point to 1e-9, through stick and slip, on
    the spatial disc, the incline slider sliding and sticking, the skew three-joint arm, the
    URDF arm (frictional joints with limits) and two joints whose tree rows run from the
    child to the parent."""
    from fmu_mb.engine.data import supported
    from fmu_mb.engine.engine import Engine

    model = make(tmp_path)
    assert supported(model) is None
    ref = spatial_reference(make, t_end, dt, tmp_path)
    eng = Engine(model)
    eng.set_settings(REFERENCE)
    eng.initialize()
    engine_equals(eng, ref, dt)


@pytest.mark.parametrize("spatial", [False, True])
def test_a_reversed_joint_reports_the_torque_on_its_own_coordinate(spatial):
    """J.friction is the torque on the joint's coordinate (the torque the joint applies to
    its child), whichever way the tree row runs: the pendulum held within its bound has
    J.friction = +m g L sin(th0) on a pin from the ground to the bob and -m g L sin(th0) on
    one from the bob to the ground (closed form, 1e-9), in the Python loop, the compiled
    loop and the engine library; the reversed disc slipping has +F_c (its rate is -w)."""
    from fmu_mb.engine.engine import Engine

    th0 = 0.4
    torque = 1.0 * G * math.sin(th0)
    for flip, sign in ((False, 1.0), (True, -1.0)):
        m = reversed_pendulum(spatial, th0, 5.0, flip)
        for st in (REFERENCE, COMPILED):
            r = simulate(m, 0.5, 0.25, settings=st)
            assert np.abs(r["pin.friction"] - sign * torque).max() < 1e-9, (flip, st)
            assert set(r["pin.friction_state"]) == {1.0}
        eng = Engine(m)
        eng.set_settings(REFERENCE)
        eng.initialize()
        eng.do_step(0.25)
        names = list(r.dtype.names[1:])
        assert abs(eng.outputs()[names.index("pin.friction")] - sign * torque) < 1e-9
    if spatial:
        r = simulate(reversed_rotor(), 2.0, 0.25, settings=COMPILED)
        assert np.abs(r["hub.friction"] - 0.5).max() < 1e-12
        assert np.abs(r["hub.rate"] + (2.9 - 0.5 / 0.5 * r["time"])).max() < 1e-9


def test_the_engine_checks_the_spatial_tree_rows_of_the_friction():
    """A_ISJF (at the end of the data) holds each joint's tree row; the engine refuses one
    that is missing, out of range or that of another joint, naming the joint; a cut
    joint's -1 is refused naming it (no tree coordinate)."""
    from fmu_mb.engine import data
    from fmu_mb.engine.engine import Engine
    from fmu_mb.errors import InputError

    model = arm3_moving()
    d = data.model_data(model)
    assert data.ARRAYS[-1] == "ISJF"
    off, cnt = d.slots["ISJF"]
    assert cnt == len(model.joints)
    Engine(blob=d.to_bytes())

    def engine_with(rows):
        ints = d.ints.copy()
        ints[off:off + cnt] = rows
        return Engine(blob=data.EngineData(ints, d.doubles, d.slots, d.parameter_names,
                                           d.joint_names).to_bytes())
    rows = d.ints[off:off + cnt].copy()
    for bad, what in (([-1, rows[1], rows[2]], "no tree coordinate"),
                      ([rows[0], rows[2], rows[1]], "no tree row of its kind")):
        with pytest.raises(InputError, match=what):
            engine_with(bad)
    with pytest.raises(InputError, match="tree rows of the frictional joints"):
        engine_with([rows[0], 99, rows[2]])


# ---------------------------------------------------------------------- spatial, native FMUs
FRIC3 = ('"""Spatial joints with Coulomb friction: a spinning disc (it stops at I w0 / F_c), a\n'
         "block sliding down an incline, a pendulum that swings and comes to rest, and one whose\n"
         'pin is declared from the bob to the ground (its tree row runs child to parent)."""\n'
         "import math\n\n"
         "from fmu_mb import ModelBuilder\n\n\n"
         "def build(**overrides):\n"
         '    mb = ModelBuilder("fric3_native", overrides, gravity=(0.0, 0.0, -9.81))\n'
         '    disc = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, 0.5),\n'
         "                   angular_velocity=(0.0, 0.0, 2.9))\n"
         '    mb.revolute("hub", "ground", disc, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),\n'
         "                friction=0.25)\n"
         '    block = mb.body("block", mass=1.5, inertia=(0.1, 0.1, 0.1), position=(2.0, 0.0, 0.0))\n'
         '    mb.prismatic("slide", "ground", block, at=(2.0, 0.0, 0.0),\n'
         "                 axis=(math.cos(0.5), 0.0, -math.sin(0.5)), friction=3.0)\n"
         "    for name, x, th0, flip in ((\"pin\", 4.0, 0.6, False), (\"rpin\", 6.0, 0.9, True)):\n"
         '        bob = mb.body(name + "_bob", mass=1.0, inertia=(0.01, 0.01, 0.01),\n'
         "                      position=(x + math.sin(th0), 0.0, -math.cos(th0)))\n"
         '        pc = (bob, "ground") if flip else ("ground", bob)\n'
         "        mb.revolute(name, *pc, at=(x, 0.0, 0.0), axis=(0.0, -1.0, 0.0), friction=0.3)\n"
         "    return mb.build()\n")

#: the FMUs' solver settings for the comparisons (those of REFERENCE)
TIGHT = {"solver.rtol": 1e-11, "solver.atol": 1e-13}


@pytest.fixture(scope="module")
def fric3_file(shared_build):
    def make(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "fric3_native.py").write_text(FRIC3)
        return out / "fric3_native.py"
    return shared_build("test_joint_friction_native fric3_native.py " + FRIC3, make)


@pytest.fixture(scope="module")
def fric3_reference(fric3_file):
    from fmu_mb import load_model

    return simulate(load_model(fric3_file), 6.3, 0.1, settings=REFERENCE)


def _equal_to(r, ref, tol=1e-9):
    assert np.abs(r["time"] - ref["time"]).max() < 1e-12
    for n in ref.dtype.names[1:]:
        err = np.abs(r[n] - ref[n]).max() / max(1.0, np.abs(ref[n]).max())
        assert err <= tol, (n, err)


@pytest.mark.slow
@pytest.mark.parametrize("fmi", [2, 3])
def test_a_native_fmu_runs_spatial_joint_friction_as_the_python_loop(fric3_file,
                                                                     fric3_reference,
                                                                     session_fmus, fmi):
    """The native FMU (FMI 2.0 and 3.0, co-simulation, this machine's binary) of a spatial
    model with four frictional joints (one of them on a tree row from its child to its
    parent) in fmpy at the reference's tolerances: every output (motion, joint reactions,
    friction, state, loss) at every point equals the newton_euler Python loop's to 1e-9;
    its variables are the Python FMU's; the disc stops at t* = I w0 / F_c (1e-9 s) and the
    dissipated energy is its initial kinetic energy; the reversed pin reports the torque on
    its own coordinate (opposite to the bob's rate while it slips)."""
    import zipfile

    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu

    from fmu_mb import load_model
    from fmu_mb.dynamics.outputs import output_spec

    out = session_fmus(fric3_file, fmi=fmi, kind="native")
    assert out is not None and validate_fmu(str(out)) == []
    with zipfile.ZipFile(out) as z:
        xml = z.read("modelDescription.xml").decode()
        assert any(n.startswith("binaries/") for n in z.namelist())
    assert "<ModelExchange" not in xml
    for v in output_spec(load_model(fric3_file)):
        assert f'name="{v.name}"' in xml
    ref = fric3_reference
    r = fmpy.simulate_fmu(str(out), stop_time=6.3, output_interval=0.1, start_values=TIGHT)
    _equal_to(r, ref)
    w0, fc, inertia = 2.9, 0.25, 0.5
    t, t_stop = r["time"], inertia * w0 / fc
    slipping = t < t_stop - 1e-9
    assert np.abs(r["hub.rate"][slipping] - (w0 - fc / inertia * t[slipping])).max() < 1e-9
    assert np.abs(r["hub.rate"][~slipping]).max() < 1e-9
    k = np.flatnonzero(slipping)[-1]
    assert abs(t[k] + r["hub.rate"][k] * inertia / fc - t_stop) < 1e-9
    assert abs(r["hub.friction_loss"][-1] - 0.5 * inertia * w0 ** 2) < 1e-9
    away = np.abs(t - t_stop) > 1e-6            # (the output point at t* takes either state)
    assert set(r["hub.friction_state"][slipping & away]) == {2} and \
        set(r["hub.friction_state"][~slipping & away]) == {1}
    slip = (r["rpin.friction_state"] == 2) & (np.abs(r["rpin.rate"]) > 1e-9)  # (not at t = 0)
    assert slip.any() and (np.sign(r["rpin.friction"][slip])
                           == np.sign(r["rpin.rate"][slip]) * -1).all()


@pytest.mark.slow
def test_the_native_fmu_reactions_equal_the_python_fmu(fric3_file, fric3_reference,
                                                        session_fmus):
    """The joint reactions (with the friction torques among the applied forces) and every
    other output of the native FMU equal the Python FMU's (formulation newton_euler, the
    Python loop) in fmpy at the same solver settings, to 1e-9 at every point."""
    fmpy = pytest.importorskip("fmpy")
    native = session_fmus(fric3_file, fmi=2, kind="native")
    python = session_fmus(fric3_file, fmi=2, kind="python")
    kw = dict(stop_time=1.5, output_interval=0.1)
    rn = fmpy.simulate_fmu(str(native), start_values=TIGHT, **kw)
    rp = fmpy.simulate_fmu(str(python), start_values=dict(TIGHT, **{
        "solver.formulation": "newton_euler"}), **kw)
    reactions = [n for n in rp.dtype.names if n.split(".")[-1] in
                 ("fx", "fy", "fz", "tx", "ty", "tz")]
    assert len(reactions) == 24
    _equal_to(rn, rp)
    _equal_to(rn, fric3_reference[:16])


URDF_STARTS = {"elbow.q0": 2.8, "elbow.qd0": 4.0, "shoulder.q0": 0.3}


@pytest.mark.slow
def test_a_native_fmu_of_a_urdf_with_dynamics_friction(shared_build, session_fmus):
    """The two-link URDF arm with <dynamics friction> (both joints; the elbow with limits),
    its model file written by the importer as `fmu-mb build` does (every joint's reactions
    declared), built as a native FMU: in fmpy every output at every point equals the
    newton_euler Python loop's to 1e-9 as both joints stop and stick."""
    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("yourdfpy")
    from fmu_mb import load_model
    from fmu_mb.importers import model_file
    from test_joint_friction_c import URDF2

    def make(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "arm2.urdf").write_text(URDF2)
        return model_file(out / "arm2.urdf", out, reactions="all")
    f = shared_build("test_joint_friction_native arm2.urdf reactions=all " + URDF2, make)
    out = session_fmus(f, fmi=2, kind="native", **URDF_STARTS)
    r = fmpy.simulate_fmu(str(out), stop_time=1.0, output_interval=0.05, start_values=TIGHT)
    ref = simulate(load_model(f, **URDF_STARTS), 1.0, 0.05, settings=REFERENCE)
    assert {"elbow.tx", "shoulder.fz", "elbow.friction"} <= set(r.dtype.names)
    _equal_to(r, ref)
    for j in ("shoulder", "elbow"):
        assert r[f"{j}.friction_state"][0] == 2 and r[f"{j}.friction_state"][-1] == 1
