"""Hydraulic cylinder element (mb.cylinder): statics against a closed form, end stops, energy
balance with friction, pressure inputs, refusals; joint limits with both ends; inertia
helpers against numerical integration."""
import math

import numpy as np
import pytest
from scipy import integrate

from fmu_mb import (ModelBuilder, ModelError, Settings, box_inertia,
                    cylinder_inertia, disc_inertia, rod_inertia, simulate)

M, L, GRAV = 120.0, 2.0, 9.81
FOOT, EYE = (0.4, -0.9), 1.2          # cylinder foot on the ground; eye at EYE along the boom
A_P, A_R = 0.008, 0.004


def boom(friction=0.0, lmin=0.5, lmax=2.5, e=0.3, angle=0.0, pressures=False):
    """A uniform boom pinned at the origin, lifted by a cylinder from FOOT to the boom point
    at EYE from the pin."""
    mb = ModelBuilder("boom", {}, gravity=(0.0, -GRAV))
    b = mb.body("boom", mass=M, inertia=rod_inertia(M, L))
    mb.revolute("A", mb.ground, b, parent_point=(0.0, 0.0), child_point=(-L / 2, 0.0))
    kw = dict(piston_area=A_P, rod_area=A_R) if pressures else {}
    mb.cylinder("cyl", mb.ground, b, a_point=FOOT, b_point=(EYE - L / 2, 0.0),
                min_length=lmin, max_length=lmax, friction=friction, restitution=e, **kw)
    mb.initial("A", value=angle, rate=0.0)
    return mb.build()


def holding_force(theta):
    """Closed form: the pushing force F that holds the boom at angle theta (moments about
    the pin: F (r_eye x u) = m g (L/2) cos theta), and the unit vector u foot -> eye."""
    eye = EYE * np.array([math.cos(theta), math.sin(theta)])
    d = eye - np.array(FOOT)
    u = d / np.linalg.norm(d)
    arm = eye[0] * u[1] - eye[1] * u[0]
    return M * GRAV * L / 2 * math.cos(theta) / arm, u


def test_static_equilibrium_against_closed_form():
    theta = 0.2
    F, u = holding_force(theta)
    model = boom(angle=theta)
    r = simulate(model, 0.5, 0.05, inputs={"cyl.h": F})
    assert np.max(np.abs(r["A.angle"] - theta)) < 1e-9
    assert np.max(np.abs(r["A.rate"])) < 1e-8
    assert r["cyl.force"][-1] == pytest.approx(F, rel=1e-12)
    assert (r["cyl.fx"][-1], r["cyl.fy"][-1]) == pytest.approx((F * u[0], F * u[1]), rel=1e-9)
    # the pin's reaction (ground on boom) balances the cylinder force and the weight
    assert r["A.fx"][-1] == pytest.approx(-F * u[0], rel=1e-7)
    assert r["A.fy"][-1] == pytest.approx(M * GRAV - F * u[1], rel=1e-7)
    # stroke = length - min_length, length from the geometry
    eye = EYE * np.array([math.cos(theta), math.sin(theta)])
    length = np.linalg.norm(eye - np.array(FOOT))
    assert r["cyl.length"][-1] == pytest.approx(length, rel=1e-12)
    assert r["cyl.stroke"][-1] == pytest.approx(length - 0.5, rel=1e-12)


def test_pressure_inputs_give_the_same_force():
    theta = 0.2
    F, _ = holding_force(theta)
    p_rod = 2.0e6
    p_head = (F + p_rod * A_R) / A_P
    model = boom(angle=theta, pressures=True)
    assert model.input_names == ("cyl.h", "cyl.p_head", "cyl.p_rod")
    r = simulate(model, 0.3, 0.05, inputs={"cyl.p_head": p_head, "cyl.p_rod": p_rod})
    assert r["cyl.force"][-1] == pytest.approx(F, rel=1e-12)
    assert np.max(np.abs(r["A.angle"] - theta)) < 1e-9


