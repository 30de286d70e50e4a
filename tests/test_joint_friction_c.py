"""Joint Coulomb friction in the compiled kernels: the sticking joints' rows on their
coordinates' rates (planar kernel.c R_JRATE, the unit row on a tree coordinate; spatial
spatial_kernel.c sk_set_joint_friction, the coordinate's row) and the slipping joints'
generalised forces -F_c s0 (mbk_set_joint_torques, sk_set_joint_friction) against the Python
reference (fmu_mb.dynamics.impact.accelerations with a friction phase, formulation
newton_euler in absolute coordinates: the other formulation of the same law) to 1e-9, at
random states of the test models of tests/test_joint_friction.py, a cart-pole, a skew
three-joint arm and a two-link URDF, for every stick / slip+ / slip- combination: the joint
accelerations and the sticking joints' multipliers (friction torque -lam_j)."""
import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from fmu_mb import ModelBuilder
from fmu_mb.dynamics import friction as fr
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.dynamics.impact import Status, accelerations
from fmu_mb.engine.kernel import TreeKernel, joint_rate_rows, loop_rows
from fmu_mb.mechanics import constraints

G = 9.81


def rotor(fc=0.25):
    mb = ModelBuilder("rotor2", gravity=(0.0, -G))
    b = mb.body("disc", mass=2.0, inertia=0.5, angular_velocity=2.9)
    mb.revolute("hub", "ground", b, friction=fc)
    return mb.build()


def slider(alpha=0.4, fc=3.0):
    d = (math.cos(alpha), -math.sin(alpha))
    mb = ModelBuilder("slider2", gravity=(0.0, -G))
    b = mb.body("block", mass=1.5, inertia=0.1)
    mb.prismatic("slide", "ground", b, axis=d, friction=fc)
    return mb.build()


def spring_rotor(k=2.0, fc=0.2):
    mb = ModelBuilder("spring2", gravity=(0.0, -G))
    b = mb.body("disc", mass=2.0, inertia=0.5)
    mb.revolute("hub", "ground", b, friction=fc)
    mb.rsda("spring", "ground", b, stiffness=k)
    return mb.build()


def double_pendulum(f1=4.0, f2=2.5):
    mb = ModelBuilder("dp", gravity=(0.0, -G))
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=2.0, inertia=0.2)
    mb.revolute("j1", "ground", a, child_point=(-0.5, 0.0), friction=f1)
    mb.revolute("j2", a, b, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0), friction=f2)
    return mb.build()


def slider_crank_arm(f1=1.5, f2=2.0):
    """A cart on a frictional rail carrying a frictional pendulum (prismatic + revolute)."""
    mb = ModelBuilder("cartpole", gravity=(0.0, -G))
    c = mb.body("cart", mass=3.0, inertia=0.2)
    p = mb.body("pole", mass=0.7, inertia=0.05, position=(0.0, -0.6))
    mb.prismatic("rail", "ground", c, axis=(1.0, 0.0), friction=f1)
    mb.revolute("pin", c, p, child_point=(0.0, 0.6), friction=f2)
    return mb.build()


MODELS = [rotor, slider, spring_rotor, double_pendulum, slider_crank_arm]


def _compiled(model, kern, q, qd, stick, slip, s0, bound, names):
    """qdd (n,) and the sticking joints' multipliers from the kernel with the phase's rows
    and slip forces."""
    lib, h = kern.lib, kern.handle
    ri, rd = loop_rows(model)
    si, sd = joint_rate_rows(model, [nm for nm, s in zip(names, stick) if s])
    ri = np.ascontiguousarray(np.concatenate([ri, si]), dtype=np.intc)
    rd = np.ascontiguousarray(np.concatenate([rd, sd]))
    m = len(ri)
    assert lib.mbk_set_rows(h, m, ri.ctypes.data, rd.ctypes.data) == 0
    tau = np.zeros(kern.n)
    _, rs = joint_rate_rows(model, names)
    for k in np.flatnonzero(slip):
        tau[int(rs[k, 0])] -= bound[k] * s0[k]
    assert lib.mbk_set_joint_torques(h, tau.ctypes.data) == 0
    kern.m = m
    qdd = kern.accelerations(q, qd, None)[0]
    lam = np.zeros(m + 8)
    lib.mbk_multipliers(h, lam.ctypes.data)
    return qdd, lam[len(loop_rows(model)[0]):m]


