"""Seed 001's suspensions (models/double_wishbone.py, models/five_point_suspension.py): the
seed's degree-of-freedom counts, the design pose as static equilibrium (computed independently
by virtual work in bench/suspension_statics.py), the double wishbone against the same model
in Exudyn, and its FMU in fmpy and libcosim with a road input."""
import math
import sys

import numpy as np
import pytest

from fmu_mb import load_model, simulate
from fmu_mb.tools.cli import main

from conftest import MODELS, ROOT

K_TYRE = load_model(MODELS / "double_wishbone.py").parameter("tyre_stiffness").value
# the models' default tyre stiffness (Chrono's E90 rear tyre): tyre.h = -K_TYRE * z_road


@pytest.mark.parametrize("name,counts", [
    ("double_wishbone", "bodies n_B = 5, joints n_G = 7, loops n_L = 2"),
    ("five_point_suspension", "bodies n_B = 1, joints n_G = 5, loops n_L = 4")])
def test_info_reproduces_the_seed_dof_counts(name, counts, capsys):
    """Seed 001: double wishbone f = 6*5 - (3*5 + 4*3) = 3 (compression, steering, the tie
    rod's isolated spin); five-point suspension f = 1."""
    dof = 3 if name == "double_wishbone" else 1
    assert main(["info", str(MODELS / f"{name}.py")]) == 0
    out = capsys.readouterr().out
    assert counts in out
    assert f"Gruebler-Kutzbach DOF = {dof}, DOF from rank(D) = {dof}," in out
    assert "redundant = 0" in out


@pytest.mark.parametrize("name", ["double_wishbone", "five_point_suspension"])
def test_design_pose_is_the_static_equilibrium(name):
    """The free lengths come from virtual work on the velocity Jacobian (no dynamics): at
    rest, fmu_mb's accelerations must vanish, so the wheel centre stays put."""
    r = simulate(load_model(MODELS / f"{name}.py"), 0.2, 0.05)
    for c in "xyz":
        assert np.abs(r[f"wheel_centre.{c}"] - r[f"wheel_centre.{c}"][0]).max() < 1e-7


