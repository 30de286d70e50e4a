"""Native FMUs: per-step cost, start-up and memory, in CPU time.

Double pendulum, 1 ms communication steps; each engine does the same per step: set the input
actuator_A.h = 0.1 N.m (as bench/fmu_step.py), advance 1 ms, read the four outputs A.angle,
B.angle, A.rate, B.rate (default settings: dop853, rtol 1e-9):
- "native FMU in fmpy": `fmu-mb build --native`, fmpy's FMU2Slave (setReal, doStep, getReal);
- "native FMU in a C host": tests/c_host/native_host.c `bench` (dlopen, the same three calls);
- "engine in process (C)": tests/c_host/engine_step.c, the engine's C API called directly
  (mbe_do_step + mbe_outputs: what the FMU's step costs without the FMI layer);
- "Exudyn RK44 in process": bench/exudyn_models.CoSimPendulum, one RK44 step per 1 ms (the
  reference point of the co-simulation targets).
Rounds alternate the engines (each a separate process or loop of --steps steps); medians.

Double wishbone, 1 ms steps with the road of bench/suspension_step.py (tyre.h held over each
step, five outputs read): the native FMU in the C host (default settings) against Exudyn's best
setting at 1e-6 m wheel-centre accuracy, found with suspension_step.tune_exudyn on the same
horizon and timed in CPU time; the native FMU's own error against suspension_step's reference.

Start-up: instantiate .. end of the first doStep in a fresh C host process (native_host
`startup`), median of 7, for every native FMU. Memory: 10^4 instantiate/free cycles in one C
host process, the resident set size after 100, 5000 and 10^4 cycles.

    python bench/native_fmu.py [--steps 20000] [--rounds 5] [--no-wishbone] [--horizon 0.3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

OUTS = ("A.angle", "B.angle", "A.rate", "B.rate")
WB_OUTS = ("wheel_centre.x", "wheel_centre.y", "wheel_centre.z", "tyre.force",
           "coil_over.force")


def _cc():
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        sys.exit("bench/native_fmu.py needs a C compiler")
    return cc


def _fields(text):
    return dict(kv.split("=") for kv in text.split())


class Native:
    """A native FMU built into tmp and extracted."""

    def __init__(self, model, tmp):
        from fmpy import extract, read_model_description
        from fmu_mb.fmi.native_build import build_native_fmu
        self.path = build_native_fmu(ROOT / "models" / f"{model}.py", tmp)
        self.dir = extract(str(self.path), str(tmp / f"{model}_x"))
        self.md = read_model_description(str(self.path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.id = self.md.coSimulation.modelIdentifier

    def host(self, exe, *args):
        res = subprocess.run([str(exe), args[0], self.dir, self.md.guid, self.id,
                              *map(str, args[1:])], capture_output=True, text=True, env={})
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        return res.stdout


def build_tools(tmp):
    """(native_host, engine_step) executables."""
    from fmu_mb.fmi.native_build import ENGINE_DIR, engine_sources
    cc = _cc()
    host = tmp / "native_host"
    subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests/c_host/native_host.c"),
                    "-ldl", "-lpthread"], check=True)
    sources, defines = engine_sources()
    step = tmp / "engine_step"
    subprocess.run([cc, "-O2", "-ffp-contract=off", *(f"-D{d}" for d in defines),
                    f"-I{ENGINE_DIR}", "-o", str(step), str(ROOT / "tests/c_host/engine_step.c"),
                    *map(str, sources), "-lm"], check=True)
    return host, step


class FmpyLoop:
    """setReal(1) + doStep + getReal(4) per step in fmpy, CPU time."""

    def __init__(self, native):
        from fmpy.fmi2 import FMU2Slave
        s = FMU2Slave(guid=native.md.guid, unzipDirectory=native.dir,
                      modelIdentifier=native.id, instanceName="bench")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        self.s, self.vin = s, [native.vr["actuator_A.h"]]
        self.vout = [native.vr[n] for n in OUTS]
        self.k = 0

    def run(self, n, h=1e-3):
        s, vin, vout = self.s, self.vin, self.vout
        t0 = time.process_time()
        for _ in range(n):
            t = self.k * h
            s.setReal(vin, [0.1])
            s.doStep(currentCommunicationPoint=t, communicationStepSize=h)
            s.getReal(vout)
            self.k += 1
        return (time.process_time() - t0) / n * 1e6


class ExudynLoop:
    def __init__(self):
        import exudyn_models as X
        self.c = X.CoSimPendulum(1e-8, "RK44")

    def run(self, n, h=1e-3):
        c = self.c
        t0 = time.process_time()
        for _ in range(n):
            c.step(0.1, h)
        return (time.process_time() - t0) / n * 1e6


def pendulum(tmp, host, step_exe, steps, rounds, log):
    dp = Native("double_pendulum", tmp)
    from fmu_mb.dynamics.outputs import output_spec
    from fmu_mb.engine.data import model_data
    from fmu_mb import load_model
    model = load_model(ROOT / "models" / "double_pendulum.py")
    blob = tmp / "dp.blob"
    blob.write_bytes(model_data(model).to_bytes())
    spec = [v.name for v in output_spec(model)]
    idx = ",".join(str(spec.index(n)) for n in OUTS)
    outs = ",".join(str(dp.vr[n]) for n in OUTS)
    loops = {"native FMU in fmpy": FmpyLoop(dp), "Exudyn RK44 in process": ExudynLoop()}
    for e in loops.values():
        e.run(500)
    times = {k: [] for k in ("native FMU in fmpy", "native FMU in a C host",
                             "engine in process (C, no FMI)", "Exudyn RK44 in process")}
    for r in range(rounds):
        times["native FMU in fmpy"].append(loops["native FMU in fmpy"].run(steps))
        times["Exudyn RK44 in process"].append(loops["Exudyn RK44 in process"].run(steps))
        times["native FMU in a C host"].append(float(_fields(dp.host(
            host, "bench", 1e-3, steps, dp.vr["actuator_A.h"], outs))["cpu_us_per_step"]))
        res = subprocess.run([str(step_exe), str(blob), "1e-3", str(steps), idx],
                             capture_output=True, text=True, check=True)
        times["engine in process (C, no FMI)"].append(
            float(_fields(res.stdout)["cpu_us_per_step"]))
    med = {k: statistics.median(v) for k, v in times.items()}
    log("Double pendulum, 1 ms step (set input, doStep, get 4 outputs), CPU time, median of "
        f"{rounds} rounds of {steps} steps:")
    for k, v in med.items():
        log(f"  {k:34s} {v:8.2f} us/step   (rounds: {', '.join(f'{x:.2f}' for x in times[k])})")
    ex = med["Exudyn RK44 in process"]
    log(f"  native FMU in fmpy / Exudyn RK44      {med['native FMU in fmpy'] / ex:.2f}  "
        "(target <= 1.2)")
    log(f"  native FMU in a C host / Exudyn RK44  {med['native FMU in a C host'] / ex:.2f}  "
        "(target <= 0.5)")
    log(f"  native FMU in a C host / engine       "
        f"{med['native FMU in a C host'] / med['engine in process (C, no FMI)']:.2f}  "
        "(target <= 1.5)")
    return dp


def wishbone(tmp, host, horizon, rounds, log):
    from fmu_mb.fmi.native_build import native_reason
    from fmu_mb import load_model
    why = native_reason(load_model(ROOT / "models" / "double_wishbone.py"))
    if why is not None:
        log(f"Double wishbone: not a native FMU yet ({why})")
        return None
    import suspension_step as S
    dw = Native("double_wishbone", tmp)
    n = int(round(horizon / S.DT))
    u, _ = S.road_input(n)
    ref = S.fmu_mb_reference(u)
    ufile = tmp / "road.txt"
    ufile.write_text("\n".join(repr(float(v)) for v in u))
    outs = ",".join(str(dw.vr[k]) for k in WB_OUTS)
    text = dw.host(host, "run", horizon, S.DT, dw.vr["tyre.h"], outs, ufile)
    y = np.array([[float(x) for x in line.split(",")[1:]] for line in text.split()])[1:]
    err = S.wheel_error(y, ref)
    log(f"Double wishbone, 1 ms steps over {horizon} s with the road (suspension_step):")
    log(f"  native FMU (default settings): wheel-centre error {err:.1e} m against "
        "suspension_step's reference")
    log("  tuning Exudyn (fewest substeps per 1 ms within 1e-6 m):")
    exudyn, _ = S.tune_exudyn(u, ref, 1e-6, 60.0, lambda s: log("  " + s))
    native_us, exu_us = [], {}
    for r in range(rounds):
        native_us.append(float(_fields(dw.host(
            host, "bench", S.DT, n, dw.vr["tyre.h"], outs, ufile))["cpu_us_per_step"]))
        for e in exudyn:
            e.begin(n)
            t0 = time.process_time()
            for k in range(n):
                e.step(k, u[k])
            exu_us.setdefault(e.label, []).append((time.process_time() - t0) / n * 1e6)
    best = min(exu_us, key=lambda k: statistics.median(exu_us[k])) if exu_us else None
    nat = statistics.median(native_us)
    log(f"  native FMU in a C host   {nat:9.1f} us/step (CPU, median of {rounds})")
    if best:
        b = statistics.median(exu_us[best])
        log(f"  Exudyn best: {best}  {b:9.1f} us/step (CPU)")
        log(f"  native / Exudyn best     {nat / b:.3f}  (target <= 0.3)")
    return dw


#: contact models: (model, communication step [s], run [s], outputs read per step)
CONTACT_CASES = [("excavator", 1e-3, 3.0, ("tip.x", "tip.y", "boom_cyl.stroke")),
                 ("bouncing_ball", 1e-3, 2.0, ("ball.y", "ball.vy", "floor.gap")),
                 ("slider_crank_stop", 1e-3, 1.0, ("O.angle", "guide.position", "end_stop.gap"))]


class FmuSteps:
    """doStep + getReal(outputs) per step over [0, stop] in fmpy (FMU2Slave), CPU time per
    step; the FMU at its defaults (no input set: the excavator's cylinders push nothing, the
    arm falls onto the boom cylinder's lower end stop, bounces and rests on it)."""

    def __init__(self, path, outs):
        from fmpy import extract, read_model_description
        self.md = read_model_description(str(path))
        self.dir = extract(str(path))
        vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.vout = [vr[n] for n in outs]

    def run(self, h, stop):
        from fmpy.fmi2 import FMU2Slave
        s = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                      modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="b")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        n = int(round(stop / h))
        t0 = time.process_time()
        for k in range(n):
            s.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
            s.getReal(self.vout)
        us = (time.process_time() - t0) / n * 1e6
        s.terminate()
        s.freeInstance()
        return us