def _python_phases(model, n, seed, rounds, span):
    """(q, qd, stick, s0, d, ref) at `rounds` random states (q in +-span, qd in +-2) for every
    stick / slip+ / slip- combination of the frictional joints: d the newton_euler
    accelerations of that friction phase, ref its joint accelerations."""
    names = fr.joint_friction(model)[0]
    base = fr.phase_of(model, Status(model, {}), np.zeros(len(model.contacts), bool))
    rec = get_formulation("recursive")
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        q, qd = rng.uniform(-span, span, n), rng.uniform(-2.0, 2.0, n)
        x, xd = rec.absolute(model, q, qd)
        for combo in itertools.product((0, 1, -1), repeat=len(names)):
            stick = np.array([c == 0 for c in combo])
            s0 = np.array([float(c or 1) for c in combo])
            ph = replace(base, jstick=stick, jslip=~stick, js0=s0)
            d = accelerations(model, x, xd, 0.0, model.input_vector(None),
                              np.zeros(len(model.contacts), bool), fric=ph)
            _, _, Jq, cq = constraints.joint_coordinates(model, x, xd)
            yield q, qd, stick, s0, d, Jq @ d.qdd + cq


@pytest.mark.parametrize("make", MODELS, ids=lambda f: f.__name__)
def test_the_kernel_equals_the_python_friction_phase(make):
    model = make()
    kern = TreeKernel(model)
    names, pos, bound = fr.joint_friction(model)
    for q, qd, stick, s0, d, ref in _python_phases(model, kern.n, 29, 4, 1.5):
        qdd, lam = _compiled(model, kern, q, qd, stick, ~stick, s0, bound, names)
        np.testing.assert_allclose(qdd[:len(ref)], ref, rtol=0, atol=1e-9
                                   * max(1.0, np.abs(ref).max()))
        np.testing.assert_allclose(lam, d.lam_j[stick], rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(d.lam_j).max()))
        # the sticking joints do not accelerate; the bound is the slipping joints' force
        assert np.abs(qdd[pos[stick]] if stick.any() else 0.0).max() <= 1e-12 * max(
            1.0, np.abs(ref).max())


def test_no_joint_torques_is_the_smooth_dynamics_bit_for_bit():
    model = double_pendulum()
    kern = TreeKernel(model)
    q, qd = np.array([0.3, -0.7]), np.array([1.1, 0.4])
    a = kern.accelerations(q, qd, None)[0]
    tau = np.zeros(kern.n)
    assert kern.lib.mbk_set_joint_torques(kern.handle, tau.ctypes.data) == 0
    b = kern.accelerations(q, qd, None)[0]
    assert kern.lib.mbk_set_joint_torques(kern.handle, None) == 0
    assert np.array_equal(a, b) and np.array_equal(a, kern.accelerations(q, qd, None)[0])


def test_non_finite_joint_torques_are_refused_and_the_old_ones_kept():
    model = rotor()
    kern = TreeKernel(model)
    q, qd = np.array([0.0]), np.array([1.0])
    tau = np.array([-0.25])
    assert kern.lib.mbk_set_joint_torques(kern.handle, tau.ctypes.data) == 0
    a = kern.accelerations(q, qd, None)[0]
    bad = np.array([math.nan])
    assert kern.lib.mbk_set_joint_torques(kern.handle, bad.ctypes.data) != 0
    assert np.array_equal(kern.accelerations(q, qd, None)[0], a)
    assert abs(a[0] + 0.25 / 0.5) <= 1e-15


# ---------------------------------------------------------------------- spatial kernel
def rotor3(fc=0.25):
    mb = ModelBuilder("rotor3", gravity=(0.0, 0.0, -G))
    b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, 0.5))
    mb.revolute("hub", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=fc)
    return mb.build()


def slider3(alpha=0.4, fc=3.0):
    d = (math.cos(alpha), -math.sin(alpha))
    mb = ModelBuilder("slider3", gravity=(0.0, 0.0, -G))
    b = mb.body("block", mass=1.5, inertia=(0.1, 0.1, 0.1))
    mb.prismatic("slide", "ground", b, at=(0.0, 0.0, 0.0), axis=(d[0], 0.0, d[1]),
                 friction=fc)
    return mb.build()


def spring3(k=2.0, fc=0.2):
    mb = ModelBuilder("osc3", gravity=(0.0, 0.0, -G))
    b = mb.body("disc", mass=2.0, inertia=(0.3, 0.3, 0.5))
    mb.revolute("hub", "ground", b, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=fc)
    mb.rsda("spring", joint="hub", stiffness=k, input=False)
    return mb.build()


