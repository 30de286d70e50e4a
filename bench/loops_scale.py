"""IFToMM A02 (models/n_four_bar.py) in the native FMU over N: step cost, start-up, growth.

    python bench/loops_scale.py [--n 10,20,40,80] [--long] [--exudyn] [--rounds 3]

For each N the default-built native FMU (linux64 only) in the C host tests/c_host/native_host.c,
CPU time:
- start-up: instantiate, setup, initialisation (assembly, initial reactions), first 1 ms
  doStep in a fresh process (`startup`), median of --rounds;
- regular step: 1 ms doSteps over t = 0.2 .. 0.5 s (the cranks far from horizontal), per step;
- crossing: 1 ms doSteps over t = 0.2 .. 1.2 s (the cranks pass the horizontal collinear pose
  at t ~ 0.72 s, where the loop rows become dependent), per step;
- --long: 20 s of 1 ms doSteps at each N, total CPU seconds and the crank angle's error
  against the closed-form reference (bench/references.n_four_bar) at 20 s.
The growth exponent is the least-squares slope of log(cost) over log(N).
--callgrind: the step costs as instruction counts instead of CPU time (valgrind's callgrind
on the same host, the run of 0 steps after the warm-up subtracted: Ir per step), which other
jobs on the machine do not disturb; ~50x slower (the 20 s runs of --long at N = 80: ~20 min).
--exudyn: Exudyn's GeneralizedAlpha with the EigenSparse solver (modified Newton, one Jacobian
per step, bench/exudyn_models.Planar) on the same model over 1 s at h = 1e-3, 5e-4 and
2.5e-4 s: CPU time per simulated ms and the crank angle's error against the closed-form
reference (bench/references.n_four_bar) at 1 s, side by side with the FMU's 1 s run.
"""
import argparse
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CALLGRIND = False      # --callgrind: step costs in instructions (callgrind), not CPU time
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))


def _cc():
    import os
    import shutil
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        sys.exit("bench/loops_scale.py needs a C compiler")
    return cc


def _fields(text):
    return dict(kv.split("=") for kv in text.split())


