"""Closed-loop digging: three PID FMUs drive the cylinders of models/excavator.py so that the
bucket tip follows the digging path of examples/excavator_path.py.

Each joint (boom, stick, bucket) has its own controller FMU (examples/controllers/
excavator_<joint>_pid.py, built by `python -m fmu_mb build`): measurement = the joint angle
`<joint>_pin.angle` [rad], set-point = the joint angle of the path's inverse kinematics (a
set-point table, linearly interpolated in time), output u = the cylinder force `<joint>_cyl.h`
[N], clamped to what the cylinder can push and pull at 35 MPa. A constant soil resistance
`dig_x.h` (15 kN, pushing the tip away from the machine) acts on the tip all along.

The masters are those of closed_loop.py (a fixed-step Jacobi scheme, one sample of delay)
for several controllers: `run_fmpy` (fmpy's FMU2Slave) and `run_libcosim` (libcosim's
CosimExecution with connect_real_variables). `tracking_error` compares the simulated tip with
the path: the largest and the RMS distance after the first second.

    python examples/excavator_dig.py     # builds into out/examples/, runs both masters
    python examples/excavator_dig.py --native   # the plant as a native FMU
"""
import math
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent
ROOT = EXAMPLES.parent
for p in (str(ROOT), str(EXAMPLES)):
    if p not in sys.path:
        sys.path.insert(0, p)

import excavator_path as path  # noqa: E402

PLANT = ROOT / "models" / "excavator.py"
STOP, STEP = 10.0, 0.01
P_MAX = 35e6                # relief pressure [Pa]
# joint, cylinder, PID gains (force per rad), areas (head, annulus) [m2] for the limits.
# Gains from the joint's inertia J seen through the cylinder's lever arm a = dl/dtheta
# (boom J ~ 8e4 kg.m2, a ~ 1.1 m; stick 1.1e4, 0.55 m; bucket 500, 0.36 m) for a bandwidth
# of about 8 rad/s, then adjusted in closed loop. Extending the stick or the bucket cylinder
# curls its link in (the joint angle decreases): their gains are negative.
JOINTS = [
    ("boom", dict(kp=5.0e6, ki=1.0e7, kd=6.0e5), (2 * math.pi / 4 * 0.120 ** 2,
                                                   2 * math.pi / 4 * (0.120 ** 2 - 0.085 ** 2))),
    ("stick", dict(kp=-1.5e6, ki=-3.0e6, kd=-2.0e5), (math.pi / 4 * 0.135 ** 2,
                                                    math.pi / 4 * (0.135 ** 2 - 0.095 ** 2))),
    ("bucket", dict(kp=-2.0e5, ki=-4.0e5, kd=-2.0e4), (math.pi / 4 * 0.115 ** 2,
                                                     math.pi / 4 * (0.115 ** 2 - 0.080 ** 2))),
]
FEEDFORWARD = True          # add the path's inverse-dynamics forces to the PID outputs
PLANT_START = {"dig_x.h": 15.0e3, "solver.rtol": 1e-6, "solver.atol": 1e-8}
OBSERVE = ["tip.x", "tip.y", "boom_pin.angle", "stick_pin.angle", "bucket_pin.angle",
           "boom_cyl.stroke", "stick_cyl.stroke", "bucket_cyl.stroke", "boom_pin.fx",
           "boom_pin.fy"]
OBSERVE_INT = ["boom_cyl.end_stops", "stick_cyl.end_stops", "bucket_cyl.end_stops"]


