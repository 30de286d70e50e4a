"""Co-simulation step cost and start-up of the default-built fmu_mb FMU, side by side with
Exudyn stepped in process and with the FMI transport floor (a no-op pythonfmu FMU).

Per step (1 ms communication steps of the double pendulum; each engine does the same: set the
input actuator_A.h, advance 1 ms, read the four outputs A.angle, B.angle, A.rate, B.rate):
- "no-op pythonfmu FMU": one Real input, four Real outputs, do_step returns True: what fmpy
  and pythonfmu cost whatever the model (the floor);
- "fmu_mb FMU, default settings": `fmu-mb build models/double_pendulum.py`, no parameter set
  (formulation auto, dop853, rtol 1e-9);
- "fmu_mb FMU, <formulation>" with --formulation (e.g. newton_euler, the old default);
- "Exudyn RK44 in process": the KinematicTree solver kept alive, one RK44 step of 1 ms per
  communication step (exudyn_models.CoSimPendulum), and DOPRI5 at tolerance 1e-8.
Rounds alternate the engines; the median of the rounds is shown.

Start-up: instantiate .. first doStep of the default-built FMU in fresh processes, median of 5
(fmpy imported and the host settled for 0.3 s before the clock starts, as a host has it; the
FMU imports fmu_mb and what its first step needs, from the checked-hash bytecode it carries;
wall and CPU time, the latter less sensitive to a loaded machine), with the modules the FMU
added, next to the same for the no-op FMU as pythonfmu builds it and as fmu_mb packages
its FMUs (bytecode, pythonfmu without its builder import), and in the plain C host (tests/c_host/fmi2_host.c: it starts the embedded
interpreter itself).

    python bench/fmu_step.py [--steps 2000] [--rounds 5] [--formulation newton_euler]
                             [--startup-only] [--phases] [--fmu OTHER.fmu]

--phases breaks the start-up down (CPU time per phase, the slave's path without fmpy);
--fmu times another double-pendulum FMU's start-up beside it (one built by an older checkout,
to compare).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

OUTS = ("A.angle", "B.angle", "A.rate", "B.rate")
CLOCK = [time.perf_counter]     # --cpu: time.process_time for the per-step loops

NOOP = '''from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Variability
from pythonfmu.variables import Real


class noop_bench(Fmi2Slave):
    """One input, four outputs, nothing computed: the FMI transport cost."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.u = 0.0
        self.y = [0.0, 0.0, 0.0, 0.0]
        self.register_variable(Real("u", causality=Fmi2Causality.input,
                                    variability=Fmi2Variability.continuous, start=0.0,
                                    getter=lambda: self.u,
                                    setter=lambda v: setattr(self, "u", v)), nested=False)
        for k in range(4):
            self.register_variable(Real(f"y{k}", causality=Fmi2Causality.output,
                                        variability=Fmi2Variability.continuous,
                                        initial=Fmi2Initial.exact,
                                        getter=lambda k=k: self.y[k]), nested=False)

    def do_step(self, current_time, step_size):
        return True
'''

FIRST = r'''
import json, sys, time
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
before = set(sys.modules)
md = read_model_description(sys.argv[1])
time.sleep(0.3)     # the host's own start-up settles (numpy's OpenBLAS threads spin ~40 ms CPU)
c0 = time.process_time()
t0 = time.perf_counter()
s = FMU2Slave(guid=md.guid, unzipDirectory=sys.argv[2],
              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="first")
s.instantiate()
t1 = time.perf_counter()
s.setupExperiment(startTime=0.0)
s.enterInitializationMode()
s.exitInitializationMode()
t2 = time.perf_counter()
s.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
t3 = time.perf_counter()
c3 = time.process_time()
new = set(sys.modules) - before
print(json.dumps({"instantiate": t1 - t0, "initialize": t2 - t1, "first_step": t3 - t2,
                  "total": t3 - t0, "cpu": c3 - c0,
                  "scipy": any(m.split(".")[0] == "scipy" for m in new), "modules": len(new)}))
