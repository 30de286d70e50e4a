"""fmu_mb against Exudyn at equal accuracy: one command, one process, round-robin timing.

    pip install -e ".[bench]"           # exudyn, fmpy, pythonfmu, matplotlib
    python bench/run.py [--quick] [--out DIR]

For every benchmark it builds the model in fmu_mb (models/*.py, the fastest registered
formulation for that model, picked at run time) and in Exudyn (bench/exudyn_models.py),
computes its own tight reference (bench/references.py), tunes each engine's tolerance (or
step) until the largest joint-angle error at the end time is at most the target, then times
both round-robin (median of --repeats runs) and writes DIR/results.md, DIR/results.json and
DIR/results.png. See the performance page (docs/performance.md).
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
CLOCK = [time.perf_counter]   # --cpu: time.process_time for the in-process runs of both engines


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
        t0 = CLOCK[0]()
        st = advance(self.model, st0, t_end, None, s)
        wall = CLOCK[0]() - t0
        v = output_values(self.model, st, self.model.input_vector(None), s.formulation)
        return wall, dict(zip(self.names, v[self.ia])), dict(zip(self.names, v[self.ir]))

    def run_default(self, t_end):
        """advance() with the default Settings (formulation auto, dop853, rtol 1e-9)."""
        s = Settings()
        st0 = initial_state(self.model, s)
        t0 = CLOCK[0]()
        st = advance(self.model, st0, t_end, None, s)
        wall = CLOCK[0]() - t0
        v = output_values(self.model, st, self.model.input_vector(None), s.formulation)
        return wall, dict(zip(self.names, v[self.ia])), dict(zip(self.names, v[self.ir]))

    def rhs_time(self, form):
        """Wall time of one right-hand side of `form` at the initial state [s]."""
        from fmu_mb.dynamics.formulations import get_formulation

        st = initial_state(self.model, Settings(formulation=form))
        f = get_formulation(form)
        u = self.model.input_vector(None)
        t0 = time.perf_counter()
        f.accelerations(self.model, st.q, st.qd, st.t, u)
        return time.perf_counter() - t0

    def pick_formulation(self, tol, log):
        """The fastest registered formulation on a short run (0.1 s)."""
        best = None
        for f in fmu_mb.FORMULATIONS:
            try:
                w0 = self.rhs_time(f)
                if w0 > 5e-3:      # e.g. the dense formulations on a 256-link chain
                    log(f"    fmu_mb {f}: {w0 * 1e3:.0f} ms per right-hand side; not probed")
                    continue
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


# ------------------------------------------------------------------ benchmarks
def benchmarks(quick, big=False):
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
    for n in ((2, 8, 32) if quick else (2, 4, 8, 16, 32, 64, 128) + ((256,) if big else ())):
        names = [f"J{i}" for i in range(n)]
        out.append(dict(name=f"chain N={n}", n=n, target=1e-6,
                        fm=("pendulum_chain.py", {"N": n, "phi0": CHAIN_PHI0}, names),
                        # Exudyn up to N = 64 (it grows like N^2.5: N = 256 would take hours)
                        ex=(lambda n=n: X.pendulum_chain(n, phi0=CHAIN_PHI0)) if n <= 64
                        else None,
                        exkind="adaptive",
                        ref=(lambda n=n: R.pendulum_chain(n, phi0=CHAIN_PHI0))))
    for n in ((1, 2) if quick else (1, 2) + ((40,) if big else ())):
        names = [f"O{i}" for i in range(n + 1)] + [f"L{i}" for i in range(n)] + \
            [f"R{i}" for i in range(n)]
        out.append(dict(name=f"N-four-bar N={n}", target=1e-6,
                        fm=("n_four_bar.py", {"N": n}, names),
                        ex=(lambda n=n: X.n_four_bar(n, R.four_bar_bodies(n, math.pi / 2,
                                                                          -1.0))),
                        exkind="implicit", large=n > 10, ref=(lambda n=n: R.n_four_bar(n))))
    return out


def error(joints, ref):
    e = max(abs(joints[k] - ref[k]) for k in ref)
    return e if math.isfinite(e) else math.inf


def _attempt(run, p, ref, log, label):
    try:
        wall, q, _ = run(p)
    except Exception as exc:                                # noqa: BLE001
        log(f"    {label} {p:.3g}: fails ({type(exc).__name__}: {str(exc)[:80]})")
        return None
    e = error(q, ref)
    log(f"    {label} {p:.3g}: error {e:.2e}, {wall * 1e3:.1f} ms")
    return e, wall


def tune(run, params, ref, target, cap, log, label):
    """First param (loosest first) whose error <= target. Returns (param, err, wall, ok)."""
    best = None
    for p in params:
        r = _attempt(run, p, ref, log, label)
        if r is None:
            continue
        e, wall = r
        if best is None or e < best[1]:
            best = (p, e, wall, False)
        if e <= target:
            return p, e, wall, True
        if wall > cap:
            log(f"    {label}: one run took {wall:.0f} s > cap {cap:.0f} s; stop tuning")
            break
    return best


def tune_step(run, h0, ref, target, cap, log, label, h_min=1e-6, fine=2 ** 0.25):
    """The largest fixed step on a fine ladder (ratio 2^(1/4): within 19 % of the best
    step) whose error <= target: halve from h0 until the target is met, then walk down from
    the last failing step by the fine ratio. Returns (h, err, wall, ok) like tune()."""
    best, h, fail = None, h0, None
    while h >= h_min:
        t0 = time.perf_counter()
        r = _attempt(run, h, ref, log, label)
        if r is None and time.perf_counter() - t0 > cap:
            # a failing run (e.g. Newton giving up at a singular pose) at a smaller step
            # takes longer still: stop as after a successful run over the cap
            log(f"    {label}: a failing run took more than the cap {cap:.0f} s; stop tuning")
            return best
        if r is not None:
            e, wall = r
            if best is None or e < best[1]:
                best = (h, e, wall, False)
            if e <= target:
                best = (h, e, wall, True)
                break
            if wall > cap:
                log(f"    {label}: one run took {wall:.0f} s > cap {cap:.0f} s; stop tuning")
                return best
        fail = h
        h /= 2
    if best is None or not best[3] or fail is None:
        return best
    hh = fail / fine
    while hh > best[0] * 1.001:
        r = _attempt(run, hh, ref, log, label)
        if r is not None and r[0] <= target:
            return hh, r[0], r[1], True
        hh /= fine
    return best


def exudyn_configs(kind, ex, large=False):
    """Exudyn's candidate settings for one model: (label, run(p), "tol" or "step", start).
    Trees (KinematicTree, minimal coordinates): fixed-step RK67 without end-of-step
    accelerations, and the adaptive DOPRI5. Loops (rigid bodies + joints): generalized-alpha
    and the trapezoidal index-2 solver, each with modified Newton and one Jacobian update per
    step, with the dense and the sparse (EigenSparse) linear solver."""
    if kind == "adaptive":
        return [("RK67 h", lambda p: ex.run(T_END, p, "RK67"), "step", 0.1),
                ("DOPRI5 tol", lambda p: ex.run(T_END, p, "DOPRI5"), "tol", None)]
    out = []
    for solver, short in (("GeneralizedAlpha", "gen-alpha"), ("TrapezoidalIndex2", "trap-i2")):
        for sparse in ((True,) if large else (False, True)):
            out.append((f"{short} {'sparse' if sparse else 'dense'} jac/step h",
                        (lambda p, solver=solver, sparse=sparse: ex.run(
                            T_END, p, solver, sparse=sparse, jac_per_step=True)),
                        "step", 2e-3))
    return out


EX_BEST = {}      # (benchmark name, target) -> (run, param) of Exudyn's best setting


def run_benchmark(b, repeats, cap, log):
    log(f"== {b['name']}, target {b['target']:.0e}")
    ref, energy, E0 = b["ref"]()
    target = b["target"]
    row = dict(name=b["name"], target=target, n=b.get("n"))
    # fmu_mb tuned (its expert's choice) and with default settings (what a user gets)
    fm = FmuMb(*b["fm"])
    tols = [t for t in ADAPTIVE_TOLS if t <= 1e3 * target * 1.01]
    form, w = fm.pick_formulation(tols[0], log)
    row["auto"] = Settings().formulation_for(fm.model)
    fmr = None
    if w * (T_END / 0.1) > 20 * cap:
        log(f"    fmu_mb: estimated {w * T_END / 0.1:.0f} s per run; skipped")
    else:          # the probe's pick and auto's pick, each tuned: the faster that reaches it
        for f in dict.fromkeys([form, row["auto"]]):
            r = tune(lambda p, f=f: fm.run(T_END, p, f), tols, ref, target, cap, log,
                     f"fmu_mb {f} rtol")
            if r and (fmr is None or (r[3], -r[2]) > (fmr[3], -fmr[2])):
                fmr, fm.form = r, f
    row["fm_form"] = fm.form
    dfr = _attempt(lambda p: fm.run_default(T_END), 0.0, ref, log, "fmu_mb default settings")
    # Exudyn: every candidate setting tuned, the fastest that reaches the target is its best
    exr, row["ex_all"] = None, []
    ex = b["ex"]() if b.get("ex") else None
    for label, run, kind, start in (exudyn_configs(b["exkind"], ex, b.get("large"))
                                    if ex else []):
        if kind == "tol":
            r = tune(run, tols, ref, target, cap, log, f"exudyn {label}")
        else:
            r = tune_step(run, start, ref, target, cap, log, f"exudyn {label}")
        if r is None:
            continue
        if r[3] and r[2] < cap / 4:     # choose on the fastest of 3 runs, not one noisy run
            r = (r[0], r[1], min([r[2]] + [run(r[0])[0] for _ in range(2)]), r[3])
        row["ex_all"].append(dict(setting=label, param=r[0], error=r[1], wall=r[2],
                                  reached=r[3]))
        if exr is None or (r[3], -r[2]) > (exr[1][3], -exr[1][2]):
            exr = (run, r, label)
    # round-robin timing
    engines = [("fm", fmr, lambda p: fm.run(T_END, p)),
               ("fmd", (0.0, dfr[0], dfr[1], True) if dfr else None,
                lambda p: fm.run_default(T_END))]
    if exr:
        engines.append(("ex", exr[1], exr[0]))
        row["ex_solver"] = exr[2]
        EX_BEST[(b["name"], target)] = (exr[0], exr[1][0])
    walls = {k: [] for k, *_ in engines}
    states = {}
    reps = repeats
    slow = max([r[2] for _, r, _ in engines if r] + [0.0])
    if slow > cap / 2:
        reps = max(1, min(repeats, int(cap / slow)))
    for _ in range(reps):
        for key, res, run in engines:
            if res is None:
                continue
            wall, q, qd = run(res[0])
            walls[key].append(wall)
            states[key] = (q, qd)
    for key, res, _ in engines:
        if res is None:
            row[key] = None
            continue
        q, qd = states[key]
        row[key] = dict(param=res[0], reached=res[3], error=error(q, ref),
                        drift=abs(energy(q, qd) - E0), wall=statistics.median(walls[key]),
                        runs=len(walls[key]))
    row.setdefault("ex", None)
    for key in ("fm", "fmd"):
        row[f"ratio_{key}"] = (row[key]["wall"] / row["ex"]["wall"]) \
            if row[key] and row["ex"] else None
    row["ratio"] = row["ratio_fm"]
    log(f"   -> fmu_mb tuned {fmt_ms(row['fm'])}, default {fmt_ms(row['fmd'])}, exudyn best "
        f"{fmt_ms(row['ex'])} ({row.get('ex_solver')})")
    return row


def fmt_ms(r):
    return "n/a" if r is None else f"{r['wall'] / T_END * 1e3:.3g} ms/s"


# ------------------------------------------------------------------ default-built FMUs
FMU_CASES = [("double pendulum", "double_pendulum.py", {}, ["A", "B"], R.double_pendulum),
             ("slider-crank", "slider_crank.py", {}, ["O", "A", "B"], R.slider_crank),
             ("four-bar (N-four-bar N=1)", "n_four_bar.py", {"N": 1}, ["O0", "O1", "L0", "R0"],
              lambda: R.n_four_bar(1))]


def fmu_runs(rows, repeats, log, dt=0.01):
    """Each default-built FMU (no parameter set) in fmpy over [0, 2 s] with 10 ms
    communication steps (doStep, getReal of the joint angles): wall per simulated second and
    error, timed round-robin with Exudyn's best setting of the same model at 1e-6 (the one
    run_benchmark found; its wall from those runs when it was not tuned in this process)."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    from fmu_mb.fmi.build import build_fmu

    out = []
    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_fmus_"))
    try:
        for label, file, pars, names, reff in FMU_CASES:
            ref = reff()[0]
            fmu = build_fmu(ROOT / "models" / file, tmp, overrides=pars)
            md = read_model_description(str(fmu))
            vr = {v.name: v.valueReference for v in md.modelVariables}
            outs = [vr[f"{n}.angle"] for n in names]
            unz = extract(str(fmu))
            walls, err = [], None
            bench = "N-four-bar N=1" if "four-bar" in label else label
            exrun = EX_BEST.get((bench, 1e-6))
            ex_walls = []
            for k in range(repeats):
                if exrun:
                    ex_walls.append(exrun[0](exrun[1])[0])
                s = FMU2Slave(guid=md.guid, unzipDirectory=unz,
                              modelIdentifier=md.coSimulation.modelIdentifier,
                              instanceName=f"run{k}")
                s.instantiate()
                s.setupExperiment(startTime=0.0)
                s.enterInitializationMode()
                s.exitInitializationMode()
                n = int(round(T_END / dt))
                t0 = CLOCK[0]()        # the clock of Exudyn's runs it alternates with
                for i in range(n):
                    s.doStep(currentCommunicationPoint=i * dt, communicationStepSize=dt)
                    y = s.getReal(outs)
                walls.append(CLOCK[0]() - t0)
                s.terminate()
                s.freeInstance()
                err = error(dict(zip(names, y)), ref)
            ex = next((r["ex"] for r in rows if r["target"] == 1e-6 and r["ex"] and
                       r["name"] == bench), None)
            if ex and ex_walls:         # side by side with the FMU runs
                ex = dict(ex, wall=statistics.median(ex_walls), runs=len(ex_walls))
            w = statistics.median(walls)
            out.append(dict(name=label, wall=w, error=err, ex=ex,
                            ratio=(w / ex["wall"]) if ex else None))
            log(f"    FMU {label}: {w / T_END * 1e3:.3g} ms/s, error {err:.1e}"
                + (f", Exudyn best {ex['wall'] / T_END * 1e3:.3g} ms/s" if ex else ""))
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ------------------------------------------------------------------ co-simulation
def cosim(steps, repeats, log):
    """bench/fmu_step.py's per-step comparison: the transport floor, the default-built
    double-pendulum FMU and Exudyn RK44 / DOPRI5 stepped in process, round-robin."""
    import fmu_step

    res, _ = fmu_step.per_step(steps, repeats, "newton_euler", log)
    return {k: dict(us=v[0]) for k, v in res.items()}


