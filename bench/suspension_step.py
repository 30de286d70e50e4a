"""Double wishbone through the FMU (the target: a 1 ms co-simulation step <= 2x Exudyn
stepped in process), side by side at the same wheel-centre accuracy.

The model is models/double_wishbone.py with its default parameters; every engine reads its
constants from that file (Exudyn's copy is bench/exudyn_spatial.double_wishbone_system). The
road is the curb + wave of tests/test_suspensions.py (exudyn_spatial.road_curb_and_wave: a
20 mm curb at 0.05 s, a 10 mm 5 Hz wave from 0.1 s), sampled at the start of each 1 ms
communication step and held over it, entering as tyre.h = -k_t z_road. Per step each engine
does the same: set the input, advance 1 ms, read five outputs (wheel_centre.x, .y, .z,
tyre.force, coil_over.force).

Engines:
- "no-op pythonfmu FMU": one input, four outputs, nothing computed (bench/fmu_step.py): the
  cost of fmpy + pythonfmu whatever the model (the floor);
- "fmu_mb FMU, default": `python -m fmu_mb build models/double_wishbone.py` into a temporary
  directory, no parameter set (what a user gets), in fmpy's FMU2Slave;
- "(fmu_mb FMU, default, reading only wheel_centre.x, .y, .z)": a diagnostic row, what the
  two force outputs cost (not in the ratios);
- "fmu_mb FMU, tuned": the same FMU with `solver.*` parameters set at instantiation: the
  fastest (formulation, method, tolerance or step) that meets the accuracy target, found on a
  ladder per (formulation, method), loosest first;
- "Exudyn in process": models/double_wishbone.py rebuilt in Exudyn 1.13.6
  (`sys.exudynFast = True`), its implicit solver initialised once and kept alive; per step
  the tyre spring's `force` parameter is set (the road term, no Python user function),
  `InitializeSolverInitialConditions` + `SolveSteps` over [t, t + 1 ms], the state copied to
  the initial one (the pattern of exudyn.artificialIntelligence). Its settings for a
  closed-loop spatial mechanism: GeneralizedAlpha (index 3, spectral radius 0.9) and
  TrapezoidalIndex2, modified Newton with one Jacobian per step, dense and EigenSparse; the
  number of substeps per 1 ms tuned (1, 2, 3, 4, 6, 8, ...) until the target is met. Also
  tried: the solver continued instead of re-initialised (cheaper per step, but first order
  across the input's jumps: it never reaches the target in time, see ExudynEngine).

Accuracy: the largest |wheel-centre error| over x, y, z at every communication point of the
run, against fmu_mb (newton_euler, dop853, rtol 1e-12) with the same held input; the
reference is checked against fmu_mb with rk4 at h = 2e-4 s (another integrator) and against
Exudyn Richardson-extrapolated over three fine steps (bench/exudyn_spatial). Target
(default) 1e-6 m.

Timing: each round runs every engine over the whole horizon from t = 0 (an FMU is reset and
re-initialised, Exudyn rebuilt, neither timed), interleaved: 20 steps of each engine in
turn, each engine's steps timed, so that every engine sees the same load of a shared machine
(alternating whole runs gave ratios that moved by 2x between rounds at load 5; switching
engines at every step costs each about 80 us of cold caches); the median of the rounds' us
per step is reported. Tuning runs are tight loops of one engine.

    python bench/suspension_step.py              # 0.5 s, 7 rounds (about 4 min on a loaded
                                                 # 2-core machine)
    python bench/suspension_step.py --quick      # 0.2 s, 2 rounds, no reference cross-check
    python bench/suspension_step.py --profile    # also cProfile 100 steps of each fmu_mb FMU
"""
import argparse
import contextlib
import cProfile
import gc
import io
import os
import platform
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
sys.exudynFast = True          # Exudyn's release build without range checks

import exudyn_spatial as es  # noqa: E402

