"""Contact models: wall time of the contact event loop, C against Python, side by side (one
process).

    python bench/contacts_wall.py            # both tables
    python bench/contacts_wall.py --quick    # shorter runs
    python bench/contacts_wall.py --before REV [--rounds N]   # table 3 only: REV against this tree

Table 1, per model: one advance() over [0, t_end] (no output sampling) with formulation
recursive and the whole event loop in C (fmu_mb/engine/native/event_loop.h: events.c planar,
spatial_events.c spatial), with recursive and
the Python event loop of fmu_mb.dynamics.integrate (the kernel stepping between events,
scipy's dense output and brentq, the impact equations in numpy: the path before the C loop),
and with tmt (all Python). Also the events handled, the largest difference of the final
state and contact records between the two recursive loops (scaled by max(1, |value|)), and
the speed-up. Each variant runs once briefly first (the kernel's build and imports are not
counted); the best of 3 runs is reported (the machine is shared).

Table 2, the excavator's 1 ms co-simulation step in process (integrate.stepper, u = 0: the
arm falls, the boom cylinder strikes its lower end stop, bounces and rests on it): us per
step over [0, 2] s and over [2, 3] s (resting in persistent contact), with the C loop, with
the Python loop, and for the same model with its six end stops removed (no contacts: one
mbk_advance per step).

Table 3 (--before REV), the excavator resting on its end stop, before (the git revision REV,
exported to a temporary folder) and after (this tree), side by side in one run: its 1 ms
step in process as table 2 (C loop, u = 0, over [2, 3] s resting on the stop, and u holding
the arm still over [0, 2] s) and the engine's own step in C without FMI
(tests/c_host/engine_step.c: mbe_do_step + 3 outputs, input 0 at 0.1 N, 1 ms over 3 s from
rest, most of it resting), each with the six end stops and with them removed, and the
ratios (target: <= 2). Each tree runs in its own Python process (its own package and
compiled kernel); the two trees alternate, N rounds (default 3), the median is reported.

    python bench/contacts_wall.py --spatial-before REV [--rounds N]   # table 4

Table 4 (--spatial-before REV), the same for a spatial contact model (native/spatial_events.c):
the double wishbone with stops="on" under a 100 mm road step (tyre.h = -k 0.1 from t = 0)
that drives the wheel onto its bump stop (struck at ~0.04 s, resting from ~0.1 s), against
the same model with stops="off" (no contacts: one sk_advance per step), before (REV) and
after (this tree): its 1 ms step in process (integrate.stepper, CPU us per step over [0, 0.2]
s: the strike and the settling, and over [0.2, 1.2] s: resting on the stop) and the engine's
step in C (engine_step.c of this script's tree, built with each tree's engine: 200 warm-up
steps, then 1000, resting).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if "--root" in sys.argv:               # (table 3: the tree measured by this process)
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fmu_mb import load_model  # noqa: E402
from fmu_mb.dynamics import integrate  # noqa: E402
from fmu_mb.dynamics.formulations import recursive  # noqa: E402
from fmu_mb.mechanics.builder import ModelBuilder  # noqa: E402

CASES = [("bouncing_ball", 2.0, {}), ("bouncing_ball", 2.0, {"e": 0.5}),   # at rest from 1.35 s
         ("pendulum_wall", 2.0, {}), ("newtons_cradle", 1.0, {}),
         ("slider_crank_stop", 1.0, {}), ("falling_rod", 1.0, {}), ("excavator", 2.0, {}),
         # spatial (native/spatial_events.c): the box's first 0.6 s (before its corners'
         # near-simultaneous landings make the two loops' results depend on rounding), the
         # double wishbone under a 100 mm road step (tyre.h = -k z_road) onto its bump stop
         ("tumbling_box", 0.6, {}), ("double_wishbone", 0.25, {"stops": "on"})]
#: the inputs of a case (None: the model's defaults)
INPUTS = {"double_wishbone": {"tyre.h": -357859.232809 * 0.1}}
FIELDS = ("impacts", "last_time", "last_impulse", "energy_loss", "active")


def _model(name, **pars):
    return load_model(str(ROOT / "models" / f"{name}.py"), **pars)


def _records(m, s):
    c = s.extra["contacts"]
    return np.array([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])


def _run(m, t_end, formulation, native, u=None):
    recursive.NATIVE_EVENTS = native
    st = integrate.Settings(formulation=formulation)
    s0 = integrate.initial_state(m, st)
    integrate.advance(m, s0, 0.01, u, st)                    # warm-up
    best, out = np.inf, None
    for _ in range(3):
        t0 = time.perf_counter()
        out = integrate.advance(m, s0, t_end, u, st)
        best = min(best, time.perf_counter() - t0)
    recursive.NATIVE_EVENTS = True
    return best, out


def table_loops(quick):
    print("| model, t_end | events | recursive, C loop [ms] | recursive, Python loop [ms] | "
          "tmt [ms] | speed-up C / Python loop | max diff C vs Python loop |")
    print("|---|---|---|---|---|---|---|")
    for name, t_end, pars in CASES:
        t_end = t_end / 2 if quick else t_end
        m = _model(name, **pars)
        u = INPUTS.get(name)
        wc, sc = _run(m, t_end, "recursive", True, u)
        wp, sp = _run(m, t_end, "recursive", False, u)
        wt, _ = _run(m, t_end, "tmt", True, u)
        rc, rp = _records(m, sc), _records(m, sp)
        d = max(np.abs(a - b).max() / max(1.0, np.abs(b).max())
                for a, b in ((sc.q, sp.q), (sc.qd, sp.qd), (rc, rp)))
        label = name + "".join(f" {k}={v}" for k, v in pars.items())
        print(f"| {label}, {t_end} s | {int(rp[:, 0].sum())} impacts | {wc * 1e3:.2f} | "
              f"{wp * 1e3:.1f} | {wt * 1e3:.1f} | **{wp / wc:.0f}x** | {d:.1e} |")


def _excavator(stops=True):
    if stops:
        return _model("excavator")
    real = ModelBuilder.build

    def without_stops(self):
        self._contacts = []          # the cylinders' end stops are their two contacts each
        return real(self)
    ModelBuilder.build = without_stops
    try:
        return _model("excavator")
    finally:
        ModelBuilder.build = real


def _holding_inputs(m):
    """Cylinder forces <cyl>.h that hold the arm still at its initial pose (qdd = 0 at
    qd = 0: one acceleration per unit input, a 3 x 3 solve)."""
    from fmu_mb.dynamics.formulations import get_formulation

    form = get_formulation("recursive")
    s = integrate.initial_state(m, integrate.Settings(formulation="recursive"))
    names = [i.name if hasattr(i, "name") else i for i in m.inputs]
    cols = [k for k, nm in enumerate(names) if str(nm).endswith("_cyl.h")]
    u0 = np.zeros(len(names))
    a0 = form.accelerations(m, s.q, s.qd * 0, 0.0, u0).qdd
    A = np.zeros((len(a0), len(cols)))
    for j, k in enumerate(cols):
        u = u0.copy()
        u[k] = 1.0
        A[:, j] = form.accelerations(m, s.q, s.qd * 0, 0.0, u).qdd - a0
    u0[cols] = np.linalg.solve(A, -a0)
    return u0


def _cosim(m, native, spans, u):
    """CPU time per 1 ms step over each span (process time: the machine is shared)."""
    recursive.NATIVE_EVENTS = native
    st = integrate.Settings()
    step = integrate.stepper(m, st)
    s = integrate.initial_state(m, st)
    s = step(s, 1e-3, u)
    k, out = 1, []
    for span in spans:
        t0 = time.process_time()
        n = 0
        while (k + 1) * 1e-3 <= span + 1e-12:
            k += 1
            s = step(s, k * 1e-3, u)
            n += 1
        out.append((time.process_time() - t0) / n * 1e6)
    recursive.NATIVE_EVENTS = True
    return out, s


def table_excavator(quick):
    spans = (1.0, 1.5) if quick else (2.0, 3.0)
    hold = 1.0 if quick else 2.0
    rows = [("C event loop (this branch)", _excavator(True), True),
            ("Python event loop (before)", _excavator(True), False),
            ("end stops removed (no contacts)", _excavator(False), True)]
    u_hold = _holding_inputs(rows[0][1])
    print(f"| excavator, 1 ms co-simulation step [us CPU/step] | u = 0, [0, {spans[0]}] s: falls, "
          f"strikes the boom's lower stop, bounces, rests | u = 0, [{spans[0]}, {spans[1]}] s: "
          f"resting on the stop | u holding the arm still, [0, {hold}] s |")
    print("|---|---|---|---|")
    for label, m, native in rows:
        z = np.zeros(len(m.inputs))
        _cosim(m, native, (0.05,), z)                        # warm-up
        (a, b), s = _cosim(m, native, spans, z)
        (c,), s2 = _cosim(m, native, (hold,), u_hold)
        print(f"| {label} | {a:.1f} | {b:.1f} | {c:.1f} |")


def _engine_step_exe(tmp):
    """tests/c_host/engine_step.c of ROOT compiled with ROOT's engine sources."""
    import shutil
    from fmu_mb.fmi.native_build import ENGINE_DIR, engine_sources
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    sources, defines = engine_sources()
    exe = tmp / "engine_step"
    subprocess.run([cc, "-O2", "-ffp-contract=off", *(f"-D{d}" for d in defines),
                    f"-I{ENGINE_DIR}", "-o", str(exe), str(ROOT / "tests/c_host/engine_step.c"),
                    *map(str, sources), "-lm"], check=True)
    return exe


