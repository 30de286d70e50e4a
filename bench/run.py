"""fmu_mb against Exudyn at equal accuracy: one command, one process, round-robin timing.

    pip install -e ".[bench]"           # exudyn, fmpy, pythonfmu, matplotlib
    python bench/run.py [--quick] [--out DIR]

For every benchmark it builds the model in fmu_mb (models/*.py, the fastest registered
formulation for that model, picked at run time) and in Exudyn (bench/exudyn_models.py),
computes its own tight reference (bench/references.py), tunes each engine's tolerance (or
step) until the largest joint-angle error at the end time is at most the target, then times
both round-robin (median of --repeats runs) and writes DIR/results.md, DIR/results.json and
DIR/results.png. See bench/README.md.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import fmu_mb  # noqa: E402  (limits BLAS threads before numpy loads)
import numpy as np  # noqa: E402
from fmu_mb import (Settings, advance, initial_state, load_model, output_names,  # noqa: E402
                    output_values)
from fmu_mb.dynamics.outputs import Outputs  # noqa: E402

import references as R  # noqa: E402

T_END = 2.0
ADAPTIVE_TOLS = [10.0 ** (-k / 2) for k in range(6, 28)]       # 1e-3 ... 3e-14
IMPLICIT_STEPS = [2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 5e-5, 2e-5, 1e-5, 5e-6]
CHAIN_PHI0 = -1.0   # see README: the model's default 0.5 rad makes the chain chaotic


# ------------------------------------------------------------------ engines
class FmuMb:
    """An fmu_mb model run in one advance() call over [0, t_end] (dop853)."""

    def __init__(self, model_file, overrides, ref_names):
        self.model = load_model(str(ROOT / "models" / model_file), **overrides)
        self.names = ref_names
        idx = {n: i for i, n in enumerate(output_names(self.model))}
        self.ia = [idx[f"{k}.angle"] for k in ref_names]
        self.ir = [idx[f"{k}.rate"] for k in ref_names]
        self.form = None

    def run(self, t_end, tol, form=None):
        s = Settings(method="dop853", formulation=form or self.form, rtol=tol, atol=tol * 1e-2)
        st0 = initial_state(self.model, s)
        t0 = time.perf_counter()
        st = advance(self.model, st0, t_end, None, s)
        wall = time.perf_counter() - t0
        v = output_values(self.model, st, self.model.input_vector(None), s.formulation)
        return wall, dict(zip(self.names, v[self.ia])), dict(zip(self.names, v[self.ir]))

    def pick_formulation(self, tol, log):
        """The fastest registered formulation on a short run (0.1 s)."""
        best = None
        for f in fmu_mb.FORMULATIONS:
            try:
                w = min(self.run(0.1, tol, f)[0] for _ in range(2))
            except Exception as exc:                        # noqa: BLE001
                log(f"    fmu_mb {f}: fails ({type(exc).__name__}: {exc})")
                continue
            log(f"    fmu_mb {f}: {w * 1e3:.1f} ms for 0.1 s")
            if best is None or w < best[1]:
                best = (f, w)
        if best is None:
            raise RuntimeError("no fmu_mb formulation can run this model")
        self.form = best[0]
        return best


def error(joints, ref):
    return max(abs(joints[k] - ref[k]) for k in ref)


def tune(run, params, ref, target, cap, log, label):
    """First param (loosest first) whose error <= target. Returns (param, err, wall, ok)."""
    best = None
    for p in params:
        try:
            wall, q, _ = run(p)
        except Exception as exc:                            # noqa: BLE001
            log(f"    {label} {p:.0e}: fails ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        e = error(q, ref)
        log(f"    {label} {p:.0e}: error {e:.2e}, {wall * 1e3:.1f} ms")
        if best is None or e < best[1]:
            best = (p, e, wall, False)
        if e <= target:
            return p, e, wall, True
        if wall > cap:
            log(f"    {label}: one run took {wall:.0f} s > cap {cap:.0f} s; stop tuning")
            break
    return best


# ------------------------------------------------------------------ benchmarks
def benchmarks(quick):
    import exudyn_models as X

    sc = R.SliderCrank()
    out = [
        dict(name="double pendulum", target=1e-6, fm=("double_pendulum.py", {}, ["A", "B"]),
             ex=X.double_pendulum, exkind="adaptive", ref=R.double_pendulum),
        dict(name="double pendulum", target=1e-8, fm=("double_pendulum.py", {}, ["A", "B"]),
             ex=X.double_pendulum, exkind="adaptive", ref=R.double_pendulum),
        dict(name="slider-crank", target=1e-6, fm=("slider_crank.py", {}, ["O", "A", "B"]),
             ex=lambda: X.slider_crank(sc.bodies(0.0, 10.0)), exkind="implicit",
             ref=R.slider_crank),
    ]
    for n in ((2, 8, 16) if quick else (2, 4, 8, 16, 32, 64)):
        names = [f"J{i}" for i in range(n)]
        out.append(dict(name=f"chain N={n}", n=n, target=1e-6,
                        fm=("pendulum_chain.py", {"N": n, "phi0": CHAIN_PHI0}, names),
                        ex=(lambda n=n: X.pendulum_chain(n, phi0=CHAIN_PHI0)),
                        exkind="adaptive",
                        ref=(lambda n=n: R.pendulum_chain(n, phi0=CHAIN_PHI0))))
    for n in ((2,) if quick else (2, 40)):
        names = [f"O{i}" for i in range(n + 1)] + [f"L{i}" for i in range(n)] + \
            [f"R{i}" for i in range(n)]
        out.append(dict(name=f"N-four-bar N={n}", target=1e-6,
                        fm=("n_four_bar.py", {"N": n}, names),
                        ex=(lambda n=n: X.n_four_bar(n, R.four_bar_bodies(n, math.pi / 2,
                                                                          -1.0))),
                        exkind="implicit", ref=(lambda n=n: R.n_four_bar(n))))
    return out


def run_benchmark(b, repeats, cap, log):
    log(f"== {b['name']}, target {b['target']:.0e}")
    ref, energy, E0 = b["ref"]()
    target = b["target"]
    row = dict(name=b["name"], target=target, n=b.get("n"))
    # fmu_mb
    fm = FmuMb(*b["fm"])
    tols = [t for t in ADAPTIVE_TOLS if t <= 1e3 * target * 1.01]
    form, w = fm.pick_formulation(tols[0], log)
    row["fm_form"] = form
    if w * (T_END / 0.1) > 20 * cap:
        log(f"    fmu_mb: estimated {w * T_END / 0.1:.0f} s per run; skipped")
        fmr = None
    else:
        fmr = tune(lambda p: fm.run(T_END, p), tols, ref, target, cap, log, "fmu_mb rtol")
    # Exudyn
    ex = b["ex"]()
    if b["exkind"] == "adaptive":
        exr = tune(lambda p: ex.run(T_END, p), tols, ref, target, cap, log, "exudyn tol")
        row["ex_solver"] = "KinematicTree, DOPRI5"
    else:
        exr = tune(lambda p: ex.run(T_END, p), IMPLICIT_STEPS, ref, target, cap, log,
                   "exudyn h")
        row["ex_solver"] = "RigidBody2D + joints, generalized-alpha"
    # round-robin timing
    walls = {"fm": [], "ex": []}
    states = {}
    reps = repeats
    slow = max(fmr[2] if fmr else 0.0, exr[2] if exr else 0.0)
    if slow > cap / 2:
        reps = max(1, min(repeats, int(cap / slow)))
    for _ in range(reps):
        for key, res, eng in (("fm", fmr, fm), ("ex", exr, ex)):
            if res is None:
                continue
            wall, q, qd = eng.run(T_END, res[0])
            walls[key].append(wall)
            states[key] = (q, qd)
    for key, res in (("fm", fmr), ("ex", exr)):
        if res is None:
            row[key] = None
            continue
        q, qd = states[key]
        row[key] = dict(param=res[0], reached=res[3], error=error(q, ref),
                        drift=abs(energy(q, qd) - E0), wall=statistics.median(walls[key]),
                        runs=len(walls[key]))
    row["ratio"] = (row["fm"]["wall"] / row["ex"]["wall"]) if row["fm"] and row["ex"] else None
    log(f"   -> fmu_mb {fmt_ms(row['fm'])}, exudyn {fmt_ms(row['ex'])}, ratio "
        f"{row['ratio'] if row['ratio'] is None else round(row['ratio'], 1)}")
    return row


def fmt_ms(r):
    return "n/a" if r is None else f"{r['wall'] / T_END * 1e3:.3g} ms/s"


# ------------------------------------------------------------------ co-simulation
def cosim(steps, fm_tol, ex_tol, form, log):
    """Double pendulum: fmu_mb FMU in fmpy vs Exudyn stepped in process, 1 ms steps,
    setReal + doStep + getReal(4) per step; also fmu_mb's advance() loop without the FMU."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    import exudyn_models as X
    from fmu_mb.fmi.build import build_fmu

    dt = 1e-3
    ref, _, _ = R.double_pendulum(steps * dt)
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_bench_"))
    fmu = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [vr[n] for n in ("A.angle", "B.angle", "A.rate", "B.rate")]
    unz = extract(str(fmu))
    res = {}
    for label, f, tol in (("fmu_mb FMU, default settings", None, None),
                          (f"fmu_mb FMU, {form} rtol {fm_tol:.0e}", form, fm_tol)):
        s = FMU2Slave(guid=md.guid, unzipDirectory=unz,
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        if f:
            s.setString([vr["solver.formulation"]], [f])
            s.setReal([vr["solver.rtol"], vr["solver.atol"]], [tol, tol * 1e-2])
        s.exitInitializationMode()
        t0 = time.perf_counter()
        for k in range(steps):
            s.setReal([vr["actuator_A.h"]], [0.0])
            s.doStep(currentCommunicationPoint=k * dt, communicationStepSize=dt)
            y = s.getReal(outs)
        wall = time.perf_counter() - t0
        s.terminate()
        s.freeInstance()
        res[label] = dict(us=wall / steps * 1e6, error=max(abs(y[0] - ref["A"]),
                                                             abs(y[1] - ref["B"])))
        log(f"    {label}: {res[label]['us']:.0f} us/step, error {res[label]['error']:.1e}")
    # fmu_mb in process (no FMU layer): advance + the four outputs per step
    model = load_model(str(ROOT / "models" / "double_pendulum.py"))
    st = Settings(formulation=form, rtol=fm_tol, atol=fm_tol * 1e-2)
    state = initial_state(model, st)
    names = output_names(model)
    ia = [names.index(n) for n in ("A.angle", "B.angle", "A.rate", "B.rate")]
    t0 = time.perf_counter()
    for k in range(steps):
        u = model.input_vector([0.0, 0.0])
        state = advance(model, state, (k + 1) * dt, u, st)
        out = Outputs(model, state, u, form)          # what the FMU does: only what is read
        y = [out.value(i) for i in ia]
    wall = time.perf_counter() - t0
    label = f"fmu_mb advance() in process, {form} rtol {fm_tol:.0e}"
    res[label] = dict(us=wall / steps * 1e6, error=max(abs(y[0] - ref["A"]),
                                                         abs(y[1] - ref["B"])))
    log(f"    {label}: {res[label]['us']:.0f} us/step")
    c = X.CoSimPendulum(ex_tol)
    t0 = time.perf_counter()
    for k in range(steps):
        y = c.step(0.0, dt)
    wall = time.perf_counter() - t0
    label = f"Exudyn KinematicTree DOPRI5 tol {ex_tol:.0e}, stepped in process"
    res[label] = dict(us=wall / steps * 1e6, error=max(abs(y[0] - ref["A"]),
                                                         abs(y[1] - ref["B"])))
    log(f"    {label}: {res[label]['us']:.0f} us/step, error {res[label]['error']:.1e}")
    return res


def first_step(log):
    """bench/fmu_step.py: instantiate .. first doStep in fmpy and in the C host."""
    p = subprocess.run([sys.executable, str(HERE / "fmu_step.py"), "--steps", "20"],
                       capture_output=True, text=True, timeout=600)
    lines = [x for x in p.stdout.splitlines() if x.strip()]
    log("    " + "\n    ".join(lines or [p.stderr.strip()[-300:]]))
    return lines


def memory_child(engine):
    """Run in a subprocess: peak RSS of the 64-link chain over 2 s."""
    def rss(key="VmRSS"):
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith(key)) / 1024
    if engine == "fmu_mb":
        m = FmuMb("pendulum_chain.py", {"N": 64, "phi0": CHAIN_PHI0},
                  [f"J{i}" for i in range(64)])
        m.form = "recursive" if "recursive" in fmu_mb.FORMULATIONS else "tmt"
        import tracemalloc
        base = rss()
        tracemalloc.start()
        m.run(T_END, 1e-6)
        traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
    else:
        import exudyn_models as X
        c = X.pendulum_chain(64, phi0=CHAIN_PHI0)
        base = rss()
        traced = float("nan")
        c.run(T_END, 1e-6)
    # VmHWM, not ru_maxrss: ru_maxrss survives exec and would report the parent's peak
    peak = rss("VmHWM")
    print(json.dumps({"base_MiB": base, "peak_MiB": peak, "traced_MiB": traced}))


