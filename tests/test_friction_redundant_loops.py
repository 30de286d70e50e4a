"""Redundant contacts on a body of a closed loop: the deck of a parallelogram (four revolute
joints about y, one of them cut) resting on a floor (tests/data/floor_deck.py), its pad's
corners (four in 3-D, two in 2-D) in persistent contact. The loop is wedged: the floor's
normal forces alone hold it, so both the split of the load between the corners and between
the corners and the joints is the minimum-norm rule's: the contacts' multipliers of minimum
norm, every joint (tree or cut) taking up the rest (docs/contacts-friction.md, "Redundant
rows"). The same rule in both loops: the Python loop (newton_euler, every joint a row,
linalg.contact_split) and the compiled loop (recursive: tree joints eliminated, the cut
joint's rows in the solve, native/dense.h dense_contact_split), whichever joint the tree cuts.

Closed forms (virtual work on the mechanism's one coordinate, the links' angle theta; the
deck moves along v = L (cos theta, sin theta) per unit rate; the gravity of the deck and of
the links' halves, m_g = m_deck + m_link, gives the generalised force g L m_g sin theta; n
corners), at rest for all t:

- sticking (mu >= cot theta): the minimum-norm corner forces are parallel to v, each
  phi (cos theta, sin theta) with phi = g m_g sin(theta) / n (the limit of equally stiff,
  isotropic contact compliances under rigid joints);
- mu < cot theta: every corner slips at rest (its sticking force would leave its cone) with
  the friction mu f_n, f_n = g m_g sin(theta) / (n (sin theta + mu cos theta));
- frictionless: f_n = g m_g / n."""
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import load_model, simulate
from fmu_mb.dynamics.integrate import Settings

from conftest import engine_equals, same_outputs

DECK = Path(__file__).resolve().parent / "data" / "floor_deck.py"
G, TILT = 9.81, 0.4
M_G = 2.0 + 0.3                                   # the deck and the links' halves
LOOPS = {"python": Settings(formulation="newton_euler"),
         "compiled": Settings(formulation="recursive")}
CORNERS = {"3d": [f"floor_pad_{i}" for i in (0, 2, 4, 6)],
           "2d": ["floor_pad_0", "floor_pad_2"]}


def _run(loop, dim, cut="hinge1", t_end=0.5, dt=0.05, **kw):
    model = load_model(DECK, dim=dim, cut=cut, tilt=TILT, **kw)
    assert model.topology.cut_joints == (cut,)
    bottom = [c.name for c in model.contacts
              if (c.point[2] if dim == "3d" else c.point[1]) < 0]
    assert bottom == CORNERS[dim]
    return simulate(model, t_end, dt, settings=LOOPS[loop])


def _friction_x(r, c, dim):
    """The corner's friction force on the deck along +x (3-D: t1 = +x; 2-D: t = -x)."""
    return r[f"{c}.ft1"] if dim == "3d" else -r[f"{c}.ft"]


def _at_rest(r, dim):
    for q in ("deck.x", "deck.z" if dim == "3d" else "deck.y"):
        assert np.abs(r[q] - r[q][0]).max() < 1e-9, q


@pytest.fixture(scope="module", params=["3d", "2d"])
def sticking(request):
    dim = request.param
    py = _run("python", dim, mu=3.0)
    return dim, py, {cut: _run("compiled", dim, cut, mu=3.0) for cut in ("hinge1", "hinge0")}


def test_sticking_corners_carry_the_minimum_norm_forces(sticking):
    dim, py, comp = sticking
    n = len(CORNERS[dim])
    phi = G * M_G * math.sin(TILT) / n
    for r in (py, *comp.values()):
        _at_rest(r, dim)
        for c in CORNERS[dim]:
            assert set(r[f"{c}.state"]) == {1.0}, c
            np.testing.assert_allclose(r[f"{c}.force"], phi * math.sin(TILT), rtol=1e-9)
            np.testing.assert_allclose(_friction_x(r, c, dim), phi * math.cos(TILT), rtol=1e-9)
            if dim == "3d":
                assert np.abs(r[f"{c}.ft2"]).max() < 1e-9
            ft = np.abs(_friction_x(r, c, dim))
            assert np.all(ft <= 3.0 * r[f"{c}.force"])


