"""Redundant frictional contacts passing between stick and slip while their load changes: the
four bottom corners of a box (a Box shape against a Plane) on

- the flat deck of tests/data/accel_deck.py driven with a rising acceleration jerk t
  (a = 0): carried along until jerk t = mu g, then slipping back relative to the deck with the
  acceleration -(jerk t - mu g), all four corners along -x;
- the swinging deck of tests/data/swing_deck.py with mu = 0.2 < tan(tilt): the box slides,
  stops, sticks, and slips again as the deck swings back.

The less loaded corners reach their cones first and slip at rest (held by the others) along
the tendency of their sticking force; mirror-image corners leave together; the slip -> stick
event arms once a slip is under way (docs/contacts-friction.md, "Redundant contacts"). Both
loops run through every transition (no Zeno guard), with no yaw, the energy balanced by the
sliding loss, and the compiled loop equal to the Python loop to 1e-9."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import load_model, simulate
from fmu_mb.dynamics.integrate import Settings

from conftest import same_outputs

DATA = Path(__file__).resolve().parent / "data"
G = 9.81
M_DECK, M_BOX, MU, JERK = 2.0, 0.5, 0.2, 10.0
CORNERS = [f"top_crate_{i}" for i in (0, 2, 4, 6)]      # the four bottom corners
BACK, FRONT = CORNERS[:2], CORNERS[2:]                  # at x = -a / 2, x = +a / 2
BOX_A, BOX_C = 0.1, 0.06                                # the box's length (x) and height
LOOPS = {"python": Settings(formulation="newton_euler"),
         "compiled": Settings(formulation="recursive")}


def _jerk_deck(loop, t_end=0.24, dt=0.01, **tols):
    model = load_model(DATA / "accel_deck.py", a=0.0, jerk=JERK, mu=MU)
    assert [c.name for c in model.contacts if c.point[2] < 0] == CORNERS
    return simulate(model, t_end, dt, settings=replace(LOOPS[loop], **tols))


def _swing_deck(loop, t_end, dt):
    model = load_model(DATA / "swing_deck.py", shape="box", mu=MU)
    assert [c.name for c in model.contacts if c.point[2] < 0] == CORNERS
    return simulate(model, t_end, dt, settings=LOOPS[loop])


def _no_yaw(r):
    """No slip across, no yaw beyond the integration's error (atol 1e-11: the sliding
    corners' directions damp a yaw, stiffly at low slip speeds)."""
    for q in ("part.y", "part.gamma", "part.wz"):
        assert np.abs(r[q]).max() < 1e-9, (q, np.abs(r[q]).max())


