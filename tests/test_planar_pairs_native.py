"""Planar shape pairs in the engine (native/engine.c: the shape-pair records of the model data,
A_DPAIR) and with Coulomb friction in the compiled event loop (native/kernel.c: the pair's
slip row, its sticking rows R_PTAN, its sliding forces), so that a model with shape pairs
gets a native FMU.

Checked against independent references: the Python loop of formulation newton_euler
(absolute coordinates, fmu_mb.mechanics.planar_pairs and friction, the other formulation of
the same law) to 1e-9 at every communication point, the compiled loop, the engine (the native
FMU's code) step by step and the native FMI 2.0 and 3.0 FMUs in fmpy; closed forms: a
uniform disc thrown without spin on a table slips until t* = v0 / (3 mu g), then rolls at
2/3 v0; two discs meeting head-on exchange momenta by Newton's law (no slip, no friction
impulse); a disc sliding on the table keeps decelerating at mu g while another contact lands
(the sliding-friction solve after another contact's impact); corrupt shape-pair records
refused with a message."""
import math
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import Circle, ModelBuilder, Rectangle, Segment, load_model, simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.engine.data import EngineData, model_data, supported
from fmu_mb.engine.engine import Engine
from fmu_mb.engine.kernel import pair_data
from fmu_mb.errors import InputError
from conftest import engine_equals, same_outputs as _same  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "rolling_discs.py"
G = 9.81
REFERENCE = Settings(formulation="newton_euler")
COMPILED = Settings(formulation="recursive")


def _engine_run(model, ref, dt):
    """The engine (the native FMU's code) step by step against the outputs ref."""
    eng = Engine(model)
    eng.initialize()
    engine_equals(eng, ref, dt)


def _scene(kind, mu):
    """Two bodies with shapes a and b dropped on a ground rectangle (restitution 0.5,
    friction mu at every pair)."""
    mb = ModelBuilder("scene", gravity=(0.0, -G))
    mb.shape(mb.ground, Rectangle((4.0, 0.2)), name="floor", position=(0.0, -0.1),
             restitution=0.5, friction=mu)
    lo = mb.body("lo", mass=2.0, inertia=0.05, position=(0.0, 0.2), angle=0.1)
    hi = mb.body("hi", mass=1.0, inertia=0.02, position=(0.1, 0.7), angle=0.6,
                 velocity=(-0.2, 0.0), angular_velocity=1.5)
    shapes = {"circle": Circle(0.12), "segment": Segment(0.5, 0.06),
              "rectangle": Rectangle((0.45, 0.18))}
    ka, kb = kind.split("-")
    mb.shape(lo, shapes[ka], name="a")
    mb.shape(hi, shapes[kb], name="b")
    return mb.build()


def _landing(pairs, mu=0.3, v0=3.0):
    """Disc b sliding on the table (speed v0, no spin) while disc a drops onto it from 2 cm:
    b's contact slides on through a's impact. pairs: circles on a ground rectangle (shape
    pairs), else point-line contacts."""
    mb = ModelBuilder("landing", gravity=(0.0, -G))
    a = mb.body("a", mass=1.5, inertia=0.0075, position=(0.0, 0.12), velocity=(0.8, 0.0),
                angular_velocity=-8.0)
    b = mb.body("b", mass=1.0, inertia=0.005, position=(1.0, 0.1), velocity=(v0, 0.0))
    if pairs:
        mb.shape(mb.ground, Rectangle((40.0, 0.4)), name="table", position=(1.0, -0.2),
                 friction=mu, restitution=0.5)
        mb.shape(a, Circle(0.1), name="disc_a")
        mb.shape(b, Circle(0.1), name="disc_b")
        mb.collide(a, b, False)
    else:
        mb.contact("disc_a_table_0", a, radius=0.1, restitution=0.5, friction=mu)
        mb.contact("disc_b_table_0", b, radius=0.1, restitution=0.5, friction=mu)
    return mb.build()


def test_the_engine_data_carry_the_pairs():
    """A model with shape pairs runs in the engine: the contacts' rows are R_PAIR (7)
    holding their record's index, the records those of the kernel (kernel.pair_data), the
    frictional pairs' mu in DCMU."""
    m = load_model(MODEL)
    assert {c.kind for c in m.contacts} == {"shape_pair"}
    assert supported(m) is None
    d = model_data(m)
    np.testing.assert_array_equal(d.array("DPAIR").reshape(-1, 19), pair_data(m))
    ci = d.array("ICON").reshape(-1, 3)
    assert (ci[:, 0] == 7).all()
    assert sorted(d.array("DCON").reshape(-1, 8)[:, 0]) == list(range(len(m.contacts)))
    np.testing.assert_array_equal(d.array("DCMU"), [c.friction for c in m.contacts])


