"""Worked examples of seed 000 against hand-derived closed forms."""
import numpy as np
import pytest

from fmu_mb import Settings, initial_state, output_names, output_values
from fmu_mb.mechanics import constraints
from fmu_mb.mechanics import kinematics as kin
from fmu_mb.dynamics.formulations import newton_euler
from fmu_mb.mechanics.kinematics import PairSet

from conftest import model

RNG = np.random.default_rng(1234)


def double_pendulum_minimal(phi, phid, m1, m2, l1, l2, g, h=(0.0, 0.0)):
    """Hand-derived Lagrange equations of the double pendulum in absolute rod angles,
    gravity along +x (seed 000 example 1). h are the RSDA actuator terms (seed 003 sign)."""
    I1, I2 = m1 * l1 ** 2 / 12, m2 * l2 ** 2 / 12
    a = m2 * l1 * l2 / 2
    c12, s12 = np.cos(phi[0] - phi[1]), np.sin(phi[0] - phi[1])
    M = np.array([[m1 * l1 ** 2 / 4 + I1 + m2 * l1 ** 2, a * c12],
                  [a * c12, m2 * l2 ** 2 / 4 + I2]])
    Q = np.array([-g * (m1 * l1 / 2 + m2 * l1) * np.sin(phi[0]) - a * s12 * phid[1] ** 2,
                  -g * m2 * l2 / 2 * np.sin(phi[1]) + a * s12 * phid[0] ** 2])
    # RSDA A (ground-rod1) torque -h_A on rod1; RSDA B torque -h_B on rod2, +h_B on rod1
    Q += np.array([-h[0] + h[1], -h[1]])
    return M, Q


def seed_jacobian_and_convective_terms(x, xd, l1, l2):
    """The double pendulum's constraint Jacobian D (vb2.2) and convective terms (vb2.3) of
    seed 000 at absolute coordinates x, velocities xd."""
    s1, c1, s2, c2 = np.sin(x[2]), np.cos(x[2]), np.sin(x[5]), np.cos(x[5])
    D = np.array([
        [1, 0, l1 / 2 * s1, 0, 0, 0],
        [0, 1, -l1 / 2 * c1, 0, 0, 0],
        [-1, 0, l1 / 2 * s1, 1, 0, l2 / 2 * s2],
        [0, -1, -l1 / 2 * c1, 0, 1, -l2 / 2 * c2]])
    w1, w2 = xd[2], xd[5]
    conv = np.array([l1 / 2 * c1 * w1 ** 2, l1 / 2 * s1 * w1 ** 2,
                     l1 / 2 * c1 * w1 ** 2 + l2 / 2 * c2 * w2 ** 2,
                     l1 / 2 * s1 * w1 ** 2 + l2 / 2 * s2 * w2 ** 2])
    return D, conv


def test_double_pendulum_jacobian_and_convective_terms_match_seed():
    m = model("double_pendulum")
    l1, l2 = m.parameter("l1").value, m.parameter("l2").value
    for _ in range(5):
        x = RNG.normal(size=6)
        xd = RNG.normal(size=6)
        _, D, conv, _ = constraints.evaluate(m, x, xd, 0.0)
        D_seed, conv_seed = seed_jacobian_and_convective_terms(x, xd, l1, l2)
        np.testing.assert_allclose(D, D_seed, atol=1e-14)
        np.testing.assert_allclose(conv, conv_seed, atol=1e-13)


@pytest.mark.parametrize("phi1,phi2", [(0.3, 1.2), (-0.7, 2.5), (1.4, 1.4)])
def test_double_pendulum_accelerations_from_rest(phi1, phi2):
    m = model("double_pendulum", phi1=phi1, phi2=phi2)
    p = m.parameter_values
    s = initial_state(m, Settings(formulation="newton_euler"))
    dyn = newton_euler.accelerations(m, s.q, s.qd, 0.0, np.zeros(2))
    M, Q = double_pendulum_minimal([phi1, phi2], [0, 0], p["m1"], p["m2"], p["l1"], p["l2"],
                                   p["g"])
    np.testing.assert_allclose(dyn.qdd[[2, 5]], np.linalg.solve(M, Q), rtol=1e-12)
    # the centre-of-mass accelerations follow from the rod kinematics at rest
    a1 = dyn.qdd[2] * p["l1"] / 2 * np.array([-np.sin(phi1), np.cos(phi1)])
    np.testing.assert_allclose(dyn.qdd[0:2], a1, atol=1e-12)


def test_hinged_body_spring_elongation_and_jacobian():
    """Seed 000 example 3 at x = [l/2, 0, 0]: D_v = -l/6, D_v,i = [4/5, -3/5, -l/10]."""
    for l in (1.0, 0.37):
        ps = PairSet.make([1], [0], [(0.0, l / 2)], [(l / 6, 0.0)])   # ground is index nb = 1
        xe = np.array([l / 2, 0.0, 0.0, 0.0, 0.0, 0.0])
        length, J, _ = kin.distance(ps, xe, np.zeros(6))
        assert length[0] - l == pytest.approx(-l / 6, abs=1e-15)
        np.testing.assert_allclose(J[0, 3:], [4 / 5, -3 / 5, -l / 10], atol=1e-15)


def test_hinged_body_spring_force_transformation_matches_seed():
    """s = k D_v = -k l / 6 (compression), body force -D_v,i' s."""
    m = model("hinged_body_spring", g=0.0)
    l, k = m.parameter("l").value, m.parameter("k").value
    x = np.array([l / 2, 0.0, 0.0])
    from fmu_mb.mechanics.elements import applied_forces
    f = applied_forces(m, x, np.zeros(3), 0.0, np.zeros(1))
    np.testing.assert_allclose(f, -np.array([4 / 5, -3 / 5, -l / 10]) * (-k * l / 6),
                               atol=1e-13)


def test_statics_reactions_balance_applied_forces():
    """Seed 000 (vb2.4): with the rods held upright (phi = 90 deg) by the actuators, xdd = 0,
    f = D' lam, and the reactions are the hand-derived ones."""
    m = model("double_pendulum", phi1=np.pi / 2, phi2=np.pi / 2)
    p = m.parameter_values
    g, m1, m2, l1, l2 = p["g"], p["m1"], p["m2"], p["l1"], p["l2"]
    h = np.array([-(m1 * g * l1 / 2 + m2 * g * (l1 + l2 / 2)), -m2 * g * l2 / 2])
    s = initial_state(m, Settings(formulation="newton_euler"))
    dyn = newton_euler.accelerations(m, s.q, s.qd, 0.0, h)
    np.testing.assert_allclose(dyn.qdd, 0.0, atol=1e-12)
    from fmu_mb.mechanics.elements import applied_forces
    f = applied_forces(m, s.q, s.qd, 0.0, h)
    np.testing.assert_allclose(f, dyn.D.T @ dyn.lam, atol=1e-12)
    out = dict(zip(output_names(m), output_values(m, s, h)))
    assert out["A.fx"] == pytest.approx(-(m1 + m2) * g, rel=1e-12)
    assert out["A.fy"] == pytest.approx(0.0, abs=1e-12)
    assert out["B.fx"] == pytest.approx(-m2 * g, rel=1e-12)
    assert out["B.fy"] == pytest.approx(0.0, abs=1e-12)
