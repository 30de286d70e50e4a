"""Where fmu_mb spends its time: cProfile of two cases, summarised by bucket.

    python bench/profile_fmu_mb.py [--case cosim|chain16|all] [--top 25] [--out DIR]

cosim   : double pendulum, 1 ms communication steps for 0.5 s, one step of
          integrate.stepper + the four joint outputs A.angle, B.angle, A.rate, B.rate per
          step (what the FMU's doStep + getReal do, without the pythonfmu layer), default
          Settings (dop853, rtol 1e-9, formulation auto: recursive, the compiled kernel) and
          newton_euler (the default before auto);
chain16 : 16-link chain, one advance() over 2 s at rtol 1e-6 (recursive if registered).

Prints the top functions by own time and the share of own time spent in: numpy / linalg
calls (C functions and numpy's Python wrappers), scipy's integrator (scipy/integrate),
the model equations (fmu_mb formulations, kinematics, constraints, elements, tree),
the native kernel (fmu_mb/kernel.py: ctypes calls, the C work is booked to them),
projection, and output evaluation (fmu_mb/outputs.py and what it calls).
Writes DIR/profile_<case>.prof for snakeviz / pstats.
"""
import argparse
import cProfile
import pstats
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402
from fmu_mb import Settings, advance, initial_state, load_model  # noqa: E402
from fmu_mb.dynamics.integrate import stepper  # noqa: E402
from fmu_mb.dynamics.outputs import Outputs, output_names  # noqa: E402

BEST = next(f for f in ("recursive", "tmt", "newton_euler") if f in fmu_mb.FORMULATIONS)


def case_cosim(settings, t_end=0.5, dt=1e-3):
    m = load_model(str(ROOT / "models" / "double_pendulum.py"))
    st = initial_state(m, settings)
    u = m.input_vector(None)
    names = output_names(m)
    ia = [names.index(n) for n in ("A.angle", "B.angle", "A.rate", "B.rate")]
    step = stepper(m, settings)
    for k in range(int(round(t_end / dt))):
        st = step(st, (k + 1) * dt, u)
        out = Outputs(m, st, u, settings.formulation)
        [out.value(i) for i in ia]


def case_chain(n=16):
    m = load_model(str(ROOT / "models" / "pendulum_chain.py"), N=n, phi0=-1.0)
    s = Settings(formulation=BEST, rtol=1e-6, atol=1e-8)
    advance(m, initial_state(m, s), 2.0, None, s)


def bucket(filename, func):
    f = filename.replace("\\", "/")
    if f == "~" or "numpy" in f or func.startswith("<built-in method numpy") \
            or "linalg" in f and "fmu_mb" not in f:
        return "numpy/scipy.linalg calls"
    if "scipy/integrate" in f:
        return "scipy integrator (Python)"
    if "fmu_mb/engine/kernel" in f:
        return "native kernel (ctypes call incl. the C work)"
    if "fmu_mb/dynamics/outputs" in f:
        return "output evaluation"
    if "fmu_mb/dynamics/integrate" in f:
        return "fmu_mb integrate.py (advance, rhs, projection)"
    if "fmu_mb/" in f:
        return "fmu_mb model equations"
    return "other Python"


def summarise(prof, top, out_file):
    prof.dump_stats(out_file)
    st = pstats.Stats(str(out_file))
    total = st.total_tt
    buckets, rows = {}, []
    for (fn, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        b = bucket(fn, func)
        buckets[b] = buckets.get(b, 0.0) + tt
        rows.append((tt, ct, nc, f"{Path(fn).name}:{line}({func})"))
    print(f"total {total:.3f} s (profiled)")
    for b, tt in sorted(buckets.items(), key=lambda x: -x[1]):
        print(f"  {b:48s} {tt:7.3f} s  {100 * tt / total:5.1f} %")
    print(f"\n  {'own s':>7s} {'cum s':>7s} {'calls':>8s}  function")
    for tt, ct, nc, name in sorted(rows, reverse=True)[:top]:
        print(f"  {tt:7.3f} {ct:7.3f} {nc:8d}  {name}")
    # cumulative time of a few key functions
    print("\n  cumulative time of key functions:")
    for (fn, line, func), (cc, nc, tt, ct, _) in sorted(st.stats.items(),
                                                         key=lambda x: -x[1][3]):
        if func in ("advance", "output_values", "accelerations", "project", "_adaptive",
                    "__init__", "step", "project_absolute", "rhs", "select_initial_step",
                    "_step_impl", "transform", "evaluate", "applied_forces") and (
                "fmu_mb" in fn or "scipy/integrate" in fn):
            print(f"  {ct:7.3f} s {100 * ct / total:5.1f} % {nc:8d} calls  "
                  f"{Path(fn).parent.name}/{Path(fn).name}:{func}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--case", default="all", choices=("cosim", "chain16", "all"))
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--out", default=str(HERE / "results"))
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    if a.case in ("cosim", "all"):
        cases.append(("cosim_default", lambda: case_cosim(Settings())))
        cases.append(("cosim_newton_euler",
                      lambda: case_cosim(Settings(formulation="newton_euler"))))
    if a.case in ("chain16", "all"):
        cases.append(("chain16", case_chain))
    for name, fn in cases:
        print(f"\n===== {name}")
        fn() if name.startswith("cosim") else None         # warm caches (first-call costs)
        prof = cProfile.Profile()
        prof.enable()
        fn()
        prof.disable()
        summarise(prof, a.top, out / f"profile_{name}.prof")
    return 0


if __name__ == "__main__":
    sys.exit(main())