@pytest.mark.parametrize("make, t_end, dt", [
    (lambda: load_model(MODEL), 1.5, 0.05),            # slip, roll, impact, bounce, stick
    (lambda: load_model(MODEL, mu=0.05, e=0.9, d=0.6), 1.5, 0.05),  # still slipping at b
    (lambda: _scene("segment-rectangle", 0.4), 0.8, 0.02),
    (lambda: _landing(True), 0.5, 0.02),
    (lambda: _landing(False), 0.5, 0.02),
], ids=["discs", "discs-slippery", "segment-rectangle", "landing-pairs",
        "landing-point-line"])
def test_compiled_loop_equals_the_python_loop(make, t_end, dt):
    """The compiled loop and the engine step by step equal the Python loop to 1e-9 at every
    communication point (impacts, stick-slip transitions, releases with friction)."""
    model = make()
    assert supported(model) is None
    ref = simulate(model, t_end, dt, settings=REFERENCE)
    res = simulate(model, t_end, dt, settings=COMPILED)
    _same(res, ref)
    _engine_run(model, ref, dt)


def test_the_events_happen():
    """The comparisons above pass through what they claim: in rolling_discs disc a slips
    then sticks, hits b (one impact), bounces off the table and lands again; b slips after
    the impact and then rolls."""
    r = simulate(load_model(MODEL), 1.5, 0.05, settings=COMPILED)
    a_t, b_t, ab = "disc_a_table_0", "disc_b_table_0", "disc_a_disc_b_0"
    assert r[f"{a_t}.state"][0] == 2.0 and r[f"{a_t}.state"][-1] == 1.0
    assert r[f"{ab}.impacts"][-1] == 1 and r[f"{a_t}.impacts"][-1] >= 1
    assert 2.0 in set(r[f"{b_t}.state"]) and r[f"{b_t}.state"][-1] == 1.0


@pytest.mark.parametrize("pairs", [True, False], ids=["pairs", "point-line"])
def test_sliding_goes_on_at_mu_g_while_another_contact_lands(pairs):
    """b slides at deceleration mu g (vx = v0 - mu g t, omega = -2 mu g t / r) from the start
    to t* = v0 / (3 mu g) = 0.34 s, through a's landing (an impact at about 0.064 s)."""
    mu, v0, r = 0.3, 3.0, 0.1
    res = simulate(_landing(pairs, mu, v0), 0.3, 0.01, settings=COMPILED)
    t = res["time"]
    assert res["disc_a_table_0.impacts"][-1] >= 1
    assert res["disc_b_table_0.state"][1:] == pytest.approx(2.0)
    assert res["b.vx"] == pytest.approx(v0 - mu * G * t, rel=1e-12, abs=1e-12)
    assert res["b.omega"] == pytest.approx(-2.0 * mu * G * t / r, rel=1e-12, abs=1e-12)


def test_disc_slips_then_rolls_at_two_thirds_in_the_engine():
    """rolling_discs' disc a in the engine: vx = v0 - mu g t and omega = -2 mu g t / r
    until t* = v0 / (3 mu g), then vx = 2/3 v0 = -r omega, its contact force m g."""
    m_, r, mu, v0 = 1.5, 0.1, 0.3, 1.2
    ts = v0 / (3 * mu * G)
    eng = Engine(load_model(MODEL))
    eng.initialize()
    names = list(simulate(load_model(MODEL), 0.01, 0.01, settings=COMPILED).dtype.names[1:])
    at = {n: i for i, n in enumerate(names)}
    dt, seen = 0.02, [0, 0]
    for k in range(1, 40):                      # to 0.78 s (b is hit at about 0.97 s)
        eng.do_step(dt)
        out, t = eng.outputs(), k * dt
        vx, w = out[at["a.vx"]], out[at["a.omega"]]
        if t < ts - 1e-9:
            seen[0] += 1
            assert vx == pytest.approx(v0 - mu * G * t, rel=1e-10)
            assert w == pytest.approx(-2 * mu * G * t / r, rel=1e-10)
        elif t > ts + 1e-9:
            seen[1] += 1
            assert vx == pytest.approx(2 * v0 / 3, rel=1e-10)
            assert w == pytest.approx(-2 * v0 / (3 * r), rel=1e-10)
            assert out[at["disc_a_table_0.state"]] == 1.0
        assert out[at["disc_a_table_0.force"]] == pytest.approx(m_ * G, rel=1e-10)
        assert out[at["a.y"]] == pytest.approx(r, abs=1e-12)
    assert min(seen) >= 5


