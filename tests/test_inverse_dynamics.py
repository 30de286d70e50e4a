"""Kinematic analysis of fully driven mechanisms and inverse dynamics (seed 001): the driving
efforts of a prescribed motion, fed back as inputs, reproduce the motion."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fmu_mb import (ModelBuilder, ModelError, State, output_names, output_values, polynomial,
                    rod_inertia, simulate)
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.dynamics.inverse import inverse_dynamics, kinematic_analysis, kinematic_trajectory

from conftest import model

# prescribed joint angles of the double pendulum: q_A(t), q_B(t) (polynomials, exact rates)
MOTION_A = (0.5, 0.8, -0.6, 0.2)
MOTION_B = (0.3, -1.1, 0.9, -0.25)


def _poly(c, t, k=0):
    p = np.polynomial.polynomial.Polynomial(c).deriv(k)
    return p(t)


def driven_double_pendulum():
    """The double pendulum of models/double_pendulum.py with both joints driven."""
    ref = model("double_pendulum")
    p = ref.parameter_values
    mb = ModelBuilder("driven_double_pendulum", gravity=(p["g"], 0.0))
    rod1 = mb.body("rod1", mass=p["m1"], inertia=rod_inertia(p["m1"], p["l1"]))
    rod2 = mb.body("rod2", mass=p["m2"], inertia=rod_inertia(p["m2"], p["l2"]))
    mb.revolute("A", mb.ground, rod1, child_point=(-p["l1"] / 2, 0.0))
    mb.revolute("B", rod1, rod2, parent_point=(p["l1"] / 2, 0.0),
                child_point=(-p["l2"] / 2, 0.0))
    mb.drive("drive_A", "A", polynomial(*MOTION_A))
    mb.drive("drive_B", "B", polynomial(*MOTION_B))
    return mb.build(), ref


def test_kinematic_analysis_matches_the_prescribed_motion():
    m, ref = driven_double_pendulum()
    l1, l2 = ref.parameter("l1").value, ref.parameter("l2").value
    for ks in kinematic_trajectory(m, np.linspace(0.0, 1.5, 7)):
        t = ks.t
        p1 = _poly(MOTION_A, t)
        p2 = p1 + _poly(MOTION_B, t)
        w1 = _poly(MOTION_A, t, 1)
        w2 = w1 + _poly(MOTION_B, t, 1)
        a1 = _poly(MOTION_A, t, 2)
        a2 = a1 + _poly(MOTION_B, t, 2)
        tip = l1 * np.array([np.cos(p1), np.sin(p1)])
        r2 = tip + l2 / 2 * np.array([np.cos(p2), np.sin(p2)])
        np.testing.assert_allclose(ks.x[[2, 5]], [p1, p2], atol=1e-12)
        np.testing.assert_allclose(ks.x[3:5], r2, atol=1e-12)
        np.testing.assert_allclose(ks.xd[[2, 5]], [w1, w2], atol=1e-12)
        np.testing.assert_allclose(ks.xdd[[2, 5]], [a1, a2], atol=1e-11)
        # centre of rod 1: a = l1/2 (alpha perp(e) - omega^2 e)
        e = np.array([np.cos(p1), np.sin(p1)])
        np.testing.assert_allclose(ks.xdd[0:2], l1 / 2 * (a1 * np.array([-e[1], e[0]])
                                                           - w1 ** 2 * e), atol=1e-11)


def test_kinematic_analysis_needs_a_fully_driven_mechanism():
    with pytest.raises(ModelError, match=r"not fully driven: .* \(2 degrees of freedom left\)"):
        kinematic_analysis(model("double_pendulum"), 0.0)


def efforts_as_inputs(m, t, guess=None):
    """RSDA actuator inputs h that produce the drives' efforts (RSDA torque acts to decrease
    the joint angle, so h = -effort)."""
    ks = kinematic_analysis(m, t, guess)
    inv = inverse_dynamics(m, t, ks.x, ks.xd, ks.xdd)
    assert inv.residual < 1e-10
    return ks, -inv.efforts


@pytest.mark.parametrize("formulation", ["newton_euler", "tmt", "lagrange"])
def test_inverse_dynamics_fed_back_reproduces_the_accelerations(formulation):
    m, ref = driven_double_pendulum()
    form = get_formulation(formulation)
    for t in np.linspace(0.0, 1.5, 6):
        ks, h = efforts_as_inputs(m, t)
        if formulation == "newton_euler":
            dyn = form.accelerations(ref, ks.x, ks.xd, t, h)
            np.testing.assert_allclose(dyn.qdd, ks.xdd, atol=1e-10)
        else:
            q = np.array([_poly(MOTION_A, t), _poly(MOTION_B, t)])
            qd = np.array([_poly(MOTION_A, t, 1), _poly(MOTION_B, t, 1)])
            qdd = np.array([_poly(MOTION_A, t, 2), _poly(MOTION_B, t, 2)])
            np.testing.assert_allclose(form.accelerations(ref, q, qd, t, h).qdd, qdd,
                                       atol=1e-10)


def test_inverse_dynamics_fed_back_reproduces_the_trajectory():
    """Forward dynamics of the undriven pendulum with the inverse-dynamics torques as inputs
    (evaluated continuously) follows the prescribed motion."""
    m, ref = driven_double_pendulum()
    form = get_formulation("tmt")

    def rhs(t, y):
        _, h = efforts_as_inputs(m, t)
        return np.concatenate([y[2:], form.accelerations(ref, y[:2], y[2:], t, h).qdd])

    y0 = [MOTION_A[0], MOTION_B[0], MOTION_A[1], MOTION_B[1]]
    sol = solve_ivp(rhs, (0.0, 1.0), y0, method="DOP853", rtol=1e-11, atol=1e-12,
                    t_eval=np.linspace(0.0, 1.0, 11))
    assert sol.success
    np.testing.assert_allclose(sol.y[0], _poly(MOTION_A, sol.t), atol=1e-8)
    np.testing.assert_allclose(sol.y[1], _poly(MOTION_B, sol.t), atol=1e-8)


def test_driven_crane_effort_is_the_seed_cart_force():
    """Massless cart, prescribed x(t): the drive's effort is Q_x of seed 000 (vb1.9) row 1,
    also at phi = 0 where the seed's mass matrix is singular."""
    m = model("container_crane_driven")
    p = m.parameter_values
    r = simulate(m, 2.0, 0.1, formulation="tmt")
    assert abs(r["phi.angle"][0]) < 1e-15                   # starts at phi = 0
    w = 2 * math.pi * p["frequency"]
    for row in r[::4]:
        t, phi, phid = row["time"], row["phi.angle"], row["phi.rate"]
        xdd = p["amplitude"] * w * w * math.cos(w * t)
        phidd = (-p["g"] * math.sin(phi) - xdd * math.cos(phi)) / p["l"]    # row 2, Q_phi = 0
        Qx = p["m"] * xdd + p["m"] * p["l"] * (math.cos(phi) * phidd
                                                - phid ** 2 * math.sin(phi))
        assert row["cart_motion.effort"] == pytest.approx(Qx, rel=1e-9, abs=1e-8)


