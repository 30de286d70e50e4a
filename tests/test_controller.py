"""The PID controller: its discrete law by hand, and its FMU (state round trip, bad input,
build from a controller file with fmu-mb build)."""
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.fmi.controller import PidState, channel, controller, pid, pid_step

ROOT = Path(__file__).resolve().parents[1]

# y = 0, 0.2, 0.5 against r = 1 with h = 0.1, kp = 2, ki = 0.5, kd = 0.3, Tf = 0.05,
# limits [-1, 1.5], kaw = 2.  By hand (D_k = Tf/(Tf+h) D_{k-1} - kd/(Tf+h) (y_k - y_{k-1})):
#  k=0: D = 0, v = 2*1 = 2 -> u = 1.5;  back-calc: I = 0.05 + 2*0.1*(1.5 - 2) = -0.05
#                                        clamp:     saturated and pushing -> I = 0
#  k=1: D = -0.3/0.15*0.2 = -0.4;  back-calc: v = 1.6 - 0.05 - 0.4 = 1.15, I = -0.01
#                                   clamp:     v = 1.6 + 0 - 0.4 = 1.2,    I = 0.04
#  k=2: D = -0.4/3 - 2*0.3 = -0.733333;  back-calc: v = 1.0 - 0.01 + D = 0.256667
#                                         clamp:     v = 1.0 + 0.04 + D = 0.306667
Y = [0.0, 0.2, 0.5]
H = 0.1
EXPECTED = {"back_calculation": [1.5, 1.15, 1.0 - 0.01 - 0.4 / 3 - 0.6],
            "clamp": [1.5, 1.2, 1.0 + 0.04 - 0.4 / 3 - 0.6],
            "none": [1.5, 1.6 + 0.05 - 0.4, 1.0 + 0.09 - 0.4 / 3 - 0.6]}


def spec(anti_windup):
    return pid("hand_pid", kp=2.0, ki=0.5, kd=0.3, Tf=0.05, setpoint=1.0, u_min=-1.0,
               u_max=1.5, anti_windup=anti_windup, kaw=2.0)


@pytest.mark.parametrize("aw", list(EXPECTED))
def test_discrete_law_by_hand(aw):
    s, st, us = spec(aw), PidState(1), []
    for y in Y:
        st = pid_step(s, st, [y], [1.0], H)
        us.append(st.u)
    assert us == pytest.approx(EXPECTED[aw], abs=1e-14)


def test_channels_sum_before_clamping():
    s = controller("two", [channel("a", kp=1.0, setpoint=1.0), channel("b", kp=2.0)],
                   u_max=0.5)
    st = pid_step(s, PidState(2), [0.0, 0.25], [1.0, 0.0], 0.01)
    assert st.u == pytest.approx(0.5)          # 1 - 0.5 = 0.5, not clamped
    st = pid_step(s, PidState(2), [0.0, -0.25], [1.0, 0.0], 0.01)
    assert st.u == pytest.approx(0.5)          # 1 + 0.5 = 1.5, clamped
    st = pid_step(s, PidState(2), [0.0, 0.75], [1.0, 0.0], 0.01)
    assert st.u == pytest.approx(-0.5)


def test_spec_validation():
    with pytest.raises(ValueError):
        pid("x", u_min=1.0, u_max=0.0)
    with pytest.raises(ValueError):
        pid("x", anti_windup="magic")


# ---------------------------------------------------------------------- the FMU
fmu_only = [pytest.mark.fmu]


@pytest.fixture(scope="module")
def hand_fmus(tmp_path_factory):
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    from fmu_mb.fmi.build import build_controller_fmu
    out = tmp_path_factory.mktemp("ctl")
    return {aw: build_controller_fmu(spec(aw), out / aw) for aw in EXPECTED}


def _slave(path, name="c"):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_fmu import instantiate_logged
    messages = []
    fmu, vr = instantiate_logged(path, name, messages)
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    return fmu, vr, messages


@pytest.mark.fmu
@pytest.mark.parametrize("aw", list(EXPECTED))
def test_fmu_follows_the_hand_computation(hand_fmus, aw):
    from fmpy.validation import validate_fmu
    assert validate_fmu(str(hand_fmus[aw])) == []
    f, vr, _ = _slave(hand_fmus[aw])
    us = []
    for k, y in enumerate(Y):
        f.setReal([vr["measurement"]], [y])
        f.doStep(currentCommunicationPoint=k * H, communicationStepSize=H)
        us.append(f.getReal([vr["u"]])[0])
    assert us == pytest.approx(EXPECTED[aw], abs=1e-14)
    f.terminate()
    f.freeInstance()


