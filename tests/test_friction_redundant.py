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
import math
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


# ---------------------------------------------------------------------- unsymmetric loads
# A box (tests/data/loaded_box.py: a = 0.2, b = 0.1, c = 0.05 m, m = 1 kg, its four bottom
# corners on a plane tilted by alpha about y) under a force F at a point of the box and a
# torque T about the plane's normal: at rest on four sticking corners the corner forces are
# the minimum-norm forces balancing the load, the least-squares solution f = A^+ w of the
# six equilibrium equations A f = w (numpy's, an independent reference of the rule: a free
# body has no joint to take up any part of them); beyond the sliding or tipping limit the
# box slides or tips as the closed forms say.
BOX = Path(__file__).resolve().parent / "data" / "loaded_box.py"
BOX_A, BOX_B, BOX_C = 0.2, 0.1, 0.05
HULL = [f"slope_hull_{i}" for i in (0, 2, 4, 6)]        # the bottom corners; 0, 2 at x < 0


def _box(loop, t_end=1.0, dt=0.1, **kw):
    model = load_model(BOX, **kw)
    assert [c.name for c in model.contacts if c.point[2] < 0] == HULL
    return model, simulate(model, t_end, dt, settings=LOOPS[loop])


def _rotation(e):
    """The rotation matrix of the Euler parameters e = (e0, e1, e2, e3)."""
    e0, e1, e2, e3 = e
    return np.array([
        [1 - 2 * (e2 * e2 + e3 * e3), 2 * (e1 * e2 - e0 * e3), 2 * (e1 * e3 + e0 * e2)],
        [2 * (e1 * e2 + e0 * e3), 1 - 2 * (e1 * e1 + e3 * e3), 2 * (e2 * e3 - e0 * e1)],
        [2 * (e1 * e3 - e0 * e2), 2 * (e2 * e3 + e0 * e1), 1 - 2 * (e1 * e1 + e2 * e2)]])


def _corner_forces(r, k, n):
    """(4, 3) the corners' contact forces on the box at output k, in world axes."""
    from fmu_mb.mechanics.friction import tangent_basis
    t1, t2 = tangent_basis(n)
    return np.array([r[f"{c}.force"][k] * n + r[f"{c}.ft1"][k] * t1 + r[f"{c}.ft2"][k] * t2
                     for c in HULL])


LOAD = {"alpha": 0.3, "mu": 0.6, "F": 1.5, "axis": "y", "px": 0.05, "py": 0.0, "pz": 0.025,
        "T": 0.05}


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_on_a_slope_under_an_off_centre_load_sticks_with_minimum_norm_forces(loop):
    """mu = 0.6 > tan(0.3); a force of 1.5 N across the slope at the front of the top face
    and a torque of 0.05 N m about the normal: at rest (< 1e-9 m, 1e-9 rad over 1 s); the
    normal forces sum to m g cos(alpha), the friction forces to (-F, m g sin alpha) across
    and up the slope, every corner inside its cone; the corner forces equal A^+ w to 1e-9."""
    model, r = _box(loop, **LOAD)
    al, m = LOAD["alpha"], 1.0
    n = np.array([math.sin(al), 0.0, math.cos(al)])
    for q in ("part.x", "part.y", "part.z", "part.alpha", "part.beta", "part.gamma"):
        assert np.abs(r[q] - r[q][0]).max() < 1e-9, q
    for c in HULL:
        assert set(r[f"{c}.state"]) == {1.0}, c
        assert np.all(np.hypot(r[f"{c}.ft1"], r[f"{c}.ft2"]) <= LOAD["mu"] * r[f"{c}.force"])
    np.testing.assert_allclose(sum(r[f"{c}.force"] for c in HULL), m * G * math.cos(al),
                               rtol=1e-9)
    np.testing.assert_allclose(sum(r[f"{c}.ft1"] for c in HULL), -LOAD["F"], rtol=1e-9)
    np.testing.assert_allclose(sum(r[f"{c}.ft2"] for c in HULL), m * G * math.sin(al),
                               rtol=1e-9)
    # the six equilibrium equations about the centre: A f = w
    pts = {c.name: np.array(c.point) for c in model.contacts}
    for k in range(len(r)):
        R = _rotation([r[f"part.e{i}"][k] for i in range(4)])
        arms = [R @ pts[c] for c in HULL]
        A = np.vstack([np.hstack([np.eye(3)] * 4),
                       np.hstack([np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]],
                                            [-p[1], p[0], 0]]) for p in arms])])
        F = R @ np.array([0.0, LOAD["F"], 0.0])
        arm_f = R @ np.array([LOAD["px"], LOAD["py"], LOAD["pz"]])
        w = -np.concatenate([F + np.array([0.0, 0.0, -m * G]),
                             np.cross(arm_f, F) + LOAD["T"] * (R @ np.array([0, 0, 1.0]))])
        f = _corner_forces(r, k, n)
        np.testing.assert_allclose(A @ f.ravel(), w, rtol=0, atol=1e-9)
        ref = np.linalg.lstsq(A, w, rcond=None)[0].reshape(4, 3)
        np.testing.assert_allclose(f, ref, rtol=0, atol=1e-9 * np.abs(ref).max())


