"""Coulomb friction in the compiled event loop (native/event_loop.h with the spatial kernel's
friction rows and sliding forces, formulation recursive) against the Python event loop of
formulation newton_euler (absolute coordinates, numpy: another formulation of the same law),
both with rtol 1e-11: every output at every communication point agrees to 1e-9 (relative to
max(1, |value|)) on the incline block (sticking; sliding), the thrown ball (slip, then rolling;
backspin reversing) and the tumbling box with friction at its corners (frictional impacts,
stick/slip events, at rest on a face at the end). A model with friction runs in the compiled
loop by default ("auto")."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import simulate
from fmu_mb.dynamics.integrate import Settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "models"))
sys.path.insert(0, str(ROOT / "bench"))
import incline_block  # noqa: E402
import rolling_ball  # noqa: E402

TIGHT = dict(rtol=1e-11, atol=1e-13)


def _compare(m, t_end, dt, tol=1e-9, skip=(), relaxed=()):
    c = simulate(m, t_end, dt, settings=Settings(formulation="recursive", **TIGHT))
    p = simulate(m, t_end, dt, settings=Settings(formulation="newton_euler", **TIGHT))
    assert c.dtype.names == p.dtype.names
    for n in c.dtype.names:
        if n in skip:
            continue
        lim = relaxed[n] if n in relaxed else tol
        err = np.abs(c[n] - p[n]).max() / max(1.0, np.abs(p[n]).max())
        assert err <= lim, (n, err)
    return c


@pytest.mark.parametrize("mu", [0.5, 0.2])
def test_incline_block(mu):
    c = _compare(incline_block.build(mu=mu), 1.0, 0.1)
    assert c["slope_hull_0.state"][-1] == (1.0 if mu > np.tan(0.3) else 2.0)


@pytest.mark.parametrize("w0", [0.0, pytest.param(-60.0, marks=pytest.mark.slow)])
def test_rolling_ball(w0):
    """The spinning ball's Cardan angles integrate 60 rad/s for 1 s in two different
    rotation coordinates (quaternion of the joint, Euler parameters of the body): 1e-8."""
    angles = {f"ball.{a}": 1e-8 for a in ("alpha", "beta", "gamma", "e0", "e1", "e2", "e3")}
    c = _compare(rolling_ball.build(w0=w0), 1.0, 0.05, relaxed=angles)
    assert c["floor_shell_0.state"][-1] == 1.0


def test_default_formulation_of_a_frictional_spatial_model_is_the_compiled_loop():
    m = rolling_ball.build()
    assert Settings().for_model(m).formulation == "recursive"


@pytest.mark.slow
def test_tumbling_box_with_friction():
    """8 corner spheres, mu = 0.5, e = 0.6, 2 s (the Python loop takes ~50 s): the impact
    sequence, stick/slip states and the motion agree; the last impulses of the final cascade
    of small bounces (each scaled by ~e, rounding growing) to 1e-5 of themselves; at rest on
    a face at the end."""
    from friction import friction_box

    m = friction_box(0.5)
    rel = {f"{c.name}.{f}": 1e-5 for c in m.contacts
           for f in ("last_impulse", "last_time", "energy_loss")}
    c = _compare(m, 2.0, 0.05, relaxed=rel)
    lower = [k for k in c.dtype.names if k.endswith(".state") and c[k][-1] != 0.0]
    assert len(lower) == 4 and all(c[k][-1] == 1.0 for k in lower)
    assert abs(c["box.vx"][-1]) + abs(c["box.vz"][-1]) < 1e-9


def test_tumbling_box_with_friction_first_impacts():
    """The first 0.5 s of the frictional tumbling box: frictional impacts and their records."""
    from friction import friction_box

    m = friction_box(0.5)
    c = _compare(m, 0.5, 0.05)
    assert c["c000.impacts"][-1] >= 1