@lru_cache(maxsize=4)
def feedforward_tables(stop_time=STOP, sample=path.SAMPLE, lead=1.5 * STEP):
    """Per cylinder a tuple of (t, F) pairs (computed once per arguments: each controller
    file asks for all three cylinders' tables): the forces the path needs (inverse dynamics in
    the tree coordinates q = the three joint angles of the path: Mbar(q) qdd = fbar(q, qd, u)
    is linear in the cylinder forces u, solved for them with qd and qdd of the path by
    central differences and the soil resistance of PLANT_START). F is taken `lead` ahead:
    the force a controller computes at t acts on the plant over [t + h, t + 2h]. Plus
    kd qd_ref: the PID differentiates the measurement, not the error, so on a moving
    set-point its D term would brake the motion by kd qd; this term gives it back."""
    from fmu_mb import load_model
    from fmu_mb.dynamics.formulations import tmt

    model = load_model(PLANT)
    geo = path._geometry()
    acts = [f"{j}_cyl.h" for j, _, _ in JOINTS]
    base = {k: v for k, v in PLANT_START.items() if k in model.input_names}
    ts = np.round(np.arange(0.0, stop_time + 0.5 * sample, sample), 10)
    out, d = [], 1e-4
    for t in ts:
        tt = t + lead
        q = path.joint_path(tt, geo)
        qp, qm = path.joint_path(tt + d, geo), path.joint_path(tt - d, geo)
        qd, qdd = (qp - qm) / (2 * d), (qp - 2 * q + qm) / d ** 2
        u0 = model.input_vector(base)
        M, f0 = tmt.reduced_equations(model, q, qd, tt, u0)[:2]
        B = np.empty((3, 3))
        for i, a in enumerate(acts):
            f1 = tmt.reduced_equations(model, q, qd, tt, model.input_vector(
                dict(base, **{a: 1.0})))[1]
            B[:, i] = f1 - f0
        kd = np.array([g["kd"] for _, g, _ in JOINTS])
        out.append(np.linalg.solve(B, M @ qdd - f0) + kd * (path.joint_path(t + d, geo)
                                                            - path.joint_path(t - d, geo))
                   / (2 * d))
    out = np.array(out)
    return tuple(tuple((float(t), float(v)) for t, v in zip(ts, out[:, k])) for k in range(3))


def controller_spec(joint):
    """The ControllerSpec of one joint's PID (used by the controller files)."""
    from fmu_mb.fmi.controller import pid
    k = [j for j, _, _ in JOINTS].index(joint)
    _, gains, (a_head, a_rod) = JOINTS[k]
    table = path.setpoint_tables(STOP)[k]
    ff = feedforward_tables(STOP)[k] if FEEDFORWARD else ()
    return pid(f"excavator_{joint}_pid", **gains, Tf=0.02, u_min=-P_MAX * a_rod,
               u_max=P_MAX * a_head, anti_windup="back_calculation", kaw=5.0,
               setpoint_table=table, feedforward_table=ff, measurement_unit="rad",
               output_unit="N",
               description=f"{joint} cylinder force from the {joint} angle error along the "
                           f"digging path of examples/excavator_path.py",
               experiment={"stop_time": STOP, "step_size": STEP})


def controller_files():
    return [EXAMPLES / "controllers" / f"excavator_{j}_pid.py" for j, _, _ in JOINTS]


def build(out_dir=ROOT / "out" / "examples", native=False):
    """Build the plant and the three controller FMUs; returns (plant, [controllers]).
    native: the plant as a native FMU (the compiled engine, its end stops' events in C);
    the controllers stay Python FMUs (controller files)."""
    from fmu_mb.fmi.build import build_controller_fmu, build_fmu
    if native:
        from fmu_mb.fmi.native_build import build_native_fmu
        plant = build_native_fmu(PLANT, Path(out_dir) / "native")
    else:
        plant = build_fmu(PLANT, out_dir)
    return plant, [build_controller_fmu(f, out_dir) for f in controller_files()]


def _links():
    """(controller instance, plant output -> measurement, u -> plant input) per joint."""
    return [(f"{j}_pid", f"{j}_pin.angle", f"{j}_cyl.h") for j, _, _ in JOINTS]


