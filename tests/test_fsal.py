"""The compiled engine's first-same-as-last reuse across communication steps (integrators.h
Integ.fsal, engine.c do_step): the final stage of a dopri5/dop853 step is f at the start of
the next doStep, reused only while t, y, the inputs, the parameters and the settings are
those it was computed for.

Reference: the same steps with the reuse defeated (the settings set again before every step,
which drops the stored stage), so every step evaluates f at its start. A stale stage (after an
input, parameter or state change) would change the result; a valid one leaves it bit for bit.
"""
import numpy as np
import pytest

from fmu_mb import Settings, load_model
from fmu_mb.engine.data import supported
from fmu_mb.engine.engine import Engine

from conftest import MODELS

H = 1e-3


def _engine(name, settings, program=False):
    model = load_model(MODELS / f"{name}.py")
    assert supported(model) is None
    if program:                     # tunable parameters: the model data with its program
        from fmu_mb.engine.params import program_for
        from fmu_mb.mechanics.loader import load_module

        data, prog = program_for(load_module(MODELS / f"{name}.py"), n_verify=1, n_wide=1)
        e = Engine(blob=data.to_bytes(program=prog), name=name)
    else:
        e = Engine(model)
    e.set_settings(settings)
    e.initialize()
    return model, e


def _run(name, settings, script, fresh):
    """Apply `script` (a list of actions) to a new engine; fresh: set the settings again
    before every step (no reuse). Returns the states after every step."""
    model, e = _engine(name, settings, any(a[0] == "param" for a in script))
    u = np.zeros(e.n_inputs)
    saved, out = None, []
    for act in script:
        kind = act[0]
        if kind == "step":
            if fresh:
                e.set_settings(settings)
            e.do_step(H, u)
            out.append(e.get_state())
        elif kind == "u":
            u = np.full(e.n_inputs, act[1])
        elif kind == "param":
            values = np.array([p.value for p in model.parameters], dtype=float)
            values[act[1]] *= act[2]
            e.set_parameters(values)
        elif kind == "save":
            saved = e.get_state()
        elif kind == "restore":
            e.set_state(saved)
    return np.array(out)


@pytest.mark.parametrize("name", ["double_pendulum", "four_bar", "driven_arm", "heavy_top",
                                  "spatial_chain"])
@pytest.mark.parametrize("method", ["dopri5", "dop853"])
def test_reuse_is_exact(name, method):
    """Plain 1 ms steps: the reused stage equals f evaluated again, bit for bit."""
    s = Settings(method=method)
    script = [("step",)] * 40
    a = _run(name, s, script, fresh=False)
    b = _run(name, s, script, fresh=True)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("method", ["dopri5", "dop853"])
def test_input_change_drops_the_stage(method):
    """A changed input (zero-order hold: f changes at the communication point) and the same
    input again: each step starts from f with the inputs it holds."""
    s = Settings(method=method)
    script = ([("step",)] * 5 + [("u", 0.7)] + [("step",)] * 5 + [("u", 0.7)] +
              [("step",)] * 3 + [("u", -0.2)] + [("step",)] * 5)
    a = _run("double_pendulum", s, script, fresh=False)
    b = _run("double_pendulum", s, script, fresh=True)
    assert np.array_equal(a, b)
    # (the inputs do act: without them the motion differs)
    c = _run("double_pendulum", s, [("step",)] * 18, fresh=True)
    assert np.max(np.abs(a[-1, 1:-1] - c[-1, 1:-1])) > 1e-6


def test_parameter_change_drops_the_stage():
    """A tunable parameter changed between steps (g, then m2): f of the new model."""
    s = Settings()
    script = ([("step",)] * 5 + [("param", 4, 1.5)] + [("step",)] * 5 +
              [("param", 1, 2.0)] + [("step",)] * 5)
    a = _run("double_pendulum", s, script, fresh=False)
    b = _run("double_pendulum", s, script, fresh=True)
    assert np.array_equal(a, b)
    c = _run("double_pendulum", s, [("step",)] * 15, fresh=True)
    assert np.max(np.abs(a[-1, 1:-1] - c[-1, 1:-1])) > 1e-6


@pytest.mark.parametrize("name", ["double_pendulum", "spatial_chain"])
def test_set_state_drops_the_stage(name):
    """SetFMUstate back to an earlier state, and the steps from there again: the same
    states as the first time (the stored stage belongs to another state)."""
    s = Settings()
    script = ([("step",)] * 3 + [("save",)] + [("step",)] * 6 + [("restore",)] +
              [("step",)] * 6)
    a = _run(name, s, script, fresh=False)
    assert np.array_equal(a[3:9], a[9:15])
    b = _run(name, s, script, fresh=True)
    assert np.array_equal(a, b)