def test_inverse_dynamics_reactions_equal_the_forward_outputs():
    m = model("slider_crank")
    s = get_formulation("tmt").initial_state(m)
    dyn = get_formulation("tmt").accelerations(m, s.q, s.qd, 0.0, np.array([0.7]))
    inv = inverse_dynamics(m, 0.0, dyn.x, dyn.xd, dyn.xdd, {"drive.h": 0.7})
    out = dict(zip(output_names(m), output_values(m, State(0.0, s.q, s.qd, coords="joint"),
                                                  np.array([0.7]), "tmt")))
    for k, j in enumerate(m.joints):
        assert inv.reactions[k, 0] == pytest.approx(out[f"{j.name}.fx"], rel=1e-10, abs=1e-10)
        assert inv.reactions[k, 1] == pytest.approx(out[f"{j.name}.fy"], rel=1e-10, abs=1e-10)
    assert inv.residual < 1e-10


def test_argument_shapes_are_checked():
    m, _ = driven_double_pendulum()
    with pytest.raises(ValueError, match=r"expected x_guess of shape \(6,\), received \(5,\)"):
        kinematic_analysis(m, 0.0, np.zeros(5))
    with pytest.raises(ValueError, match=r"expected xdd of shape \(6,\), received \(3,\)"):
        inverse_dynamics(m, 0.0, np.zeros(6), np.zeros(6), np.zeros(3))
