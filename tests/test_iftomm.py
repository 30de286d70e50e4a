"""IFToMM benchmarks A01 (simple pendulum, models/simple_pendulum.py) and A03 (Andrews'
squeezing mechanism, models/andrews_squeezer.py) against their references: the pendulum's
closed form in Jacobi's elliptic functions, the squeezer's published solution at 0.03 s (the
Test Set for IVP Solvers, bench/references.py). A02 and A04 are in tests/test_loops.py and
tests/test_bricard.py."""
import sys

import numpy as np
import pytest

from fmu_mb import load_model, simulate

from conftest import MODELS, ROOT

sys.path.insert(0, str(ROOT / "bench"))
import references as R  # noqa: E402


def a01_error(formulation="auto"):
    """max |(x, y) - closed form| [m] of the bob over 10 s (0.01 s outputs), and the largest
    change of the total energy [J]."""
    r = simulate(load_model(MODELS / "simple_pendulum.py"), 10.0, 0.01, formulation=formulation)
    x, y = R.simple_pendulum(r["time"])
    E = r["energy.total"]
    return max(np.abs(r["bob.x"] - x).max(), np.abs(r["bob.y"] - y).max()), np.abs(E - E[0]).max()


def a03_error(formulation="auto"):
    """max |q - reference| [rad] of the seven coordinates at 0.03 s."""
    r = simulate(load_model(MODELS / "andrews_squeezer.py"), 0.03, 0.001,
                 formulation=formulation)
    q = R.andrews_coordinates([r[f"body{k}.phi"][-1] for k in range(1, 8)])
    return np.abs(q - np.array(R.ANDREWS_Q_AT_003)).max()


@pytest.mark.parametrize("formulation", ["auto", "newton_euler"])
def test_a01_simple_pendulum_follows_the_elliptic_closed_form(formulation):
    err, drift = a01_error(formulation)
    assert err < 1e-8
    # the total energy is kept to the solver's default relative tolerance (rtol = 1e-9) of
    # the pendulum's energy scale m g l = 9.81 J (measured: 2-3e-9 J with dopri5, the
    # default method's choice here)
    assert drift < 1e-9 * 9.81


def test_the_closed_form_is_not_the_small_angle_pendulum():
    """The reference can tell a wrong period: the linear pendulum's differs by 18 % here."""
    t = np.linspace(0.0, 10.0, 1001)
    x, _ = R.simple_pendulum(t)
    x_lin = np.sin(np.pi / 2 * np.cos(np.sqrt(9.81) * t))
    assert np.abs(x - x_lin).max() > 0.5
    assert np.abs(np.hypot(*R.simple_pendulum(t)) - 1.0).max() < 1e-14


def test_a03_andrews_squeezer_meets_the_test_set_solution():
    assert a03_error() < 1e-7


@pytest.mark.slow
def test_a03_andrews_squeezer_in_python_newton_euler():
    assert a03_error("newton_euler") < 1e-7


def test_a03_model_is_the_test_set_mechanism_at_its_initial_state():
    """Initial accelerations from rest (the Test Set's consistent initial values give
    betadd = 14222.44..., Thetadd = -10666.83..., the others 0) in Newton-Euler form, and
    the reaction at E between bodies 2 and 3 is the Test Set's (lambda1, lambda2)."""
    from fmu_mb.dynamics.formulations import get_formulation
    m = load_model(MODELS / "andrews_squeezer.py")
    assert m.topology.dof == 1
    ne = get_formulation("newton_euler")
    s = ne.initial_state(m)
    phidd = ne.accelerations(m, s.q, s.qd, 0.0, np.zeros(0)).qdd[2::3]
    qdd = R.andrews_coordinates(phidd)
    np.testing.assert_allclose(qdd, [14222.4439199541138705911625887,
                                     -10666.8329399655854029433719415, 0, 0, 0, 0, 0],
                               rtol=1e-10, atol=1e-8)
    r = simulate(m, 0.001, 0.001)
    np.testing.assert_allclose([r["E3.fx"][0], r["E3.fy"][0]],
                               [98.5668703962410896057654982170,
                                -6.12268834425566265503114393122], rtol=1e-10)
