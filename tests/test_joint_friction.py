"""Coulomb friction on the coordinate of a revolute or prismatic joint (friction=, the Python
event loop of formulation newton_euler) against closed forms: a spinning disc slows down at the
constant rate F_c / I and stops for good at t* = I w0 / F_c; a slider on an incline stays put
when m g sin(alpha) <= F_c and otherwise accelerates at g sin(alpha) - F_c / m; a pendulum
stays where its gravity torque is within the bound; a swinging one keeps kinetic + potential +
dissipated energy constant and comes to rest where it can stick. The planar and the spatial
model of each (two formulations of the same law) agree; friction=0 is the frictionless joint
bit for bit; imported URDF <dynamics friction> and MJCF frictionloss become the bound; an FMU
of such a model (the Python FMU, FMI 2.0) in fmpy equals simulate()."""
import math

import numpy as np
import pytest

from fmu_mb import InputError, ModelBuilder, ModelError, simulate
from fmu_mb.dynamics.integrate import Settings

G = 9.81
TIGHT = Settings(rtol=1e-11, atol=1e-13)


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    err = np.abs(a - b).max() / max(1.0, np.abs(b).max())
    assert err <= tol, err


def rotor(spatial, w0=2.9, fc=0.25, inertia=0.5):
    """A disc about its centre (no gravity torque) on a frictional revolute joint."""
    if spatial:
        mb = ModelBuilder("rotor3", gravity=(0.0, 0.0, -G))
        b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, inertia),
                    angular_velocity=(0.0, 0.0, w0))
        mb.revolute("hub", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=fc)
    else:
        mb = ModelBuilder("rotor2", gravity=(0.0, -G))
        b = mb.body("disc", mass=2.0, inertia=inertia, angular_velocity=w0)
        mb.revolute("hub", "ground", b, friction=fc)
    return mb.build()


def slider(spatial, alpha, fc, m=1.5):
    """A block on a frictional prismatic joint along a slope falling at alpha [rad]."""
    d = (math.cos(alpha), -math.sin(alpha))
    if spatial:
        mb = ModelBuilder("slider3", gravity=(0.0, 0.0, -G))
        b = mb.body("block", mass=m, inertia=(0.1, 0.1, 0.1))
        mb.prismatic("slide", "ground", b, at=(0.0, 0.0, 0.0), axis=(d[0], 0.0, d[1]),
                     friction=fc)
    else:
        mb = ModelBuilder("slider2", gravity=(0.0, -G))
        b = mb.body("block", mass=m, inertia=0.1)
        mb.prismatic("slide", "ground", b, axis=d, friction=fc)
    return mb.build()


def pendulum(spatial, th0, fc, m=1.0, length=1.0, limit=None):
    """A point-like bob at `length` below a frictional pin, released at rest at th0 [rad]
    from the vertical; the joint angle is 0 there and grows with th (both models)."""
    s, c = math.sin(th0), math.cos(th0)
    if spatial:
        mb = ModelBuilder("pendulum3", gravity=(0.0, 0.0, -G))
        b = mb.body("bob", mass=m, inertia=(0.01, 0.01, 0.01),
                    position=(length * s, 0.0, -length * c))
        mb.revolute("pin", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0),
                    friction=fc)
    else:
        mb = ModelBuilder("pendulum2", gravity=(0.0, -G))
        b = mb.body("bob", mass=m, inertia=0.01, position=(length * s, -length * c))
        mb.revolute("pin", "ground", b, child_point=(-length * s, length * c), friction=fc)
    if limit is not None:
        mb.joint_limit("stop", "pin", lower=limit, upper=1.0, restitution=0.0)
    return mb.build()


@pytest.mark.parametrize("spatial", [False, True])
def test_a_spinning_disc_stops_at_the_closed_form_time_and_stays(spatial):
    w0, fc, inertia = 2.9, 0.5, 0.5
    r = simulate(rotor(spatial, w0, fc, inertia), 4.0, 0.25, settings=TIGHT)
    t = r["time"]
    ts = inertia * w0 / fc                         # 2.9 s: between two output points
    tt = np.minimum(t, ts)
    rate = w0 - fc / inertia * tt
    angle = w0 * tt - fc / (2 * inertia) * tt ** 2
    _close(r["hub.rate"], rate)
    _close(np.angle(np.exp(1j * (r["hub.angle"] - angle))), 0.0 * t)  # spatial: in (-pi, pi]
    assert np.all(r["hub.rate"][t > ts] == 0.0)     # stuck: the rate held at 0 exactly
    _close(r["hub.friction"], np.where(t < ts, -fc, 0.0))
    assert list(r["hub.friction_state"]) == [2.0 if x < ts else 1.0 for x in t]
    _close(r["hub.friction_loss"], fc * angle)      # the work of the constant torque


