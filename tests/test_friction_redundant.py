"""Redundant frictional contacts starting to slip together: a box (four corners on the deck,
a Box shape against a Plane) on a flat deck driven along x with constant acceleration a
(tests/data/accel_deck.py), in the Python event loop (newton_euler) and in the compiled loop
(recursive), against the closed forms of Coulomb's law for the box as a whole:

- a > mu g: the box cannot follow; it slips from the start with the relative acceleration
  -(a - mu g) along x, all four corners slipping backwards along -x (no slip across, no yaw);
  the drive pushes with M a + mu m g, and its work equals the kinetic energy plus the
  sliding loss of the four corners;
- a < mu g: it sticks on all four corners and is carried along, the corners' friction forces
  summing to m a, the drive pushing with (M + m) a.

Both loops agree to 1e-9 on every output."""
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import load_model, simulate
from fmu_mb.dynamics.integrate import Settings

from conftest import same_outputs

DECK = Path(__file__).resolve().parent / "data" / "accel_deck.py"
G = 9.81
M_DECK, M_BOX, MU = 2.0, 0.5, 0.2
CORNERS = [f"top_crate_{i}" for i in (0, 2, 4, 6)]      # the four bottom corners
LOOPS = {"python": Settings(formulation="newton_euler"),
         "compiled": Settings(formulation="recursive")}


def _run(a, loop, t_end=0.5, dt=0.05):
    model = load_model(DECK, a=a, mu=MU)
    assert [c.name for c in model.contacts if c.point[2] < 0] == CORNERS
    return simulate(model, t_end, dt, settings=LOOPS[loop])


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_slips_back_on_a_deck_accelerating_beyond_mu_g(loop):
    a = 3.0
    r = _run(a, loop)
    t = r["time"]
    rel = a - MU * G                                     # the deck's lead: (a - mu g) t^2 / 2
    np.testing.assert_allclose(r["deck.x"], a * t ** 2 / 2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r["part.x"] - r["deck.x"], -rel * t ** 2 / 2, rtol=1e-9,
                               atol=1e-14)
    np.testing.assert_allclose(r["part.vx"], MU * G * t, rtol=1e-9, atol=1e-14)
    for c in CORNERS:                                    # every corner slips backwards
        assert set(r[f"{c}.state"]) == {2.0}, (c, r[f"{c}.state"])
        np.testing.assert_allclose(r[f"{c}.slip1"], -rel * t, rtol=1e-9, atol=1e-14)
        assert np.abs(r[f"{c}.slip2"]).max() < 1e-12
        assert np.all(r[f"{c}.ft1"] > 0.0)               # friction drives the box forward
        assert np.abs(r[f"{c}.ft2"]).max() < 1e-12
    np.testing.assert_allclose(sum(r[f"{c}.ft1"] for c in CORNERS), MU * M_BOX * G,
                               rtol=1e-9)
    np.testing.assert_allclose(sum(r[f"{c}.force"] for c in CORNERS), M_BOX * G, rtol=1e-9)
    for q in ("part.y", "part.gamma", "part.wz"):        # no slip across, no yaw
        assert np.abs(r[q]).max() < 1e-12, q
    np.testing.assert_allclose(r["push.effort"][1:], M_DECK * a + MU * M_BOX * G, rtol=1e-9)
    # energy: the drive's work F x_deck = kinetic energy + the corners' sliding loss
    work = (M_DECK * a + MU * M_BOX * G) * r["deck.x"]
    loss = sum(r[f"{c}.slide_loss"] for c in CORNERS)
    np.testing.assert_allclose(loss, MU * M_BOX * G * rel * t ** 2 / 2, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(r["energy.kinetic"] + r["energy.potential"]
                               - r["energy.potential"][0] + loss, work, rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_sticks_on_a_deck_accelerating_below_mu_g(loop):
    a = 1.0
    r = _run(a, loop)
    t = r["time"]
    assert np.abs(r["part.x"] - r["deck.x"]).max() < 1e-12
    np.testing.assert_allclose(r["part.vx"], a * t, rtol=1e-9, atol=1e-14)
    for c in CORNERS:
        assert set(r[f"{c}.state"]) == {1.0}, (c, r[f"{c}.state"])
        assert np.abs(r[f"{c}.slip1"]).max() < 1e-12
        assert np.abs(r[f"{c}.slide_loss"]).max() == 0.0
    ft = np.hypot(r["top_crate_0.ft1"], r["top_crate_0.ft2"])
    for c in CORNERS:                                    # inside every corner's cone
        assert np.all(np.hypot(r[f"{c}.ft1"], r[f"{c}.ft2"]) <= MU * r[f"{c}.force"])
    assert ft.max() > 0.0
    np.testing.assert_allclose(sum(r[f"{c}.ft1"] for c in CORNERS), M_BOX * a, rtol=1e-9)
    np.testing.assert_allclose(r["push.effort"][1:], (M_DECK + M_BOX) * a, rtol=1e-9)
    np.testing.assert_allclose(r["energy.kinetic"], (M_DECK + M_BOX) * (a * t) ** 2 / 2,
                               rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("a", [3.0, 1.0])
def test_accelerating_deck_compiled_loop_equals_python_loop(a):
    same_outputs(_run(a, "compiled"), _run(a, "python"))
