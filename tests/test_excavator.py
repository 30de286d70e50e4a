"""models/excavator.py: pin reactions against free-body balances at a held pose, and the FMU
(validation; 10 s with constant large cylinder forces keep every stroke within its limits and
report the end-stop events)."""
import numpy as np
import pytest

from fmu_mb import load_model, simulate
from fmu_mb.dynamics.formulations import tmt

from conftest import MODELS

PATH = MODELS / "excavator.py"
CYL = ("boom_cyl", "stick_cyl", "bucket_cyl")
STROKE = {"boom_cyl": 2.85 - 1.45, "stick_cyl": 4.45 - 3.40, "bucket_cyl": 2.90 - 2.05}


def holding_forces(model, dig):
    """Cylinder forces that hold the initial pose under the digging load: Mbar qdd = fbar(u)
    with qd = qdd = 0 is linear in the three cylinder forces."""
    q = np.array([model.parameter(n).value for n in ("boom0", "stick0", "bucket0")])
    zero = np.zeros(3)
    f0 = tmt.reduced_equations(model, q, zero, 0.0, model.input_vector(dig))[1]
    B = np.column_stack([tmt.reduced_equations(model, q, zero, 0.0, model.input_vector(
        dict(dig, **{f"{c}.h": 1.0})))[1] - f0 for c in CYL])
    return dict(zip([f"{c}.h" for c in CYL], np.linalg.solve(B, -f0)))


def test_pin_reactions_balance_each_free_body():
    model = load_model(PATH)
    dig = {"dig_x.h": 12e3, "dig_y.h": -8e3}
    u = dict(dig, **holding_forces(model, dig))
    r = simulate(model, 0.2, 0.1, inputs=u)
    for j in ("boom_pin", "stick_pin", "bucket_pin"):
        assert np.ptp(r[f"{j}.angle"]) < 1e-9                  # held
    g = 9.81
    m = {b: model.body(b).mass for b in ("boom", "stick", "bucket")}
    F = {k: np.array([r[f"{k}.fx"][-1], r[f"{k}.fy"][-1]]) for k in
         ("boom_pin", "stick_pin", "bucket_pin") + CYL}
    load = np.array([dig["dig_x.h"], dig["dig_y.h"]])

    def weight(*bodies):
        return np.array([0.0, -g * sum(m[b] for b in bodies)])

    scale = g * sum(m.values())
    # bucket: pin (stick on bucket) + its cylinder + weight + digging load = 0
    np.testing.assert_allclose(F["bucket_pin"] + F["bucket_cyl"] + weight("bucket") + load,
                               0.0, atol=1e-8 * scale)
    # stick and bucket: pin (boom on stick) + stick cylinder (on the stick) + weights + load
    np.testing.assert_allclose(F["stick_pin"] + F["stick_cyl"] + weight("stick", "bucket")
                               + load, 0.0, atol=1e-8 * scale)
    # the whole arm: boom foot + boom cylinder + weights + load
    np.testing.assert_allclose(F["boom_pin"] + F["boom_cyl"]
                               + weight("boom", "stick", "bucket") + load, 0.0,
                               atol=1e-8 * scale)
    # cylinder force output = the input force (held: the friction c l' is ~1e-12 of it),
    # along the pins
    for c in CYL:
        assert r[f"{c}.force"][-1] == pytest.approx(u[f"{c}.h"], rel=1e-10)
        assert np.hypot(*F[c]) == pytest.approx(abs(r[f"{c}.force"][-1]), rel=1e-12)


@pytest.mark.fmu
def test_fmu_validates_and_end_stops_hold_large_forces(shared_fmu):
    pytest.importorskip("pythonfmu")
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    fmu = shared_fmu(PATH, "python")
    assert validate_fmu(str(fmu)) == []
    # constant forces far above what holds the arm (boom 800 kN out, stick 500 kN in,
    # bucket 360 kN out): each cylinder runs into an end stop and stays there
    start = {"boom_cyl.h": 8.0e5, "stick_cyl.h": -5.0e5, "bucket_cyl.h": 3.6e5}
    out = [f"{c}.{v}" for c in CYL for v in ("stroke", "end_stops")]
    out += [f"{c}_{e}.impacts" for c in CYL for e in ("lower", "upper")]
    r = simulate_fmu(str(fmu), stop_time=10.0, output_interval=0.01, start_values=start,
                     output=out)
    assert r["time"][-1] == pytest.approx(10.0)
    for c in CYL:
        s = r[f"{c}.stroke"]
        assert s.min() >= -1e-6 and s.max() <= STROKE[c] + 1e-6, (c, s.min(), s.max())
        assert r[f"{c}.end_stops"][-1] >= 1
        assert r[f"{c}.end_stops"][-1] == (r[f"{c}_lower.impacts"][-1]
                                           + r[f"{c}_upper.impacts"][-1])
    assert r["boom_cyl_upper.impacts"][-1] >= 1 and r["stick_cyl_lower.impacts"][-1] >= 1
    assert r["bucket_cyl_upper.impacts"][-1] >= 1