@pytest.mark.parametrize("spatial", [False, True])
@pytest.mark.parametrize("alpha,fc", [(0.3, 6.0), (0.3, 2.0), (0.6, 0.0)])
def test_a_slider_on_an_incline_sticks_or_slides_as_the_closed_form(spatial, alpha, fc):
    m = 1.5
    r = simulate(slider(spatial, alpha, fc, m), 1.0, 0.1, settings=TIGHT)
    pull = m * G * math.sin(alpha)                  # gravity along the slope
    t = r["time"]
    if pull <= fc:                                  # 4.34 N < 6 N: it stays put
        assert np.abs(r["slide.position"]).max() < 1e-12
        _close(r["slide.friction"], -pull)
        assert set(r["slide.friction_state"]) == {1.0}
    else:
        a = G * math.sin(alpha) - fc / m
        _close(r["slide.position"], a * t ** 2 / 2)
        _close(r["slide.rate"], a * t)
        if fc:
            _close(r["slide.friction"], -fc)
            assert set(r["slide.friction_state"]) == {2.0}
            _close(r["slide.friction_loss"], fc * a * t ** 2 / 2)


@pytest.mark.parametrize("spatial", [False, True])
def test_a_pendulum_within_its_bound_stays_put_with_the_gravity_torque(spatial):
    th0, fc = 0.3, 3.0
    r = simulate(pendulum(spatial, th0, fc), 1.0, 0.25, settings=TIGHT)
    assert np.abs(r["pin.angle"]).max() < 1e-12
    _close(r["pin.friction"], G * math.sin(th0))   # it holds the bob against gravity
    assert set(r["pin.friction_state"]) == {1.0}


def test_a_swinging_pendulum_balances_its_energy_and_comes_to_rest_where_it_can_stick():
    th0, fc = 1.0, 3.0
    rp = simulate(pendulum(False, th0, fc), 2.5, 0.1, settings=TIGHT)
    rs = simulate(pendulum(True, th0, fc), 2.5, 0.1, settings=TIGHT)
    for r in (rp, rs):
        total = r["energy.total"] + r["pin.friction_loss"]
        _close(total, np.full_like(total, total[0]), 1e-9)
        assert r["pin.friction_loss"][-1] > 1.0
        assert r["pin.friction_state"][-1] == 1.0 and 2.0 in r["pin.friction_state"]
        th = th0 + r["pin.angle"][-1]              # at rest where gravity is within the bound
        assert abs(G * math.sin(th)) <= fc
        assert abs(r["pin.rate"][-1]) < 1e-15
    for n in ("pin.angle", "pin.rate", "pin.friction", "pin.friction_state",
              "pin.friction_loss", "energy.kinetic", "energy.potential"):
        _close(rs[n], rp[n], 1e-9)                 # planar and spatial formulations agree


def test_friction_zero_is_the_frictionless_joint_bit_for_bit():
    def build(**kw):
        mb = ModelBuilder("p", gravity=(0.0, -G))
        b = mb.body("bob", mass=1.0, inertia=0.01, position=(0.6, -0.8))
        mb.revolute("pin", "ground", b, child_point=(-0.6, 0.8), **kw)
        return mb.build()
    a = simulate(build(), 0.5, 0.05)
    b = simulate(build(friction=0.0), 0.5, 0.05)
    assert a.dtype.names == b.dtype.names and "pin.friction" not in a.dtype.names
    for n in a.dtype.names:
        assert np.array_equal(a[n], b[n]), n


def test_a_joint_held_by_its_limit_has_no_friction_row_and_no_nan():
    """The pendulum falls onto its lower limit (restitution 0) and rests there: the limit's
    row and a sticking row would be the same row; the limit carries the gravity torque, the
    joint's friction is 0 in state 0 (held), never NaN."""
    th0, fc, lo = 0.5, 1.0, -0.2
    r = simulate(pendulum(False, th0, fc, limit=lo), 1.0, 0.1, settings=TIGHT)
    assert all(np.isfinite(r[n]).all() for n in r.dtype.names)
    rest = r["time"] >= 0.4
    _close(r["pin.angle"][rest], np.full(rest.sum(), lo))
    assert set(r["pin.friction_state"][rest]) == {0.0}
    assert set(r["pin.friction"][rest]) == {0.0}
    _close(r["stop_lower.force"][rest], np.full(rest.sum(), G * math.sin(th0 + lo)))