def test_rk4_after_an_adaptive_step():
    """Switching dopri5 -> rk4 -> dopri5 between steps (settings change): nothing stale."""
    model, e = _engine("double_pendulum", Settings())
    _, f = _engine("double_pendulum", Settings())
    for s in (Settings(), Settings(method="rk4"), Settings()):
        for eng in (e, f):
            eng.set_settings(s)
        for _ in range(4):
            e.do_step(H)
            f.set_settings(s)
            f.do_step(H)
    assert np.array_equal(e.get_state(), f.get_state())


def test_rtol_limits_the_step_at_a_short_communication_step():
    """The heavy top spins fast: at 1 ms communication steps dopri5's error estimate exceeds
    rtol 1e-12 and splits the steps, so a tighter rtol changes the result and brings it
    closer to a reference (dop853, rtol 1e-12, steps of at most 0.1 ms); rtol 1e-6 and 1e-9
    are not split on most models (the interval limits the step), so only the ordering of
    the tight end is asserted."""
    ref = Settings(method="dop853", rtol=1e-12, atol=1e-14, max_step=1e-4)

    def final(s, steps=300):
        _, e = _engine("heavy_top", s)
        for _ in range(steps):
            e.do_step(H)
        st = e.get_state()
        return st[1:1 + e.n]

    q_ref = final(ref)
    err = {r: np.max(np.abs(final(Settings(rtol=r)) - q_ref)) for r in (1e-6, 1e-12)}
    assert err[1e-12] < err[1e-6] / 10, err
    assert err[1e-12] < 1e-9, err


def test_auto_method_rule():
    """dop853 for an interval that dopri5's hint would split into 2 or more steps, starting
    with the whole interval and leaving the hint grown by AUTO_GROW; else dopri5."""
    from fmu_mb.dynamics.integrate import AUTO_GROW, AUTO_SPLIT, auto_method

    assert auto_method(0.0, 1e-3) == ("dopri5", 0.0, None)          # first call
    assert auto_method(2e-3, 1e-3) == ("dopri5", 2e-3, None)
    assert auto_method(1e-3 / AUTO_SPLIT, 1e-3)[0] == "dopri5"
    assert auto_method(1e-3 / AUTO_SPLIT * 0.999, 1e-3)[0] == "dop853"
    m, h0, after = auto_method(3e-4, 1e-3)
    assert (m, h0) == ("dop853", 1e-3) and after == pytest.approx(3e-4 * AUTO_GROW)
    assert auto_method(1e-2, 1.0)[:2] == ("dop853", 0.1)    # (a long interval)


def test_auto_is_dopri5_where_one_step_covers_the_interval():
    """The double pendulum at 1 ms: dopri5's proposal stays above the interval, so the
    default (auto) takes exactly dopri5's steps."""
    a = _run("double_pendulum", Settings(), [("step",)] * 50, fresh=False)
    b = _run("double_pendulum", Settings(method="dopri5"), [("step",)] * 50, fresh=False)
    assert np.array_equal(a, b)


def test_auto_switches_on_the_pendulum_chain_and_c_agrees_with_python():
    """The pendulum chain's links whip: at rtol 1e-9 dopri5 splits the 1 ms interval, so
    auto runs dop853 on some intervals (a result other than dopri5's, closer to the
    reference); the engine's rule (engine.c) and integrate.stepper's give the same states."""
    from fmu_mb import initial_state
    from fmu_mb.dynamics.integrate import stepper

    steps = 400
    ref = _run("pendulum_chain", Settings(method="dop853", rtol=1e-12, atol=1e-14,
                                          max_step=1e-4), [("step",)] * steps, fresh=False)
    auto = _run("pendulum_chain", Settings(), [("step",)] * steps, fresh=False)
    d5 = _run("pendulum_chain", Settings(method="dopri5"), [("step",)] * steps, fresh=False)
    n = (auto.shape[1] - 2) // 2
    err_auto = np.max(np.abs(auto[:, 1:1 + n] - ref[:, 1:1 + n]))
    err_d5 = np.max(np.abs(d5[:, 1:1 + n] - ref[:, 1:1 + n]))
    assert not np.array_equal(auto, d5)
    assert err_auto < err_d5, (err_auto, err_d5)
    # the Python path (integrate.stepper in the recursive formulation: the compiled kernel
    # per interval, the rule in Python) against the engine's do_step
    model = load_model(MODELS / "pendulum_chain.py")
    s = Settings(formulation="recursive")
    step = stepper(model, s)
    st = initial_state(model, s)
    u = np.zeros(len(model.inputs))
    t = 0.0
    for k in range(steps):
        t += H                          # (the engine's time: the sum of the steps)
        st = step(st, t, u)
        assert np.max(np.abs(st.q - auto[k, 1:1 + n])) < 1e-12
        assert st.h == pytest.approx(auto[k, -1], rel=1e-9)
