"""Model exchange of models with Coulomb friction at contacts (planar and spatial, FMI 2.0 and
3.0): the phase set (open / sticking / slipping with its slip direction per contact) is the
model-exchange instance's discrete state, the derivatives are the co-simulation phase's
constrained solve, and the event indicators carry each contact's stick/slip value (mu f_n -
|f_t| sticking, v_t . s0 slipping), whose zeros Event Mode handles with the co-simulation
event loop's transitions.

Checked against things that can disagree with it:
- the co-simulation interface of the same FMU (its own event loop: Brent on the dense output,
  dopri5 at rtol = atol = 1e-12, projection) against fmpy's CVode on the model-exchange states
  and indicators: every output at every output point, and the contacts' phase outputs;
- closed forms: the block on the incline stays put (mu > tan alpha) or slides with
  g (sin alpha - mu cos alpha) t^2 / 2; the rolling ball's slip ends at t* = 2 v0 / (7 mu g);
- the project's own C host (fixed-step RK4 and bisection of the indicators) on the ball.

The sliding loss outputs (<contact>.slide_loss: the co-simulation loop integrates mu f_n
s . v_t over its steps) are left out of the comparison: a model-exchange instance does not
integrate anything itself (the host integrates its states), so they stay at 0 there (as the
model-exchange page says).
"""
import math
import os
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
    pytest.skip("building native FMUs needs a C compiler", allow_module_level=True)

from fmpy import read_model_description, simulate_fmu  # noqa: E402

from conftest import MODELS, host_run  # noqa: E402

CS_TIGHT = {"solver.rtol": 1e-12, "solver.atol": 1e-12}
G = 9.81


@pytest.fixture(scope="module")
def fmus(session_fmus):
    """(model name, FMI version, overrides) -> its native FMU, built once per test run."""
    def get(name, fmi=2, **overrides):
        path = session_fmus(MODELS / f"{name}.py", fmi, "native", **overrides)
        assert path is not None, f"{name}: no FMI {fmi} native FMU"
        return str(path)
    return get


def compared(md):
    """The Real outputs but the sliding losses (integrated by the co-simulation loop only)."""
    return [v.name for v in md.modelVariables
            if v.causality == "output" and v.type in ("Real", "Float64")
            and not v.name.endswith(".slide_loss")]


def discrete(md):
    """The Integer outputs: the contacts' phases (<contact>.state: 0 apart, 1 sticking,
    2 slipping) and impact counts (<contact>.impacts), compared exactly."""
    return [v.name for v in md.modelVariables
            if v.causality == "output" and v.type in ("Integer", "Int32", "Int64")]


def run_both(path, rtol=1e-10, stop_time=None, extra=()):
    """(names: the Real outputs compared, ME rows at the co-simulation's output points, all
    ME rows, CS rows); the rows also hold the Integer outputs (discrete(md)), and at every
    output point these are the same in both runs."""
    md = read_model_description(path)
    interval = float(md.defaultExperiment.stepSize)
    names = compared(md) + list(extra)
    ints = discrete(md)
    assert any(n.endswith(".state") for n in ints), "no contact phase outputs"
    me = simulate_fmu(path, fmi_type="ModelExchange", solver="CVode", relative_tolerance=rtol,
                      output=names + ints, output_interval=interval, stop_time=stop_time)
    cs = simulate_fmu(path, fmi_type="CoSimulation", output=names + ints,
                      output_interval=interval, start_values=CS_TIGHT, stop_time=stop_time)
    assert cs["time"][-1] == pytest.approx(stop_time or float(md.defaultExperiment.stopTime))
    # the first row at a point: before an event there (the co-simulation's output at the end
    # of the step that reaches it)
    idx = [np.nonzero(np.isclose(me["time"], t, rtol=0.0, atol=1e-9))[0][0]
           for t in cs["time"]]
    for n in ints:
        assert np.array_equal(me[idx][n], cs[n]), n
    return names, me[idx], me, cs


def assert_agree(names, me, cs, tol=1e-6):
    """Every output within tol [SI], relative to the output's scale where it exceeds 1."""
    worst = []
    for n in names:
        scale = max(1.0, float(np.max(np.abs(cs[n]))))
        d = float(np.max(np.abs(me[n] - cs[n])))
        if not d <= tol * scale:
            worst.append((n, d, scale))
    assert not worst, f"model exchange and co-simulation differ: {sorted(worst)[:8]}"


def indicators(path):
    md = read_model_description(path)
    if md.fmiVersion.startswith("3"):
        return [v.name for v in md.modelVariables
                if v.name.endswith("_indicator") and v.causality == "local"]
    return md.numberOfEventIndicators


INCLINE = [pytest.param(0.5, 2, id="stays-fmi2"),
           pytest.param(0.5, 3, id="stays-fmi3", marks=pytest.mark.slow),
           pytest.param(0.2, 2, id="slides-fmi2", marks=pytest.mark.slow),
           pytest.param(0.2, 3, id="slides-fmi3", marks=pytest.mark.slow)]