def test_bad_friction_is_refused_naming_the_joint_and_what_is_expected():
    mb = ModelBuilder("bad", gravity=(0.0, -G))
    b = mb.body("bob", mass=1.0, inertia=0.01, position=(0.5, 0.0))
    for bad in (-1.0, float("nan"), "x"):
        with pytest.raises(ModelError, match="friction"):
            mb.revolute("pin", "ground", b, friction=bad)
    mb.weld("w", "ground", b)
    with pytest.raises(ModelError, match="weld joint; expected a revolute or prismatic"):
        mb.joint_friction("w", 1.0)
    with pytest.raises(ModelError, match="unknown joint"):
        mb.joint_friction("nope", 1.0)


def test_formulations_and_engines_without_joint_friction_say_so():
    from fmu_mb.engine.data import supported

    m = rotor(False)
    for form in ("tmt", "lagrange"):
        with pytest.raises(InputError, match=r"joints \['hub'\] have Coulomb friction"):
            simulate(m, 0.1, 0.05, settings=Settings(formulation=form))
    # recursive runs it in the compiled event loop (planar and spatial) with rk4, dopri5
    # and dop853 only
    with pytest.raises(InputError, match=r"joints \['hub'\] have Coulomb friction"):
        simulate(rotor(True), 0.1, 0.05, settings=Settings(formulation="recursive",
                                                           method="euler", step=1e-3))
    with pytest.raises(InputError, match=r"joints \['hub'\] have Coulomb friction"):
        simulate(m, 0.1, 0.05, settings=Settings(formulation="recursive", method="euler",
                                                 step=1e-3))
    assert supported(rotor(True)) is None       # the engine library runs it (native FMUs)
    mb = ModelBuilder("driven", gravity=(0.0, -G))
    from fmu_mb.mechanics.motion import constant_rate
    b = mb.body("disc", mass=1.0, inertia=0.1)
    mb.revolute("hub", "ground", b, friction=0.5)
    mb.drive("spin", "hub", constant_rate(1.0))
    with pytest.raises(InputError, match="Coulomb friction and a drive"):
        simulate(mb.build(), 0.1, 0.05)


URDF = """<?xml version="1.0"?>
<robot name="arm">
<link name="base"/>
<link name="bob"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="pin" type="continuous"><parent link="base"/><child link="bob"/>
<axis xyz="0 1 0"/><dynamics friction="{fc}"/></joint>
</robot>
"""


@pytest.mark.parametrize("q0,state", [(0.2, 1.0), (1.0, 2.0)])
def test_an_imported_urdf_pendulum_sticks_or_swings_with_its_dynamics_friction(tmp_path, q0,
                                                                              state):
    pytest.importorskip("yourdfpy")
    from fmu_mb.importers.urdf import load_urdf

    p = tmp_path / "arm.urdf"
    p.write_text(URDF.format(fc=3.0))
    m = load_urdf(p, overrides={"pin.q0": q0})
    assert m.joint("pin").friction == 3.0
    r = simulate(m, 0.2, 0.1, settings=TIGHT)
    assert r["pin.friction_state"][1] == state
    if state == 1.0:
        assert np.abs(r["pin.angle"] - q0).max() < 1e-12
        _close(np.abs(r["pin.friction"]), np.full(3, G * math.sin(q0)))
    assert load_urdf(p, friction=False).joint("pin").friction == 0.0


def test_an_mjcf_frictionloss_is_the_joint_bound(tmp_path):
    pytest.importorskip("mujoco")
    from fmu_mb.importers.mjcf import load_mjcf

    p = tmp_path / "arm.xml"
    p.write_text('<mujoco><worldbody><body name="bob" pos="0 0 0">'
                 '<joint name="pin" type="hinge" axis="0 1 0" frictionloss="3"/>'
                 '<geom type="sphere" size="0.05" pos="0 0 -1" mass="1"/>'
                 '<joint name="s" type="slide" axis="1 0 0" frictionloss="0.5"/>'
                 '</body></worldbody></mujoco>')
    m = load_mjcf(p)
    assert m.joint("pin").friction == 3.0 and m.joint("s").friction == 0.5