def figures():
    """Table 3's figures of ROOT's tree as one JSON line: us per step."""
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.engine.data import model_data
    out = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "--spatial" in sys.argv:
            print("FIGURES " + json.dumps(_wishbone_figures(tmp)))
            return
        exe = _engine_step_exe(tmp)
        for stops in (True, False):
            m = _excavator(stops)
            key = "stops" if stops else "none"
            z = np.zeros(len(m.inputs))
            _cosim(m, True, (0.05,), z)                      # warm-up
            (_, rest), _s = _cosim(m, True, (2.0, 3.0), z)
            (hold,), _s = _cosim(m, True, (2.0,), _holding_inputs(_excavator(True)))
            blob = tmp / f"excavator_{key}.blob"
            blob.write_bytes(model_data(m).to_bytes())
            names = list(output_names(m))
            idx = ",".join(str(names.index(o)) for o in ("tip.x", "tip.y", "boom_cyl.stroke"))
            res = subprocess.run([str(exe), str(blob), "1e-3", "3000", idx], capture_output=True,
                                 text=True, check=True).stdout
            c = float(dict(kv.split("=") for kv in res.split())["cpu_us_per_step"])
            out[key] = {"rest": rest, "hold": hold, "engine_c": c}
    print("FIGURES " + json.dumps(out))