MODEL = ROOT / "models" / "double_wishbone.py"
DT = 1e-3                      # communication step [s]
OUTS = ("wheel_centre.x", "wheel_centre.y", "wheel_centre.z", "tyre.force",
        "coil_over.force")
RTOL_LADDER = (1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 3e-8, 1e-8)
STEP_LADDER = (1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5)
CHUNK = 20                     # steps of one engine before the next one's (interleaved)
SUBSTEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


# ------------------------------------------------------------------ input and reference
def road_input(n):
    """tyre.h per communication step k (held over [k DT, (k+1) DT)) and the road z."""
    k_t = es.model_parameters("double_wishbone")["tyre_stiffness"]
    z = np.array([es.road_curb_and_wave(k * DT) for k in range(n)])
    return -k_t * z, z


def _held(values):
    n = len(values)
    return lambda t: float(values[min(int(round(t / DT)), n - 1)])


def fmu_mb_reference(u, rtol=1e-12, method="dop853", step=None):
    """(n, 5) outputs at t = DT .. n DT from fmu_mb's simulate (newton_euler) with the held
    input: dop853 at rtol (one 8th-order step per 1 ms interval already meets rtol 1e-12
    here), or a fixed-step method with step."""
    from fmu_mb import load_model, simulate
    kw = dict(step=step) if step else dict(rtol=rtol, atol=rtol * 1e-2)
    r = simulate(load_model(str(MODEL)), len(u) * DT, DT, inputs={"tyre.h": _held(u)},
                 formulation="newton_euler", method=method, **kw)
    return np.column_stack([r[c] for c in OUTS])[1:len(u) + 1]


def exudyn_extrapolated(z, step=1e-4):
    """Exudyn (bench/exudyn_spatial, generalized-alpha, Newton 1e-10) at 2 step, step,
    step / 2 with the same held road, Richardson-extrapolated: (wheel centre (n, 3), error
    estimate [m])."""
    road = _held(z)
    n = len(z)
    x = {h: es.exudyn_double_wishbone(road, n * DT, h, DT)[0] for h in (2 * step, step,
                                                                        step / 2)}
    r1 = 2 * x[step][1:n + 1, 1:] - x[2 * step][1:n + 1, 1:]
    r2 = 2 * x[step / 2][1:n + 1, 1:] - x[step][1:n + 1, 1:]
    return r2, np.abs(r1 - r2).max() / 3.0


def wheel_error(y, ref):
    return float(np.abs(y[:, :3] - ref[:, :3]).max())


# ------------------------------------------------------------------ engines
class Engine:
    """begin() (untimed set-up), step(k, u_k) (one communication step, timed by the caller),
    result() -> (n, 5) outputs of the steps so far."""

    def run(self, u, limit=None):
        """(us per step, (n, 5) outputs) over the inputs u in a tight loop, or (None, None)
        once the wall time exceeds limit [s] (used for tuning)."""
        self.begin(len(u))
        step = self.step
        t0 = time.perf_counter()
        for k in range(len(u)):
            step(k, u[k])
            if limit is not None and k % 10 == 9 and time.perf_counter() - t0 > limit:
                return None, None
        return (time.perf_counter() - t0) / len(u) * 1e6, self.result()


class FmuEngine(Engine):
    """One FMU instance in fmpy's FMU2Slave, reset and re-initialised at each begin();
    per step setReal(tyre.h) + doStep + getReal(5 outputs)."""

    def __init__(self, path, unzipped, params=None, inp="tyre.h", outs=OUTS):
        from fmpy import read_model_description
        from fmpy.fmi2 import FMU2Slave
        md = read_model_description(str(path))
        self.var = {v.name: v for v in md.modelVariables}
        self.s = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                           modelIdentifier=md.coSimulation.modelIdentifier,
                           instanceName="bench")
        self.s.instantiate()
        self.params = dict(params or {})
        self.vin = [self.var[inp].valueReference]
        self.vout = [self.var[o].valueReference for o in outs]
        self.used = False

    def begin(self, n):
        s = self.s
        if self.used:
            s.reset()
        self.used = True
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        for name, value in self.params.items():
            v = self.var[name]
            {"String": s.setString, "Integer": s.setInteger,
             "Real": s.setReal}[v.type]([v.valueReference], [value])
        s.exitInitializationMode()
        self.y = np.empty((n, len(self.vout)))

    def step(self, k, uk):
        s = self.s
        s.setReal(self.vin, [uk])
        s.doStep(currentCommunicationPoint=k * DT, communicationStepSize=DT)
        self.y[k] = s.getReal(self.vout)

    def result(self):
        return self.y

    def close(self):
        try:
            self.s.terminate()
        except Exception:                    # not initialised (a refused parameter)
            pass
        self.s.freeInstance()


