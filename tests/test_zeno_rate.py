"""The event loops' Zeno guard on the rate of events (integrate.ZENO_COUNT events of one
contact or frictional joint within integrate.ZENO_SPAN of simulated time; native/zeno.h
EV_ZENO_COUNT, EV_ZENO_SPAN): a slider rattling elastically in a 2 um clearance at 100 m/s
(one hit every 20 ns, too far apart for the 10 ns and 10 us windows of a model with 12
contacts) ends with the Zeno error at the closed-form time of its 10001st hit on one stop,
in C and in Python alike, also when the communication steps are shorter than the window
(the windows span calls); a restored earlier state restarts them (no counts from a future
it no longer has); the same slider at 1 m/s (one hit every 2 us) runs to its end, the
compiled loop equal to the Python loop, and at 10 m/s (2500 hits per ms on each stop, below
the bound) runs 5 ms of 0.1 ms steps, as do the bouncing ball and Newton's cradle."""
import time

import pytest

from conftest import MODELS, same_outputs
from fmu_mb import ModelBuilder, load_model, simulate
from fmu_mb.dynamics import integrate
from fmu_mb.dynamics.integrate import Settings, advance, initial_state
from fmu_mb.engine.engine import Engine
from fmu_mb.errors import IntegrationError

REFERENCE = Settings(formulation="newton_euler")
COMPILED = Settings(formulation="recursive")


def rattle(v, clearance, extra=5):
    """A slider (1 kg, no gravity) between two elastic stops at +-clearance [m] started at
    rate v [m/s] from the middle, and `extra` sliders at rest far from their stops (two joint
    limits each: 2 (extra + 1) contacts, which widen the guard's per-model windows)."""
    mb = ModelBuilder("rattle", gravity=(0.0, 0.0))
    for k in range(extra + 1):
        b = mb.body(f"b{k}", mass=1.0, inertia=0.1, position=(0.0, float(k)))
        mb.prismatic(f"s{k}", "ground", b, axis=(1.0, 0.0), parent_point=(0.0, float(k)))
        d = clearance if k == 0 else 1.0
        mb.joint_limit(f"lim{k}", f"s{k}", lower=-d, upper=d, restitution=1.0)
    mb.initial("s0", rate=v)
    return mb.build()


def upper_hit(k, v=100.0, clearance=1e-6):
    """The time of the k-th hit (from 1) on the upper stop: d / v, then every 4 d / v."""
    return clearance / v + (k - 1) * 4.0 * clearance / v


def test_the_compiled_loop_stops_a_fast_chatter_at_its_rate_bound():
    """12 contacts: the per-model windows need 1200 events within 10 us or 1200 within 10 ns
    of each other; the rattle makes 500 per 10 us, 20 ns apart, so only the rate bound stops
    it: at the upper stop's hit ZENO_COUNT + 1, after 0.4 ms of simulated time, in well under
    a second of CPU (without the bound it runs on, 5e5 events to 10 ms)."""
    assert integrate.ZENO_COUNT == 10000 and integrate.ZENO_SPAN == 1e-3
    model = rattle(100.0, 1e-6)
    t0 = time.process_time()
    with pytest.raises(IntegrationError, match=r"contact 'lim0_upper' switches state "
                                               r"endlessly at t = ([0-9.e-]+) s") as err:
        simulate(model, 1e-2, 1e-3, settings=COMPILED)
    cpu = time.process_time() - t0
    t_stop = float(err.value.args[0].split("at t = ")[1].split(" s")[0])
    assert abs(t_stop - upper_hit(10001)) < 1e-9 * 1e-3 + 1e-12
    assert cpu < 5.0


def test_the_python_loop_stops_a_fast_chatter_at_its_rate_bound(monkeypatch):
    """The Python loop's bound is the same rule (ZENO_COUNT lowered to 100 here: its events
    cost milliseconds each): the error at the upper stop's hit 101, 4.01 us."""
    monkeypatch.setattr(integrate, "ZENO_COUNT", 100)
    model = rattle(100.0, 1e-6)
    with pytest.raises(IntegrationError, match="contact 'lim0_upper' switches state "
                                               "endlessly") as err:
        simulate(model, 1e-3, 1e-4, settings=REFERENCE)
    t_stop = float(err.value.args[0].split("at t = ")[1].split(" s")[0])
    assert abs(t_stop - upper_hit(101)) < 1e-14


def test_a_rattle_below_the_rate_bound_runs_to_its_end():
    """At 1 m/s (500 hits per ms on each stop) the rattle runs 0.1 ms in both loops, equal to
    1e-9, with the closed-form number of hits and the speed kept (elastic stops)."""
    model = rattle(1.0, 1e-6)
    ref = simulate(model, 1e-4, 1e-5, settings=REFERENCE)
    res = simulate(model, 1e-4, 1e-5, settings=COMPILED)
    same_outputs(res, ref)
    # upper hits at 1, 5, 9, ... us; lower hits at 3, 7, 11, ... us: 25 each in 100 us
    assert ref["lim0_upper.impacts"][-1] == 25 and ref["lim0_lower.impacts"][-1] == 25
    assert abs(abs(ref["s0.rate"][-1]) - 1.0) < 1e-12