K_TYRE = 357859.232809          # the double wishbone's default tyre stiffness


def _wishbone_figures(tmp):
    """Table 4's figures of ROOT's tree: us per step, stops on and off."""
    import shutil
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.engine.data import model_data
    from fmu_mb.fmi.native_build import ENGINE_DIR, engine_sources
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    sources, defines = engine_sources()
    exe = tmp / "engine_step_here"
    host = Path(__file__).resolve().parent.parent / "tests/c_host/engine_step.c"
    subprocess.run([cc, "-O2", "-ffp-contract=off", *(f"-D{d}" for d in defines),
                    f"-I{ENGINE_DIR}", "-o", str(exe), str(host), *map(str, sources), "-lm"],
                   check=True)
    out = {}
    for stops in ("on", "off"):
        m = _model("double_wishbone", stops=stops)
        names = [i.name for i in m.inputs]
        u = m.input_vector({"tyre.h": -K_TYRE * 0.1})
        _cosim(m, True, (0.05,), u)                          # warm-up
        (strike, rest), s = _cosim(m, True, (0.2, 1.2), u)
        if stops == "on":
            c = s.extra["contacts"]["bump_stop"]
            assert c["active"] and c["impacts"] >= 1, c       # resting on the bump stop
        blob = tmp / f"wishbone_{stops}.blob"
        blob.write_bytes(model_data(m).to_bytes())
        outs = list(output_names(m))
        idx = ",".join(str(outs.index(o)) for o in ("carrier.x", "carrier.z", "coil_over.length"))
        res = subprocess.run([str(exe), str(blob), "1e-3", "1000", idx,
                              f"{names.index('tyre.h')}={-K_TYRE * 0.1!r}"],
                             capture_output=True, text=True, check=True).stdout
        c = float(dict(kv.split("=") for kv in res.split())["cpu_us_per_step"])
        out[stops] = {"strike": strike, "rest": rest, "engine_c": c}
    return out