@pytest.mark.fmu
def test_state_round_trip_is_bit_identical_and_nan_discards(hand_fmus):
    from fmpy.fmi1 import FMICallException
    f, vr, messages = _slave(hand_fmus["back_calculation"], "rt")
    t = 0.0
    for y in Y:
        f.setReal([vr["measurement"]], [y])
        f.doStep(currentCommunicationPoint=t, communicationStepSize=H)
        t += H
    saved = f.getFMUstate()
    blob = f.serializeFMUstate(saved)

    def run(t):
        out = []
        for y in (0.7, 0.9, 1.2, 1.0):
            f.setReal([vr["measurement"]], [y])
            f.doStep(currentCommunicationPoint=t, communicationStepSize=H)
            out.append(f.getReal([vr["u"]])[0])
            t += H
        return out

    first = run(t)
    f.setFMUstate(saved)
    assert run(t) == first                                   # bit-identical
    f.setFMUstate(f.deSerializeFMUstate(blob))
    assert run(t) == first
    # NaN measurement: the step fails (fmi2Error, fmi2Terminated true), logged, output and
    # state kept
    f.setFMUstate(saved)
    u_before = f.getReal([vr["u"]])[0]
    f.setReal([vr["measurement"]], [math.nan])
    with pytest.raises(FMICallException) as exc:
        f.doStep(currentCommunicationPoint=t, communicationStepSize=H)
    assert exc.value.status == 3
    assert any("not finite" in m for m in messages)
    assert f.getReal([vr["u"]])[0] == u_before
    assert run(t) == first                                   # the state was kept
    f.freeFMUstate(saved)
    f.terminate()
    f.freeInstance()


@pytest.mark.fmu
def test_fmu_mb_build_accepts_a_controller_file(tmp_path):
    pytest.importorskip("pythonfmu")
    from fmpy import read_model_description
    res = subprocess.run([sys.executable, "-m", "fmu_mb.tools.cli", "build",
                          str(ROOT / "examples/controllers/slider_crank_pid.py"),
                          "-o", str(tmp_path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    md = read_model_description(str(tmp_path / "slider_crank_pid.fmu"))
    v = {x.name: x for x in md.modelVariables}
    assert v["measurement"].causality == "input" and v["u"].causality == "output"
    assert v["u"].unit == "N.m" and v["measurement"].unit == "rad/s"
    assert {"kp", "ki", "kd", "Tf", "kaw", "setpoint", "u_min", "u_max"} <= set(v)


@pytest.mark.fmu
def test_unlimited_controller_with_setpoint_input(tmp_path):
    pytest.importorskip("pythonfmu")
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    from fmu_mb.fmi.build import build_controller_fmu
    s = pid("free_pid", kp=2.0, ki=1.0, setpoint_input=True)
    assert (s.u_min, s.u_max) == (-1e300, 1e300)         # "no limit", finite for the XML
    path = build_controller_fmu(s, tmp_path)
    assert validate_fmu(str(path)) == []
    inp = np.array([(0.0, 0.5, 1.5)],
                   dtype=[("time", float), ("measurement", float), ("setpoint", float)])
    r = simulate_fmu(str(path), stop_time=0.03, output_interval=0.01, input=inp)
    # e = 1; u_k = 2 + 0.01 k (the integrator adds ki h e per sample; no saturation)
    np.testing.assert_allclose(r["u"], [0.0, 2.0, 2.01, 2.02], atol=1e-14)


def test_setpoint_and_feedforward_tables():
    """r(t) = setpoint + table interpolated (held at the ends); u_ff added before the clamp;
    a table out of order is refused."""
    from fmu_mb.fmi.controller import PidState, pid, pid_step
    spec = pid("traj", kp=2.0, setpoint=1.0, u_min=-10.0, u_max=10.0,
               setpoint_table=((0.0, 0.0), (1.0, 4.0), (2.0, 4.0)),
               feedforward_table=((0.0, 1.0), (2.0, 3.0)))
    c = spec.channels[0]
    assert [c.reference(t) for t in (-1.0, 0.0, 0.25, 1.5, 9.0)] == [1.0, 1.0, 2.0, 5.0, 5.0]
    assert [c.feedforward(t) for t in (0.0, 1.0, 5.0)] == [1.0, 2.0, 3.0]
    new = pid_step(spec, PidState(1), [0.5], [c.reference(0.25)], 0.01, [c.feedforward(1.0)])
    assert new.u == 2.0 * (2.0 - 0.5) + 2.0                  # kp e + u_ff
    new = pid_step(spec, PidState(1), [0.5], [2.0], 0.01, [20.0])
    assert new.u == 10.0                                      # clamped after the sum
    with pytest.raises(ValueError, match="increasing t"):
        pid("bad", setpoint_table=((1.0, 0.0), (0.5, 1.0)))
    with pytest.raises(ValueError, match="finite"):
        pid("bad", feedforward_table=((0.0, float("nan")),))