@pytest.mark.fmu
def test_the_fmu_of_a_frictional_joint_in_fmpy_equals_simulate(tmp_path):
    """The Python FMU (FMI 2.0) of a spatial frictional disc stops it at the closed-form
    time in fmpy like simulate() (the native FMU, which the default build makes of it, is
    tested in tests/test_joint_friction_native.py)."""
    fmpy = pytest.importorskip("fmpy")
    from fmu_mb import load_model
    from fmu_mb.fmi.native_build import build_model_fmu, native_reason

    f = tmp_path / "rotor_fric.py"
    f.write_text('"""A disc on a revolute joint with Coulomb friction."""\n'
                 "from fmu_mb import ModelBuilder\n\n\n"
                 "def build(**overrides):\n"
                 '    mb = ModelBuilder("rotor_fric", overrides, gravity=(0.0, 0.0, -9.81))\n'
                 '    fc = mb.param("fc", 0.25, "N.m", "friction bound")\n'
                 '    b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, 0.5),\n'
                 '                angular_velocity=(0.0, 0.0, 2.9))\n'
                 '    mb.revolute("hub", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),\n'
                 '                friction=fc)\n'
                 "    return mb.build()\n")
    assert native_reason(load_model(f)) is None
    out, kind, _ = build_model_fmu(f, tmp_path / "out", kind="python")
    assert kind == "python"
    r = fmpy.simulate_fmu(str(out), stop_time=8.0, output_interval=0.25)
    t = np.minimum(r["time"], 0.5 * 2.9 / 0.25)
    _close(r["hub.rate"], 2.9 - 0.25 / 0.5 * t, 1e-8)
    assert set(r["hub.friction_state"][r["time"] > 5.8]) == {1}


def double_pendulum(q1, q2, f1, f2):
    mb = ModelBuilder("dp", gravity=(0.0, -G))
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=2.0, inertia=0.2)
    mb.revolute("j1", "ground", a, child_point=(-0.5, 0.0), friction=f1)
    mb.revolute("j2", a, b, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0), friction=f2)
    mb.initial("j1", value=q1)
    mb.initial("j2", value=q2)
    return mb.build()


def test_coupled_joints_at_rest_start_in_the_one_consistent_state():
    """A double pendulum released at rest, random poses and bounds (seeded): the states the
    loop picks (friction.rest_states, a box-constrained QP) are the one combination of
    stick / slip + / slip - per joint, found by trying all nine, in which every sticking
    joint's torque is within its bound and every slipping joint accelerates along its slip
    direction."""
    import itertools
    from dataclasses import replace

    from fmu_mb.dynamics import friction as fr
    from fmu_mb.dynamics.impact import Status, accelerations
    from fmu_mb.dynamics.integrate import initial_state
    from fmu_mb.mechanics import constraints

    rng = np.random.default_rng(29)
    seen = set()
    for _ in range(12):
        q1, q2 = rng.uniform(-2.5, 2.5, 2)
        f1, f2 = rng.uniform(0.5, 15.0, 2)
        m = double_pendulum(q1, q2, f1, f2)
        s = initial_state(m, Settings(formulation="newton_euler"))
        x, xd = s.q, s.qd
        st = Status(m, s.extra)
        none = np.zeros(0, bool)
        base = fr.phase_of(m, st, none)
        found = []
        for combo in itertools.product((0, 1, -1), repeat=2):
            stick = np.array([c == 0 for c in combo])
            ph = replace(base, jstick=stick, jslip=~stick,
                         js0=np.array([float(c or 1) for c in combo]))
            d = accelerations(m, x, xd, 0.0, m.input_vector(None), none, fric=ph)
            _, _, Jq, cq = constraints.joint_coordinates(m, x, xd)
            acc = Jq[ph.jpos] @ d.qdd + cq[ph.jpos]
            ok = all((abs(d.lam_j[k]) <= ph.jbound[k] * (1 + 1e-9)) if stick[k] else
                     acc[k] * ph.js0[k] > 0.0 for k in range(2))
            if ok:
                found.append(combo)
        assert len(found) == 1, found
        picked = tuple(0 if st.joints[n]["stick"] else int(st.joints[n]["sdir"])
                       for n in ("j1", "j2"))
        assert picked == found[0]
        seen.add(picked)
    assert len(seen) >= 3                  # the draws cover several kinds of start