def table_before_after(rev, rounds, spatial=False):
    runs = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as d:
        old = Path(d) / "before"
        old.mkdir()
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                              check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=arch, check=True)
        # each tree compiles its kernels and engine objects into a cache of its own (the
        # engine objects' cache key of a tree before 2026-11-25 misses the included
        # events.c and spatial_events.c: a shared cache could hand one tree the other's)
        envs = {label: dict(os.environ, PYTHONPATH="", XDG_CACHE_HOME=str(Path(d) / label),
                            FMU_MB_CACHE=str(Path(d) / label / "fmu_mb"))
                for label in runs}
        for _ in range(rounds):
            for label, root in (("before", old), ("after", ROOT)):
                res = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                                      "--figures", "--root", str(root)]
                                     + (["--spatial"] if spatial else []), capture_output=True,
                                     text=True, env=envs[label], cwd=str(root))
                if res.returncode != 0:
                    sys.exit(res.stderr[-3000:])
                line = [x for x in res.stdout.splitlines() if x.startswith("FIGURES ")][-1]
                runs[label].append(json.loads(line[8:]))
    if spatial:
        print(f"| double wishbone, 100 mm road step [us CPU per 1 ms step], median of {rounds} "
              "| in process, strike and settling [0, 0.2] s: stops on / off = ratio | in "
              "process, resting on the bump stop [0.2, 1.2] s: on / off = ratio | engine step "
              "in C (engine_step.c), 1000 steps resting: on / off = ratio |")
        print("|---|---|---|---|")
        for label, title in (("before", f"before ({rev})"), ("after", "after (this tree)")):
            cells = []
            for col in ("strike", "rest", "engine_c"):
                a = statistics.median(r["on"][col] for r in runs[label])
                b = statistics.median(r["off"][col] for r in runs[label])
                cells.append(f"{a:.1f} / {b:.1f} = **{a / b:.2f}x**")
            print(f"| {title} | " + " | ".join(cells) + " |")
        return
    print(f"| excavator [us CPU per 1 ms step], median of {rounds} | in process, resting on "
          "the stop [2, 3] s: stops / none = ratio | in process, held still [0, 2] s: stops / "
          "none = ratio | engine step in C (engine_step.c), 3 s from rest: stops / none = "
          "ratio |")
    print("|---|---|---|---|")
    for label, title in (("before", f"before ({rev})"), ("after", "after (this tree)")):
        cells = []
        for col in ("rest", "hold", "engine_c"):
            a = statistics.median(r["stops"][col] for r in runs[label])
            b = statistics.median(r["none"][col] for r in runs[label])
            cells.append(f"{a:.1f} / {b:.1f} = **{a / b:.2f}x**")
        print(f"| {title} | " + " | ".join(cells) + " |")


def main():
    if "--figures" in sys.argv:
        figures()
        return 0
    if "--spatial-before" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
        table_before_after(sys.argv[sys.argv.index("--spatial-before") + 1], rounds, True)
        return 0
    if "--before" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
        table_before_after(sys.argv[sys.argv.index("--before") + 1], rounds)
        return 0
    quick = "--quick" in sys.argv
    table_loops(quick)
    print()
    table_excavator(quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