def run_fmpy(plant_fmu, ctrl_fmus, stop_time=STOP, step=STEP):
    """The Jacobi master of closed_loop.run_fmpy with one plant and several controllers."""
    from fmpy import extract
    from fmpy.fmi2 import FMU2Slave

    from closed_loop import _vr

    def open_(p, inst):
        md, vr = _vr(p)
        f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(p)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=inst)
        f.instantiate()
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        return f, vr

    plant, pvr = open_(plant_fmu, "plant")
    ctrls = [open_(c, inst) for c, (inst, _, _) in zip(ctrl_fmus, _links())]
    for k, v in PLANT_START.items():
        plant.setReal([pvr[k]], [v])
    plant.exitInitializationMode()
    for c, _ in ctrls:
        c.exitInitializationMode()

    def transfer():
        y = plant.getReal([pvr[m] for _, m, _ in _links()])
        for (c, cvr), v in zip(ctrls, y):
            c.setReal([cvr["measurement"]], [v])
        for (c, cvr), (_, _, act) in zip(ctrls, _links()):
            plant.setReal([pvr[act]], c.getReal([cvr["u"]]))

    names = OBSERVE
    rec = {k: [] for k in ["time"] + [f"{i}.u" for i, _, _ in _links()] + names + OBSERVE_INT}
    transfer()
    n = int(round(stop_time / step))
    for i in range(n):
        t = i * step
        plant.doStep(currentCommunicationPoint=t, communicationStepSize=step)
        for c, _ in ctrls:
            c.doStep(currentCommunicationPoint=t, communicationStepSize=step)
        # record before the transfer, as libcosim's observer does: the reactions depend
        # on the inputs directly, and these are the ones that acted during the step
        rec["time"].append((i + 1) * step)
        for (c, cvr), (inst, _, _) in zip(ctrls, _links()):
            rec[f"{inst}.u"].append(c.getReal([cvr["u"]])[0])
        for k, v in zip(names, plant.getReal([pvr[k] for k in names])):
            rec[k].append(v)
        for k, v in zip(OBSERVE_INT, plant.getInteger([pvr[k] for k in OBSERVE_INT])):
            rec[k].append(v)
        transfer()
    for f, _ in [(plant, pvr)] + ctrls:
        f.terminate()
        f.freeInstance()
    return {k: np.array(v) for k, v in rec.items()}