def _check_jerk_deck(r):
    """Closed forms: the friction m A (A the box's acceleration) at the corners' plane, c / 2
    below the centre of mass, loads the back corners (x < 0) with m (g + (c / a) A) / 4 each
    and the front ones with m (g - (c / a) A) / 4; the minimum-norm split gives every sticking
    corner the friction m A / 4, so the front corners reach their cones at
    t1 = mu g / (jerk (1 + mu c / a)) and slip at rest (the back ones hold the box) until the
    box as a whole leaves its cone at t* = mu g / jerk and slips back relative to the deck.
    The drive's work equals the kinetic energy plus the corners' sliding loss."""
    t = r["time"]
    ts = MU * G / JERK
    t1 = ts / (1.0 + MU * BOX_C / BOX_A)
    slip = t > ts
    np.testing.assert_allclose(r["deck.x"], JERK * t ** 3 / 6, rtol=1e-12, atol=1e-15)
    rel = np.where(slip, -JERK * np.maximum(t - ts, 0.0) ** 3 / 6, 0.0)
    np.testing.assert_allclose(r["part.x"] - r["deck.x"], rel, rtol=1e-9, atol=1e-13)
    acc = np.minimum(JERK * t, MU * G)
    for c in BACK:
        assert set(r[f"{c}.state"][~slip]) == {1.0}, (c, r[f"{c}.state"])
        assert set(r[f"{c}.state"][slip]) == {2.0}, (c, r[f"{c}.state"])
        np.testing.assert_allclose(r[f"{c}.force"][1:],
                                   M_BOX * (G + BOX_C / BOX_A * acc[1:]) / 4, rtol=1e-9)
    for c in FRONT:
        assert set(r[f"{c}.state"][t < t1]) == {1.0}, (c, r[f"{c}.state"])
        assert set(r[f"{c}.state"][t > t1]) == {2.0}, (c, r[f"{c}.state"])
        np.testing.assert_allclose(r[f"{c}.force"][1:],
                                   M_BOX * (G - BOX_C / BOX_A * acc[1:]) / 4, rtol=1e-9)
        # slipping at rest before t*: the friction mu f_n along +x, no slip
        held = (t > t1) & ~slip
        assert held.any()
        np.testing.assert_allclose(r[f"{c}.ft1"][held], MU * r[f"{c}.force"][held],
                                   rtol=1e-9)
        assert np.abs(r[f"{c}.slip1"][held]).max() < 1e-12
    _no_yaw(r)
    np.testing.assert_allclose(sum(r[f"{c}.force"] for c in CORNERS), M_BOX * G, rtol=1e-9)
    np.testing.assert_allclose(sum(r[f"{c}.ft1"] for c in CORNERS)[slip], MU * M_BOX * G,
                               rtol=1e-9)
    work = ((M_DECK + M_BOX) * JERK ** 2 * np.minimum(t, ts) ** 4 / 8
            + np.where(slip, M_DECK * JERK ** 2 * (t ** 4 - ts ** 4) / 8
                       + MU * M_BOX * G * JERK * (t ** 3 - ts ** 3) / 6, 0.0))
    loss = sum(r[f"{c}.slide_loss"] for c in CORNERS)
    np.testing.assert_allclose(r["energy.kinetic"] + r["energy.potential"]
                               - r["energy.potential"][0] + loss, work, rtol=1e-9, atol=1e-12)


def test_box_on_a_jerked_deck_compiled_loop():
    _check_jerk_deck(_jerk_deck("compiled"))


@pytest.mark.slow
def test_box_on_a_jerked_deck_python_loop_equals_compiled_loop():
    """Through both cone exits and the start of the slip. Tolerances rtol 1e-11, atol 1e-13:
    just after t* the slip is slow and the turning of its direction stiff, so the quantities
    that vanish by symmetry (the corners' ft2, the rail's fy and tz) carry the integration's
    noise, ~1e-9 N with the default atol 1e-11 (independent in the two loops), ~1e-10 N with
    these."""
    tight = {"rtol": 1e-11, "atol": 1e-13}
    p = _jerk_deck("python", 0.22, 0.02, **tight)
    _check_jerk_deck(p)
    same_outputs(_jerk_deck("compiled", 0.22, 0.02, **tight), p)


def _check_swing(r):
    """The mirror-image corners share their state, no yaw; no impact: the mechanical energy
    lost equals the corners' sliding loss."""
    st = {c: r[f"{c}.state"] for c in CORNERS}
    np.testing.assert_array_equal(st["top_crate_0"], st["top_crate_2"])
    np.testing.assert_array_equal(st["top_crate_4"], st["top_crate_6"])
    _no_yaw(r)
    loss = sum(r[f"{c}.slide_loss"] for c in CORNERS)
    assert loss[-1] > 0.0
    energy = r["energy.kinetic"] + r["energy.potential"] + loss
    np.testing.assert_allclose(energy, energy[0], rtol=0.0, atol=1e-7)
    return st


def test_swing_deck_box_compiled_loop_runs_through_its_transitions():
    """mu = 0.2: the box slides, stops (all four corners stick), the less loaded pair slips at
    rest, then the whole box slides again, and later once more: no Zeno guard over 1 s."""
    r = _swing_deck("compiled", 1.0, 0.05)
    st = _check_swing(r)
    assert (st["top_crate_0"] == 1.0).any() and (st["top_crate_0"] == 2.0).any()
    mixed = st["top_crate_0"] != st["top_crate_4"]      # one pair sticks, one slips at rest
    assert mixed.any()


@pytest.mark.slow
def test_swing_deck_box_python_loop_equals_compiled_loop():
    """Over the stop, the stick and the staggered slip of the two pairs (0.31 s to 0.35 s)."""
    p = _swing_deck("python", 0.36, 0.02)
    c = _swing_deck("compiled", 0.36, 0.02)
    _check_swing(p)
    same_outputs(c, p)