def arm3_builder(f1=4.0, f2=2.5, f3=6.0, name="arm3"):
    """The builder of a revolute-revolute-prismatic arm with skew axes (joint friction
    bounds f1, f2, f3): the joints coupled through the mass matrix."""
    mb = ModelBuilder(name, gravity=(0.0, 0.0, -G))
    a = mb.body("a", mass=1.0, inertia=(0.1, 0.12, 0.05), position=(0.5, 0.0, 0.0))
    b = mb.body("b", mass=2.0, inertia=(0.2, 0.1, 0.15), position=(1.0, 0.0, -0.5))
    c = mb.body("c", mass=0.5, inertia=(0.02, 0.03, 0.01), position=(1.0, 0.0, -1.0))
    mb.revolute("j1", "ground", a, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), friction=f1)
    mb.revolute("j2", a, b, at=(1.0, 0.0, 0.0), axis=(0.0, 1.0, 0.3), friction=f2)
    mb.prismatic("j3", b, c, at=(1.0, 0.0, -0.75), axis=(0.0, 0.0, 1.0), friction=f3)
    return mb


def arm3(f1=4.0, f2=2.5, f3=6.0):
    """A revolute-revolute-prismatic arm with skew axes: the joints coupled through the mass
    matrix."""
    return arm3_builder(f1, f2, f3).build()


URDF2 = """<?xml version="1.0"?>
<robot name="arm2">
<link name="base"/>
<link name="l1"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
<inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="l2"><inertial><origin xyz="0.2 0 -0.4"/><mass value="0.8"/>
<inertia ixx="0.01" iyy="0.02" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="shoulder" type="continuous"><parent link="base"/><child link="l1"/>
<axis xyz="0 1 0"/><dynamics friction="2.0"/></joint>
<joint name="elbow" type="revolute"><parent link="l1"/><child link="l2"/>
<origin xyz="0 0 -1"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10"
velocity="5"/><dynamics friction="0.7"/></joint>
</robot>
"""


def urdf2(tmp_path):
    pytest.importorskip("yourdfpy")
    from fmu_mb.importers.urdf import load_urdf

    p = tmp_path / "arm2.urdf"
    p.write_text(URDF2)
    return load_urdf(p)


SPATIAL = [rotor3, slider3, spring3, arm3, urdf2]


def _spatial_compiled(model, kern, q, qd, stick, s0, bound, names):
    from fmu_mb.engine.spatial_kernel import joint_friction_rows

    ji, jd, nu = joint_friction_rows(model, names)
    tau = np.zeros(max(1, len(q)))
    for k in np.flatnonzero(~stick):
        tau[nu[k]] -= bound[k] * s0[k]
    si = np.ascontiguousarray(ji[stick])
    sd = np.ascontiguousarray(jd[stick])
    lib, h = kern.lib, kern.handle
    assert lib.sk_set_joint_friction(h, int(stick.sum()), si.ctypes.data, sd.ctypes.data,
                                     tau.ctypes.data) == 0
    qdd = kern.accelerations(q, qd)
    m = int(lib.sk_rows(h))
    lam = np.zeros(m + 1)
    lib.sk_multipliers(h, lam.ctypes.data)
    return qdd, lam[m - int(stick.sum()):m]


@pytest.mark.parametrize("make", SPATIAL, ids=lambda f: f.__name__)
def test_the_spatial_kernel_equals_the_python_friction_phase(make, tmp_path):
    from fmu_mb.engine.spatial_kernel import SpatialKernel

    model = make(tmp_path) if make is urdf2 else make()
    kern = SpatialKernel(model)
    names, pos, bound = fr.joint_friction(model)
    assert len(names) >= 1
    for q, qd, stick, s0, d, ref in _python_phases(model, kern.n, 31, 3, 1.2):
        qdd, lam = _spatial_compiled(model, kern, q, qd, stick, s0, bound, names)
        scale = max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(qdd[:len(ref)], ref, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(lam, d.lam_j[stick], rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(d.lam_j).max()))