def run_libcosim(plant_fmu, ctrl_fmus, stop_time=STOP, step=STEP):
    """The same loop in libcosim (CosimExecution + connect_real_variables)."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    from closed_loop import _vr
    log_output_level(CosimLogLevel.ERROR)

    ex = CosimExecution.from_step_size(step_size=int(round(step * 1e9)))
    p = ex.add_local_slave(CosimLocalSlave(fmu_path=str(plant_fmu), instance_name="plant"))
    _, pvr = _vr(plant_fmu)
    cs = []
    for c, (inst, meas, act) in zip(ctrl_fmus, _links()):
        ci = ex.add_local_slave(CosimLocalSlave(fmu_path=str(c), instance_name=inst))
        _, cvr = _vr(c)
        ex.connect_real_variables(p, pvr[meas], ci, cvr["measurement"])
        ex.connect_real_variables(ci, cvr["u"], p, pvr[act])
        cs.append((ci, cvr))
    for k, v in PLANT_START.items():
        ex.real_initial_value(p, pvr[k], v)
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    names = OBSERVE
    rec = {k: [] for k in ["time"] + [f"{i}.u" for i, _, _ in _links()] + names + OBSERVE_INT}
    for i in range(int(round(stop_time / step))):
        ex.step()
        rec["time"].append((i + 1) * step)
        for (ci, cvr), (inst, _, _) in zip(cs, _links()):
            rec[f"{inst}.u"].append(obs.last_real_values(ci, [cvr["u"]])[0])
        for k, v in zip(names, obs.last_real_values(p, [pvr[k] for k in names])):
            rec[k].append(v)
        for k, v in zip(OBSERVE_INT, obs.last_integer_values(p, [pvr[k] for k in OBSERVE_INT])):
            rec[k].append(v)
    return {k: np.array(v) for k, v in rec.items()}


def run_inprocess(stop_time=STOP, step=STEP):
    """The same Jacobi loop without FMUs (fmu_mb.advance and the PID law of
    fmu_mb.fmi.controller), for tuning and as a reference."""
    from fmu_mb import Settings, advance, initial_state, load_model, output_names
    from fmu_mb.dynamics.outputs import Outputs
    from fmu_mb.fmi.controller import PidState, pid_step

    model = load_model(PLANT)
    settings = Settings(rtol=PLANT_START["solver.rtol"], atol=PLANT_START["solver.atol"])
    specs = [controller_spec(j) for j, _, _ in JOINTS]
    cstate = [PidState(1) for _ in specs]
    for s in cstate:
        s.t = 0.0
    state = initial_state(model)
    names = output_names(model)
    ix = {n: i for i, n in enumerate(names)}
    u = {k: v for k, v in PLANT_START.items() if k in model.input_names}
    rec = {k: [] for k in ["time"] + [f"{i}.u" for i, _, _ in _links()] + OBSERVE
           + OBSERVE_INT}
    for i in range(int(round(stop_time / step))):
        t = i * step
        for s, (_, _, act) in zip(cstate, _links()):
            u[act] = s.u
        uv = model.input_vector(u)
        out = Outputs(model, state, uv)
        y = [out.value(ix[m]) for _, m, _ in _links()]
        state = advance(model, state, t + step, uv, settings)
        cstate = [pid_step(sp, s, [yy], [sp.channels[0].reference(t)], step,
                           [sp.channels[0].feedforward(t)])
                  for sp, s, yy in zip(specs, cstate, y)]
        out = Outputs(model, state, model.input_vector(u))
        rec["time"].append((i + 1) * step)
        for s, (inst, _, _) in zip(cstate, _links()):
            rec[f"{inst}.u"].append(s.u)
        for k in OBSERVE + OBSERVE_INT:
            rec[k].append(out.value(ix[k]))
    return {k: np.array(v) for k, v in rec.items()}


def tracking_error(res, after=1.0):
    """Largest and RMS distance [m] between the tip and the path (t > after)."""
    geo = path._geometry()
    t = res["time"]
    want = np.array([path.tip_path(tt, geo)[0] for tt in t])
    d = np.hypot(res["tip.x"] - want[:, 0], res["tip.y"] - want[:, 1])
    sel = t > after
    return float(d[sel].max()), float(np.sqrt(np.mean(d[sel] ** 2)))


def main(out_dir=ROOT / "out" / "examples", native=False):
    plant, ctrls = build(out_dir, native=native)
    res = {"fmpy": run_fmpy(plant, ctrls), "libcosim": run_libcosim(plant, ctrls)}
    # relative to each signal: libcosim's time is integer nanoseconds, so the set-point
    # tables are read at times a rounding apart from fmpy's i * h
    diff = max(float(np.max(np.abs(res["fmpy"][k] - res["libcosim"][k])))
               / max(1.0, float(np.max(np.abs(res["fmpy"][k])))) for k in res["fmpy"])
    print(f"{'loop':14s} {'master':9s} {'max error [m]':>14s} {'rms error [m]':>14s} "
          f"{'end stops':>10s} {'max rel |fmpy - libcosim|':>26s}")
    for master, r in res.items():
        emax, erms = tracking_error(r)
        stops = int(sum(r[f"{j}_cyl.end_stops"][-1] for j, _, _ in JOINTS))
        print(f"{'excavator_dig' + (' (native)' if native else ''):14s} {master:9s} {emax:14.4f} {erms:14.4f} {stops:10d} "
              f"{diff:26.2e}")
    return res, diff


if __name__ == "__main__":
    main(native="--native" in sys.argv[1:])