def test_box_under_an_off_centre_load_compiled_loop_equals_python_loop():
    same_outputs(_box("compiled", **LOAD)[1], _box("python", **LOAD)[1])


HANDLE = {"alpha": 0.0, "mu": 0.8, "axis": "x", "px": 0.0, "py": 0.0, "pz": 0.175}
H = HANDLE["pz"] + BOX_C / 2                            # the force's height over the floor


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_pushed_at_a_height_below_the_tipping_limit_stays(loop):
    """A flat floor, a horizontal force F = 2 N at h = 0.2 m over it (tipping at
    m g a / (2 h) = 4.905 N, sliding at mu m g = 7.85 N): at rest, the back corners loaded
    with m g / 4 - F h / (2 a) and the front ones with m g / 4 + F h / (2 a), each corner's
    friction -F / 4 (the minimum-norm split: equal shares, no moment about y at the floor)."""
    F = 2.0
    _, r = _box(loop, F=F, **HANDLE)
    for q in ("part.x", "part.z", "part.beta"):
        assert np.abs(r[q] - r[q][0]).max() < 1e-9, q
    for i, c in enumerate(HULL):
        side = -1.0 if i < 2 else 1.0
        np.testing.assert_allclose(r[f"{c}.force"], G / 4 + side * F * H / (2 * BOX_A),
                                   rtol=1e-9)
        np.testing.assert_allclose(r[f"{c}.ft1"], -F / 4, rtol=1e-9)
        assert np.abs(r[f"{c}.ft2"]).max() < 1e-12
        assert set(r[f"{c}.state"]) == {1.0}, c


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_pushed_at_a_height_beyond_the_tipping_limit_tips(loop):
    """F = 6 N > 4.905 N (below the sliding limit 7.85 N): the back corners lift at once and
    the box turns about its front edge, sticking there: I_e beta'' = F h - m g (a/2 cos beta
    - c/2 sin beta), I_e = m (a^2 + c^2) / 3, against scipy's solution to 1e-8 rad."""
    from scipy.integrate import solve_ivp
    F = 6.0
    _, r = _box(loop, 0.2, 0.02, F=F, **HANDLE)
    Ie = (BOX_A ** 2 + BOX_C ** 2) / 3.0

    def rhs(t, y):
        b = y[0]
        return [y[1], (F * H - G * (BOX_A / 2 * math.cos(b) - BOX_C / 2 * math.sin(b))) / Ie]
    ref = solve_ivp(rhs, (0.0, 0.2), [0.0, 0.0], t_eval=r["time"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["part.beta"], ref.y[0], rtol=0, atol=1e-8)
    for c in HULL[:2]:                                   # the back corners lift
        assert np.all(r[f"{c}.active"][1:] == 0.0) and np.all(r[f"{c}.gap"][2:] > 0.0), c
    for c in HULL[2:]:                                   # the front ones stick, in the cone
        assert set(r[f"{c}.state"]) == {1.0}, c
        assert np.abs(r[f"{c}.slip1"]).max() < 1e-9
        assert np.all(np.hypot(r[f"{c}.ft1"], r[f"{c}.ft2"]) <= HANDLE["mu"] * r[f"{c}.force"])


SLIDE = {"alpha": 0.3, "mu": 0.6, "F": 4.0, "axis": "x", "px": 0.0, "py": 0.0, "pz": 0.0}


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_box_pushed_down_a_slope_beyond_the_sliding_limit_slides(loop):
    """F = 4 N down the slope at the centre: m g sin(alpha) + F > mu m g cos(alpha), so all
    four corners slip from the start and the box slides straight down the slope with
    g sin(alpha) + F / m - mu g cos(alpha); the normal forces still sum to m g cos(alpha)."""
    _, r = _box(loop, 0.3, 0.05, **SLIDE)
    al = SLIDE["alpha"]
    acc = G * math.sin(al) + SLIDE["F"] - SLIDE["mu"] * G * math.cos(al)
    t = r["time"]
    down = ((r["part.x"] - r["part.x"][0]) * math.cos(al)
            - (r["part.z"] - r["part.z"][0]) * math.sin(al))
    np.testing.assert_allclose(down, acc * t ** 2 / 2, rtol=1e-9, atol=1e-15)
    assert np.abs(r["part.y"]).max() < 1e-12 and np.abs(r["part.gamma"]).max() < 1e-12
    for c in HULL:
        assert set(r[f"{c}.state"][1:]) == {2.0}, c
    np.testing.assert_allclose(sum(r[f"{c}.force"] for c in HULL), G * math.cos(al), rtol=1e-9)
    np.testing.assert_allclose(sum(r[f"{c}.ft2"] for c in HULL)[1:],
                               SLIDE["mu"] * G * math.cos(al), rtol=1e-9)


@pytest.mark.parametrize("load", [HANDLE | {"F": 6.0}, SLIDE], ids=["tipping", "sliding"])
def test_box_tipping_or_sliding_compiled_loop_equals_python_loop(load):
    same_outputs(_box("compiled", 0.2, 0.02, **load)[1], _box("python", 0.2, 0.02, **load)[1])
