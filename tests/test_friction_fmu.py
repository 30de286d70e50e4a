"""Friction through FMUs in fmpy: the default build of the spatial frictional models is a
native FMU (the compiled engine with the friction of native/event_loop.h), FMI 2.0 and 3.0,
fmpy validates it, and the closed forms of docs/contacts-friction.md hold on its outputs: the
incline block sticks for mu > tan(alpha) (displacement after 2 s below 1e-9 m) and slides at
g (sin - mu cos) for mu < tan(alpha) (to 1e-8 relative; mu set as a start value: a compiled
parameter), the thrown ball rolls at 5/7 v0 = r wy after t* = 2 v0 / (7 mu g); its outputs equal
simulate()'s to 1e-9. The Python FMU (--python) runs them too."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")

from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb import simulate  # noqa: E402
from fmu_mb.fmi.native_build import build_model_fmu  # noqa: E402

from conftest import once  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "models"
sys.path.insert(0, str(MODELS))
import incline_block  # noqa: E402
import rolling_ball  # noqa: E402

G = 9.81


def _build(name, tmp_path, fmi):
    if fmi == "3":
        from fmu_mb.fmi.native_fmi3 import build_model_fmu3

        path, kind, _ = build_model_fmu3(MODELS / f"{name}.py", tmp_path / "3",
                                         platforms="x86_64-linux")
    else:
        path, kind, _ = build_model_fmu(MODELS / f"{name}.py", tmp_path / "2",
                                        platforms="linux64")
    assert kind.startswith("native"), kind
    assert validate_fmu(str(path)) == []
    return str(path)


def _same(r, ref):
    for n in ref.dtype.names[1:]:
        np.testing.assert_allclose(r[n], ref[n], rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(ref[n]).max()), err_msg=n)


@pytest.mark.xdist_group("friction_fmu")     # one worker: the simulate() references once
@pytest.mark.parametrize("fmi", ["2", "3"])
def test_native_incline_block_and_rolling_ball(tmp_path, fmi):
    path = _build("incline_block", tmp_path, fmi)
    alpha, c = 0.3, 0.05
    x0, z0 = c / 2 * math.sin(alpha), c / 2 * math.cos(alpha)
    for mu in (0.5, 0.2):
        r = fmpy.simulate_fmu(path, stop_time=2.0, output_interval=0.25,
                              start_values={"mu": mu})
        assert r["time"][-1] == 2.0
        d = ((r["block.x"][-1] - x0) * math.cos(alpha)
             - (r["block.z"][-1] - z0) * math.sin(alpha))
        ref = max(G * (math.sin(alpha) - mu * math.cos(alpha)), 0.0) * 2.0 ** 2 / 2
        assert abs(d - ref) <= (1e-8 * ref if ref else 1e-9)
        assert r["slope_hull_0.state"][-1] == (1 if mu > math.tan(alpha) else 2)
        _same(r, once(("friction_fmu incline", mu),
                      lambda: simulate(incline_block.build(mu=mu), 2.0, 0.25)))

    path = _build("rolling_ball", tmp_path, fmi)
    v0, r_ = 2.0, 0.1
    res = fmpy.simulate_fmu(path, stop_time=0.4, output_interval=0.1)
    for row in res[-2:]:
        assert abs(row["ball.vx"] - 5 / 7 * v0) <= 1e-8 * v0
        assert abs(row["ball.wy"] * r_ - 5 / 7 * v0) <= 1e-8 * v0
        assert row["floor_shell_0.state"] == 1
    T0, T1 = 0.5 * v0 ** 2, 0.5 * (5 / 7 * v0) ** 2 * (1 + 2 / 5)
    assert abs(res["floor_shell_0.slide_loss"][-1] - (T0 - T1)) < 1e-8 * T0
    _same(res, once("friction_fmu rolling ball",
                    lambda: simulate(rolling_ball.build(), 0.4, 0.1)))


def test_python_fmu_of_a_frictional_model(tmp_path):
    pytest.importorskip("pythonfmu")
    path, kind, _ = build_model_fmu(MODELS / "rolling_ball.py", tmp_path, kind="python")
    assert kind == "python" and validate_fmu(str(path)) == []
    res = fmpy.simulate_fmu(str(path), stop_time=0.4, output_interval=0.1)
    assert abs(res["ball.vx"][-1] - 5 / 7 * 2.0) <= 1e-8 * 2.0