def test_the_spatial_kernel_refuses_a_bad_joint_phase_and_keeps_the_old_one():
    from fmu_mb.engine.spatial_kernel import SpatialKernel, joint_friction_rows

    model = rotor3()
    kern = SpatialKernel(model)
    q, qd = np.array([0.3]), np.array([1.0])
    ji, jd, _ = joint_friction_rows(model, ["hub"])
    tau = np.array([-0.25])
    lib, h = kern.lib, kern.handle
    assert lib.sk_set_joint_friction(h, 0, None, None, tau.ctypes.data) == 0
    a = kern.accelerations(q, qd)
    assert abs(a[0] + 0.25 / 0.5) <= 1e-15
    bad = np.array([math.inf])
    assert lib.sk_set_joint_friction(h, 0, None, None, bad.ctypes.data) != 0
    wrong = ji.copy()
    wrong[0, 0] = 7
    assert lib.sk_set_joint_friction(h, 1, wrong.ctypes.data, jd.ctypes.data, None) != 0
    assert np.array_equal(kern.accelerations(q, qd), a)
    assert lib.sk_set_joint_friction(h, 1, ji.ctypes.data, jd.ctypes.data, None) == 0
    assert abs(kern.accelerations(q, qd)[0]) <= 1e-12
    assert lib.sk_set_joint_friction(h, 0, None, None, None) == 0
    assert np.array_equal(kern.accelerations(q, qd), np.zeros(1))


# ---------------------------------------------------------------------- engine data
@pytest.mark.parametrize("make", [double_pendulum, arm3], ids=lambda f: f.__name__)
def test_the_engine_data_carry_the_bounds_and_the_engine_checks_them(make, monkeypatch):
    """DJFRIC (after DPAIR, before ICPT and IJLIM) holds each joint's bound; the compiled engine
    checks it (a negative bound refused naming the joint); it runs the joint friction,
    planar and spatial (tests/test_joint_friction_native.py: = the Python loop)."""
    from fmu_mb import InputError
    from fmu_mb.engine import data
    from fmu_mb.engine.engine import Engine

    model = make()
    why = data.supported(model)
    monkeypatch.setattr(data, "supported", lambda m: None)
    d = data.model_data(model)
    off, cnt = d.slots["DJFRIC"]
    assert data.ARRAYS.index("DPAIR") < data.ARRAYS.index("DJFRIC") < data.ARRAYS.index("IJLIM")
    np.testing.assert_array_equal(d.doubles[off:off + cnt],
                                  [j.friction for j in model.joints])
    assert why is None
    Engine(blob=d.to_bytes())
    bad = d.doubles.copy()
    bad[off + 1] = -1.0
    with pytest.raises(InputError, match=f"the friction of joint '{model.joints[1].name}'"):
        Engine(blob=data.EngineData(d.ints, bad, d.slots, d.parameter_names,
                                    d.joint_names).to_bytes())
    free = data.model_data(make(*[0.0] * 3) if make is arm3 else make(0.0, 0.0))
    assert free.slots["DJFRIC"][1] == 0
    Engine(blob=free.to_bytes())


# ---------------------------------------------------------------------- rest states
def _rest_c(A, c, bound):
    from fmu_mb.engine.kernel import library

    p = len(c)
    A, c, bound = (np.ascontiguousarray(v, float) for v in (A, c, bound))
    stick = np.zeros(p, np.uint8)
    s0 = np.ones(p)
    assert library().mbk_fr_rest_states(p, A.ctypes.data, c.ctypes.data, bound.ctypes.data,
                                        stick.ctypes.data, s0.ctypes.data) == 0
    return stick.astype(bool), s0


def _rest_py(A, c, bound):
    p = len(c)
    ph = fr.Phase(np.zeros(0, bool), np.zeros(0, bool), np.zeros((0, 1)), np.zeros(0),
                  np.ones(p, bool), np.zeros(p, bool), np.ones(p), np.asarray(bound, float),
                  np.arange(p))
    return fr.rest_states(ph, np.ones(p, bool), lambda f: c + A @ f)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 7])
def test_the_c_rest_state_rule_equals_the_python_one(p):
    """friction.h fr_rest_states against friction.rest_states on random coupled problems
    (SPD A, bounds from a tenth to ten times the free accelerations' forces) and on the
    double pendulum's own problems at rest: the same stick flags and slip directions."""
    rng = np.random.default_rng(100 + p)
    kinds = set()
    for _ in range(60):
        L = rng.normal(size=(p, p))
        A = L @ L.T + 0.05 * np.eye(p)
        c = rng.normal(scale=5.0, size=p)
        bound = np.abs(rng.normal(size=p)) * 10.0 ** rng.uniform(-1, 1, p) * 3.0 + 0.01
        st_c, s0_c = _rest_c(A, c, bound)
        st_p, s0_p = _rest_py(A, c, bound)
        assert np.array_equal(st_c, st_p), (A, c, bound)
        assert np.array_equal(s0_c[~st_c], s0_p[~st_p])
        kinds.add(int(st_c.sum()))
    assert len(kinds) >= min(p + 1, 3)         # all-stick, mixed and all-slip cases