def excavator_stops(tmp, step_exe, rounds, log):
    """The excavator's engine step (tests/c_host/engine_step.c: mbe_do_step + the outputs read,
    no FMI) with its six end stops and with them removed (bench/contacts_wall._excavator),
    1 ms steps over 3 s from rest (input 0 at 0.1 N: the arm falls onto the boom cylinder's
    lower stop, bounces and rests on it)."""
    import contacts_wall as cw
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.engine.data import model_data
    outs = ("tip.x", "tip.y", "boom_cyl.stroke")
    res = {}
    for label, stops in (("with its 6 end stops", True), ("end stops removed", False)):
        m = cw._excavator(stops)
        blob = tmp / f"excavator_{int(stops)}.blob"
        blob.write_bytes(model_data(m).to_bytes())
        names = list(output_names(m))
        idx = ",".join(str(names.index(o)) for o in outs)
        res[label] = statistics.median(
            float(_fields(subprocess.run([str(step_exe), str(blob), "1e-3", "3000", idx],
                                         capture_output=True, text=True, check=True)
                          .stdout)["cpu_us_per_step"]) for _ in range(rounds))
    a, b = res.values()
    log(f"Excavator, engine step in C (no FMI), 1 ms over 3 s from rest, CPU us/step, median "
        f"of {rounds}: with its 6 end stops {a:.2f}, end stops removed {b:.2f}, ratio "
        f"{a / b:.2f} (target <= 2; today's Python event loop in process: 172 us, target "
        f"<= 0.3 x 172 = 52 us)")


