"""Friction through an FMU in fmpy (FMI 2.0): `fmu-mb build` makes the Python FMU for the
frictional models (the compiled engine refuses them with a reason), fmpy validates it, and the
closed forms of docs/contacts-friction.md hold on its outputs: the incline block sticks for
mu > tan(alpha) and slides at g (sin - mu cos) for mu < tan(alpha) (mu set as a start value),
and the thrown ball rolls at 5/7 v0 after t* = 2 v0 / (7 mu g)."""
import math
from pathlib import Path

import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")

from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb.fmi.native_build import build_model_fmu  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "models"
G = 9.81


def test_incline_block_and_rolling_ball_fmus(tmp_path):
    path, kind, why = build_model_fmu(MODELS / "incline_block.py", tmp_path)
    assert kind == "python" and "Coulomb friction" in why
    assert validate_fmu(str(path)) == []
    alpha, c = 0.3, 0.05
    x0, z0 = c / 2 * math.sin(alpha), c / 2 * math.cos(alpha)
    for mu in (0.5, 0.2):
        r = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.25,
                              start_values={"mu": mu})
        assert r["time"][-1] == 1.0
        d = ((r["block.x"][-1] - x0) * math.cos(alpha)
             - (r["block.z"][-1] - z0) * math.sin(alpha))
        ref = max(G * (math.sin(alpha) - mu * math.cos(alpha)), 0.0) / 2
        assert abs(d - ref) <= (1e-8 * ref if ref else 1e-9)
        assert r["slope_hull_0.state"][-1] == (1 if mu > math.tan(alpha) else 2)

    path, kind, _ = build_model_fmu(MODELS / "rolling_ball.py", tmp_path)
    assert kind == "python" and validate_fmu(str(path)) == []
    v0, r_, mu = 2.0, 0.1, 0.3
    res = fmpy.simulate_fmu(str(path), stop_time=0.4, output_interval=0.1)
    assert 2 * v0 / (7 * mu * G) < 0.3
    for row in res[-2:]:
        assert abs(row["ball.vx"] - 5 / 7 * v0) <= 1e-8 * v0
        assert abs(row["ball.wy"] * r_ - 5 / 7 * v0) <= 1e-8 * v0
        assert row["floor_shell_0.state"] == 1
