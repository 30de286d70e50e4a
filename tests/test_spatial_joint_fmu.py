"""The spatial joint-coordinate formulations through an FMU (fmpy): solver.formulation tmt and
recursive give newton_euler's trajectory of the spatial chain."""
import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")

from fmpy import simulate_fmu  # noqa: E402

from fmu_mb.fmi.build import build_fmu  # noqa: E402

from conftest import MODELS  # noqa: E402


def test_spatial_chain_fmu_in_every_spatial_formulation(tmp_path):
    fmu = build_fmu(MODELS / "spatial_chain.py", tmp_path, {"N": 3})
    runs = {f: simulate_fmu(str(fmu), stop_time=0.4, output_interval=0.2,
                            start_values={"solver.formulation": f},
                            output=["tip.x", "tip.y", "tip.z"])
            for f in ("newton_euler", "tmt", "recursive")}
    ref = runs["newton_euler"]
    assert ref["time"][-1] == pytest.approx(0.4)
    for f in ("tmt", "recursive"):
        assert runs[f]["time"][-1] == pytest.approx(0.4), f
        for c in ("tip.x", "tip.y", "tip.z"):
            assert np.abs(runs[f][c] - ref[c]).max() < 1e-6, (f, c)
