"""Coulomb friction on bodies moved by joints (tree joints and closed loops) in the compiled
engine's native FMUs, against the Python event loop of formulation newton_euler (absolute
coordinates: another formulation of the same law, and the joint reactions from its own
multipliers): every output, the joint reactions included, agrees to 1e-9 at every
communication point. The gripper (fingers on prismatic joints lifting a block by friction)
also meets the closed forms of its sticking lift, its joint reactions included; a deck swung by
a parallelogram (a loop of revolute joints) carries a box (four sticking corners) or a ball
(rolling; sliding) along."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")

from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb import load_model, simulate  # noqa: E402
from fmu_mb.dynamics.integrate import Settings  # noqa: E402
from fmu_mb.fmi.native_build import build_model_fmu  # noqa: E402

from conftest import once  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
DECK = Path(__file__).resolve().parent / "data" / "swing_deck.py"
G = 9.81
REFERENCE = Settings(formulation="newton_euler")


def _build(path, tmp_path, fmi, overrides=None):
    if fmi == "3":
        from fmu_mb.fmi.native_fmi3 import build_model_fmu3

        out, kind, _ = build_model_fmu3(path, tmp_path / "3", overrides,
                                        platforms="x86_64-linux")
    else:
        out, kind, _ = build_model_fmu(path, tmp_path / "2", overrides, platforms="linux64")
    assert kind.startswith("native"), kind
    assert validate_fmu(str(out)) == []
    return str(out)


def _same(r, ref, tol=1e-9, relaxed=()):
    """Every output of r equals ref's to tol (relative to max(1, |value|)), those in relaxed
    to 1e-8; Cardan angles on the circle (the two formulations integrate different rotation
    coordinates, so an angle at +-pi may land on either side)."""
    for n in ref.dtype.names[1:]:
        d = r[n] - ref[n]
        if n.rsplit(".", 1)[-1] in ("alpha", "beta", "gamma"):
            d = np.angle(np.exp(1j * d))
        err = np.abs(d).max() / max(1.0, np.abs(ref[n]).max())
        assert err <= (1e-8 if n in relaxed else tol), (n, err)


@pytest.mark.xdist_group("friction_joints_gripper")   # one worker: the reference once
@pytest.mark.parametrize("fmi", ["2", "3"])
def test_gripper_native_fmu_lifts_the_block(tmp_path, fmi):
    """Squeezed with 20 N and lifted with F = 5 N beyond the carriage's and fingers' weight
    from t1 = 0.1 s (a communication point: the step from t1 on holds F, the reference's
    too), the pads stick and everything rises with
    a = (F - m g) / M. Each finger's joint carries its weight and half the block's through
    the pad's friction: left/right_joint.fz = (m_f + m / 2) (g + a); the carriage's joint
    carries nothing (lift_joint.fz = 0)."""
    path = _build(MODELS / "gripper.py", tmp_path, fmi)
    F, grip, t1, dt, t_end = 5.0, 20.0, 0.1, 0.025, 0.3
    inputs = np.zeros(4, dtype=[("time", float), ("grip.h", float), ("lift.h", float)])
    inputs["time"] = [0.0, t1, t1, 1.0]
    inputs["grip.h"] = grip
    inputs["lift.h"] = [0.0, 0.0, F, F]
    r = fmpy.simulate_fmu(path, stop_time=t_end, output_interval=dt, input=inputs)
    model = load_model(MODELS / "gripper.py")
    ref = once("friction_joints gripper", lambda: simulate(
        model, t_end, dt, settings=REFERENCE,
        inputs={"grip.h": grip, "lift.h": lambda t: F if t >= t1 - 1e-12 else 0.0}))
    _same(r, ref)
    p = model.parameter_values
    m, mf = p["m"], p["m_finger"]
    M = m + p["m_carriage"] + 2 * mf
    a = (F - m * G) / M
    lifting = r["time"] > t1 + 1e-9
    z = a * np.maximum(r["time"] - t1, 0.0) ** 2 / 2
    np.testing.assert_allclose(r["block.z"] - p["c"] / 2, z, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(r["carriage.z"] - p["c"] / 2, z, rtol=1e-9, atol=1e-15)
    fz = (mf + m / 2) * (G + a)
    for j in ("left_joint", "right_joint"):
        np.testing.assert_allclose(r[f"{j}.fz"][lifting], fz, rtol=1e-9)
    assert np.abs(r["lift_joint.fz"][lifting]).max() < 1e-9
    assert set(r["pad_l_part_0.state"][lifting]) == {1.0}


@pytest.mark.slow
def test_gripper_weak_grip_releases_the_pads():
    """A grip of 0.3 N falling to 0.1 N, then pushing the fingers apart from t = 0.2 s: the
    pads slip on the block, the block lifts off the table and lands on it again with the
    pads closed, then every pad corner releases (each corner's gap held by the other three:
    its acceleration released is 0 within rounding, not Painleve's paradox) and the fingers
    open, in the compiled loop as in the Python loop. Every output agrees to 1e-9, the split
    among a pad's four redundant corners and the fingers' torques about y included: both
    loops take the contacts' multipliers with the minimum norm (docs/contacts-friction.md)."""
    model = load_model(MODELS / "gripper.py")

    def ramp(v0, v1, v2, v3):
        return lambda t: v0 + (v1 - v0) * t / 0.2 if t < 0.2 - 1e-12 else \
            v2 + (v3 - v2) * (t - 0.2) / 0.8
    inputs = {"grip.h": ramp(0.3, 0.1, -0.2, 0.4), "lift.h": ramp(0.6, 0.2, -0.4, 0.8)}
    c = simulate(model, 0.3, 0.05, inputs=inputs)
    p = simulate(model, 0.3, 0.05, inputs=inputs, settings=REFERENCE)
    for n in p.dtype.names[1:]:
        err = np.abs(c[n] - p[n]).max() / max(1.0, np.abs(p[n]).max())
        assert err <= 1e-9, (n, err)
    for pad, ids in {"pad_l": range(0, 4), "pad_r": range(4, 8)}.items():
        states = np.array([c[f"{pad}_part_{i}.state"] for i in ids])
        assert (states[:, 2] == 2.0).any() and (states[:, -1] == 0.0).all(), (pad, states)
    assert c["finger_r.x"][-1] - c["finger_l.x"][-1] > model.parameter_values["a"] + 0.005


@pytest.mark.parametrize("shape,mu,state", [("box", 0.8, 1.0), ("ball", 0.2, 1.0),
                                            ("ball", 0.05, 2.0)])
def test_swing_deck_loop_native_fmu(tmp_path, shape, mu, state):
    """The deck of a parallelogram (a loop: one revolute joint cut) swings and carries its
    part: a box sticking on four corners (mu = 0.8 > tan(tilt)), a ball rolling (mu = 0.2) or
    sliding (mu = 0.05); the native FMU equals the Python loop (newton_euler) to 1e-9, the
    reactions of the loop's joints included, both with rtol 1e-11. The spinning ball's
    orientation to 1e-8: the compiled loop integrates its free joint's quaternion, the Python
    loop the Euler parameters of the body (as the rolling ball's in
    tests/test_friction_c_loop.py)."""
    path = _build(DECK, tmp_path, "2", {"shape": shape, "mu": mu})
    experiment = fmpy.read_model_description(path).defaultExperiment   # the model file's
    assert (float(experiment.stopTime), float(experiment.stepSize)) == (1.0, 0.01)
    tight = {"rtol": 1e-11, "atol": 1e-13}      # integration errors well below 1e-9
    r = fmpy.simulate_fmu(path, stop_time=0.5, output_interval=0.05,
                          start_values={f"solver.{k}": v for k, v in tight.items()})
    model = load_model(DECK, shape=shape, mu=mu)
    assert model.topology.cut_joints
    ref = simulate(model, 0.5, 0.05, settings=Settings(formulation="newton_euler", **tight))
    _same(r, ref, relaxed={f"part.{a}" for a in ("e0", "e1", "e2", "e3", "alpha", "beta",
                                                 "gamma")})
    states = [n for n in r.dtype.names if n.endswith(".state")]
    closed = [n for n in states if r[n][-1] != 0.0]
    assert len(closed) == (4 if shape == "box" else 1)
    assert all(set(r[n]) == {state} for n in closed)
    if shape == "box":                              # carried along: it stays on the deck
        assert np.abs(r["part.x"] - r["deck.x"]).max() < 1e-9