def contacts(tmp, host, rounds, log):
    """Contact models: the native FMU (events in C) in a C host and in fmpy
    against the Python FMU (pythonfmu; recursive formulation, its event loop in C behind
    Python's per-step overhead) in fmpy, 1 ms steps, CPU time per step."""
    from fmu_mb.fmi.build import build_fmu
    log("Contact models, 1 ms steps from rest at the defaults (no input), CPU us/step, "
        f"median of {rounds}:")
    log(f"  {'model':18s} {'run':>5s} {'native, C host':>15s} {'native, fmpy':>13s} "
        f"{'Python FMU, fmpy':>17s} {'Python / native C host':>23s}")
    for name, h, stop, outs in CONTACT_CASES:
        nat = Native(name, tmp)
        py = build_fmu(ROOT / "models" / f"{name}.py", tmp / "python")
        vrs = ",".join(str(nat.vr[o]) for o in outs)
        n = int(round(stop / h))
        c_host, fm, pf = [], [], []    # (the same run for all three)
        nat_loop, py_loop = FmuSteps(nat.path, outs), FmuSteps(py, outs)
        for _ in range(rounds):
            c_host.append(float(_fields(nat.host(host, "bench", h, n, -1, vrs))
                                ["cpu_us_per_step"]))
            fm.append(nat_loop.run(h, stop))
            pf.append(py_loop.run(h, stop))
        a, b, c = (statistics.median(v) for v in (c_host, fm, pf))
        log(f"  {name:18s} {stop:4.1f}s {a:15.2f} {b:13.2f} {c:17.1f} {c / a:23.0f}")
    log("  (native C host: tests/c_host/native_host.c bench, 200 warm-up steps not timed, then "
        "the run)")