@pytest.mark.parametrize("mu, fmi", INCLINE)
def test_incline_block(fmus, mu, fmi):
    """The box on the plane tilted by alpha = 0.3 (tan alpha = 0.309): mu = 0.5 holds it (its
    four corners stick), mu = 0.2 lets it slide from rest; model exchange agrees with
    co-simulation and both with the closed form."""
    path = fmus("incline_block", fmi, mu=mu)
    md = read_model_description(path)
    contacts = sorted({v.name.split(".")[0] for v in md.modelVariables
                       if v.name.startswith("slope_hull_") and v.name.endswith(".state")})
    assert len(contacts) == 8                 # the box's vertices
    # a gap or normal force and a friction value per contact, then the Euler parameters'
    # partition and chart
    if fmi == 2:
        assert indicators(path) == 2 * 8 + 2
    else:
        assert indicators(path) == ([f"{c}.event_indicator" for c in contacts] +
                                    [f"{c}.friction_indicator" for c in contacts] +
                                    ["partition.event_indicator", "chart.event_indicator"])
    names, me, _, cs = run_both(path)
    assert_agree(names, me, cs)
    alpha = 0.3
    t = cs["time"]
    s = 0.0 if mu > math.tan(alpha) else G * (math.sin(alpha) - mu * math.cos(alpha)) * t ** 2 / 2
    x0 = 0.05 / 2 * math.sin(alpha)
    z0 = 0.05 / 2 * math.cos(alpha)
    np.testing.assert_allclose(me["block.x"], x0 + s * math.cos(alpha), rtol=0, atol=1e-6)
    np.testing.assert_allclose(me["block.z"], z0 - s * math.sin(alpha), rtol=0, atol=1e-6)
    phase = 1.0 if mu > math.tan(alpha) else 2.0           # stick, slip
    corners = [c for c in contacts if cs[f"{c}.state"][0] != 0.0]
    assert len(corners) == 4                  # the bottom ones
    for c in contacts:
        assert np.all(me[f"{c}.state"] == (phase if c in corners else 0.0)), c
        assert np.array_equal(me[f"{c}.state"], cs[f"{c}.state"]), c


@pytest.mark.parametrize("fmi", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_rolling_ball_slip_ends_at_closed_form(fmus, fmi):
    """The ball thrown at v0 = 2 m/s without spin slips until t* = 2 v0 / (7 mu g) (mu = 0.3),
    then rolls at 5/7 v0: CVode's root of the friction indicator (the slip velocity along its
    direction) is t* to 1e-6 s, where Event Mode makes the contact stick; every output agrees
    with co-simulation."""
    path = fmus("rolling_ball", fmi)
    names, me, rows, cs = run_both(path)
    assert_agree(names, me, cs)
    state = rows["floor_shell_0.state"]
    assert state[0] == 2.0 and state[-1] == 1.0
    first = int(np.argmax(state == 1.0))
    t_star = 2 * 2.0 / (7 * 0.3 * G)
    assert abs(rows["time"][first] - t_star) < 1e-6
    assert np.all(state[first:] == 1.0)          # it rolls from there on
    assert abs(me["ball.vx"][-1] - 5.0 / 7.0 * 2.0) < 1e-6
    assert np.array_equal(me["floor_shell_0.state"], cs["floor_shell_0.state"])


@pytest.mark.slow
@pytest.mark.parametrize("fmi", [2, 3])
def test_tumbling_box_with_friction(fmus, fmi):
    """The tumbling box as a Box shape with mu = 0.3 at its corners: 67 impacts (the
    frictional impact law; 37 until 1.0 s, 30 in the final cascade) until its four bottom
    corners stick at 1.009 s (co-simulation, measured). Model exchange
    (CVode at rtol 1e-12: at 1e-10 its own error on box.vz reaches 1.4e-6) agrees with
    co-simulation at every output point: the motion, the contact forces, the phases and the
    impact counts over the whole experiment, the times and impulses of the impacts until
    1.0 s. The last impacts before the box comes to rest form a cascade whose intervals
    shrink from 10 ms to 0.1 ms (an accumulation of impacts that ends in persistent contact):
    there a difference of the impact times of 4e-9 s at 0.9993 s grows to 6e-6 s at 1.0092 s
    (the ill-conditioning of a grazing sequence, the same between co-simulation runs at
    different tolerances), while the state after it agrees to 1e-7."""
    path = fmus("tumbling_box", fmi, shape="box", mu=0.3)
    names, me, _, cs = run_both(path, rtol=1e-12)
    ints = discrete(read_model_description(path))
    impacts = [n for n in ints if n.endswith(".impacts")]
    states = [n for n in ints if n.endswith(".state")]
    assert len(impacts) == len(states) == 8                # the box's corners
    assert sum(cs[n][-1] for n in impacts) >= 40
    for n in impacts + states:
        assert np.array_equal(me[n], cs[n]), n
    records = [n for n in names if n.endswith((".last_time", ".last_impulse"))]
    assert_agree([n for n in names if n not in records], me, cs)
    before = cs["time"] <= 1.0 + 1e-9
    assert_agree(records, me[before], cs[before])
    assert sum(cs[n][-1] == 1 for n in states) == 4        # at rest, the bottom four sticking


# ------------------------------------------------------------------ the project's C host
def test_c_host_rolling_ball(fmus, me_host, tmp_path):
    """The C host's RK4 (exact on the slipping phase's constant accelerations) and bisection
    of the indicators' sign changes: the slip ends at t* = 2 v0 / (7 mu g) to 1e-9 s, the
    contact sticks from there, and the ball's motion agrees with co-simulation."""
    path = fmus("rolling_ball", 2)
    names = ["ball.x", "ball.vx", "ball.wy", "floor_shell_0.state"]
    rows, events = host_run(me_host, path, "rk4", 0.5, 1e-3, names, tmp_path)
    t_star = 2 * 2.0 / (7 * 0.3 * G)
    assert rows[-1, 0] == pytest.approx(0.5)
    assert min(abs(e - t_star) for e in events) < 1e-9
    assert np.all(rows[rows[:, 0] < t_star - 1e-9, 4] == 2.0)
    assert np.all(rows[rows[:, 0] > t_star + 1e-9, 4] == 1.0)
    cs = simulate_fmu(path, output=names, output_interval=1e-3, start_values=CS_TIGHT,
                      stop_time=0.5)
    for k, n in enumerate(names):
        assert np.max(np.abs(rows[:, 1 + k] - cs[n])) < 1e-6, n