def first_step(log):
    """bench/fmu_step.py: instantiate .. first doStep of the default-built double-pendulum
    FMU in fresh processes (fmpy loaded), and in the plain C host."""
    import fmu_step
    from fmu_mb.fmi.build import build_fmu

    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_first_"))
    fmu = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
    f = fmu_step.first_step(fmu, runs=5)
    noop = fmu_step.first_step(fmu_step.noop_fmu(tmp), runs=5)
    f["noop_total"], f["noop_cpu"] = noop["total"], noop["cpu"]
    f["c_host"] = fmu_step.c_host(fmu)
    log(f"    {f}")
    return f


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


def _ms(x):
    return f"{x['wall'] / T_END * 1e3:.3g}"


def chain_growth(rows, key):
    """Least-squares exponent p of wall ~ N^p over the chain rows (and N range)."""
    pts = [(r["n"], r[key]["wall"]) for r in rows if r.get("n") and r.get(key)]
    if len(pts) < 2:
        return None
    n, w = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(n, w, 1)[0]), min(p[0] for p in pts), max(p[0] for p in pts)


def write_report(out, rows, fmus, co, fs, mem, args, elapsed):
    import exudyn_models as X

    L = [f"# fmu_mb vs Exudyn {X.VERSION}", "",
         f"`python bench/run.py{' --quick' if args.quick else ''}{' --cpu' if args.cpu else ''}` on "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
         f"fmu_mb formulations registered: {', '.join(fmu_mb.FORMULATIONS)}; run time "
         f"{elapsed / 60:.1f} min.", "",
         f"{'CPU time of this process (--cpu)' if args.cpu else 'Wall time'} per simulated "
         "second (median of the runs shown; 2 s simulated), error = "
         "largest joint-angle error at t = 2 s against the tight reference [rad]. fmu_mb "
         "tuned: the fastest formulation and the loosest dop853 rtol that reach the target; "
         "fmu_mb default: `Settings()` (formulation auto, dop853, rtol 1e-9), what a user gets "
         "without options. Exudyn best: every candidate setting tuned on its ladder (table "
         "below), the fastest that reaches the target. A setting marked * did not reach the "
         "target (the best one reached is shown).", "",
         "| benchmark | target | fmu_mb tuned | ms/s | error | fmu_mb default (auto ->) | ms/s "
         "| error | Exudyn best | ms/s | error | tuned / Exudyn | default / Exudyn |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["name"], f"{r['target']:.0e}"]
        x = r["fm"]
        cells += ([f"{r.get('fm_form')} rtol {x['param']:.0e}{'' if x['reached'] else '*'}",
                   _ms(x), f"{x['error']:.1e}"] if x else ["skipped", "-", "-"])
        x = r["fmd"]
        cells += ([r.get("auto"), _ms(x), f"{x['error']:.1e}"] if x else ["failed", "-", "-"])
        x = r["ex"]
        cells += ([f"{r.get('ex_solver')} {x['param']:.2g}{'' if x['reached'] else '*'}",
                   _ms(x), f"{x['error']:.1e}"] if x else ["not run", "-", "-"])
        for k in ("ratio_fm", "ratio_fmd"):
            cells.append("-" if r.get(k) is None else f"{r[k]:.3g}")
        L.append("| " + " | ".join(cells) + " |")
    for key, label in (("fm", "fmu_mb tuned"), ("fmd", "fmu_mb default"), ("ex", "Exudyn")):
        g = chain_growth(rows, key)
        if g:
            L.append(f"\nChain cost growth, {label}: N^{g[0]:.2f} (least squares over "
                     f"N = {g[1]}..{g[2]}).")
    L += ["", "### Every Exudyn setting, tuned (fastest of 3 runs at the tuned step or tol)", "",
          "| benchmark | setting | step or tol | error | ms/s |", "|---|---|---|---|---|"]
    for r in rows:
        for e in r.get("ex_all", []):
            L.append(f"| {r['name']} {r['target']:.0e} | {e['setting']} | {e['param']:.3g}"
                     f"{'' if e['reached'] else '*'} | {e['error']:.1e} | "
                     f"{e['wall'] / T_END * 1e3:.3g} |")
    L += ["", "## Default-built FMUs in fmpy (no parameter set), 10 ms communication steps", "",
          "Each FMU run alternates with a run of Exudyn's best setting for the same model at "
          "1e-6 (medians of those runs).", "",
          "| FMU | ms/s | error at 2 s | Exudyn best at 1e-6, ms/s | FMU / Exudyn best |",
          "|---|---|---|---|---|"]
    for f in fmus:
        L.append(f"| {f['name']} | {f['wall'] / T_END * 1e3:.3g} | {f['error']:.1e} | "
                 f"{_ms(f['ex']) if f['ex'] else '-'} | "
                 + ("-" if f["ratio"] is None else f"{f['ratio']:.3g}") + " |")
    L += ["", "## Co-simulation: double pendulum, 1 ms communication steps (bench/fmu_step.py)",
          "", "setReal(1) + doStep + getReal(4) per step, median of the rounds.", "",
          "| engine | us per step |", "|---|---|"]
    for k, v in co.items():
        L.append(f"| {k} | {v['us']:.1f} |")
    L += ["", "## Time to first step (bench/fmu_step.py)", "",
          f"Default-built double-pendulum FMU, fresh processes with fmpy loaded, median of 5: "
          f"instantiate {fs['instantiate'] * 1e3:.1f} ms, initialise "
          f"{fs['initialize'] * 1e3:.1f} ms, first doStep {fs['first_step'] * 1e3:.2f} ms; "
          f"**instantiate to first doStep {fs['total'] * 1e3:.1f} ms** (CPU time "
          f"{fs['cpu'] * 1e3:.1f} ms); scipy imported: {fs['scipy']}. The same for the no-op "
          f"pythonfmu FMU (pythonfmu's own start-up, the floor): {fs['noop_total'] * 1e3:.1f} "
          f"ms (CPU {fs['noop_cpu'] * 1e3:.1f} ms). C host: {fs['c_host']}.", "",
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
    (out / "results.json").write_text(json.dumps(dict(rows=rows, fmus=fmus, cosim=co,
                                                      first_step=fs, memory=mem),
                                                 indent=1, default=str))
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
    p.add_argument("--only", help="run only benchmarks whose name contains this (several: "
                   "comma-separated, e.g. 'N=256,N=40')")
    p.add_argument("--big", action="store_true",
                   help="add the 256-link chain (its reference alone takes 15-20 min) and the "
                        "N-four-bar with N = 40")
    p.add_argument("--cpu", action="store_true",
                   help="time the in-process runs of both engines (tuning and the main table) "
                        "in CPU time of this process instead of wall time: on a machine loaded "
                        "beyond its cores, a run longer than a scheduler slice is stretched by "
                        "the load and a short one is not (FMU, co-simulation and start-up "
                        "rows stay in wall time)")
    p.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        return memory_child(args.memory_child)
    if args.cpu:
        import exudyn_models as X
        CLOCK[0] = X.CLOCK = time.process_time
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.cosim_steps = 500 if args.quick else 2000
    cap = 15.0 if args.quick else 90.0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.0f} s] {msg}", flush=True)

    rows = []
    for b in benchmarks(args.quick, args.big):
        if args.only and not any(o and o in b["name"] for o in args.only.split(",")):
            continue
        rows.append(run_benchmark(b, args.repeats, cap, log))
    log("== default-built FMUs")
    fmus = fmu_runs(rows, args.repeats, log)
    log("== co-simulation")
    co = cosim(args.cosim_steps, args.repeats, log)
    log("== time to first step")
    fs = first_step(log)
    log("== peak memory, 64-link chain")
    mem = memory(log)
    text = write_report(out, rows, fmus, co, fs, mem, args, time.perf_counter() - t_start)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
