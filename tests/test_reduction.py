"""Drenovac's Reduction Method (seed 002) on the singular pendulum, against the classical
impact equations and closed forms."""
import math

import numpy as np
import pytest

from fmu_mb import ModelBuilder, advance, initial_state, simulate
from fmu_mb.dynamics import impact
from fmu_mb.errors import ImpactError

from conftest import model

G = 9.81


def first_impact_time(alpha0, gamma0, L=1.0, g=G):
    """The ball falls freely from rest at r0 = L (sin a + sin(a + c), -cos a - cos(a + c))
    until |r| = 2 L: (y0 - g t^2 / 2)^2 = 4 L^2 - x0^2."""
    x0 = L * (math.sin(alpha0) + math.sin(alpha0 + gamma0))
    y0 = -L * (math.cos(alpha0) + math.cos(alpha0 + gamma0))
    return math.sqrt(2 * (math.sqrt(4 * L * L - x0 * x0) + y0) / g)


def test_reduced_mass_matrix_and_criterion_match_the_seed():
    """Seed 002 eq. (1): M = m L^2 [[2 (1 + cos g), 1 + cos g], [1 + cos g, 1]];
    det M / (m L^2)^2 = sin^2 g."""
    m = model("singular_pendulum", m=2.0, L=0.7)
    mL2 = 2.0 * 0.49
    s = initial_state(m)
    for alpha, gamma in [(0.3, 1.2), (-0.4, 0.05), (1.0, -2.0)]:
        rod1 = np.array([0.35 * math.sin(alpha), -0.35 * math.cos(alpha), alpha - math.pi / 2])
        phi2 = alpha + gamma - math.pi / 2
        ball = np.array([0.7 * math.sin(alpha) + 0.7 * math.sin(alpha + gamma),
                         -0.7 * math.cos(alpha) - 0.7 * math.cos(alpha + gamma), phi2])
        x = np.concatenate([rod1, ball])
        assert s.q.shape == x.shape
        c = 1 + math.cos(gamma)
        np.testing.assert_allclose(impact.reduced_mass_matrix(m, x),
                                   mL2 * np.array([[2 * c, c], [c, 1.0]]), atol=1e-12)
        assert impact.criterion(m, x, 0) == pytest.approx(math.sin(gamma) ** 2, abs=1e-12)


@pytest.mark.parametrize("method", ["classical", "reduction"])
def test_first_impact_time(method):
    m = model("singular_pendulum", method=method, k=1.0)
    p = m.parameter_values
    t_c = first_impact_time(p["alpha0"], p["gamma0"])
    s = advance(m, initial_state(m), 0.6)
    c = s.extra["contacts"]["string"]
    assert c["impacts"] == 1
    if method == "classical":
        assert abs(c["last_time"] - t_c) < 1e-12
    else:
        # the pass starts at det M = d (gamma* = asin(sqrt(d)) = 0.01) and lasts
        # |gamma* / gamma'*| ~ 1.5e-5 s; the singular point is taken at its middle
        assert c["passes"] == 1
        assert abs(c["last_time"] - t_c) < 1e-7


def paths(k, t_end, d=1e-4):
    out = {}
    for method in ("classical", "reduction"):
        r = simulate(model("singular_pendulum", method=method, k=k, d=d), t_end, 0.01)
        out[method] = r
    diff = np.hypot(out["classical"]["ball.x"] - out["reduction"]["ball.x"],
                    out["classical"]["ball.y"] - out["reduction"]["ball.y"])
    return out, diff


@pytest.mark.parametrize("k", [0.0, 0.5, 1.0])
def test_reduction_and_classical_agree(k):
    """Seed 002 Fig. 4: both treatments give the same trajectory, up to the accuracy the
    criterion d = 1e-4 allows (gamma* = 0.01: the ball is 2 L sin^2(gamma*/4) ~ 2.5e-5 m
    inside the string length when a pass starts; the differences grow with each impact)."""
    out, diff = paths(k, 1.0)
    assert diff.max() < 1e-2
    red, cla = out["reduction"], out["classical"]
    assert red["string.impacts"][-1] == cla["string.impacts"][-1] or k < 1.0
    radius = np.hypot(red["ball.x"], red["ball.y"])
    assert radius.max() <= 2.0 + 1e-12
    if k == 0.0:        # plastic: the string stays taut after the first impact
        t_c = first_impact_time(math.radians(30), math.radians(90))
        after = red["time"] > t_c + 0.01
        assert np.abs(radius[after] - 2.0).max() < 1e-4
        assert red["string.active"][-1] == 1.0 and cla["string.active"][-1] == 1.0
    if k == 1.0:        # elastic: no energy lost by the classical impacts
        assert cla["string.energy_loss"][-1] < 1e-12


def test_smaller_criterion_brings_the_reduction_closer_to_classical():
    _, coarse = paths(1.0, 0.8, d=1e-2)
    _, fine = paths(1.0, 0.8, d=1e-4)
    assert fine.max() < 0.5 * coarse.max()


def test_reduction_needs_minimal_joint_coordinates():
    mb = ModelBuilder("loose")
    rod1 = mb.body("rod1", mass=0.0, inertia=0.0)
    ball = mb.body("ball", mass=1.0, inertia=0.0)
    mb.body("free", mass=1.0, inertia=1.0)
    mb.revolute("O", mb.ground, rod1, child_point=(-0.5, 0.0))
    mb.revolute("hinge", rod1, ball, parent_point=(0.5, 0.0), child_point=(-1.0, 0.0))
    mb.contact_points("string", mb.ground, ball, distance=2.0, side="within",
                      method="reduction", singular_joint="hinge")
    mb.initial("hinge", value=1.0)
    m = mb.build()
    with pytest.raises(ImpactError, match="the Reduction Method needs the joint coordinates "
                                          "to be a minimal set"):
        impact.criterion(m, initial_state(m).q, 0)
