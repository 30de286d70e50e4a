"""Lagrange's equations from the energies: jets of x(q) against finite differences, the
kinetic energy identity, and hand-derived closed forms (seed 000 ch.1 ex.1, ch.2 ex.1)."""
import numpy as np
import pytest

from fmu_mb.mechanics.elements import kinetic_energy
from fmu_mb.dynamics.formulations import lagrange
from fmu_mb.mechanics.tree import tree_coordinates

from conftest import model, zoo
from test_seed_examples import double_pendulum_minimal
from test_tmt import crane_seed, reversed_tree

RNG = np.random.default_rng(4242)
CASES = {"double_pendulum": lambda: model("double_pendulum"),
         "slider_crank": lambda: model("slider_crank"),
         "container_crane": lambda: model("container_crane"),
         "zoo": zoo, "reversed_tree": reversed_tree}


@pytest.mark.parametrize("name", CASES)
def test_jets_match_finite_differences(name):
    m = CASES[name]()
    n = len(tree_coordinates(m))
    q, qd = RNG.normal(size=n), RNG.normal(size=n)
    x, J, xd, Jd = lagrange.pose_jets(m, q, qd)
    eps = 1e-6
    J_fd = np.column_stack([(lagrange.pose_jets(m, q + eps * e, qd)[0]
                             - lagrange.pose_jets(m, q - eps * e, qd)[0]) / (2 * eps)
                            for e in np.eye(n)])
    Jd_fd = np.column_stack([(lagrange.pose_jets(m, q + eps * e, qd)[2]
                              - lagrange.pose_jets(m, q - eps * e, qd)[2]) / (2 * eps)
                             for e in np.eye(n)])
    np.testing.assert_allclose(J, J_fd, atol=1e-8)
    np.testing.assert_allclose(xd, J @ qd, atol=1e-13)
    np.testing.assert_allclose(Jd, Jd_fd, atol=1e-8)


@pytest.mark.parametrize("name", CASES)
def test_mass_matrix_is_the_kinetic_energy_hessian(name):
    m = CASES[name]()
    n = len(tree_coordinates(m))
    q, qd = RNG.normal(size=n), RNG.normal(size=n)
    M, *_ = lagrange.equations(m, q, qd, 0.0, np.zeros(len(m.inputs)))
    _, xd = lagrange.absolute(m, q, qd)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    assert 0.5 * qd @ M @ qd == pytest.approx(kinetic_energy(m, xd), rel=1e-13)


def test_double_pendulum_equations_are_the_closed_form():
    m = model("double_pendulum")
    p = m.parameter_values
    P = np.array([[1.0, 0.0], [1.0, 1.0]])
    for _ in range(5):
        q, qd, h = RNG.normal(size=2), RNG.normal(size=2), RNG.normal(size=2)
        M, rhs, *_ = lagrange.equations(m, q, qd, 0.0, h)
        Mr, Q = double_pendulum_minimal(P @ q, P @ qd, p["m1"], p["m2"], p["l1"], p["l2"],
                                        p["g"], h)
        np.testing.assert_allclose(M, P.T @ Mr @ P, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(rhs, P.T @ Q, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mc", [0.0, 37.0])
def test_container_crane_equations_equal_the_seed(mc):
    m = model("container_crane", mc=max(mc, 1e-9))
    p = m.parameter_values
    for _ in range(5):
        q, qd, Qx = RNG.normal(size=2) * 2, RNG.normal(size=2), RNG.normal() * 100
        M, rhs, *_ = lagrange.equations(m, q, qd, 0.0, np.array([Qx]))
        Ms, rhs_s = crane_seed(q, qd, Qx, p["m"], p["mc"], p["l"], p["g"])
        np.testing.assert_allclose(M, Ms, rtol=1e-13, atol=1e-9)
        np.testing.assert_allclose(rhs, rhs_s, rtol=1e-12, atol=1e-9)