def test_discs_meeting_head_on_in_the_engine_follow_newtons_law():
    """Two frictional discs flying head-on (both fall alike: no slip at the contact, no
    friction impulse): v1' = (P - m2 e (v1 - v2)) / (m1 + m2), v2' = (P + m1 e (v1 - v2)) /
    (m1 + m2), no spin."""
    m1, m2, e, v1, v2 = 1.0, 2.5, 0.6, 2.0, -0.5
    mb = ModelBuilder("discs", gravity=(0.0, -G))
    a = mb.body("a", mass=m1, inertia=0.01, position=(-0.5, 0.0), velocity=(v1, 0.0))
    b = mb.body("b", mass=m2, inertia=0.02, position=(0.5, 0.0), velocity=(v2, 0.0))
    mb.shape(a, Circle(0.1), name="sa", friction=0.4, restitution=e)
    mb.shape(b, Circle(0.1), name="sb", friction=0.4, restitution=e)
    m = mb.build()
    assert supported(m) is None
    ref = simulate(m, 0.6, 0.05, settings=REFERENCE)
    _engine_run(m, ref, 0.05)
    res = simulate(m, 0.6, 0.05, settings=COMPILED)
    _same(res, ref)
    t_hit = (1.0 - 0.2) / (v1 - v2)
    after = res["time"] > t_hit + 1e-9
    P = m1 * v1 + m2 * v2
    assert after.sum() >= 5
    assert res["a.vx"][after] == pytest.approx((P - m2 * e * (v1 - v2)) / (m1 + m2), abs=1e-12)
    assert res["b.vx"][after] == pytest.approx((P + m1 * e * (v1 - v2)) / (m1 + m2), abs=1e-12)
    assert np.abs(res["a.omega"]).max() < 1e-12 and np.abs(res["b.omega"]).max() < 1e-12
    assert res["sa_sb_0.impacts"][-1] == 1


def test_corrupt_pair_records_are_refused_with_a_message():
    """A shape-pair record with a feature id its pair has not, or a contact pointing past
    the records, is refused when the engine loads the data, naming what is wrong."""
    d = model_data(load_model(MODEL))
    off, cnt = d.slots["DPAIR"]
    for slot, value, what in ((off + 2, 5.0, "shape pair"),        # circle-rectangle: 1 id
                              (off, 0.5, "shape pair"),            # a kind not whole
                              (off + 4, math.nan, "shape pair"),
                              (d.slots["DCON"][0], 7.0, "record")):
        doubles = d.doubles.copy()
        doubles[slot] = value
        with pytest.raises(InputError, match=what):
            Engine(blob=EngineData(d.ints, doubles, d.slots, d.parameter_names,
                                   d.joint_names).to_bytes())
    Engine(blob=d.to_bytes()).initialize()                # the data themselves run


# ---------------------------------------------------------------------- native FMUs
@pytest.mark.slow
@pytest.mark.parametrize("fmi", ["2", "3"])
def test_native_fmu_equals_the_python_loop(tmp_path, fmi):
    """rolling_discs as a native FMU (the default build) in fmpy: every output equals the
    Python loop's to 1e-9; disc a rolls at 2/3 v0 after t* = v0 / (3 mu g)."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu

    if fmi == "3":
        from fmu_mb.fmi.native_fmi3 import build_model_fmu3 as build
    else:
        from fmu_mb.fmi.native_build import build_model_fmu as build
    out, kind, _ = build(MODEL, tmp_path, {})
    assert kind.startswith("native"), kind
    assert validate_fmu(str(out)) == []
    r = fmpy.simulate_fmu(str(out), stop_time=1.5, output_interval=0.05)
    ref = simulate(load_model(MODEL), 1.5, 0.05, settings=REFERENCE)
    _same(r, ref)
    v0, mu = 1.2, 0.3
    rolling = (r["time"] > v0 / (3 * mu * G) + 1e-9) & (r["time"] < 0.9)
    assert rolling.sum() >= 5
    assert r["a.vx"][rolling] == pytest.approx(2 * v0 / 3, rel=1e-9)