def test_end_stop_holds_the_stroke_with_a_large_force():
    lmin, lmax = 0.9, 1.45
    F0, _ = holding_force(0.0)
    big = 20.0 * F0
    model = boom(lmin=lmin, lmax=lmax, e=0.3)
    r = simulate(model, 2.0, 0.01, inputs={"cyl.h": big})
    tol = 1e-7
    assert r["cyl.length"].max() <= lmax + tol
    assert r["cyl.length"].min() >= lmin - tol
    assert r["cyl_upper.impacts"][-1] >= 1
    assert r["cyl.end_stops"][-1] == r["cyl_upper.impacts"][-1] + r["cyl_lower.impacts"][-1]
    assert r["cyl_upper.active"][-1] == 1.0          # resting on the stop at the end
    # at rest on the stop the contact force balances what the holding force does not need
    theta = r["A.angle"][-1]
    F_hold, _ = holding_force(theta)
    assert r["cyl_upper.force"][-1] == pytest.approx(big - F_hold, rel=1e-6)
    # without the stop, the same force would have turned the boom over
    free = simulate(boom(lmin=0.1, lmax=10.0), 0.6, 0.01, inputs={"cyl.h": big})
    assert free["cyl.length"].max() > lmax + 0.2


def test_energy_balance_with_friction():
    """E(t) - E(0) = h (l(t) - l(0)) - int c l'^2 dt: the work of the constant force minus
    the friction loss (no end stop reached)."""
    c, h = 3000.0, 500.0
    model = boom(friction=c, lmin=0.2, lmax=4.0, angle=0.6)
    r = simulate(model, 1.0, 0.002, inputs={"cyl.h": h},
                 settings=Settings(rtol=1e-10, atol=1e-12))
    assert r["cyl.end_stops"][-1] == 0
    loss = integrate.simpson(c * r["cyl.stroke_rate"] ** 2, x=r["time"])
    work = h * (r["cyl.length"][-1] - r["cyl.length"][0])
    dE = r["energy.total"][-1] - r["energy.total"][0]
    assert loss > 10.0                                  # the friction matters here
    assert dE == pytest.approx(work - loss, rel=1e-5, abs=1e-6 * loss)
    # friction force in the output: F = h - c l'
    assert np.allclose(r["cyl.force"], h - c * r["cyl.stroke_rate"], rtol=1e-12, atol=1e-9)


def test_cylinder_refusals_leave_the_builder_unchanged():
    mb = ModelBuilder("bad", {})
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.revolute("A", mb.ground, b)
    for kw, text in [(dict(min_length=2.0, max_length=1.0), "min_length < max_length"),
                     (dict(min_length=1.0, max_length=2.0, piston_area=0.01, rod_area=0.02),
                      "rod_area"),
                     (dict(min_length=1.0, max_length=2.0, rod_area=0.01), "piston_area"),
                     (dict(min_length=-1.0, max_length=2.0), "min_length"),
                     (dict(min_length=1.0, max_length=2.0, friction=-1.0), "friction")]:
        with pytest.raises(ModelError, match=text):
            mb.cylinder("c", mb.ground, b, **kw)
    mb.contact("c_upper", b)
    with pytest.raises(ModelError, match="c_upper"):
        mb.cylinder("c", mb.ground, b, min_length=1.0, max_length=2.0)
    assert [i.name for i in mb._inputs] == []
    mb.cylinder("c2", mb.ground, b, a_point=(1.0, 0.0), min_length=0.5, max_length=2.0)
    assert [i.name for i in mb._inputs] == ["c2.h"]


def test_recursive_runs_cylinders_in_the_kernel():
    """The compiled kernel takes cylinders (their input gains in C): the boom held by its
    cylinder equals newton_euler's (formerly refused: InputError naming tmt)."""
    kw = dict(rtol=1e-10, atol=1e-12)
    a = simulate(boom(), 0.3, 0.05, settings=Settings(formulation="recursive", **kw))
    b = simulate(boom(), 0.3, 0.05, settings=Settings(formulation="newton_euler", **kw))
    assert np.max(np.abs(a["A.angle"] - b["A.angle"])) < 1e-8
    np.testing.assert_allclose(a["cyl.force"], b["cyl.force"], rtol=1e-7, atol=1e-6)


