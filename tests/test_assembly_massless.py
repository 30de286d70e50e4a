"""The assembly with massless coordinates (point masses, a massless cart): the projection
metric weighs them 1e-6 x the largest mass, so S = A M^-1 A' spans more than the rank cut of
linalg.schur_solve and the minimum-norm steps used to drop rows that are not redundant: the
container cranes refused every initial cart position (driven) and every initial rate. The
assembled state is checked against the crane's closed-form kinematics; the compiled
engine's C assembly gives the same state."""
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

MODELS = Path(__file__).resolve().parents[1] / "models"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"fmu_mb_model_massless_{name}",
                                                  MODELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _expected(x, phi, xd, phid, l):
    """Cart (x, 0, 0) and load (x + l sin phi, -l cos phi, phi), and their rates."""
    pos = [x, 0.0, 0.0, x + l * math.sin(phi), -l * math.cos(phi), phi]
    vel = [xd, 0.0, 0.0, xd + l * phid * math.cos(phi), l * phid * math.sin(phi), phid]
    return np.array(pos), np.array(vel)


@pytest.mark.parametrize("sets", [dict(xd0=0.3), dict(phid0=-0.4), dict(xd0=0.3, phid0=0.2,
                                  x0=1.5, phi0=-0.7, mc=1e3)])
def test_container_crane_initial_rates(sets):
    mod = _load("container_crane")
    m = mod.build(**sets)
    v = {"x0": 0.0, "phi0": 0.2, "xd0": 0.0, "phid0": 0.0, "l": 5.0, **sets}
    pos, vel = _expected(v["x0"], v["phi0"], v["xd0"], v["phid0"], v["l"])
    np.testing.assert_allclose(m.x0, pos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.xd0, vel, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sets", [dict(x0=0.4), dict(phid0=0.25, phi0=0.3),
                                  dict(x0=-2.0, phid0=0.1, mc=5.0)])
def test_driven_crane_initial_position_and_rate(sets):
    """The massless cart's position comes from its drive x0 + a (1 - cos w t): x0 at t = 0,
    at rest."""
    mod = _load("container_crane_driven")
    m = mod.build(**sets)
    v = {"x0": 0.0, "phi0": 0.0, "phid0": 0.0, "l": 5.0, **sets}
    pos, vel = _expected(v["x0"], v["phi0"], 0.0, v["phid0"], v["l"])
    np.testing.assert_allclose(m.x0, pos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.xd0, vel, rtol=0, atol=1e-12)


def test_engine_assembles_the_same_state():
    """The compiled engine's assembly in C (mbe_initialize, its fine retry) from the same
    model data gives the same initial state as the Python assembly."""
    from fmu_mb.dynamics.integrate import Settings, initial_state
    from fmu_mb.engine.data import supported
    from fmu_mb.engine.engine import Engine
    from fmu_mb.engine.kernel import compiler
    if compiler() is None:
        pytest.skip("no C compiler for the engine library")
    m = _load("container_crane_driven").build(x0=0.4, phid0=0.25, phi0=0.3)
    assert supported(m) is None
    settings = Settings(formulation="recursive")
    eng = Engine(m)
    eng.set_settings(settings)
    eng.initialize(m.t0)
    ref = initial_state(m, settings)
    t, q, qd, h = eng.state
    np.testing.assert_allclose(q, ref.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(qd, ref.qd, rtol=1e-12, atol=1e-12)
