"""The double-wishbone suspension (models/double_wishbone.py) and the five-point suspension
(models/five_point_suspension.py) built again in Exudyn 1.13.6 from the same constants, and
their wheel-centre trajectories against fmu_mb's for road steps and waves.

Exudyn's models: its own Euler-parameter rigid bodies (CreateRigidBody), CreateRevoluteJoint,
CreateSphericalJoint, CreatePrismaticJoint, CreateDistanceConstraint (the five links),
CreateSpringDamper (the tyre's with a user function that adds the road term), index-3 generalized-alpha without numerical damping
(spectral radius 1). The road input is the same zero-order hold as fmu_mb's (constant over each
communication interval dt), and Exudyn's step divides dt, so both integrate the same
piecewise-constant input. Exudyn's error is estimated from three step sizes (see compare).

    python bench/exudyn_spatial.py            # step, sine, curb + wave over 1 s
"""
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)
from fmu_mb.mechanics.loader import load_module  # noqa: E402

MODELS = {n: os.path.join(ROOT, "models", n + ".py")
          for n in ("double_wishbone", "five_point_suspension")}
G = 9.81
DT = 5e-3                    # communication interval of the input (zero-order hold) [s]


def road_step(t, z=0.03, t0=0.1):
    """A curb: the road rises by z [m] at t0."""
    return z if t >= t0 else 0.0


def road_sine(t, z=0.02, f=2.0):
    """A road wave of amplitude z [m] and frequency f [Hz] under the wheel."""
    return z * math.sin(2 * math.pi * f * t)


def held(road, dt=DT):
    """The zero-order hold of road(t) over intervals [k dt, (k+1) dt): what fmu_mb's simulate
    (and an FMU master) feeds the model."""
    def z(t):
        return road(math.floor(t / dt + 1e-9) * dt)
    return z


def _system():
    import exudyn as exu
    from exudyn.utilities import ObjectGround
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    return exu, SC, mbs, mbs.AddObject(ObjectGround())


def _body(mbs, mass, com, J):
    from exudyn.utilities import RigidBodyInertia
    return mbs.CreateRigidBody(inertia=RigidBodyInertia(mass=mass, inertiaTensor=J),
                               referencePosition=list(com), gravity=[0, 0, -G])


def _tyre(mbs, ground, carrier, wc, c_c, r_t, road, dt, step, k_t, F0, c_t=0.0):
    """The tyre spring from the road point r_t below the wheel centre wc; its user function
    adds fmu_mb's tyre.h = -k_t z_r (held) to k (l - l0) + c l'. Exudyn calls it at the end
    of each step, so the middle of the step picks the held value. road None: no user
    function; the road term is the spring's `force` parameter, set by the caller (a
    co-simulation step sets it per step). Returns the spring's object number."""
    if road is None:
        return mbs.CreateSpringDamper(itemNumbers=[ground, carrier],
                                      localPosition0=list(wc - [0, 0, r_t]),
                                      localPosition1=list(wc - c_c),
                                      referenceLength=r_t + F0 / k_t, stiffness=k_t,
                                      damping=c_t)
    z_road = held(road, dt)

    def tyre_force(mbs_, t, item, dL, dL_t, stiffness, damping, force):
        return stiffness * dL + damping * dL_t - k_t * z_road(max(t - 0.5 * step, 0.0))
    return mbs.CreateSpringDamper(itemNumbers=[ground, carrier],
                                  localPosition0=list(wc - [0, 0, r_t]),
                                  localPosition1=list(wc - c_c), referenceLength=r_t + F0 / k_t,
                                  stiffness=k_t, damping=c_t, springForceUserFunction=tyre_force)