def test_tmt_agrees_with_newton_euler_on_a_cylinder_hitting_its_stop():
    F0, _ = holding_force(0.0)
    out = {}
    for f in ("newton_euler", "tmt", "recursive"):
        out[f] = simulate(boom(lmin=0.9, lmax=1.45), 0.8, 0.01, inputs={"cyl.h": 5 * F0},
                          settings=Settings(formulation=f, rtol=1e-10, atol=1e-12))
    assert out["tmt"]["cyl_upper.impacts"][-1] == out["newton_euler"]["cyl_upper.impacts"][-1]
    assert np.max(np.abs(out["tmt"]["A.angle"] - out["newton_euler"]["A.angle"])) < 1e-6
    # recursive: the stop held as a persistent contact in C
    assert out["recursive"]["cyl_upper.impacts"][-1] == out["tmt"]["cyl_upper.impacts"][-1]
    assert np.max(np.abs(out["recursive"]["A.angle"] - out["tmt"]["A.angle"])) < 1e-7


# ------------------------------------------------------------------ joint limits, both ends
def slider(**limit):
    mb = ModelBuilder("slider", {}, gravity=(0.0, 0.0))
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.prismatic("P", mb.ground, b, axis=(1.0, 0.0))
    if "both" in limit:
        mb.joint_limit("stop", "P", lower=-0.2, upper=0.3, restitution=0.5)
    else:
        mb.joint_limit("stop_lower", "P", lower=-0.2, restitution=0.5)
        mb.joint_limit("stop_upper", "P", upper=0.3, restitution=0.5)
    mb.initial("P", value=0.0, rate=1.0)
    return mb.build()


def test_joint_limit_with_both_ends_equals_two_limits():
    a = simulate(slider(both=True), 2.0, 0.01)
    b = simulate(slider(), 2.0, 0.01)
    assert [c.name for c in slider(both=True).contacts] == ["stop_lower", "stop_upper"]
    assert a.dtype.names == b.dtype.names
    for k in a.dtype.names:
        assert np.array_equal(a[k], b[k]), k
    assert a["stop_upper.impacts"][-1] >= 1 and a["stop_lower.impacts"][-1] >= 1
    assert a["P.position"].max() <= 0.3 + 1e-9 and a["P.position"].min() >= -0.2 - 1e-9


def test_joint_limit_refusals():
    mb = ModelBuilder("s", {})
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.prismatic("P", mb.ground, b)
    with pytest.raises(ModelError, match="lower < upper"):
        mb.joint_limit("stop", "P", lower=0.3, upper=0.3)
    with pytest.raises(ModelError, match="received neither"):
        mb.joint_limit("stop", "P")
    assert mb._contacts == []


# ------------------------------------------------------------------ inertia helpers
def test_inertia_helpers_against_integration():
    m, a, h = 3.0, 0.8, 0.3
    area = a * h
    I_box = integrate.dblquad(lambda y, x: (x * x + y * y) * m / area, -a / 2, a / 2,
                              -h / 2, h / 2)[0]
    assert box_inertia(m, a, h) == pytest.approx(I_box, rel=1e-10)
    # hollow cylinder, axis along x: I_z = int (x^2 + y^2) dm, y = rho cos(t) of the section
    length, ro, ri = 1.1, 0.2, 0.12
    vol = length * math.pi * (ro ** 2 - ri ** 2)
    I_cyl = integrate.tplquad(lambda rho, t, x: (x * x + (rho * math.cos(t)) ** 2) * rho
                              * m / vol, -length / 2, length / 2, 0, 2 * math.pi, ri, ro)[0]
    assert cylinder_inertia(m, length, ro, inner_radius=ri) == pytest.approx(I_cyl, rel=1e-8)
    # limits: a thin rod and a disc
    assert cylinder_inertia(m, length, 0.0 + 1e-12) == pytest.approx(rod_inertia(m, length))
    assert box_inertia(m, 0.0, 2 * 0.3) == pytest.approx(m * 0.3 ** 2 / 3)
    assert disc_inertia(m, 0.3) == pytest.approx(m * 0.3 ** 2 / 2)
    with pytest.raises(ModelError, match="inner_radius"):
        cylinder_inertia(m, 1.0, 0.1, inner_radius=0.2)