'''


def _slave(path, name):
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    return s, vr


class FmuLoop:
    """setReal(1) + doStep + getReal(4) per step on one FMU instance."""

    def __init__(self, path, inp, outs, strings=None):
        self.s, vr = _slave(path, "bench")
        for k, v in (strings or {}).items():
            self.s.setString([vr[k]], [v])
        self.s.exitInitializationMode()
        self.vin, self.vout, self.t = [vr[inp]], [vr[n] for n in outs], 0.0

    def run(self, n, dt=1e-3):
        s, vin, vout, t = self.s, self.vin, self.vout, self.t
        y = None
        t0 = CLOCK[0]()
        for k in range(n):
            s.setReal(vin, [0.1])
            s.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
            y = s.getReal(vout)
            t += dt
        wall = CLOCK[0]() - t0
        self.t = t
        return wall / n, y


class ExudynLoop:
    def __init__(self, solver, tol=1e-8):
        import exudyn_models as X

        self.c = X.CoSimPendulum(tol, solver)

    def run(self, n, dt=1e-3):
        c = self.c
        y = None
        t0 = CLOCK[0]()
        for k in range(n):
            y = c.step(0.1, dt)
        return (CLOCK[0]() - t0) / n, y


def noop_fmu(out_dir, lean=False):
    """Build the no-op pythonfmu FMU (the transport floor) into out_dir; its path. By default
    as pythonfmu builds it; lean: as fmu_mb packages its FMUs (checked-hash bytecode, the
    pythonfmu package without its builder import)."""
    from fmu_mb.fmi.packaging import package_fmu

    return package_fmu(NOOP, "noop_bench", [], Path(out_dir) / "noop_bench.fmu",
                       standalone=False, bytecode=lean, lazy_builder=lean)


def per_step(steps, rounds, formulation, log=print):
    """{label: (median us per step, outputs at the end)} for every engine, one process."""
    from fmu_mb.fmi.build import build_fmu

    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_step_"))
    try:
        dp = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
        noop = noop_fmu(tmp)
        engines = {"no-op pythonfmu FMU (transport floor)": FmuLoop(noop, "u", [
            f"y{k}" for k in range(4)]),
            "fmu_mb FMU, default settings": FmuLoop(dp, "actuator_A.h", OUTS)}
        if formulation:
            engines[f"fmu_mb FMU, formulation {formulation}"] = FmuLoop(
                dp, "actuator_A.h", OUTS, {"solver.formulation": formulation})
        engines["Exudyn RK44 (1 step per 1 ms) in process"] = ExudynLoop("RK44")
        engines["Exudyn DOPRI5 tol 1e-8 in process"] = ExudynLoop("DOPRI5")
        times = {k: [] for k in engines}
        ends = {}
        for e in engines.values():
            e.run(max(20, steps // 20))                       # warm-up
        for _ in range(rounds):
            for k, e in engines.items():
                w, ends[k] = e.run(steps)
                times[k].append(w * 1e6)
        out = {k: (statistics.median(v), ends[k]) for k, v in times.items()}
        for k, (us, _) in out.items():
            log(f"    {k}: {us:.1f} us/step")
        return out, dp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def first_step(fmu, runs=5):
    """Median over fresh processes of instantiate .. first doStep (dict of seconds)."""
    from fmpy import extract

    unz = extract(str(fmu))
    res = []
    for _ in range(runs):
        p = subprocess.run([sys.executable, "-c", FIRST, str(fmu), unz], capture_output=True,
                           text=True, timeout=300)
        try:
            res.append(json.loads(p.stdout.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            raise RuntimeError(p.stderr[-2000:]) from None
    shutil.rmtree(unz, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in res) for k in ("instantiate", "initialize",
                                                             "first_step", "total", "cpu")}
    med["scipy"] = any(r["scipy"] for r in res)
    med["modules"] = res[-1]["modules"]
    return med


PHASES = r"""
import json, sys, time
marks = [("start", time.process_time())]
def mark(name):
    marks.append((name, time.process_time()))
import numpy
mark("numpy (a Python host has it already)")
sys.path.insert(0, sys.argv[1])
import fmu_mb
mark("import fmu_mb")
import fmu_mb.fmi.slave as S
mark("import fmu_mb.fmi.slave (with pythonfmu)")
name = sys.argv[2]
module = S.module_from_source("phases_model", name, open(sys.argv[1] + "/" + name).read())
mark("the model file's body (its fmu_mb imports)")
model = module.build()
mark("build() (builder, assembly)")
from fmu_mb.dynamics.integrate import Settings, initial_state, stepper
settings = Settings().for_model(model)
state = initial_state(model, settings)
mark("formulation choice, initial state (kernel load)")
state = stepper(model, settings)(state, 1e-3, numpy.zeros(len(model.inputs)))
mark("first step")
print(json.dumps({b: c1 - c0 for (_, c0), (b, c1) in zip(marks, marks[1:])}))
"""


def startup_phases(fmu, model_file, runs=5):
    """{phase: median CPU seconds} of the FMU's start-up path without fmpy (import fmu_mb
    from its resources/, the slave module, the model file's body, build(), the formulation
    and its kernel, one step), each run in a fresh process."""
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_phases_"))
    try:
        zipfile.ZipFile(fmu).extractall(tmp)
        res = []
        for _ in range(runs):
            p = subprocess.run([sys.executable, "-c", PHASES, str(tmp / "resources"),
                                Path(model_file).name], capture_output=True, text=True,
                               timeout=300)
            if p.returncode != 0:
                raise RuntimeError(p.stderr[-2000:])
            res.append(json.loads(p.stdout.strip().splitlines()[-1]))
        return {k: statistics.median(r[k] for r in res) for k in res[0]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def c_host(fmu):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    from fmpy import read_model_description

    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_host_"))
    try:
        host = tmp / "host"
        subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests/c_host/fmi2_host.c"),
                        "-ldl"], check=True)
        d = tmp / "dp"
        zipfile.ZipFile(fmu).extractall(d)
        res = subprocess.run([str(host), str(d), md.guid, md.coSimulation.modelIdentifier,
                              "0.01", "0.001", "--out", str(vr["A.angle"])],
                             capture_output=True, text=True,
                             env={"PATH": os.environ.get("PATH", "/usr/bin")})
        line = [x for x in res.stderr.splitlines() if "first_instantiate" in x]
        return line[0] if line else res.stderr.strip()[-300:]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--formulation", default=None,
                   help="also time the FMU with this solver.formulation (e.g. newton_euler)")
    p.add_argument("--startup-only", action="store_true", help="skip the per-step timing")
    p.add_argument("--cpu", action="store_true",
                   help="per-step loops in process CPU time (fmpy, the FMU and Exudyn all run "
                        "in this process's thread): a loaded machine stretches wall time")
    p.add_argument("--phases", action="store_true",
                   help="also break the start-up down by phase (CPU time, fresh processes)")
    p.add_argument("--fmu", action="append", default=[], metavar="PATH",
                   help="also time the start-up of this double-pendulum FMU (e.g. one built "
                        "by another checkout), side by side")
    args = p.parse_args(argv)
    if args.cpu:
        CLOCK[0] = time.process_time
    if not args.startup_only:
        print(f"per 1 ms step (setReal + doStep + getReal x4), median of {args.rounds} rounds "
              f"of {args.steps} steps:")
        res, _ = per_step(args.steps, args.rounds, args.formulation)
        fm = res["fmu_mb FMU, default settings"][0]
        rk = res["Exudyn RK44 (1 step per 1 ms) in process"][0]
        floor = res["no-op pythonfmu FMU (transport floor)"][0]
        print(f"ratio default fmu_mb FMU / Exudyn RK44 in process: {fm / rk:.2f} (target <= 2); "
              f"fmu_mb above the transport floor: {fm - floor:.1f} us")
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_first_"))
    try:
        from fmu_mb.fmi.build import build_fmu

        fmu = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
        f = first_step(fmu)
        n = first_step(noop_fmu(tmp))
        nb = first_step(noop_fmu(tmp / "lean", lean=True))
        print("start-up, median of 5 fresh processes each:")
        print(f"fresh process, fmpy loaded, no-op pythonfmu FMU (the floor): instantiate .. "
              f"first doStep {n['total'] * 1e3:.1f} ms (CPU time {n['cpu'] * 1e3:.1f} ms); "
              f"packaged as fmu_mb packages its FMUs {nb['total'] * 1e3:.1f} ms (CPU time "
              f"{nb['cpu'] * 1e3:.1f} ms)")
        print(f"fresh process, fmpy loaded: instantiate {f['instantiate'] * 1e3:.1f} ms, "
              f"initialise {f['initialize'] * 1e3:.1f} ms, first doStep "
              f"{f['first_step'] * 1e3:.1f} ms; instantiate .. first doStep "
              f"{f['total'] * 1e3:.1f} ms (target <= 150; CPU time {f['cpu'] * 1e3:.1f} ms); "
              f"scipy imported: {f['scipy']}; "
              f"{f['modules']} modules imported by the FMU")
        for other in args.fmu:
            o = first_step(Path(other))
            print(f"{other}: instantiate .. first doStep {o['total'] * 1e3:.1f} ms (CPU time "
                  f"{o['cpu'] * 1e3:.1f} ms); {o['modules']} modules")
        print(f"C host (no environment, starts Python): {c_host(fmu)}")
        if args.phases:
            print("start-up phases, CPU ms, median of 5 fresh processes (without fmpy):")
            for k, v in startup_phases(fmu, ROOT / "models" / "double_pendulum.py").items():
                print(f"    {k}: {v * 1e3:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