def startup_and_memory(tmp, host, natives, log):
    log("Start-up, fresh C host process (instantiate, setup, init, first 1 ms doStep), median "
        "of 7:")
    for nat in natives:
        runs = [_fields(nat.host(host, "startup")) for _ in range(7)]
        wall = statistics.median(float(r["instantiate_to_first_step_ms"]) for r in runs)
        dl = statistics.median(float(r["dlopen_ms"]) for r in runs)
        log(f"  {nat.id:18s} instantiate..first step {wall:.3f} ms wall (dlopen {dl:.3f} ms)")
    r = _fields(natives[0].host(host, "cycles", 10000))
    log(f"Memory, {natives[0].id}, 10^4 instantiate/free cycles in one process: RSS "
        f"{r['rss_kb_after_100']} kB after 100, {r['rss_kb_after_half']} kB after 5000, "
        f"{r['rss_kb_after_all']} kB after 10^4")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--horizon", type=float, default=0.3,
                    help="double wishbone run [s] (suspension_step's road)")
    ap.add_argument("--no-wishbone", action="store_true")
    ap.add_argument("--contacts-only", action="store_true",
                    help="only the contact models' table")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_native_bench_"))
    try:
        host, step_exe = build_tools(tmp)
        contacts(tmp, host, a.rounds, print)
        excavator_stops(tmp, step_exe, a.rounds, print)
        if a.contacts_only:
            return
        natives = [pendulum(tmp, host, step_exe, a.steps, a.rounds, print)]
        if not a.no_wishbone:
            dw = wishbone(tmp, host, a.horizon, a.rounds, print)
            if dw is not None:
                natives.append(dw)
        from fmu_mb.fmi.native_build import native_reason
        from fmu_mb import load_model
        for p in sorted((ROOT / "models").glob("*.py")):
            if p.stem in {n.id for n in natives}:
                continue
            if native_reason(load_model(p)) is None:
                natives.append(Native(p.stem, tmp))
        startup_and_memory(tmp, host, natives, print)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