def stop_time(err):
    """The time of a Zeno error's message ('... at t = <t> s ...')."""
    return float(str(err.value).split("at t = ")[1].split(" s")[0])


def test_the_compiled_loop_counts_across_communication_steps():
    """Steps of 0.1 ms (2500 hits on each stop per step): the window of 1 ms spans the
    steps, so the rattle stops at the upper stop's hit 10001 as in one call."""
    with pytest.raises(IntegrationError, match="contact 'lim0_upper' switches state "
                                               "endlessly") as err:
        simulate(rattle(100.0, 1e-6), 1e-3, 1e-4, settings=COMPILED)
    assert abs(stop_time(err) - upper_hit(10001)) < 1e-12


def test_the_engine_counts_across_steps_and_a_restored_state_starts_again():
    """The compiled engine (mbe_do_step by 0.1 ms): the 5th step fails at the hit 10001
    (0.40001 ms) with the state of t = 0.4 ms kept. The state of 0.2 ms restored (after the
    windows counted to 0.4 ms) has no counts: its window starts at the next upper hit
    (5001, 0.20001 ms) and holds 10001 hits at hit 15001, 0.60001 ms."""
    eng = Engine(rattle(100.0, 1e-6))
    eng.set_settings(COMPILED)
    eng.initialize(0.0)
    for _ in range(2):
        eng.do_step(1e-4)
    saved = eng.get_state()
    for _ in range(2):
        eng.do_step(1e-4)
    with pytest.raises(IntegrationError, match="switches state endlessly") as err:
        eng.do_step(1e-4)
    assert abs(stop_time(err) - upper_hit(10001)) < 1e-12
    assert eng.time == pytest.approx(4e-4, abs=1e-15)
    eng.set_state(saved)
    for _ in range(4):
        eng.do_step(1e-4)
    with pytest.raises(IntegrationError, match="switches state endlessly") as err:
        eng.do_step(1e-4)
    assert abs(stop_time(err) - upper_hit(15001)) < 1e-12


def test_the_python_loop_counts_across_calls_and_a_restored_state_starts_again(monkeypatch):
    """The Python loop (ZENO_COUNT lowered to 50) in calls of 1 us (25 hits on each stop
    each): the error at the upper hit 51, 2.01 us, as in one call; from the state of 1 us
    restored after the calls to 2 us, the window starts at the hit 26 (1.01 us) and the
    error comes at the hit 76, 3.01 us."""
    monkeypatch.setattr(integrate, "ZENO_COUNT", 50)
    model = rattle(100.0, 1e-6)
    saved = advance(model, initial_state(model, REFERENCE), 1e-6, settings=REFERENCE)
    state = advance(model, saved, 2e-6, settings=REFERENCE)
    with pytest.raises(IntegrationError, match="contact 'lim0_upper' switches state "
                                               "endlessly") as err:
        advance(model, state, 3e-6, settings=REFERENCE)
    assert abs(stop_time(err) - upper_hit(51)) < 1e-14
    state = advance(model, saved, 2e-6, settings=REFERENCE)
    state = advance(model, state, 3e-6, settings=REFERENCE)
    with pytest.raises(IntegrationError, match="switches state endlessly") as err:
        advance(model, state, 4e-6, settings=REFERENCE)
    assert abs(stop_time(err) - upper_hit(76)) < 1e-14


def test_a_sustained_chatter_below_the_bound_runs_on_in_short_steps():
    """At 10 m/s the slider hits each stop every 0.4 us: 2500 hits per ms, 12500 in 5 ms of
    0.1 ms steps (more than the bound in all, never within one window); it runs to the end
    with the closed-form count and its speed kept."""
    res = simulate(rattle(10.0, 1e-6), 5e-3, 1e-4, settings=COMPILED)
    assert res["lim0_upper.impacts"][-1] == 12500 and res["lim0_lower.impacts"][-1] == 12500
    assert abs(abs(res["s0.rate"][-1]) - 10.0) < 1e-9


@pytest.mark.parametrize("name, overrides", [("bouncing_ball", {"h0": 0.01}),
                                             ("newtons_cradle", {"l": 0.05, "e": 0.7})])
def test_bouncing_models_are_not_stopped_in_short_steps(name, overrides):
    """The bouncing ball coming to rest (28 bounces crowding towards t = 0.41 s, then a
    persistent contact) and Newton's cradle with e = 0.7 run 0.5 s of 0.1 ms steps to the
    end, with the impacts of 10 ms steps."""
    model = load_model(MODELS / f"{name}.py", **overrides)
    fine = simulate(model, 0.5, 1e-4, settings=COMPILED)
    coarse = simulate(model, 0.5, 1e-2, settings=COMPILED)
    for c in model.contacts:
        assert fine[f"{c.name}.impacts"][-1] == coarse[f"{c.name}.impacts"][-1] > 0
        assert fine[f"{c.name}.active"][-1] == coarse[f"{c.name}.active"][-1]
