"""The Franka Panda of example-robot-data as a native FMU, co-simulated in fmpy with a
controller FMU (computed torque: a joint PD on the robot linearised by its inverse dynamics,
examples/controllers/panda_computed_torque.py) tracking a sinusoidal joint trajectory;
prints the tracking error.

    python examples/panda_pd.py [--stop-time 4] [--step 0.001] [-o out/panda_pd]

The plant is `fmu-mb build panda.urdf` (native: the compiled engine, joint limits as
contacts, the URDF's joint damping), its initial angles the reference's start set at build
time; the controller is a pythonfmu FMU whose inverse dynamics come from Pinocchio on the
same URDF. The master is the fixed-step Jacobi loop of examples/closed_loop.py: both FMUs step
over [t, t + h], then the plant's joint angles and rates go to the controller and its torques
to the plant's inputs `<joint>.h` (one sample of delay). Needs pip example-robot-data, pin,
pythonfmu, fmpy and the `import` extra.
"""
import argparse
import importlib.metadata
import sys
import time
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent
sys.path.insert(0, str(EXAMPLES / "controllers"))
from panda_computed_torque import AMPLITUDE, JOINTS, Q0  # noqa: E402


def panda_urdf():
    dist = importlib.metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/"
                                 "panda_description/urdf/panda.urdf"))


def build(out):
    """(plant FMU, controller FMU, build seconds of the plant)."""
    import warnings

    from pythonfmu.builder import FmuBuilder

    from fmu_mb.fmi.native_build import build_native_fmu
    from fmu_mb.importers import model_file

    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # mimic finger, safety_controller: noted
        # the second finger free, as in the controller's Pinocchio model (its default)
        src = model_file(panda_urdf(), out, mimic="free")
        plant = build_native_fmu(src, out, {f"{j}.q0": q for j, q in zip(JOINTS, Q0)})
    seconds = time.perf_counter() - t
    urdf = out / "panda.urdf"
    urdf.write_bytes(panda_urdf().read_bytes())
    ctrl = FmuBuilder.build_FMU(EXAMPLES / "controllers" / "panda_computed_torque.py", dest=out,
                                project_files=[urdf], needsExecutionTool="false")
    return plant, Path(ctrl), seconds


def coordinate(j):
    return f"{j}.{'position' if 'finger' in j else 'angle'}"


def run(plant_fmu, ctrl_fmu, stop_time, h):
    """The Jacobi loop; returns time, q (n, 9) and the reference q_ref (n, 9) at the same
    times (the controller's default frequency, 0.5 Hz)."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    fmus = []
    for path, inst in ((plant_fmu, "plant"), (ctrl_fmu, "controller")):
        md = read_model_description(str(path))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=inst)
        f.instantiate()
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        f.exitInitializationMode()
        fmus.append((f, vr))
    (plant, pvr), (ctrl, cvr) = fmus
    meas = [pvr[coordinate(j)] for j in JOINTS] + [pvr[f"{j}.rate"] for j in JOINTS]
    c_in = [cvr[f"{j}.q"] for j in JOINTS] + [cvr[f"{j}.qd"] for j in JOINTS]
    tau, p_in = [cvr[f"{j}.tau"] for j in JOINTS], [pvr[f"{j}.h"] for j in JOINTS]
    n = int(round(stop_time / h))
    T, Q, R = [], [], []

    def transfer():
        ctrl.setReal(c_in, plant.getReal(meas))
        plant.setReal(p_in, ctrl.getReal(tau))

    transfer()
    for i in range(n):
        t = i * h
        T.append(t)
        Q.append(plant.getReal(meas[:len(JOINTS)]))
        R.append(np.array(Q0) + np.array(AMPLITUDE) * np.sin(2.0 * np.pi * 0.5 * t))
        plant.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        ctrl.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        transfer()
    for f, _ in fmus:
        f.terminate()
        f.freeInstance()
    return np.array(T), np.array(Q), np.array(R)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stop-time", type=float, default=4.0)
    p.add_argument("--step", type=float, default=1e-3)
    p.add_argument("-o", "--output", default="out/panda_pd")
    args = p.parse_args(argv)
    plant, ctrl, seconds = build(Path(args.output))
    print(f"plant {plant.name}: native FMU built in {seconds:.1f} s; controller {ctrl.name}")
    t0 = time.perf_counter()
    T, Q, R = run(plant, ctrl, args.stop_time, args.step)
    print(f"{len(T)} steps of {args.step} s in {time.perf_counter() - t0:.2f} s (wall)")
    settled = T >= 1.0                          # after the start-up transient
    err = np.abs(Q - R)
    print(f"{'joint':22s} {'max |q - q_ref|':>16s} {'rms':>12s}   (t >= 1 s)")
    for k, j in enumerate(JOINTS):
        print(f"{j:22s} {err[settled, k].max():16.3e} {np.sqrt(np.mean(err[settled, k] ** 2)):12.3e}")
    return err[settled]


if __name__ == "__main__":
    main()