def test_the_c_rest_state_rule_on_the_double_pendulum_at_rest():
    from fmu_mb.dynamics.impact import Status
    from fmu_mb.dynamics.integrate import Settings, initial_state

    rng = np.random.default_rng(29)
    for _ in range(12):
        q1, q2 = rng.uniform(-2.5, 2.5, 2)
        f1, f2 = rng.uniform(0.5, 15.0, 2)
        mb = ModelBuilder("dp", gravity=(0.0, -G))
        a = mb.body("a", mass=1.0, inertia=0.1)
        b = mb.body("b", mass=2.0, inertia=0.2)
        mb.revolute("j1", "ground", a, child_point=(-0.5, 0.0), friction=f1)
        mb.revolute("j2", a, b, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0),
                    friction=f2)
        mb.initial("j1", value=q1)
        mb.initial("j2", value=q2)
        m = mb.build()
        s = initial_state(m, Settings(formulation="newton_euler"))
        st = Status(m, s.extra)
        base = fr.phase_of(m, st, np.zeros(0, bool))
        free = replace(base, jstick=np.zeros(2, bool), jslip=np.zeros(2, bool))

        def qdd_of(f):
            d = accelerations(m, s.q, s.qd, 0.0, m.input_vector(None), np.zeros(0, bool),
                              fric=replace(free, jforce=f))
            _, _, Jq, cq = constraints.joint_coordinates(m, s.q, s.qd)
            return Jq[base.jpos] @ d.qdd + cq[base.jpos]
        c = qdd_of(np.zeros(2))
        A = np.column_stack([qdd_of(e) - c for e in np.eye(2)])
        st_c, s0_c = _rest_c(0.5 * (A + A.T), c, base.jbound)
        picked = [st.joints[n]["stick"] for n in ("j1", "j2")]
        assert list(st_c) == picked
        for k, n in enumerate(("j1", "j2")):
            if not st_c[k]:
                assert s0_c[k] == st.joints[n]["sdir"]


# ---------------------------------------------------------------------- a slip phase
@pytest.mark.parametrize("spatial", [False, True])
def test_the_kernels_integrate_a_slip_phase_as_the_closed_form(spatial):
    """The Coulomb-damped oscillator (I q'' = -k q - F_c s0, k = 2, F_c = 0.2, I = 0.5,
    w = 2) released at rest at q0 = 0.75 slips back (s0 = -1): over the half-cycle its angle
    is F_c / k + (q0 - F_c / k) cos(w t); the kernels' integrators with the slip torque
    (mbk_set_joint_torques, sk_set_joint_friction) follow it to 1e-9."""
    from fmu_mb.engine.spatial_kernel import SpatialKernel

    k, fc, q0, inertia, t1 = 2.0, 0.2, 0.75, 0.5, 1.5
    w = math.sqrt(k / inertia)
    tau = np.array([fc])                         # -F_c s0 with s0 = -1
    model = spring3(k, fc) if spatial else spring_rotor(k, fc)
    q, qd = np.array([q0]), np.array([0.0])
    if spatial:
        kern = SpatialKernel(model)
        assert kern.lib.sk_set_joint_friction(kern.handle, 0, None, None, tau.ctypes.data) == 0
        qe, qde = kern.advance("dopri5", 0.0, t1, q, qd, 1e-3, 1e-12, 1e-14, np.inf, 0.0)[:2]
    else:
        kern = TreeKernel(model)
        assert kern.lib.mbk_set_joint_torques(kern.handle, tau.ctypes.data) == 0
        qe, qde = kern._advance_unlocked("dopri5", 0.0, t1, q, qd, 1e-3, None, 1e-12, 1e-14,
                                         1e300, 0.0)[:2]
    c = fc / k
    assert abs(qe[0] - (c + (q0 - c) * math.cos(w * t1))) <= 1e-9
    assert abs(qde[0] + (q0 - c) * w * math.sin(w * t1)) <= 1e-9
