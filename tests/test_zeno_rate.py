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
import ctypes
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import MODELS, same_outputs
from fmu_mb import load_model, simulate
from fmu_mb.dynamics import integrate
from fmu_mb.dynamics.integrate import Settings, advance, initial_state
from fmu_mb.engine.engine import Engine
from fmu_mb.errors import IntegrationError

REFERENCE = Settings(formulation="newton_euler")
COMPILED = Settings(formulation="recursive")
RATTLE = Path(__file__).resolve().parent / "data" / "rattle.py"


def rattle(v, clearance):
    """tests/data/rattle.py: a slider (1 kg, no gravity) between two elastic stops at
    +-clearance [m] started at rate v [m/s] from the middle, and 5 sliders at rest far from
    their stops (12 contacts)."""
    return load_model(RATTLE, v=v, clearance=clearance)


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


class MeHost:
    """A model-exchange host of the compiled engine (engine_me.h through ctypes, as the
    native FMU's fmi2SetTime, fmi2SetContinuousStates and fmi2NewDiscreteStates call it)
    that puts the rattling slider on a stop at a hit's time: x = (q, qd) of the 6 sliders."""

    def __init__(self, v=100.0, clearance=1e-6):
        P, I, D, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t
        self.eng = eng = Engine(rattle(v, clearance))
        eng.set_settings(COMPILED)
        eng.initialize(0.0)
        lib = eng.lib
        lib.mbe_me_set_time.argtypes = [P, D, P, Z]
        lib.mbe_me_set_states.argtypes = [P, I, P, P, P, Z]
        lib.mbe_me_get_states.argtypes = [P, I, P, P]
        lib.mbe_me_get_states.restype = None
        lib.mbe_me_event.argtypes = [P, P, I, P, P, P, P, Z]
        self.v, self.d = v, clearance
        self.ind = np.arange(eng.n, dtype=np.intc)
        self.x = np.zeros(2 * eng.n)
        self.u = np.zeros(1)
        self.flags = (ctypes.c_int * 2)()
        self.err = ctypes.create_string_buffer(1024)

    def hit(self, t, side):
        """One event iteration at t with slider 0 on the upper (side 1) or lower (-1) stop,
        moving into it: True when it changed the states, IntegrationError on an error."""
        eng, lib, n, x = self.eng, self.eng.lib, self.eng.n, self.x
        x[0], x[n] = side * self.d, side * self.v
        p = ctypes.c_void_p
        if (lib.mbe_me_set_time(eng.handle, t, self.err, 1024) or
                lib.mbe_me_set_states(eng.handle, n, self.ind.ctypes.data, x.ctypes.data,
                                      self.err, 1024)):
            raise AssertionError(self.err.value.decode())
        if lib.mbe_me_event(eng.handle, self.u.ctypes.data, n, self.ind.ctypes.data,
                            ctypes.cast(self.flags, p),
                            ctypes.addressof(self.flags) + ctypes.sizeof(ctypes.c_int),
                            self.err, 1024):
            raise IntegrationError(self.err.value.decode())
        return bool(self.flags[0])

    def states(self):
        out = np.zeros(2 * self.eng.n)
        self.eng.lib.mbe_me_get_states(self.eng.handle, self.eng.n, self.ind.ctypes.data,
                                       out.ctypes.data)
        return out

    def rattle(self, k0, k1):
        """The hits k0 .. k1 - 1 on the upper stop (each followed by its lower hit)."""
        for k in range(k0, k1):
            t = upper_hit(k, self.v, self.d)
            assert self.hit(t, 1.0) and self.hit(t + 2.0 * self.d / self.v, -1.0)


def test_model_exchange_stops_a_fast_chatter_at_its_rate_bound():
    """A host that meets the rattle's hits (every 20 ns, one event iteration each: too far
    apart for the 10 ns repeat guard) gets the Zeno error at the upper stop's hit 10001
    (0.40001 ms), the states and records as the host set them; going back in time (a restored state,
    at 0.2 ms) restarts the windows: 10000 more hits pass, the next one is refused."""
    me = MeHost()
    me.rattle(1, 10001)
    rec = me.eng.records.copy()
    with pytest.raises(IntegrationError, match=r"at t = 0.00040001 s \(contact 1 of the "
                                               r"model's contacts\): a contact switches state "
                                               r"endlessly \(Zeno behaviour"):
        me.hit(upper_hit(10001), 1.0)
    # the impact not applied: the slider on the stop, still moving into it at 100 m/s
    assert rec[1, 0] == 10000 and np.array_equal(me.eng.records, rec)
    assert np.array_equal(me.states(), me.x) and me.x[6] == 100.0
    me.rattle(5001, 15001)
    with pytest.raises(IntegrationError, match="switches state endlessly"):
        me.hit(upper_hit(15001), 1.0)


@pytest.mark.parametrize("back", ["set_time", "set_state"])
def test_model_exchange_counts_restart_when_the_host_goes_back_before_the_next_event(back):
    """A host that rolls back (fmi2SetTime to an earlier time, or a set FMU state) and then
    meets the next hit at or after the last one counts that hit once: the windows restart at
    the rollback itself, so hits 5001 .. 15000 pass after it and hit 15001 is refused (without
    the restart the rolled-back hits would count twice and hit 10001 would be refused)."""
    me = MeHost()
    me.rattle(1, 5001)
    if back == "set_time":
        assert not me.eng.lib.mbe_me_set_time(me.eng.handle, upper_hit(2500), me.err, 1024)
    else:
        me.eng.set_state(me.eng.get_state())     # as fmi2SetFMUstate
    me.rattle(5001, 15001)
    with pytest.raises(IntegrationError, match="switches state endlessly"):
        me.hit(upper_hit(15001), 1.0)