def memory(log):
    out = {}
    for eng in ("fmu_mb", "exudyn"):
        p = subprocess.run([sys.executable, __file__, "--memory-child", eng],
                           capture_output=True, text=True, timeout=900)
        try:
            out[eng] = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            out[eng] = {"error": p.stderr.strip()[-300:]}
        log(f"    {eng}: {out[eng]}")
    return out


# ------------------------------------------------------------------ report
def machine():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_report(out, rows, co, fs, mem, args, elapsed):
    import exudyn_models as X

    L = [f"# fmu_mb vs Exudyn {X.VERSION}", "",
         f"`python bench/run.py{' --quick' if args.quick else ''}` on "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
         f"fmu_mb formulations registered: {', '.join(fmu_mb.FORMULATIONS)}; run time "
         f"{elapsed / 60:.1f} min.", "",
         "Wall time per simulated second (median of the runs shown; 2 s simulated), error = "
         "largest joint-angle error at t = 2 s against the tight reference [rad], energy drift "
         "= |E(2 s) - E(0)| [J] from the joint state. A tolerance marked * did not reach the "
         "target (the best one reached is shown).", "",
         "| benchmark | target | fmu_mb setting | fmu_mb ms/s | error | energy drift | "
         "Exudyn setting | Exudyn ms/s | error | energy drift | ratio fmu_mb/Exudyn |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["name"], f"{r['target']:.0e}"]
        for key, what in (("fm", f"{r.get('fm_form')} dop853 rtol"),
                          ("ex", "DOPRI5 tol" if "DOPRI5" in r["ex_solver"] else "gen-alpha h")):
            x = r[key]
            if x is None:
                cells += [f"{what}: skipped", "-", "-", "-"]
                continue
            star = "" if x["reached"] else "*"
            cells += [f"{what} {x['param']:.0e}{star}",
                      f"{x['wall'] / T_END * 1e3:.3g} ({x['runs']} runs)",
                      f"{x['error']:.1e}", f"{x['drift']:.1e}"]
        cells.append("-" if r["ratio"] is None else f"{r['ratio']:.3g}")
        L.append("| " + " | ".join(cells) + " |")
    L += ["", "## Co-simulation: double pendulum, 1 ms communication steps, "
          f"{args.cosim_steps * 1e-3:g} s", "",
          "| engine | us per step (setReal + doStep + getReal x4) | error at the end |",
          "|---|---|---|"]
    for k, v in co.items():
        L.append(f"| {k} | {v['us']:.1f} | {v['error']:.1e} |")
    L += ["", "## Time to first step (bench/fmu_step.py)", "", "```"] + fs + ["```", "",
          "## Peak memory, 64-link chain (fresh subprocess, VmHWM)", "",
          "fmu_mb and Exudyn run 2 s of the chain (fmu_mb recursive dop853 rtol 1e-6, "
          "Exudyn DOPRI5 tol 1e-6); "
          "tracemalloc sees Python/numpy allocations only (not Exudyn's C++ heap).", "",
          "| engine | RSS before the run [MiB] | peak RSS [MiB] | tracemalloc peak [MiB] |",
          "|---|---|---|---|"]
    for k, v in mem.items():
        L.append(f"| {k} | {v.get('base_MiB', float('nan')):.0f} | "
                 f"{v.get('peak_MiB', float('nan')):.0f} | "
                 f"{v.get('traced_MiB', float('nan')):.2f} |")
    (out / "results.md").write_text("\n".join(L) + "\n")
    (out / "results.json").write_text(json.dumps(dict(rows=rows, cosim=co, first_step=fs,
                                                      memory=mem), indent=1, default=str))
    plot(out, rows)
    return "\n".join(L)


def plot(out, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{r['name']}\n{r['target']:.0e}" for r in rows]
    x = np.arange(len(rows))
    for off, key, lab in ((-0.2, "fm", "fmu_mb"), (0.2, "ex", "Exudyn")):
        v = [r[key]["wall"] / T_END * 1e3 if r[key] else np.nan for r in rows]
        a.bar(x + off, v, 0.4, label=lab)
    a.set_yscale("log")
    a.set_xticks(x, labels, rotation=60, fontsize=7)
    a.set_ylabel("wall time per simulated second [ms]")
    a.set_title("matched accuracy (largest joint-angle error <= target)")
    a.legend()
    ch = [r for r in rows if r.get("n")]
    for key, lab in (("fm", "fmu_mb"), ("ex", "Exudyn")):
        pts = [(r["n"], r[key]["wall"] / T_END * 1e3) for r in ch if r[key]]
        if pts:
            b.loglog(*zip(*pts), "o-", label=lab)
    if ch:
        n = np.array([r["n"] for r in ch], float)
        b.loglog(n, n ** 1.2 * 1.0, "k:", label="N^1.2 (slope)")
        b.loglog(n, n ** 2 * 0.1, "k--", label="N^2 (slope)")
    b.set_xlabel("links N")
    b.set_ylabel("ms per simulated second")
    b.set_title("N-link chain, error 1e-6")
    b.legend()
    fig.tight_layout()
    fig.savefig(out / "results.png", dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer N and repeats (a few minutes)")
    p.add_argument("--out", default=str(HERE / "results"))
    p.add_argument("--repeats", type=int)
    p.add_argument("--only", help="run only benchmarks whose name contains this")
    p.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        return memory_child(args.memory_child)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.cosim_steps = 500 if args.quick else 2000
    cap = 15.0 if args.quick else 90.0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.0f} s] {msg}", flush=True)

    rows = []
    for b in benchmarks(args.quick):
        if args.only and args.only not in b["name"]:
            continue
        rows.append(run_benchmark(b, args.repeats, cap, log))
    dp8 = next((r for r in rows if r["name"] == "double pendulum" and r["target"] == 1e-8),
               None)
    fm_tol = dp8["fm"]["param"] if dp8 and dp8["fm"] else 1e-9
    ex_tol = dp8["ex"]["param"] if dp8 and dp8["ex"] else 1e-8
    form = dp8["fm_form"] if dp8 else "newton_euler"
    log("== co-simulation")
    co = cosim(args.cosim_steps, fm_tol, ex_tol, form, log)
    log("== time to first step")
    fs = first_step(log)
    log("== peak memory, 64-link chain")
    mem = memory(log)
    text = write_report(out, rows, co, fs, mem, args, time.perf_counter() - t_start)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
