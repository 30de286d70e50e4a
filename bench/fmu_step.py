"""Per-step cost of an fmu_mb FMU in fmpy: 1 ms communication steps of the double pendulum,
one input set and four outputs read per step; and the time from instantiation to the first
doStep in fmpy and in the plain C host (tests/c_host/fmi2_host.c).

    python bench/fmu_step.py [--steps 2000]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402,F401
from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402

from fmu_mb.fmi.build import build_fmu  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--formulation", default="recursive",
                   help="solver.formulation of the FMU (default recursive, the fast one)")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_bench_"))
    fmu = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [vr[n] for n in ("rod1.phi", "rod2.phi", "rod1.omega", "rod2.omega")]
    unz = extract(str(fmu))
    t0 = time.perf_counter()
    s = FMU2Slave(guid=md.guid, unzipDirectory=unz,
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.setString([vr["solver.formulation"]], [args.formulation])
    s.exitInitializationMode()
    s.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
    first = time.perf_counter() - t0
    dt, t = 1e-3, 1e-3
    t1 = time.perf_counter()
    for k in range(1, args.steps):
        s.setReal([vr["actuator_A.h"]], [0.1 * np.sin(t)])
        s.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
        s.getReal(outs)
        t = (k + 1) * dt
    per_step = (time.perf_counter() - t1) / (args.steps - 1)
    s.terminate()
    s.freeInstance()
    print(f"fmpy ({args.formulation}): first instantiate..first doStep {first * 1e3:.1f} ms; "
          f"per 1 ms step (setReal + doStep + getReal x4) {per_step * 1e6:.0f} us")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        host = tmp / "host"
        subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests/c_host/fmi2_host.c"),
                        "-ldl"], check=True)
        d = tmp / "dp"
        zipfile.ZipFile(fmu).extractall(d)
        res = subprocess.run([str(host), str(d), md.guid, md.coSimulation.modelIdentifier,
                              "0.01", "0.001", "--out", str(outs[0])], capture_output=True,
                             text=True, env={"PATH": os.environ.get("PATH", "/usr/bin")})
        line = [x for x in res.stderr.splitlines() if "first_instantiate" in x]
        print(f"C host (no environment): {line[0] if line else res.stderr.strip()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
