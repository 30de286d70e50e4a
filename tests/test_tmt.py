"""TMT method: the tree transformation x = T(q), its Jacobian and convective terms against
finite differences; reduced equations against hand-derived closed forms (seed 000)."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, rod_inertia
from fmu_mb.dynamics.formulations import tmt
from fmu_mb.mechanics.tree import transform, tree_coordinates

from conftest import model, zoo
from test_seed_examples import double_pendulum_minimal

RNG = np.random.default_rng(77)


def reversed_tree():
    """Joints declared child-to-parent (placed side = the joint's child), a weld, a skewed
    prismatic and a point mass in the tree."""
    mb = ModelBuilder("reversed_tree", gravity=(0.4, -9.81))
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=0.5, inertia=0.02)
    c = mb.body("c", mass=0.3, inertia=0.0)
    d = mb.body("d", mass=0.2, inertia=0.01)
    mb.revolute("R", a, mb.ground, parent_point=(0.3, 0.1), child_point=(0.2, -0.1),
                angle0=0.2)
    mb.prismatic("P", b, a, axis=(0.6, -0.8), parent_point=(0.1, 0.0),
                 child_point=(-0.2, 0.05), angle0=-0.3)
    mb.weld("W", b, c, parent_point=(0.1, 0.1), child_point=(0.0, 0.2), angle0=0.7)
    mb.revolute("Q", c, d, parent_point=(0.2, 0.0), child_point=(-0.1, 0.0))
    e = mb.body("e", mass=0.4, inertia=0.03, position=(2.0, 1.0), angle=0.3)
    mb.revolute("F", e, c, parent_point=(0.3, 0.1), child_point=(0.1, 0.1))
    mb.tsda("spring", mb.ground, d, a_point=(1.0, 1.0), stiffness=30.0, free_length=0.5,
            damping=0.4)
    mb.initial("R", value=0.4)
    mb.initial("P", value=0.15)
    mb.initial("Q", value=-0.6)
    return mb.build()


CASES = {"double_pendulum": lambda: model("double_pendulum"),
         "slider_crank": lambda: model("slider_crank"),
         "container_crane": lambda: model("container_crane"),
         "zoo": zoo, "reversed_tree": reversed_tree}


@pytest.mark.parametrize("name", CASES)
def test_jacobian_and_convective_term_match_finite_differences(name):
    m = CASES[name]()
    n = len(tree_coordinates(m))
    for _ in range(3):
        q, qd = RNG.normal(size=n), RNG.normal(size=n)
        x, xd, Tq, g = transform(m, q, qd)
        eps = 1e-6
        J = np.column_stack([(transform(m, q + eps * e, qd)[0]
                              - transform(m, q - eps * e, qd)[0]) / (2 * eps)
                             for e in np.eye(n)])
        g_fd = (transform(m, q + eps * qd, qd)[2] - transform(m, q - eps * qd, qd)[2]) \
            / (2 * eps) @ qd
        np.testing.assert_allclose(Tq, J, atol=1e-8)
        np.testing.assert_allclose(xd, Tq @ qd, atol=1e-14)
        np.testing.assert_allclose(g, g_fd, atol=1e-7)


@pytest.mark.parametrize("name", CASES)
def test_tree_joint_rows_hold_at_any_q(name):
    """T(q) satisfies every tree joint's constraint rows exactly, at position and velocity."""
    from fmu_mb.mechanics import constraints
    from fmu_mb.mechanics.tree import tree_map
    m = CASES[name]()
    tm = tree_map(m)
    tree_rows = np.setdiff1d(np.arange(m.compiled.n_rows), tm.cut_rows)
    q, qd = RNG.normal(size=tm.n), RNG.normal(size=tm.n)
    x, xd, Tq, g = transform(m, q, qd)
    phi, D, conv, _ = constraints.evaluate(m, x, xd, 0.0)
    np.testing.assert_allclose(phi[tree_rows], 0.0, atol=1e-14)
    np.testing.assert_allclose((D @ Tq)[tree_rows], 0.0, atol=1e-13)
    np.testing.assert_allclose((D @ g + conv)[tree_rows], 0.0, atol=1e-12)


def test_double_pendulum_reduced_mass_matrix_is_the_closed_form():
    m = model("double_pendulum")
    p = m.parameter_values
    P = np.array([[1.0, 0.0], [1.0, 1.0]])          # rod angles from joint angles
    for _ in range(5):
        q, qd, h = RNG.normal(size=2), RNG.normal(size=2), RNG.normal(size=2)
        Mbar, fbar, *_ = tmt.reduced_equations(m, q, qd, 0.0, h)
        M, Q = double_pendulum_minimal(P @ q, P @ qd, p["m1"], p["m2"], p["l1"], p["l2"],
                                       p["g"], h)
        np.testing.assert_allclose(Mbar, P.T @ M @ P, rtol=1e-13, atol=1e-15)
        # fbar = P' (Q - M Pd qd) with Pd = 0: the joint-angle map is linear
        np.testing.assert_allclose(fbar, P.T @ Q, rtol=1e-12, atol=1e-12)


def crane_seed(q, qd, Qx, m, mc, l, g):
    """Seed 000 (vb1.9), with the cart mass mc added to M11 (the erratum in seeds/README)."""
    x, phi = q
    M = np.array([[m + mc, m * l * np.cos(phi)], [m * l * np.cos(phi), m * l ** 2]])
    rhs = np.array([Qx + m * l * qd[1] ** 2 * np.sin(phi), -m * g * l * np.sin(phi)])
    return M, rhs


@pytest.mark.parametrize("mc", [0.0, 37.0])
def test_container_crane_equations_equal_the_seed(mc):
    m = model("container_crane", mc=max(mc, 1e-9))
    p = m.parameter_values
    assert tree_coordinates(m) == ("x.position", "phi.angle")
    for _ in range(5):
        q, qd, Qx = RNG.normal(size=2) * 2, RNG.normal(size=2), RNG.normal() * 100
        Mbar, fbar, *_ = tmt.reduced_equations(m, q, qd, 0.0, np.array([Qx]))
        M, rhs = crane_seed(q, qd, Qx, p["m"], p["mc"], p["l"], p["g"])
        np.testing.assert_allclose(Mbar, M, rtol=1e-13, atol=1e-9)
        np.testing.assert_allclose(fbar, rhs, rtol=1e-12, atol=1e-9)


def test_floating_body_gets_its_own_coordinates():
    mb = ModelBuilder("free", gravity=(0.0, -9.81))
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0), position=(0.3, 2.0),
                  angle=0.4, velocity=(1.0, 0.5), angular_velocity=2.0)
    tip = mb.body("tip", mass=0.2, inertia=0.0)
    mb.revolute("hinge", rod, tip, parent_point=(0.5, 0.0))
    m = mb.build()
    assert tree_coordinates(m) == ("hinge.angle", "rod.x", "rod.y", "rod.phi")
    s = tmt.initial_state(m)
    np.testing.assert_allclose(s.q[1:], [0.3, 2.0, 0.4])
    np.testing.assert_allclose(s.qd[1:], m.xd0[0:3], rtol=1e-15)
    x, xd = tmt.absolute(m, s.q, s.qd)
    np.testing.assert_allclose(x, m.x0, atol=1e-12)
    np.testing.assert_allclose(xd, m.xd0, atol=1e-12)