@pytest.mark.slow
def test_the_panda_with_joint_friction_balances_its_energy(tmp_path):
    """The Panda of example-robot-data with friction="0.5" on its seven joints (its file says
    0.0), without damping, released at rest from the middle of its limits: some joints stick,
    some slip (the coupled start), and kinetic + potential + dissipated energy stays constant
    (to 1e-7 of the potential energy's scale)."""
    import importlib.metadata
    import warnings

    pytest.importorskip("yourdfpy")
    from fmu_mb.importers.urdf import load_urdf
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pip example-robot-data is not installed")
    src = dist.locate_file("cmeel.prefix/share/example-robot-data/robots/panda_description/"
                           "urdf/panda.urdf")
    text = src.read_text()
    assert 'friction="0.0"' in text
    p = tmp_path / "panda_description" / "urdf" / "panda.urdf"
    p.parent.mkdir(parents=True)
    p.write_text(text.replace('friction="0.0"', 'friction="0.5"'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(p, mimic="free", damping=False)
    names = [j.name for j in m.joints if j.friction == 0.5]
    assert len(names) == 7
    r = simulate(m, 0.2, 0.05, settings=Settings(rtol=1e-10, atol=1e-12))
    loss = sum(r[f"{n}.friction_loss"] for n in names)
    total = r["energy.total"] + loss
    assert np.abs(total - total[0]).max() < 1e-7 * max(1.0, np.abs(r["energy.potential"]).max())
    states = {r[f"{n}.friction_state"][-1] for n in names}
    assert states == {1.0, 2.0} and loss[-1] > 0.0


def spring_rotor(spatial, k, fc, q0, inertia=0.5):
    """The disc of rotor() held by a torsional spring k about its joint (free at angle 0),
    released at rest at the angle q0."""
    if spatial:
        mb = ModelBuilder("osc3", gravity=(0.0, 0.0, -G))
        b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, inertia))
        mb.revolute("hub", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=fc)
    else:
        mb = ModelBuilder("osc2", gravity=(0.0, -G))
        b = mb.body("disc", mass=2.0, inertia=inertia)
        mb.revolute("hub", "ground", b, friction=fc)
    mb.rsda("spring", joint="hub", stiffness=k, input=False)
    mb.initial("hub", value=q0)
    return mb.build()


@pytest.mark.slow
@pytest.mark.parametrize("spatial", [False, True])
def test_a_coulomb_damped_oscillator_loses_2_fc_over_k_per_half_cycle_and_stops(spatial):
    """I q'' = -k q - F_c sign(q'): each half-cycle is a half cosine of period 2 pi / w
    (w = sqrt(k / I)) about the shifted centre +-F_c / k, its amplitude 2 F_c / k smaller;
    from q0 = 0.75 (k = 2, F_c = 0.2, I = 0.5: w = 2) it turns at 0.75, -0.55, 0.35, -0.15
    and stops for good at q = -0.05 at t = 2 pi (within the band |k q| <= F_c), the spring
    held by the friction torque. Every reversal is a slip -> stick -> slip (reversed) pair of
    events at the closed-form time."""
    k, fc, q0, inertia = 2.0, 0.2, 0.75, 0.5
    w = math.sqrt(k / inertia)
    r = simulate(spring_rotor(spatial, k, fc, q0, inertia), 7.0, 0.25, settings=TIGHT)
    t = r["time"]
    turns = [0.75, -0.55, 0.35, -0.15, -0.05]
    half = math.pi / w
    q = np.empty_like(t)
    for i, ti in enumerate(t):
        n = min(int(ti // half), 4)
        if n == 4:
            q[i] = turns[4]
            continue
        c = math.copysign(fc / k, turns[n])        # the centre: friction against the motion
        q[i] = c + (turns[n] - c) * math.cos(w * (ti - n * half))
    _close(r["hub.angle"], q)
    stopped = t > 4 * half
    assert set(r["hub.friction_state"][stopped]) == {1.0}
    assert set(r["hub.friction_state"][t < 4 * half - 0.01]) == {2.0}
    _close(r["hub.friction"][stopped], np.full(stopped.sum(), k * turns[4]))
    _close(r["hub.friction_loss"][-1], 0.5 * k * (q0 ** 2 - turns[4] ** 2))
