"""The event loops' Zeno guard on the rate of events (integrate.ZENO_COUNT events of one
contact or frictional joint within integrate.ZENO_SPAN of simulated time; native/event_loop.h
EV_ZENO_COUNT, EV_ZENO_SPAN): a slider rattling elastically in a 2 um clearance at 100 m/s
(one hit every 20 ns, too far apart for the 10 ns and 10 us windows of a model with 12
contacts) ends with the Zeno error at the closed-form time of its 10001st hit on one stop,
in C and in Python alike; the same slider at 1 m/s (one hit every 2 us) runs to its end,
the compiled loop equal to the Python loop."""
import time

import pytest

from conftest import same_outputs
from fmu_mb import ModelBuilder, simulate
from fmu_mb.dynamics import integrate
from fmu_mb.dynamics.integrate import Settings
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