def test_sticking_corners_compiled_loop_equals_python_loop_whichever_joint_is_cut(sticking):
    """Every output, the joints' reactions included, to 1e-9."""
    dim, py, comp = sticking
    for r in comp.values():
        same_outputs(r, py)


@pytest.mark.parametrize("dim", ["3d", "2d"])
def test_corners_slip_at_rest_below_cot_tilt(dim):
    mu = 1.0                                      # < cot(0.4) = 2.37
    n = len(CORNERS[dim])
    s, c = math.sin(TILT), math.cos(TILT)
    fn = G * M_G * s / (n * (s + mu * c))
    py = _run("python", dim, "hinge0", mu=mu, t_end=0.2)
    comp = _run("compiled", dim, "hinge0", mu=mu, t_end=0.2)
    for r in (py, comp):
        _at_rest(r, dim)
        for k in CORNERS[dim]:
            assert set(r[f"{k}.state"]) == {2.0}, k
            np.testing.assert_allclose(r[f"{k}.force"], fn, rtol=1e-9)
            np.testing.assert_allclose(_friction_x(r, k, dim), mu * fn, rtol=1e-9)
    same_outputs(comp, py)


@pytest.mark.parametrize("dim", ["3d", "2d"])
def test_frictionless_corners_share_the_load_equally(dim):
    """Landed from 0.1 mm, then at rest (from gap 0: the next test)."""
    n = len(CORNERS[dim])
    py = _run("python", dim, "hinge0", mu=0.0, gap=1e-4, t_end=0.2)
    comp = _run("compiled", dim, "hinge0", mu=0.0, gap=1e-4, t_end=0.2)
    for r in (py, comp):
        _at_rest(r[1:], dim)
        for k in CORNERS[dim]:
            np.testing.assert_allclose(r[f"{k}.force"][1:], G * M_G / n, rtol=1e-9)
    same_outputs(comp, py)


@pytest.mark.parametrize("dim,mu", [("3d", 3.0), ("2d", 3.0), ("3d", 0.0)])
def test_deck_landing_on_the_floor(dim, mu):
    """Released gap = 0.1 mm above the floor, the deck lands at theta_l (L cos theta_l =
    L cos theta_0 + gap) with the rate theta' of the energy balance J theta'^2 / 2 =
    g m_g gap (J = m_deck L^2 + 2 (I_link + m_link L^2 / 4), constant on a parallelogram);
    the inelastic impact stops the loop (its normal rows lock it): every corner loses
    g m_g gap / n, and receives the minimum-norm impulse: sticking, parallel to the motion,
    psi (cos theta_l, sin theta_l) with n psi L = J theta'; frictionless, the normal impulse
    J theta' / (n L sin theta_l). Then at rest with the forces of the tests above."""
    gap, n = 1e-4, len(CORNERS[dim])
    J = 2.0 * 0.3 ** 2 + 2.0 * (2e-3 + 0.3 * 0.3 ** 2 / 4.0)
    rate = math.sqrt(2.0 * G * M_G * gap / J)
    th = math.acos(math.cos(TILT) + gap / 0.3)
    pn = J * rate / (n * 0.3) * (math.sin(th) if mu > 0.0 else 1.0 / math.sin(th))
    py = _run("python", dim, "hinge0", mu=mu, gap=gap, t_end=0.1)
    comp = _run("compiled", dim, "hinge0", mu=mu, gap=gap, t_end=0.1)
    for r in (py, comp):
        for k in CORNERS[dim]:
            assert r[f"{k}.impacts"][-1] == 1.0, k
            np.testing.assert_allclose(r[f"{k}.last_impulse"][-1], pn, rtol=1e-8)
            np.testing.assert_allclose(r[f"{k}.energy_loss"][-1], G * M_G * gap / n, rtol=1e-8)
        for q in ("deck.vx", "deck.vz" if dim == "3d" else "deck.vy"):
            assert abs(r[q][-1]) < 1e-12, q
    same_outputs(comp, py)


