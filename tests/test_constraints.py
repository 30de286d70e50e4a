"""Every joint, drive and element type: residual zero at a hand-made consistent state,
Jacobians against central finite differences, convective terms against finite differences of
D xd (seed 003's debugging advice), element forces against the potential energy."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, harmonic
from fmu_mb.mechanics import constraints
from fmu_mb.mechanics.elements import applied_forces, potential_energy

from conftest import zoo

RNG = np.random.default_rng(7)
EPS = 1e-6


def random_state(m):
    n = m.n_coordinates
    return RNG.normal(scale=0.7, size=n), RNG.normal(size=n), float(RNG.uniform(0, 3))


@pytest.mark.parametrize("trial", range(4))
def test_constraint_jacobian_matches_finite_differences(zoo_model, trial):
    m = zoo_model
    x, xd, t = random_state(m)
    _, D, _, _ = constraints.evaluate(m, x, xd, t)
    D_fd = np.empty_like(D)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = EPS
        phi_p = constraints.evaluate(m, x + e, xd, t)[0]
        phi_m = constraints.evaluate(m, x - e, xd, t)[0]
        D_fd[:, i] = (phi_p - phi_m) / (2 * EPS)
    np.testing.assert_allclose(D, D_fd, atol=1e-8)


@pytest.mark.parametrize("trial", range(4))
def test_convective_term_matches_finite_differences_of_D_xd(zoo_model, trial):
    """conv = d/dt (D xd + phi_t) along x(t) = x + xd t (xdd = 0)."""
    m = zoo_model
    x, xd, t = random_state(m)
    _, _, conv, _ = constraints.evaluate(m, x, xd, t)

    def phid(s):
        _, D, _, phi_t = constraints.evaluate(m, x + s * xd, xd, t + s)
        return D @ xd + phi_t

    conv_fd = (phid(EPS) - phid(-EPS)) / (2 * EPS)
    np.testing.assert_allclose(conv, conv_fd, atol=2e-7)


def test_phi_t_of_drive_matches_finite_differences(zoo_model):
    m = zoo_model
    x, xd, t = random_state(m)
    phi_t = constraints.evaluate(m, x, xd, t)[3]
    fd = (constraints.evaluate(m, x, xd, t + EPS)[0] - constraints.evaluate(m, x, xd, t - EPS)[0])
    np.testing.assert_allclose(phi_t, fd / (2 * EPS), atol=1e-8)
    assert np.count_nonzero(phi_t) == 1


def test_joint_coordinates_jacobian_rate_and_convective_term(zoo_model):
    m = zoo_model
    x, xd, _ = random_state(m)
    q, qd, J, conv = constraints.joint_coordinates(m, x, xd)
    np.testing.assert_allclose(qd, J @ xd, atol=1e-13)
    J_fd = np.empty_like(J)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = EPS
        J_fd[:, i] = (constraints.joint_coordinates(m, x + e, xd)[0]
                      - constraints.joint_coordinates(m, x - e, xd)[0]) / (2 * EPS)
    np.testing.assert_allclose(J, J_fd, atol=1e-8)

    def rate(s):
        return constraints.joint_coordinates(m, x + s * xd, xd)[1]

    np.testing.assert_allclose(conv, (rate(EPS) - rate(-EPS)) / (2 * EPS), atol=2e-7)


def test_conservative_element_forces_are_minus_gradient_of_potential():
    m = zoo(k=50.0)
    x, _, _ = random_state(m)
    zero = np.zeros_like(x)
    # drop the non-conservative parts: inputs zero, velocities zero; forces/torques with
    # constant value are not potential forces, so compare against a copy without them
    mb_f = applied_forces(m, x, zero, 0.0, np.zeros(len(m.inputs)))
    grad = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = EPS
        grad[i] = (potential_energy(m, x + e) - potential_energy(m, x - e)) / (2 * EPS)
    nonpot = _constant_loads(m, x)
    np.testing.assert_allclose(mb_f - nonpot, -grad, atol=1e-7)


def _constant_loads(m, x):
    """Generalised forces of the zoo's constant force and torque elements (by hand)."""
    f = np.zeros_like(x)
    b2, b3, b4, b1 = (m.body(n).index for n in ("b2", "b3", "b4", "b1"))
    # push: 1.5 N along body-fixed +y of b4 at (0.02, 0.01)
    phi = x[3 * b4 + 2]
    c, s = np.cos(phi), np.sin(phi)
    F = 1.5 * np.array([-s, c])
    r = np.array([c * 0.02 - s * 0.01, s * 0.02 + c * 0.01])
    f[3 * b4:3 * b4 + 3] += [F[0], F[1], r[0] * F[1] - r[1] * F[0]]
    # wind: 0.5 N along (1, 1)/sqrt(2) at the centre of b2
    f[3 * b2:3 * b2 + 2] += 0.5 / np.sqrt(2)
    # motor: 0.25 N.m on b3, reaction on b1
    f[3 * b3 + 2] += 0.25
    f[3 * b1 + 2] -= 0.25
    return f