class ExudynEngine(Engine):
    """models/double_wishbone.py in Exudyn stepped in process with an implicit solver kept
    alive (rebuilt at each begin()): solver "GeneralizedAlpha" (index 3) or
    "TrapezoidalIndex2"; substeps fixed steps per 1 ms; modified Newton with one Jacobian
    per step; dense or EigenSparse.

    restart True: each step re-initialises the solver from the state reached
    (InitializeSolverInitialConditions, which computes the accelerations for the new input:
    Exudyn's default computeInitialAccelerations; the pattern of
    exudyn.artificialIntelligence); False: the solver continues (solver.it.endTime moved on,
    SolveSteps), cheaper per step but it carries the accelerations of the old input across
    each jump of the held input, which makes the error first order in the step."""

    def __init__(self, solver, sparse, substeps, restart=True):
        self.solver_name, self.sparse, self.substeps = solver, sparse, substeps
        self.restart = restart

    @property
    def label(self):
        return (f"{self.solver_name} {'EigenSparse' if self.sparse else 'dense'}, "
                f"{self.substeps} step{'s' if self.substeps > 1 else ''} per 1 ms, "
                f"{'restarted' if self.restart else 'continued'}")

    def begin(self, n):
        exu, self.SC, mbs, it = es.double_wishbone_system(road=None)
        mbs.Assemble()
        s = exu.SimulationSettings()
        ti = s.timeIntegration
        ti.startTime, ti.endTime, ti.numberOfSteps = 0.0, DT, self.substeps
        ti.verboseMode = 0
        ti.newton.useModifiedNewton = True
        ti.newton.modifiedNewtonJacUpdatePerStep = True
        index2 = self.solver_name == "TrapezoidalIndex2"
        ti.generalizedAlpha.useNewmark = index2          # what SolveDynamic sets for it
        ti.generalizedAlpha.useIndex2Constraints = index2
        s.solution.file.write = False
        s.show.statistics = False
        s.show.computationTime = False
        s.linearSolver.solverType = (exu.LinearSolverType.EigenSparse if self.sparse
                                     else exu.LinearSolverType.EigenDense)
        solver = exu.MainSolverImplicitSecondOrder()
        solver.InitializeSolver(mbs, s)
        self.mbs, self.s, self.solver, self.ti, self.sd = mbs, s, solver, ti, mbs.systemData
        self.ca, self.tyre, self.coil = it["carrier"], it["tyre"], it["coil_over"]
        self.local = list(it["wc"] - it["c_c"])
        self.POS, self.FORCE = exu.OutputVariableType.Position, exu.OutputVariableType.Force
        self.INITIAL = exu.ConfigurationType.Initial
        self.y = np.empty((n, 9))       # wheel centre, the two springs' force vectors
        self.direction = []             # unit vectors along the springs at the start
        for e in (self.tyre, self.coil):
            m0, m1 = mbs.GetObject(e)["markerNumbers"]
            d = mbs.GetMarkerOutput(m1, self.POS) - mbs.GetMarkerOutput(m0, self.POS)
            self.direction.append(d / np.linalg.norm(d))

    def step(self, k, uk):
        mbs, s, solver, sd, y = self.mbs, self.s, self.solver, self.sd, self.y
        mbs.SetObjectParameter(self.tyre, "force", float(uk))
        if self.restart or k == 0:
            self.ti.startTime, self.ti.endTime = k * DT, (k + 1) * DT
            solver.InitializeSolverInitialConditions(mbs, s)
            solver.SolveSteps(mbs, s)
            sd.SetSystemState(systemStateList=sd.GetSystemState(), configuration=self.INITIAL)
        else:
            solver.it.endTime = (k + 1) * DT
            solver.SolveSteps(mbs, s)
        y[k, :3] = mbs.GetObjectOutputBody(self.ca, self.POS, localPosition=self.local)
        y[k, 3:6] = mbs.GetObjectOutput(self.tyre, self.FORCE)
        y[k, 6:] = mbs.GetObjectOutput(self.coil, self.FORCE)

    def result(self):
        # Exudyn's Force is the vector f v (v: unit vector along the spring); its scalar f
        # (tension positive, as fmu_mb's): |f| with the sign of f v . v(t = 0)
        y = self.y
        forces = [np.linalg.norm(y[:, i:i + 3], axis=1) * np.sign(
            (y[:, i:i + 3] * d).sum(axis=1)) for i, d in ((3, self.direction[0]),
                                                          (6, self.direction[1]))]
        return np.column_stack([y[:, :3]] + forces)


