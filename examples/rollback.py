"""Rollback master: redo a communication step with smaller steps when the multibody FMU
reports an impact inside it (fmi2GetFMUstate / fmi2SetFMUstate).

    python examples/rollback.py          # builds out/examples/bouncing_ball.fmu

Master loop (fmpy FMU2Slave, models/bouncing_ball.py): before each step of H the FMU state is
saved; after the step, if `floor.impacts` went up, the state is restored and the same interval
is redone as `refine` steps of H/refine. The schedule of steps taken is recorded; a second
instance that never rolls back replays that schedule, and its results equal the rollback run's
bit for bit (the restored state continues exactly as if the coarse step had never been taken).
"""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ["ball.y", "ball.vy", "floor.impacts"]


def build(out_dir=ROOT / "out" / "examples"):
    from fmu_mb.fmi.build import build_fmu
    return build_fmu(ROOT / "models" / "bouncing_ball.py", out_dir)


def _open(path, name):
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(str(path))
    f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    vars_ = {v.name: v for v in md.modelVariables}
    return f, vars_


def _read(f, vars_):
    out = []
    for n in OUTPUTS:
        v = vars_[n]
        get = f.getInteger if v.type == "Integer" else f.getReal
        out.append(float(get([v.valueReference])[0]))
    return out


def run_rollback(path, stop_time=2.0, H=0.05, refine=10):
    """Returns (rows [t, outputs...], schedule [(t, dt)], number of rollbacks)."""
    f, v = _open(path, "rollback")
    imp = v["floor.impacts"].valueReference
    t, rows, schedule, rollbacks = 0.0, [[0.0] + _read(f, v)], [], 0
    n = int(round(stop_time / H))
    for k in range(n):
        t = k * H                                  # communication points on the coarse grid
        saved = f.getFMUstate()
        before = f.getInteger([imp])[0]
        f.doStep(currentCommunicationPoint=t, communicationStepSize=H)
        if f.getInteger([imp])[0] > before:        # an impact inside (t, t + H]: redo finer
            f.setFMUstate(saved)
            rollbacks += 1
            h = H / refine
            for j in range(refine):
                tj = t + j * h
                f.doStep(currentCommunicationPoint=tj, communicationStepSize=h)
                schedule.append((tj, h))
                rows.append([tj + h] + _read(f, v))
        else:
            schedule.append((t, H))
            rows.append([t + H] + _read(f, v))
        f.freeFMUstate(saved)
    f.terminate()
    f.freeInstance()
    return np.array(rows), schedule, rollbacks


def run_schedule(path, schedule):
    """A fresh instance stepping through the given (t, dt) schedule, no rollback."""
    f, v = _open(path, "replay")
    rows = [[0.0] + _read(f, v)]
    for t, h in schedule:
        f.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        rows.append([t + h] + _read(f, v))
    f.terminate()
    f.freeInstance()
    return np.array(rows)


def main(out_dir=ROOT / "out" / "examples"):
    path = build(out_dir)
    rows, schedule, rollbacks = run_rollback(path)
    replay = run_schedule(path, schedule)
    diff = float(np.max(np.abs(rows - replay)))
    print(f"{rollbacks} rollbacks, {len(schedule)} steps, impacts {int(rows[-1, 3])}, "
          f"max |rollback - replay| = {diff:.3g}")
    return 0 if diff == 0.0 else 1


if __name__ == "__main__":
    sys.exit(main())