class NativeA02:
    def __init__(self, n, tmp):
        from fmpy import extract, read_model_description
        from fmu_mb.fmi.native_build import build_native_fmu
        d = tmp / f"n{n}"
        d.mkdir()
        self.path = build_native_fmu(ROOT / "models" / "n_four_bar.py", d, {"N": n},
                                     platforms="linux64")
        self.dir = extract(str(self.path), str(d / "x"))
        self.md = read_model_description(str(self.path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.id = self.md.coSimulation.modelIdentifier

    def host(self, exe, *args):
        res = subprocess.run([str(exe), args[0], self.dir, self.md.guid, self.id,
                              *map(str, args[1:])], capture_output=True, text=True, env={})
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        return _fields(res.stdout)

    def steps(self, exe, n_steps):
        """CPU us per 1 ms doStep over t = 0.2 s .. 0.2 s + n_steps ms (200 warm-up steps);
        with CALLGRIND set, instructions per step instead."""
        if CALLGRIND:
            if not hasattr(self, "ir0"):
                self.ir0 = self.instructions(exe, 0)     # start-up and the warm-up steps
            ir = [self.ir0, self.instructions(exe, n_steps)]
            last = self.host(exe, "bench", 1e-3, n_steps, -1, self.vr["O0.angle"])["last"]
            return (ir[1] - ir[0]) / n_steps, float(last)
        r = self.host(exe, "bench", 1e-3, n_steps, -1, self.vr["O0.angle"])
        return float(r["cpu_us_per_step"]), float(r["last"])

    def instructions(self, exe, n_steps):
        """Instructions (callgrind's Ir) of the host's bench run of n_steps 1 ms doSteps."""
        with tempfile.TemporaryDirectory() as td:
            res = subprocess.run(["valgrind", "--tool=callgrind",
                                  f"--callgrind-out-file={td}/out", str(exe), "bench",
                                  self.dir, self.md.guid, self.id, "1e-3", str(n_steps), "-1",
                                  str(self.vr["O0.angle"])],
                                 capture_output=True, text=True, env={})
        found = re.search(r"Collected : (\d+)", res.stderr)
        if res.returncode != 0 or not found:
            raise RuntimeError(res.stderr[-2000:])
        return float(found.group(1))


def slope(ns, ys):
    return float(np.polyfit(np.log(ns), np.log(ys), 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="10,20,40,80")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--long", action="store_true", help="20 s at each N")
    ap.add_argument("--exudyn", action="store_true")
    ap.add_argument("--callgrind", action="store_true",
                    help="step costs in instructions (valgrind's callgrind), not CPU time")
    args = ap.parse_args(argv)
    global CALLGRIND
    CALLGRIND = args.callgrind
    if CALLGRIND and not shutil.which("valgrind"):
        sys.exit("--callgrind needs valgrind")
    if CALLGRIND and args.exudyn:
        sys.exit("--exudyn compares CPU times: run it without --callgrind")
    unit = "Ir" if CALLGRIND else "us CPU"
    ns = [int(v) for v in args.n.split(",")]
    log = print
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        host = tmp / "native_host"
        subprocess.run([_cc(), "-O2", "-o", str(host), str(ROOT / "tests/c_host/native_host.c"),
                        "-ldl", "-lpthread"], check=True)
        rows = []
        for n in ns:
            fmu = NativeA02(n, tmp)
            starts = [float(fmu.host(host, "startup")["cpu_ms"]) for _ in range(args.rounds)]
            reg = min(fmu.steps(host, 300)[0] for _ in range(args.rounds))
            try:
                cross = min(fmu.steps(host, 1000)[0] for _ in range(args.rounds))
            except RuntimeError as exc:        # the FMU's work budget of one doStep
                cross = float("nan")
                log(f"N = {n}, t = 0.2 .. 1.2 s: {str(exc).splitlines()[0][:300]}")
            rows.append((n, statistics.median(starts), reg, cross, fmu))
        log(f"| N | start-up [ms CPU] | 1 ms step, t = 0.2 .. 0.5 s [{unit}] "
            f"| 1 ms step, t = 0.2 .. 1.2 s (one collinear crossing) [{unit}] |")
        log("|---|---|---|---|")
        for n, st, reg, cross, _ in rows:
            log(f"| {n} | {st:.2f} | {reg:.1f} | "
                + ("stopped (work budget)" if cross != cross else f"{cross:.1f}") + " |")
        if len(ns) > 1:
            crossing = [r[3] for r in rows]
            log(f"\ngrowth exponent over N = {args.n}: regular step "
                f"{slope(ns, [r[2] for r in rows]):.2f}, step over one crossing "
                + (f"{slope(ns, crossing):.2f}" if all(c == c for c in crossing) else "-")
                + f", start-up {slope(ns, [r[1] for r in rows]):.2f}")
        if args.exudyn:
            fmu40 = next((r[4] for r in rows if r[0] == 40), None) or NativeA02(40, tmp)
        if args.exudyn:
            import references as R
            th_ref = R.n_four_bar(40, t_end=1.0)[0]["O0"]
            us, last = fmu40.steps(host, 800)      # 200 warm-up + 800 steps: t = 1 s
            log("\nN = 40 over 1 s (one collinear crossing), CPU:\n")
            log("| engine | CPU per simulated ms [us] | crank angle error at 1 s [rad] |")
            log("|---|---|---|")
            log(f"| native FMU, defaults, 1 ms doSteps | {us:.1f} | "
                f"{abs(last - th_ref):.1e} |")
            import exudyn_models as X
            for h in (1e-3, 5e-4, 2.5e-4):
                model = X.n_four_bar(40, R.four_bar_bodies(40, math.pi / 2, -1.0))
                c0 = time.process_time()
                _, joints, _ = model.run(1.0, h, "GeneralizedAlpha", sparse=True)
                cpu = time.process_time() - c0
                log(f"| Exudyn GeneralizedAlpha, EigenSparse, h = {h:g} s | {cpu * 1e3:.1f} | "
                    f"{abs(joints['O0'] - th_ref):.1e} |")
        if args.long:
            import references as R
            total = "1e9 Ir" if CALLGRIND else "s CPU"
            log(f"\n| N | 20 s of 1 ms doSteps [{total}] | wall [s] | crank angle error at 20 s "
                "[rad] |")
            log("|---|---|---|---|")
            long_cpu = []
            for n, _, _, _, fmu in rows:
                c0 = time.perf_counter()
                try:
                    us, last = fmu.steps(host, 19800)
                except RuntimeError as exc:
                    log(f"| {n} | stopped: {str(exc).splitlines()[0][:200]} | | |")
                    continue
                long_cpu.append((n, us * 19800 / (1e9 if CALLGRIND else 1e6)))
                th_ref = R.n_four_bar(n, t_end=20.0)[0]["O0"]
                log(f"| {n} | {long_cpu[-1][1]:.1f} (+ 200 warm-up steps) | "
                    f"{time.perf_counter() - c0:.1f} | {abs(last - th_ref):.1e} |")
            if len(long_cpu) > 1:
                log(f"\ngrowth exponent of 20 s of steps (20 crossings) over N = "
                    f"{','.join(str(n) for n, _ in long_cpu)}: "
                    f"{slope(*zip(*long_cpu)):.2f}")


if __name__ == "__main__":
    main()