def interleaved(engines, u, chunk=CHUNK):
    """One round: every engine begins, then `chunk` steps of each engine in turn until the
    end, each engine's chunks timed, so that all engines see the same load of a shared
    machine; a chunk amortises what switching engines costs (cold caches: a no-op FMU step
    right after another engine's takes about 100 us instead of 15-30).
    Returns ({name: us per step}, {name: outputs})."""
    for e in engines.values():
        e.begin(len(u))
    # the objects alive now (models, solvers, modules) are not the steps' garbage: keep the
    # collector from traversing them in whichever engine's step it happens to run
    gc.collect()
    gc.freeze()
    spent = dict.fromkeys(engines, 0.0)
    items = list(engines.items())
    clock = time.perf_counter
    for k0 in range(0, len(u), chunk):
        ks = range(k0, min(k0 + chunk, len(u)))
        for name, e in items:
            step = e.step
            t0 = clock()
            for k in ks:
                step(k, u[k])
            spent[name] += clock() - t0
    gc.unfreeze()
    return ({k: v / len(u) * 1e6 for k, v in spent.items()},
            {k: e.result() for k, e in engines.items()})


# ------------------------------------------------------------------ tuning
def fmu_ladders(formulations):
    """[(formulation, method, setting name, values loosest first)]; rk4 first (cheap)."""
    out = []
    for f in formulations:
        out += [(f, "rk4", "solver.step", STEP_LADDER),
                (f, "euler", "solver.step", STEP_LADDER),
                (f, "dopri5", "solver.rtol", RTOL_LADDER),
                (f, "dop853", "solver.rtol", RTOL_LADDER),
                (f, "generalized_alpha", "solver.step", STEP_LADDER),
                (f, "trapezoidal", "solver.step", STEP_LADDER)]
    return out


def fmu_params(formulation, method, setting, value):
    p = {"solver.formulation": formulation, "solver.method": method, setting: value}
    if setting == "solver.rtol":
        p["solver.atol"] = value * 1e-2          # the default's ratio (1e-9, 1e-11)
    return p