@pytest.mark.parametrize("dim,e", [("2d", 0.0), ("2d", 0.5), ("3d", 0.0)])
def test_deck_landing_from_a_centimetre(dim, e):
    """Released gap = 1 cm above the floor (sticking, mu = 3): the Python loop projects the
    landed state onto the loop, gap and sticking rows, which lock the deck, and accepts the
    rounding floor at which Newton stalls there as the compiled loop does
    (linalg.projection_done). The engine library (the native FMU's code) and the compiled loop
    equal the Python loop to 1e-9 over the landing and the rest; the total energy never grows
    (conserved in flight, the impacts dissipate with e < 1), and the inelastic landing
    (e = 0) stops the loop: the corners dissipate the whole potential drop g m_g gap.
    With e = 0.5 the deck bounces, so the rebound carries the impact time's error: at the
    default rtol 1e-9 the loops' (their steps differ: x against tree coordinates) are 2e-10 s
    and 4e-11 s (the converged time 0.122903684366 s), 3e-9 rad/s on the links' rates after
    it; at rtol 1e-12 both are within 4e-14 s of it."""
    from fmu_mb.engine.engine import Engine

    gap, dt = 0.01, 0.01
    tight = {} if e == 0.0 else {"rtol": 1e-12, "atol": 1e-14}
    loops = {k: replace(s, **tight) for k, s in LOOPS.items()}
    model = load_model(DECK, dim=dim, tilt=TILT, mu=3.0, gap=gap, e=e)
    py = simulate(model, 0.2, dt, settings=loops["python"])
    same_outputs(simulate(model, 0.2, dt, settings=loops["compiled"]), py)
    eng = Engine(model)
    eng.set_settings(loops["python"])
    eng.initialize()
    engine_equals(eng, py, dt)
    energy = py["energy.total"]
    assert np.all(np.diff(energy) <= 1e-9 * np.abs(energy).max())
    loss = sum(py[f"{c}.energy_loss"][-1] for c in CORNERS[dim])
    assert py[f"{CORNERS[dim][0]}.impacts"][-1] >= 1.0
    np.testing.assert_allclose(energy[0] - energy[-1], loss, rtol=1e-8)
    if e == 0.0:
        np.testing.assert_allclose(loss, G * M_G * gap, rtol=1e-8)
        assert abs(py["deck.vx"][-1]) < 1e-12
    else:
        assert 0.0 < loss < G * M_G * gap