def test_shape_check_names_the_coordinates():
    m = model("double_pendulum")
    with pytest.raises(ValueError, match=r"expected q and qd of shape \(2,\) \['A.angle'"):
        transform(m, np.zeros(3), np.zeros(3))


def test_singular_reduced_mass_matrix_without_drive_raises():
    """Seed 000 (vb1.9) as printed: massless cart, no drive, phi = 0 and Q_x != 0 has no
    solution (det M = m^2 l^2 sin^2 phi = 0)."""
    from fmu_mb import SingularSystemError
    mb = ModelBuilder("massless_cart")
    cart = mb.body("cart", mass=0.0, inertia=0.0)
    load = mb.body("load", mass=2.0, inertia=0.0, position=(0.0, -1.0))
    mb.prismatic("x", mb.ground, cart)
    mb.revolute("phi", cart, load, child_point=(0.0, 1.0))
    mb.force("cart_force", cart, input="Q_x")
    m = mb.build()
    s = tmt.initial_state(m)
    with pytest.raises(SingularSystemError, match="reduced mass matrix is singular"):
        tmt.accelerations(m, s.q, s.qd, 0.0, np.array([1.0]))
    # away from phi = k pi the same model is regular
    qdd = tmt.accelerations(m, np.array([0.0, 0.3]), s.qd, 0.0, np.array([1.0])).qdd
    M, rhs = crane_seed([0.0, 0.3], s.qd, 1.0, 2.0, 0.0, 1.0, 9.81)
    np.testing.assert_allclose(qdd, np.linalg.solve(M, rhs), rtol=1e-10)