def tune_fmu(path, unz, u, ref, target, formulations, cap, log):
    """Walk each ladder loosest first; the first setting within target ends it, so does a
    run slower than 2 x the fastest passing one so far (it cannot win, even allowing for the
    scatter of one run on a loaded machine) or than cap [s].
    Then the winner without the projection after each step (stabilization none or
    baumgarte; the drift is then part of the error). Returns (best (params, us, error) or
    None, rows for the report)."""
    best, rows, refused = None, [], set()

    def trial(params, what):
        """'fail', 'slow' or (us, error); one row."""
        nonlocal best
        f, method = params["solver.formulation"], params["solver.method"]
        limit = cap if best is None else min(cap, 2 * best[1] * len(u) * 1e-6)
        e = FmuEngine(path, unz, params)
        buf = io.StringIO()                      # fmpy's logger prints the FMU's messages
        try:
            with contextlib.redirect_stdout(buf):
                us, y = e.run(u, limit)
        except Exception as exc:                 # refused or discarded: the FMU says why
            said = [x for x in buf.getvalue().splitlines() if x.strip()]
            why = said[0].split("] ", 1)[-1] if said else str(exc)
            for prefix in ("double_wishbone (bench): ", "double_wishbone: ",
                           "fmi2ExitInitializationMode failed: ", "invalid parameter: "):
                why = why.replace(prefix, "")
            kind = ("refused at initialisation" if "ExitInitialization" in str(exc)
                    else "step discarded")
            if kind.startswith("refused"):
                refused.add(f)
            rows.append((f, method, what, f"{kind}: {why[:160]}", "-"))
            log(f"    fmu_mb {f} {method} {what}: {kind}: {why}")
            return "fail"
        finally:
            with contextlib.redirect_stdout(io.StringIO()):
                e.close()
        if us is None:
            rows.append((f, method, what, f"> {limit:.1f} s", "-"))
            log(f"    fmu_mb {f} {method} {what}: stopped after {limit:.1f} s")
            return "slow"
        err = wheel_error(y, ref)
        rows.append((f, method, what, f"{us:.0f}", f"{err:.1e}"))
        log(f"    fmu_mb {f} {method} {what}: {us:.0f} us/step, error {err:.1e} m")
        if err <= target and (best is None or us < best[1]):
            best = (params, us, err)
        return us, err

    for f, method, setting, values in fmu_ladders(formulations):
        if f in refused:                         # the formulation refuses the model
            continue
        for v in values:
            r = trial(fmu_params(f, method, setting, v), f"{setting[7:]} {v:g}")
            if not isinstance(r, tuple) or r[1] <= target:
                break
    if best is not None:
        base = best[0]
        setting = next(k for k in base if k in ("solver.rtol", "solver.step"))
        for stab in ("none", "baumgarte"):
            trial(dict(base, **{"solver.stabilization": stab}),
                  f"{setting[7:]} {base[setting]:g}, stabilization {stab}")
    return best, rows


def tune_exudyn(u, ref, target, cap, log):
    """For each Exudyn variant the fewest substeps per 1 ms that meet target. A run slower
    than cap [s] ends its ladder, and so does a continued run slower than 3 x the fastest
    passing one (its first-order error needs hundreds of substeps for 1e-6 m)."""
    out, rows, best = [], [], None
    for restart in (True, False):
        for solver in ("GeneralizedAlpha", "TrapezoidalIndex2"):
            for sparse in (False, True):
                for m in SUBSTEPS:
                    e = ExudynEngine(solver, sparse, m, restart)
                    limit = cap if best is None or restart else min(
                        cap, 3 * best * len(u) * 1e-6)
                    us, y = e.run(u, limit)
                    if us is None:
                        rows.append((e.label, f"> {limit:.1f} s", "-"))
                        log(f"    Exudyn {e.label}: stopped after {limit:.1f} s")
                        break
                    err = wheel_error(y, ref)
                    rows.append((e.label, f"{us:.0f}", f"{err:.1e}"))
                    log(f"    Exudyn {e.label}: {us:.0f} us/step, error {err:.1e} m")
                    if err <= target:
                        out.append(e)
                        best = us if best is None else min(best, us)
                        break
    return out, rows


# ------------------------------------------------------------------ report
def git_commit():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True).stdout.strip()[:100]
    except OSError:
        return "?"


def load():
    return os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3