@pytest.mark.parametrize("dim", ["2d", "3d"])
def test_contact_closed_and_approaching_at_the_start_is_an_impact_there(dim):
    """Frictionless corners at gap 0 approaching at the start: the impact is at t0 (the rule
    of a model exchange host's event iteration), not after a penetration of contact_tol that
    the sign of the assembled gap decided (2-D newton_euler: -5.6e-17 m with hinge1 cut, the
    impact at 1.7e-8 s; 1.7e-16 m with hinge0, at 1.3e-15 s). Newton's law on the one
    coordinate: the links' rate theta' = -0.5 rad/s becomes -e theta', each corner's impulse
    (1 + e) J |theta'| / (n L sin theta) and loss (1 - e^2) J theta'^2 / (2 n); the same for
    either cut, both loops and the engine library."""
    e, w, n, dt = 0.5, 0.5, len(CORNERS[dim]), 0.01
    J = 2.0 * 0.3 ** 2 + 2.0 * (2e-3 + 0.3 * 0.3 ** 2 / 4.0)
    # the links' angle turns the other way about the spatial model's y
    rate = -w if dim == "2d" else w
    vz = "deck.vy" if dim == "2d" else "deck.vz"

    def check(r):
        for c in CORNERS[dim]:
            assert r[f"{c}.impacts"][0] == 1.0 and r[f"{c}.last_time"][0] == 0.0, c
            assert r[f"{c}.active"][0] == 0.0, c
            np.testing.assert_allclose(r[f"{c}.last_impulse"][0], (1.0 + e) * J * w / (
                n * 0.3 * math.sin(TILT)), rtol=1e-9)
            np.testing.assert_allclose(r[f"{c}.energy_loss"][0],
                                       (1.0 - e * e) * J * w * w / (2.0 * n), rtol=1e-9)
        np.testing.assert_allclose((r["deck.vx"][0], r[vz][0]),
                                   e * w * 0.3 * np.array([math.cos(TILT), math.sin(TILT)]),
                                   rtol=1e-9)
    _every_cut_and_loop(check, dim, 0.02, dt, mu=0.0, gap=0.0, e=e, rate=rate)


def _every_cut_and_loop(check, dim, t_end, dt, **kw):
    """check(r) on the results of the model (dim, kw) whichever joint is cut, in both loops;
    they and the engine library (the native FMU's code) all equal to 1e-9."""
    from fmu_mb.engine.engine import Engine

    ref = None
    for cut in ("hinge1", "hinge0"):
        model = load_model(DECK, dim=dim, cut=cut, tilt=TILT, **kw)
        for loop in ("python", "compiled"):
            r = simulate(model, t_end, dt, settings=LOOPS[loop])
            check(r)
            ref = r if ref is None else ref
            same_outputs(r, ref)
        eng = Engine(model)
        eng.set_settings(LOOPS["python"])
        eng.initialize()
        engine_equals(eng, ref, dt)


@pytest.mark.parametrize("dim", ["2d", "3d"])
def test_frictionless_corners_closed_at_rest_at_the_start_stay_persistent(dim):
    """Frictionless corners at gap 0 and at rest at the start, pressed by gravity: persistent
    from t0 (as frictional ones), no impact, the deck at rest, each corner carrying the
    share f_n = g m_g / n of the closed form (virtual work on the links' angle, module
    docstring); the same for either cut, both loops and the engine library. A free start
    would close them at an impact at the time where the rounding-size gap of the assembly
    closes (3.6e-5 s; 2-D with hinge0 cut, 4e-9 s to 6e-9 s by the loop). Released moving
    away from the floor (gap rate above contact_velocity) they start free: no impact."""
    n = len(CORNERS[dim])
    vz = "deck.vy" if dim == "2d" else "deck.vz"

    def check(r):
        for c in CORNERS[dim]:
            assert set(r[f"{c}.impacts"]) == {0.0} and set(r[f"{c}.active"]) == {1.0}, c
            np.testing.assert_allclose(r[f"{c}.force"], G * M_G / n, rtol=1e-9)
        assert max(abs(r["deck.vx"]).max(), abs(r[vz]).max()) < 1e-9
        _at_rest(r, dim)
    _every_cut_and_loop(check, dim, 0.1, 0.05, mu=0.0, gap=0.0)
    # the links' angle turns the other way about the spatial model's y
    model = load_model(DECK, dim=dim, tilt=TILT, mu=0.0, gap=0.0,
                       rate=0.5 if dim == "2d" else -0.5)
    for loop in ("python", "compiled"):
        r = simulate(model, 0.02, 0.01, settings=LOOPS[loop])
        for c in CORNERS[dim]:
            assert set(r[f"{c}.impacts"]) == {0.0} and set(r[f"{c}.active"]) == {0.0}, c
            assert r[f"{c}.gap"][0] == pytest.approx(0.0, abs=1e-12) and \
                (r[f"{c}.gap"][1:] > 1e-4).all(), c
