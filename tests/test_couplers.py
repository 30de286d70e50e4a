"""Couplers (ModelBuilder.coupler: q_joint = ratio q_master + offset, one constraint row):
the accelerations of every spatial formulation and of the compiled kernel against the
hand-eliminated one-coordinate equations (two pendulums geared together; a rack and pinion),
a simulation against scipy on the reduced equation, the row kept along the motion, and the
builder's refusals."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fmu_mb import ModelBuilder, ModelError, Settings, simulate
from fmu_mb.dynamics.formulations import get_formulation

G = 9.81
M1, L1, J1 = 1.3, 0.4, 0.02        # pendulum 1: mass, pivot to centre of mass, inertia about it
M2, L2, J2 = 0.7, 0.25, 0.011
RATIO, OFFSET = -1.7, 0.3


def pendulums(ratio=RATIO, offset=OFFSET, q0=0.4):
    """Two pendulums hanging from the ground on parallel revolute joints (axis z, gravity -y),
    pendulum 2 coupled to pendulum 1: q2 = ratio q1 + offset; input torque h on joint 1."""
    mb = ModelBuilder("geared", gravity=(0.0, -G, 0.0))
    for name, m, L, J, x in (("a", M1, L1, J1, 0.0), ("b", M2, L2, J2, 1.0)):
        mb.body(name, mass=m, inertia=(J, J, J), position=(x, -L, 0.0))
        mb.revolute(f"j{name}", "ground", name, at=(x, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.torque("motor", "a", axis=(0.0, 0.0, 1.0), reaction="ground", input="ja.h")
    mb.coupler("gear", "jb", "ja", ratio, offset)
    mb.initial("ja", value=q0)
    mb.initial("jb", value=ratio * q0 + offset)
    return mb.build()


def pendulums_qdd(q, qd, h, ratio=RATIO, offset=OFFSET):
    """The one-coordinate equation with q2 = ratio q + offset eliminated by hand:
    (I1 + ratio^2 I2) q'' = h - m1 g l1 sin q - ratio m2 g l2 sin(ratio q + offset)."""
    I1, I2 = J1 + M1 * L1 ** 2, J2 + M2 * L2 ** 2
    return (h - M1 * G * L1 * math.sin(q)
            - ratio * M2 * G * L2 * math.sin(ratio * q + offset)) / (I1 + ratio ** 2 * I2)


@pytest.mark.parametrize("form", ["recursive", "tmt", "lagrange", "newton_euler"])
def test_coupled_pendulums_accelerate_as_the_hand_eliminated_equation(form):
    m = pendulums()
    F = get_formulation(form)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, qd, h = rng.uniform(-1.0, 1.0), rng.normal(), rng.normal()
        qq = np.array([q, RATIO * q + OFFSET])
        qqd = np.array([qd, RATIO * qd])
        if form == "newton_euler":
            x, xd = get_formulation("tmt").absolute(m, qq, qqd)
            qdd_a = qdd_b = None
            xdd = F.accelerations(m, x, xd, 0.0, np.array([h])).qdd
            # the bodies' angular accelerations about z: Euler parameters about z
            for body, store in (("a", 0), ("b", 1)):
                p = x[m.body_slice(body)][3:]
                pdd = xdd[m.body_slice(body)][3:]
                pd = xd[m.body_slice(body)][3:]
                # angle = 2 atan2(e3, e0): angle'' from p, p', p''
                e0, e3 = p[0], p[3]
                d0, d3 = pd[0], pd[3]
                a0, a3 = pdd[0], pdd[3]
                r2 = e0 * e0 + e3 * e3
                w = 2.0 * (e0 * d3 - e3 * d0) / r2
                acc = 2.0 * (e0 * a3 - e3 * a0) / r2 - w * 2.0 * (e0 * d0 + e3 * d3) / r2
                if store == 0:
                    qdd_a = acc
                else:
                    qdd_b = acc
            qdd = np.array([qdd_a, qdd_b])
        else:
            qdd = F.accelerations(m, qq, qqd, 0.0, np.array([h])).qdd
        ref = pendulums_qdd(q, qd, h)
        assert abs(qdd[0] - ref) < 1e-10 * (1.0 + abs(ref))
        assert abs(qdd[1] - RATIO * ref) < 1e-10 * (1.0 + abs(ref))


def test_coupled_pendulums_follow_the_reduced_equation_and_keep_the_coupling():
    m = pendulums()
    ref = solve_ivp(lambda t, y: [y[1], pendulums_qdd(y[0], y[1], 0.2)], (0.0, 1.0),
                    [0.4, 0.0], rtol=1e-12, atol=1e-12, dense_output=True)
    for form in ("recursive", "tmt"):
        r = simulate(m, 1.0, 0.1, inputs={"ja.h": 0.2},
                     settings=Settings(formulation=form, rtol=1e-11, atol=1e-12))
        qa, qb = r["ja.angle"], r["jb.angle"]
        assert np.abs(qa - ref.sol(r["time"])[0]).max() < 1e-8, form
        assert np.abs(qb - (RATIO * qa + OFFSET)).max() < 1e-9, form


def rack_and_pinion(radius=0.05, slope=0.3):
    """A pinion (revolute about z, inertia J) and a rack (prismatic along the pinion's
    tangent x, mass m) coupled: s = radius theta; gravity with a component along the rack."""
    mb = ModelBuilder("rack", gravity=(-G * math.sin(slope), -G * math.cos(slope), 0.0))
    mb.body("pinion", mass=2.0, inertia=(0.01, 0.01, 0.004), position=(0.0, 0.0, 0.0))
    mb.body("rack", mass=3.0, inertia=(0.1, 0.1, 0.1), position=(0.0, -radius, 0.0))
    mb.revolute("turn", "ground", "pinion", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.prismatic("slide", "ground", "rack", at=(0.0, -radius, 0.0), axis=(1.0, 0.0, 0.0))
    mb.torque("motor", "pinion", axis=(0.0, 0.0, 1.0), reaction="ground", input="turn.h")
    mb.coupler("mesh", "slide", "turn", radius)
    return mb.build()


@pytest.mark.parametrize("form", ["recursive", "tmt", "newton_euler"])
def test_rack_and_pinion_accelerates_as_its_reflected_inertia_says(form):
    """(J + m r^2) theta'' = h + r m g sin(slope) (a revolute coordinate coupled to a
    prismatic one)."""
    r, slope = 0.05, 0.3
    m = rack_and_pinion(r, slope)
    h = 0.7
    ref = (h - r * 3.0 * G * math.sin(slope)) / (0.004 + 3.0 * r * r)
    x0, xd0 = m.x0, m.xd0
    if form == "newton_euler":
        dyn = get_formulation(form).accelerations(m, x0, xd0, 0.0, np.array([h]))
        s_dd = dyn.qdd[m.body_slice("rack")][0]
        assert abs(s_dd - r * ref) < 1e-10
        return
    dyn = get_formulation(form).accelerations(m, np.zeros(2), np.zeros(2), 0.0, np.array([h]))
    assert abs(dyn.qdd[0] - ref) < 1e-10 and abs(dyn.qdd[1] - r * ref) < 1e-10


def test_a_coupler_is_refused_when_its_joints_are_wrong():
    mb = ModelBuilder("bad", gravity=(0.0, 0.0, -G))
    mb.body("a", mass=1.0, inertia=(1, 1, 1), position=(0.0, 0.0, 0.0))
    mb.body("b", mass=1.0, inertia=(1, 1, 1), position=(1.0, 0.0, 0.0))
    mb.revolute("ja", "ground", "a", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.spherical("jb", "a", "b", at=(1.0, 0.0, 0.0))
    with pytest.raises(ModelError, match="coupler 'c': joint 'jb' is a spherical joint"):
        mb.coupler("c", "jb", "ja")
    with pytest.raises(ModelError, match="coupler 'c': joint and master are both 'ja'"):
        mb.coupler("c", "ja", "ja")
    with pytest.raises(ModelError, match="coupler 'c': unknown joint 'nope'"):
        mb.coupler("c", "nope", "ja")
    mb.body("c", mass=1.0, inertia=(1, 1, 1), position=(2.0, 0.0, 0.0))
    mb.revolute("jc", "ground", "c", at=(2.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    with pytest.raises(ModelError, match="coupler 'k': ratio must be nonzero"):
        mb.coupler("k", "jc", "ja", 0.0)
    mb.coupler("k", "jc", "ja", 2.0)
    with pytest.raises(ModelError, match="coupler 'd': joint 'jc' is already coupled"):
        mb.coupler("d", "jc", "ja", 1.0)


@pytest.mark.slow
def test_native_fmu_of_coupled_pendulums_follows_the_reduced_equation(tmp_path):
    """The couplers in the engine data (sk_set_couplers and the absolute rows of the
    initialisation and the reactions): a native FMU of the geared pendulums."""
    from fmpy import simulate_fmu

    from fmu_mb.fmi.native_build import build_native_fmu

    src = tmp_path / "geared.py"
    src.write_text("import sys\nsys.path.insert(0, %r)\nfrom test_couplers import pendulums\n\n\n"
                   "def build(**overrides):\n    return pendulums()\n"
                   % str(__import__("pathlib").Path(__file__).resolve().parent))
    fmu = build_native_fmu(src, tmp_path, platforms="linux64")
    inp = np.array([(0.0, 0.2), (1.0, 0.2)], dtype=[("time", float), ("ja.h", float)])
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1, input=inp,
                     start_values={"solver.rtol": 1e-11})
    ref = solve_ivp(lambda t, y: [y[1], pendulums_qdd(y[0], y[1], 0.2)], (0.0, 1.0),
                    [0.4, 0.0], rtol=1e-12, atol=1e-12, dense_output=True)
    assert np.abs(r["ja.angle"] - ref.sol(r["time"])[0]).max() < 1e-8
    assert np.abs(r["jb.angle"] - (RATIO * r["ja.angle"] + OFFSET)).max() < 1e-9
    p = simulate(pendulums(), 1.0, 0.1, inputs={"ja.h": 0.2},
                 settings=Settings(formulation="tmt", rtol=1e-11, atol=1e-12))
    for n in ("ja.tz", "jb.tz", "jb.fx", "energy.total"):
        assert np.abs(r[n] - p[n]).max() < 1e-7 * (1.0 + np.abs(p[n]).max()), n
