"""A spatial model as an FMU: fmpy with a torque input gives simulate()'s numbers, and the
FMU state (Euler parameters included) saves, restores and serialises bit-identically."""
import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")

from fmpy import simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb import load_model, simulate  # noqa: E402

from conftest import MODELS  # noqa: E402
from test_fmu import init, instantiate, run, vr_of  # noqa: E402

NAMES = ["tip.x", "tip.y", "tip.z", "top.e0", "top.wz", "pivot.fz", "energy.total"]


@pytest.fixture(scope="module")
def top_fmu(shared_fmu):
    return shared_fmu(MODELS / "heavy_top.py", "python")


def test_heavy_top_fmu_matches_simulate_with_an_input(top_fmu):
    assert validate_fmu(str(top_fmu)) == []
    times = np.array([0.0, 0.2, 0.2, 0.5])
    table = np.zeros(4, dtype=[("time", float), ("spin_motor.h", float)])
    table["time"], table["spin_motor.h"] = times, [0.0, 0.0, 0.05, 0.05]
    r = simulate_fmu(str(top_fmu), stop_time=0.5, output_interval=0.05, input=table,
                     output=NAMES, start_values={"omega3": 50.0})
    assert r["time"][-1] == pytest.approx(0.5, abs=1e-12)
    # fmpy sets the input at each communication point t_k from the table (held over the step)
    ref = simulate(load_model(MODELS / "heavy_top.py", omega3=50.0), 0.5, 0.05,
                   inputs={"spin_motor.h": lambda t: 0.05 if t >= 0.2 - 1e-12 else 0.0})
    for name in NAMES:
        np.testing.assert_allclose(r[name], ref[name], rtol=1e-12, atol=1e-12, err_msg=name)
    assert ref["top.wz"][-1] > ref["top.wz"][4] + 1e-3          # the motor spins it up


def test_heavy_top_fmu_state_round_trip_is_bit_identical(top_fmu):
    vr, _ = vr_of(top_fmu)
    a, _, unz, _ = instantiate(top_fmu, "a")
    init(a)
    _, t = run(a, vr, 0.0, 13, 0.017, NAMES, "spin_motor.h")
    saved = a.getFMUstate()
    blob = a.serializeFMUstate(saved)
    first, _ = run(a, vr, t, 9, 0.023, NAMES, "spin_motor.h")
    a.setFMUstate(saved)
    again, _ = run(a, vr, t, 9, 0.023, NAMES, "spin_motor.h")
    assert np.array_equal(first, again)
    b, _, _, _ = instantiate(top_fmu, "b", unz)
    init(b)
    b.setFMUstate(b.deSerializeFMUstate(blob))
    other, _ = run(b, vr, t, 9, 0.023, NAMES, "spin_motor.h")
    assert np.array_equal(first, other)
    a.freeFMUstate(saved)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_lagrange_on_the_spatial_fmu_gives_simulates_numbers(top_fmu):
    """solver.formulation = lagrange runs the spatial FMU."""
    r = simulate_fmu(str(top_fmu), stop_time=0.1, output_interval=0.05, output=NAMES,
                     start_values={"solver.formulation": "lagrange"})
    ref = simulate(load_model(MODELS / "heavy_top.py"), 0.1, 0.05, formulation="lagrange")
    for name in NAMES:
        np.testing.assert_allclose(r[name], ref[name], rtol=1e-12, atol=1e-12, err_msg=name)