def test_wheel_load_and_road_step_give_the_static_wheel_rate():
    """Raising the road by z moves the wheel centre, once settled, by z k_t / (k_t + k_w),
    with the wheel rate k_w = k_s MR^2 from the motion ratio of bench/suspension_statics.py;
    within 3 %, what the steering compliance and the preloads' geometric stiffness leave
    out (measured 0.37 % on the E90 corner; the bump and toe modes are damped
    harder than by default so that 0.4 s settles them)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import suspension_statics as st
    mr = st.double_wishbone()["motion_ratio"]
    k_w = load_model(MODELS / "double_wishbone.py").parameter("spring_stiffness").value * mr ** 2
    z = 0.01
    r = simulate(load_model(MODELS / "double_wishbone.py", damper_damping=1.9e4,
                            steering_damping=2e4), 0.4, 0.1,
                 inputs={"tyre.h": -K_TYRE * z})
    rise = r["wheel_centre.z"] - r["wheel_centre.z"][0]
    assert abs(rise[-1] - rise[-2]) < 1e-5                  # settled (damping ratio ~0.5)
    assert rise[-1] == pytest.approx(z * K_TYRE / (K_TYRE + k_w), rel=0.03)


def test_five_point_linkage_has_the_double_wishbone_kinematics_with_the_rack_held():
    """Each wishbone split into two links with a common outer ball joint: the carrier's
    velocity per unit wheel rise (from the null space of the velocity constraints) is the
    same in both models at the design pose."""
    sys.path.insert(0, str(ROOT / "bench"))
    import suspension_statics as st
    dw = st.double_wishbone()
    dwm = load_model(MODELS / "double_wishbone.py")
    fp = st.five_point(dw["motion_ratio"], dwm.parameter("spring_stiffness").value,
                       dwm.parameter("damper_damping").value)
    np.testing.assert_allclose(fp["carrier_twist"], dw["carrier_twist"], atol=1e-12)
    m = load_model(MODELS / "five_point_suspension.py")
    assert m.parameter("spring_stiffness").value == pytest.approx(fp["stiffness"], rel=1e-6)


# ---------------------------------------------------------------- against Exudyn
def _exudyn_spatial():
    pytest.importorskip("exudyn")
    sys.path.insert(0, str(ROOT / "bench"))
    import exudyn_spatial
    return exudyn_spatial


@pytest.mark.parametrize("name", ["double_wishbone", "five_point_suspension"])
def test_wheel_centre_matches_exudyn(name):
    """Same geometry, masses, springs and the same zero-order-held road (a curb, then a
    wave) in both engines (Exudyn's five links are CreateDistanceConstraint). fmu_mb runs at rtol 1e-10, its error far below Exudyn's. Exudyn
    is first order here (the held input jumps every 5 ms), so its three runs at h = 2e-4,
    1e-4, 5e-5 s are Richardson-extrapolated and the remaining error is estimated from
    them (bench/exudyn_spatial.compare). fmu_mb must agree within three times that estimate
    (plus 1e-9 m for Exudyn's Newton tolerance), and the estimate must be small against the
    wheel travel."""
    es = _exudyn_spatial()
    c = es.compare(es.road_curb_and_wave, 0.25, name=name)
    assert c["travel"] > 0.01
    assert c["exudyn_error"] < 1e-4 * c["travel"]
    assert c["diff"] < 3 * c["exudyn_error"] + 1e-9, c


# ---------------------------------------------------------------- the FMU in two masters
def _road(t):
    """A 20 mm curb at 0.05 s, then a 5 Hz, 10 mm wave on top from 0.15 s."""
    return (0.02 if t >= 0.05 else 0.0) + (0.01 * math.sin(10 * math.pi * (t - 0.15))
                                            if t >= 0.15 else 0.0)


@pytest.mark.fmu
def test_double_wishbone_fmu_gives_the_same_wheel_centre_in_fmpy_and_libcosim(tmp_path):
    pytest.importorskip("pythonfmu")
    fmpy = pytest.importorskip("fmpy")
    cosim = pytest.importorskip("libcosimpy.CosimExecution")
    from fmpy.fmi2 import FMU2Slave
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimManipulator import CosimManipulator
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave
    assert main(["build", str(MODELS / "double_wishbone.py"), "-o", str(tmp_path),
                 "--quiet"]) == 0                         # `fmu-mb build`
    path = tmp_path / "double_wishbone.fmu"
    md = fmpy.read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [vr[f"wheel_centre.{c}"] for c in "xyz"]
    h, n = 0.01, 30
    u = [-K_TYRE * _road(k * h) for k in range(n)]       # held over [k h, (k+1) h)

    f = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="dw")
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    a = []
    for k in range(n):
        f.setReal([vr["tyre.h"]], [u[k]])
        f.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
        a.append(f.getReal(outs))
    f.terminate()
    f.freeInstance()

    log_output_level(CosimLogLevel.ERROR)
    ex = cosim.CosimExecution.from_step_size(step_size=int(round(h * 1e9)))
    s = ex.add_local_slave(CosimLocalSlave(fmu_path=str(path), instance_name="dw"))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    man = CosimManipulator.create_override()
    ex.add_manipulator(man)
    b = []
    for k in range(n):
        man.slave_real_values(s, [vr["tyre.h"]], [u[k]])
        ex.step()
        b.append(obs.last_real_values(s, outs))

    a, b = np.array(a), np.array(b)
    assert np.ptp(a[:, 2]) > 0.01                         # the wheel really moves
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)
    ref = simulate(load_model(MODELS / "double_wishbone.py"), n * h, h,
                   inputs={"tyre.h": lambda t: u[min(int(round(t / h)), n - 1)]})
    np.testing.assert_allclose(a[:, 2], ref["wheel_centre.z"][1:], rtol=0, atol=1e-12)