def profile_fmu(path, unz, u, params=None, steps=100, top=15):
    """cProfile of `steps` steps of the FMU in fmpy (pythonfmu runs the slave's Python in
    this interpreter, so the profiler sees it), by bucket (profile_fmu_mb)."""
    import profile_fmu_mb as pf
    e = FmuEngine(path, unz, params)
    prof = cProfile.Profile()
    prof.enable()
    e.run(u[:steps])
    prof.disable()
    e.close()
    out = Path(tempfile.mkdtemp(prefix="fmu_mb_prof_")) / "suspension_step.prof"
    pf.summarise(prof, top, out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="0.2 s, 2 rounds, no cross-check")
    p.add_argument("--t-end", type=float, default=None, help="horizon [s] (default 0.5)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (default 7)")
    p.add_argument("--target", type=float, default=1e-6, help="wheel-centre accuracy [m]")
    p.add_argument("--formulations", nargs="*", default=None,
                   help="fmu_mb formulations to tune (default: every one but auto; a "
                        "formulation that refuses the model is skipped)")
    p.add_argument("--cap", type=float, default=None,
                   help="longest tuning run [s] (default 60, --quick 20)")
    p.add_argument("--profile", action="store_true",
                   help="cProfile 100 steps of the default and the tuned FMU")
    p.add_argument("--out", default=str(HERE / "results"))
    a = p.parse_args(argv)
    t_end = a.t_end or (0.2 if a.quick else 0.5)
    rounds = a.rounds or (2 if a.quick else 7)
    cap = a.cap or (20.0 if a.quick else 60.0)
    if a.formulations is None:                  # auto's choice first: it sets the bar
        from fmu_mb import Settings, load_model
        from fmu_mb.dynamics.formulations import CHOICES
        first = Settings().formulation_for(load_model(str(MODEL)))
        a.formulations = [first] + [f for f in CHOICES if f not in ("auto", first)]
    n = int(round(t_end / DT))
    start, load0 = time.time(), load()
    log = print
    log(f"double wishbone, {n} steps of 1 ms, target {a.target:g} m; load {load0[0]:.2f}; "
        f"commit {git_commit()}")
    u, z = road_input(n)

    log("reference: fmu_mb newton_euler dop853 rtol 1e-12 ...")
    ref = fmu_mb_reference(u)
    checks = []
    if not a.quick:
        rk4 = fmu_mb_reference(u, method="rk4", step=2e-4)
        checks.append(f"reference against fmu_mb rk4 at h = 2e-4 s: "
                      f"{wheel_error(rk4, ref):.1e} m")
        ex, ex_err = exudyn_extrapolated(z)
        checks.append(f"reference against Exudyn generalized-alpha at h = 2e-4, 1e-4, 5e-5 s "
                      f"Richardson-extrapolated: {np.abs(ex - ref[:, :3]).max():.1e} m "
                      f"(Exudyn's error estimate {ex_err:.1e} m)")
    travel = float(np.abs(ref[:, 2] - ref[0, 2]).max())
    checks.append(f"wheel-centre travel {travel * 1e3:.1f} mm")
    for c in checks:
        log("  " + c)

    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_susp_"))
    try:
        from fmpy import extract
        import fmu_step
        subprocess.run([sys.executable, "-m", "fmu_mb", "build", str(MODEL), "-o", str(tmp),
                        "--quiet", "--python"], check=True, cwd=str(ROOT), capture_output=True)
        path = tmp / "double_wishbone.fmu"
        unz = extract(str(path))
        noop = fmu_step.noop_fmu(tmp)
        noop_unz = extract(str(noop))

        log("tuning Exudyn (fewest substeps per 1 ms within the target):")
        exudyn, ex_rows = tune_exudyn(u, ref, a.target, cap, log)
        log("tuning fmu_mb (loosest setting within the target per formulation and method):")
        best, fm_rows = tune_fmu(path, unz, u, ref, a.target, a.formulations, cap, log)

        engines = {"no-op pythonfmu FMU (floor)": FmuEngine(
            noop, noop_unz, inp="u", outs=("y0", "y1", "y2", "y3", "y0")),
            "fmu_mb FMU, default (no parameter set)": FmuEngine(path, unz),
            f"(fmu_mb FMU, default, reading only {', '.join(OUTS[:3])})": FmuEngine(
                path, unz, outs=OUTS[:3])}
        tuned_label = None
        if best is not None:
            bp = best[0]
            setting = next(k for k in bp if k in ("solver.rtol", "solver.step"))
            stab = bp.get("solver.stabilization")
            tuned_label = (f"fmu_mb FMU, tuned ({bp['solver.formulation']}, "
                           f"{bp['solver.method']}, {setting[7:]} {bp[setting]:g}"
                           + (f", stabilization {stab})" if stab else ")"))
            engines[tuned_label] = FmuEngine(path, unz, bp)
        for e in exudyn:
            engines[f"Exudyn {e.label}"] = e
        log(f"timing: {rounds} rounds, engines interleaved every {CHUNK} steps")
        times = {k: [] for k in engines}
        errors = {}
        for r in range(rounds):
            us, ys = interleaved(engines, u)
            for k in engines:
                times[k].append(us[k])
                errors[k] = None if k.startswith("no-op") else wheel_error(ys[k], ref)
            log(f"  round {r + 1}: " + ", ".join(f"{times[k][-1]:.0f}" for k in engines))
        for k, e in engines.items():
            if isinstance(e, FmuEngine):
                e.close()
        if a.profile:                        # from the curb on: the wheel moves
            for k, e in engines.items():
                if k.startswith("fmu_mb"):                # not the diagnostic row
                    log(f"\ncProfile, 100 steps of the {k}:")
                    profile_fmu(path, unz, u[min(50, len(u) // 2):], e.params)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    ex_keys = [k for k in med if k.startswith("Exudyn")]
    ex_best = min(ex_keys, key=med.get) if ex_keys else None
    load1 = load()
    lines = [f"`python bench/suspension_step.py{' --quick' if a.quick else ''}` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}, commit "
             f"{git_commit()}; {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, load average {load0[0]:.2f} at the start, "
             f"{load1[0]:.2f} at the end; {(time.time() - start) / 60:.1f} min). "
             f"{n} co-simulation steps of 1 ms (setReal + doStep + getReal x5), median of "
             f"{rounds} rounds, engines interleaved every {CHUNK} steps; wheel-centre error = max over the run and x, y, z "
             f"against "
             f"the reference; target {a.target:g} m.", "",
             "| engine | us per 1 ms step | / Exudyn best | wheel-centre error [m] |",
             "|---|---|---|---|"]
    for k in engines:
        ratio = f"{med[k] / med[ex_best]:.2f}" if ex_best else "-"
        err = "-" if errors[k] is None else f"{errors[k]:.1e}"
        name = f"**{k}**" if k == ex_best else k
        lines.append(f"| {name} | {med[k]:.1f} | {ratio} | {err} |")
    lines.append("")
    if ex_best:
        d = med["fmu_mb FMU, default (no parameter set)"] / med[ex_best]
        lines.append(f"fmu_mb default / Exudyn best: **{d:.2f}**" + (
            f"; fmu_mb tuned / Exudyn best: **{med[tuned_label] / med[ex_best]:.2f}**"
            if tuned_label else "; fmu_mb tuned: no setting met the target") +
            " (target: <= 2)")
    lines += ["", "Reference: fmu_mb newton_euler, dop853, rtol 1e-12, same held input; "
              + "; ".join(checks) + ".", "",
              "Tuning runs (one run each; us per step, error [m]):", "",
              "| Exudyn setting | us/step | error |", "|---|---|---|"]
    lines += [f"| {a_} | {b_} | {c_} |" for a_, b_, c_ in ex_rows]
    lines += ["", "| fmu_mb formulation | method | setting | us/step | error |",
              "|---|---|---|---|---|"]
    lines += [f"| {' | '.join(r)} |" for r in fm_rows]
    text = "\n".join(lines)
    print("\n" + text)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / ("suspension_step_quick.md" if a.quick else "suspension_step.md")).write_text(
        text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