def test_damper_and_actuator_terms():
    """TSDA s = k (l - l0) + c l' + h: with k = 0, the generalised force is -Dv'(c l' + h)."""
    mb = ModelBuilder("damper", gravity=(0.0, 0.0))
    b = mb.body("b", mass=1.0, inertia=0.1, position=(1.0, 0.0), velocity=(0.5, 0.0))
    mb.tsda("d", mb.ground, b, damping=2.0)
    mb.rsda("r", mb.ground, b, damping=3.0)
    m = mb.build()
    x = np.array([1.0, 0.0, 0.2])
    xd = np.array([0.5, 0.0, 0.4])
    f = applied_forces(m, x, xd, 0.0, np.array([0.7, -0.1]))
    s_t = 2.0 * 0.5 + 0.7        # tension along +x pulls the body towards the ground point
    s_r = 3.0 * 0.4 - 0.1
    np.testing.assert_allclose(f, [-s_t, 0.0, -s_r], atol=1e-14)


def hand_made(kind):
    """A two-body model with one joint of `kind` and a state that satisfies it by hand."""
    mb = ModelBuilder("hand", gravity=(0.0, 0.0))
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.weld("base", mb.ground, a)
    pa, pb = (0.3, 0.1), (-0.2, 0.05)
    phi_b = 0.7
    c, s = np.cos(phi_b), np.sin(phi_b)
    rb_point = np.array([c * pb[0] - s * pb[1], s * pb[0] + c * pb[1]])
    if kind == "revolute":
        mb.revolute("j", a, b, parent_point=pa, child_point=pb)
        rb = np.array(pa) - rb_point
    elif kind == "weld":
        mb.weld("j", a, b, parent_point=pa, child_point=pb, angle0=phi_b)
        rb = np.array(pa) - rb_point
    elif kind == "prismatic":
        mb.prismatic("j", a, b, axis=(0.6, 0.8), parent_point=pa, child_point=pb,
                     angle0=phi_b)
        rb = np.array(pa) + 0.4 * np.array([0.6, 0.8]) - rb_point
    elif kind == "distance":
        mb.distance("j", a, b, length=0.5, parent_point=pa, child_point=pb)
        rb = np.array(pa) + 0.5 * np.array([0.0, 1.0]) - rb_point
    m = mb.build()
    return m, np.array([0.0, 0.0, 0.0, rb[0], rb[1], phi_b])


@pytest.mark.parametrize("kind", ["revolute", "weld", "prismatic", "distance"])
def test_residual_is_zero_at_hand_made_consistent_state(kind):
    m, x = hand_made(kind)
    phi = constraints.evaluate(m, x, np.zeros(6), 0.0)[0]
    np.testing.assert_allclose(phi, 0.0, atol=1e-15)
    # and not zero when the child is moved
    assert np.abs(constraints.evaluate(m, x + [0, 0, 0, 0.01, 0.02, 0], np.zeros(6),
                                       0.0)[0]).max() > 1e-3


def test_prismatic_coordinate_by_hand():
    m, x = hand_made("prismatic")
    q = constraints.joint_coordinates(m, x, np.zeros(6))[0]
    assert q[0] == pytest.approx(0.4, abs=1e-15)


def test_drive_residual_zero_on_prescribed_motion():
    mb = ModelBuilder("driven", gravity=(0.0, 0.0))
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.revolute("j", mb.ground, b, child_point=(-0.5, 0.0))
    motion = harmonic(0.3, 2.0, phase=0.1, offset=0.2)
    mb.drive("d", "j", motion)
    m = mb.build()
    t = 0.37
    a = motion.value(t)
    x = np.array([0.5 * np.cos(a), 0.5 * np.sin(a), a])
    phi = constraints.evaluate(m, x, np.zeros(3), t)[0]
    np.testing.assert_allclose(phi, 0.0, atol=1e-15)