def _solve(exu, mbs, carrier, wc, c_c, t_end, step, dt):
    """Run Exudyn (index-3 generalized-alpha, spectral radius 1) and return the wheel-centre
    positions (rows t, x, y, z) at the multiples of dt, and the wall time."""
    from exudyn.utilities import MarkerBodyPosition, SensorMarker
    marker = mbs.AddMarker(MarkerBodyPosition(bodyNumber=carrier, localPosition=list(wc - c_c)))
    sensor = mbs.AddSensor(SensorMarker(markerNumber=marker, storeInternal=True,
                                        outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.endTime = t_end
    s.timeIntegration.numberOfSteps = int(round(t_end / step))
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.newton.relativeTolerance = 1e-10
    s.timeIntegration.newton.absoluteTolerance = 1e-10
    s.timeIntegration.generalizedAlpha.spectralRadius = 1.0
    s.solution.file.write = False
    s.solution.sensors.writePeriod = dt
    s.linearSolver.solverType = exu.LinearSolverType.EigenDense
    t0 = time.perf_counter()
    mbs.SolveDynamic(s)
    return mbs.GetSensorStoredData(sensor), time.perf_counter() - t0


def exudyn_double_wishbone(road, t_end, step, dt=DT):
    """models/double_wishbone.py (default parameters) in Exudyn: wheel-centre positions."""
    exu, SC, mbs, items = double_wishbone_system(road, step, dt)
    return _solve(exu, mbs, items["carrier"], items["wc"], items["c_c"], t_end, step, dt)


def model_parameters(name):
    """{parameter: default value} of models/<name>.py (springs, dampers, loads: read, not
    retyped, so that the Exudyn model follows the model file)."""
    from fmu_mb import load_model
    return {p.name: p.value for p in load_model(MODELS[name]).parameters}


def double_wishbone_system(road=None, step=None, dt=DT):
    """models/double_wishbone.py (default parameters) as an Exudyn system (not assembled):
    (exu, SC, mbs, items), items = carrier, wc (wheel centre), c_c (carrier centre),
    tyre, coil_over (object numbers and points). road: see _tyre."""
    dw = load_module(MODELS["double_wishbone"])
    P, M = dw.hp, dw.MASSES
    par = model_parameters("double_wishbone")
    k_s, c_s, k_r, c_r, F0 = (par[k] for k in ("spring_stiffness", "damper_damping",
                                               "steering_stiffness", "steering_damping",
                                               "wheel_load"))
    exu, SC, mbs, ground = _system()
    ua = _body(mbs, M["upper_arm"], P("UCA_CM"), np.diag(dw.INERTIAS["upper_arm"]))
    la = _body(mbs, M["lower_arm"], P("LCA_CM"), np.diag(dw.INERTIAS["lower_arm"]))
    m_c, c_c, J_c = dw.carrier_properties(M["upright"], M["spindle"], M["wheel"], M["tyre"])
    ca = _body(mbs, m_c, c_c, J_c)
    c_tr = 0.5 * (P("TIEROD_C") + P("TIEROD_U"))
    tr = _body(mbs, M["tie_rod"], c_tr, dw.rod_tensor(M["tie_rod"], dw.TIE_ROD_RADIUS,
                                                       P("TIEROD_C"), P("TIEROD_U")))
    rc = dw.rack_centre()
    half = 2 * P("TIEROD_C")[1]
    ra = _body(mbs, M["rack"], rc, np.diag([M["rack"] * half ** 2 / 12,
                                            M["rack"] * 0.02 ** 2 / 2,
                                            M["rack"] * half ** 2 / 12]))
    mbs.CreateRevoluteJoint(itemNumbers=[ground, ua], position=list(P("UCA_F")),
                            axis=list(P("UCA_F") - P("UCA_B")), useGlobalFrame=True)
    mbs.CreateRevoluteJoint(itemNumbers=[ground, la], position=list(P("LCA_F")),
                            axis=list(P("LCA_F") - P("LCA_B")), useGlobalFrame=True)
    mbs.CreateSphericalJoint(itemNumbers=[ua, ca], position=list(P("UCA_U")))
    mbs.CreateSphericalJoint(itemNumbers=[la, ca], position=list(P("LCA_U")))
    mbs.CreateSphericalJoint(itemNumbers=[ca, tr], position=list(P("TIEROD_U")))
    mbs.CreateSphericalJoint(itemNumbers=[ra, tr], position=list(P("TIEROD_C")))
    mbs.CreatePrismaticJoint(itemNumbers=[ground, ra], position=list(rc), axis=[0, 1, 0],
                             useGlobalFrame=True)
    S0 = dw.SPRING_PRELOAD_GRAVITY + dw.SPRING_PRELOAD_PER_LOAD * F0
    R0 = dw.RACK_PRELOAD_GRAVITY + dw.RACK_PRELOAD_PER_LOAD * F0
    l_s = np.linalg.norm(P("SPRING_A") - P("SPRING_C"))
    coil = mbs.CreateSpringDamper(itemNumbers=[ground, la], localPosition0=list(P("SPRING_C")),
                                  localPosition1=list(P("SPRING_A") - P("LCA_CM")),
                                  referenceLength=l_s + S0 / k_s, stiffness=k_s, damping=c_s)
    L_r = dw.RACK_SPRING_LENGTH
    mbs.CreateSpringDamper(itemNumbers=[ground, ra], localPosition0=list(rc - [0, L_r, 0]),
                           localPosition1=[0, 0, 0], referenceLength=L_r - R0 / k_r,
                           stiffness=k_r, damping=c_r)
    wc = P("SPINDLE")
    tyre = _tyre(mbs, ground, ca, wc, c_c, dw.TYRE_RADIUS, road, dt, step,
                 k_t=par["tyre_stiffness"], F0=F0, c_t=par["tyre_damping"])
    return exu, SC, mbs, {"carrier": ca, "wc": wc, "c_c": c_c, "tyre": tyre,
                          "coil_over": coil}


def exudyn_five_point(road, t_end, step, dt=DT):
    """models/five_point_suspension.py (default parameters) in Exudyn: the carrier on five
    CreateDistanceConstraint links; wheel-centre positions."""
    fp = load_module(MODELS["five_point_suspension"])
    P = fp.HARDPOINTS
    F0 = fp.WHEEL_LOAD
    exu, SC, mbs, ground = _system()
    m_c, c_c, J_c = fp.carrier_properties()
    ca = _body(mbs, m_c, c_c, J_c)
    for chassis, carrier in fp.LINKS.values():
        mbs.CreateDistanceConstraint(itemNumbers=[ground, ca], localPosition0=list(P[chassis]),
                                     localPosition1=list(P[carrier] - c_c))
    S0 = fp.SPRING_PRELOAD_GRAVITY + fp.SPRING_PRELOAD_PER_LOAD * F0
    l_s = np.linalg.norm(P["LCA_U"] - P["SHOCK_C"])
    mbs.CreateSpringDamper(itemNumbers=[ground, ca], localPosition0=list(P["SHOCK_C"]),
                           localPosition1=list(P["LCA_U"] - c_c),
                           referenceLength=l_s + S0 / fp.SPRING_STIFFNESS,
                           stiffness=fp.SPRING_STIFFNESS, damping=fp.DAMPER_DAMPING)
    wc = P["SPINDLE"]
    _tyre(mbs, ground, ca, wc, c_c, fp.TYRE_RADIUS, road, dt, step, k_t=fp.TYRE_STIFFNESS, F0=F0)
    return _solve(exu, mbs, ca, wc, c_c, t_end, step, dt)


def fmu_mb_run(name, road, t_end, dt=DT, rtol=1e-10, atol=1e-12):
    """Wheel-centre positions (rows t, x, y, z) from fmu_mb's simulate of models/<name>.py
    with tyre.h = -k_t z_r held over each interval dt."""
    from fmu_mb import load_model, simulate
    model = load_model(MODELS[name])
    k_t = model.parameter("tyre_stiffness").value
    t0 = time.perf_counter()
    r = simulate(model, t_end, dt, inputs={"tyre.h": lambda t: -k_t * road(t)}, rtol=rtol,
                 atol=atol)
    wall = time.perf_counter() - t0
    return np.column_stack([r["time"], r["wheel_centre.x"], r["wheel_centre.y"],
                            r["wheel_centre.z"]]), wall


EXUDYN = {"double_wishbone": exudyn_double_wishbone, "five_point_suspension": exudyn_five_point}


def compare(road, t_end, step=1e-4, dt=DT, name="double_wishbone"):
    """max |wheel centre fmu_mb - Exudyn| over the output times, with Exudyn's error estimate.

    Exudyn's trapezoidal-type step carries the old acceleration across each jump of the held
    input, so its error is first order in h (halving h halves the difference). The
    Richardson extrapolation R(h) = 2 x(h/2) - x(h) removes that term; R is second order, so
    the error of R(step) is about |R(2 step) - R(step)| / 3 (three Exudyn runs: 2 step, step,
    step / 2)."""
    x = {}
    wall = 0.0
    for h in (2 * step, step, step / 2):
        x[h], w = EXUDYN[name](road, t_end, h, dt)
        wall += w
    fm, wf = fmu_mb_run(name, road, t_end, dt)
    n = min(len(fm), *(len(v) for v in x.values()))
    for v in x.values():
        assert np.allclose(v[:n, 0], fm[:n, 0], atol=1e-9)
    R1 = 2 * x[step][:n, 1:] - x[2 * step][:n, 1:]
    R2 = 2 * x[step / 2][:n, 1:] - x[step][:n, 1:]
    return {"diff": np.abs(fm[:n, 1:] - R2).max(),
            "diff_unextrapolated": np.abs(fm[:n, 1:] - x[step / 2][:n, 1:]).max(),
            "exudyn_error": np.abs(R1 - R2).max() / 3.0,
            "travel": np.abs(fm[:n, 3] - fm[0, 3]).max(), "wall_fmu_mb": wf,
            "wall_exudyn": wall}


def road_curb_and_wave(t):
    """The test's road: a 20 mm curb at 0.05 s and a 10 mm, 5 Hz wave on top from 0.1 s."""
    return (0.02 if t >= 0.05 else 0.0) + (0.01 * math.sin(10 * math.pi * (t - 0.1))
                                            if t >= 0.1 else 0.0)


def main(t_end=1.0):
    for model, name, road in (
            ("double_wishbone", "step 30 mm at 0.1 s", road_step),
            ("double_wishbone", "sine 20 mm, 2 Hz", road_sine),
            ("double_wishbone", "curb 20 mm + wave 10 mm, 5 Hz", road_curb_and_wave),
            ("five_point_suspension", "curb 20 mm + wave 10 mm, 5 Hz", road_curb_and_wave)):
        c = compare(road, t_end, name=model)
        print(f"{model}, {name}, {t_end} s: wheel-centre travel {c['travel'] * 1e3:.2f} mm; "
              f"max |fmu_mb - Exudyn(extrapolated)| {c['diff']:.2e} m, Exudyn's error "
              f"~ {c['exudyn_error']:.1e} m; max |fmu_mb - Exudyn(h = 5e-5)| "
              f"{c['diff_unextrapolated']:.2e} m; wall fmu_mb {c['wall_fmu_mb']:.1f} s, "
              f"Exudyn (3 runs) {c['wall_exudyn']:.1f} s")


if __name__ == "__main__":
    main()
