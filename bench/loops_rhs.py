"""Cost of one right-hand side (accelerations of a closed loop) per formulation, side by side.

    python bench/loops_rhs.py [--repeats 200] [--exudyn]

For each closed-loop model: the time of one `accelerations()` call from Python (newton_euler,
tmt, lagrange, recursive) at the initial state, and the compiled route's cost per right-hand
side inside its C integrator (one dop853 `advance` over 0.5 s at rtol 1e-9, wall time / number
of right-hand sides, projection included). Median of the repeats, one process.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fmu_mb import (FORMULATIONS, Settings, advance, initial_state,  # noqa: E402
                    load_model)
from fmu_mb.dynamics.formulations import get_formulation  # noqa: E402
from fmu_mb.engine.kernel import tree_kernel  # noqa: E402

CASES = [("slider_crank", {}), ("four_bar", {}), ("n_four_bar", {"N": 2}),
         ("n_four_bar", {"N": 10}), ("n_four_bar", {"N": 40})]


def per_call(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--exudyn", action="store_true", help="also run.py's loop rows vs Exudyn")
    args = p.parse_args(argv)
    forms = [f for f in FORMULATIONS if f in ("newton_euler", "tmt", "lagrange", "recursive")]
    print("| model | " + " | ".join(f"{f} [us]" for f in forms)
          + " | recursive in its C integrator [us/rhs] |")
    print("|---" * (len(forms) + 2) + "|")
    for name, over in CASES:
        m = load_model(str(ROOT / "models" / f"{name}.py"), **over)
        u = m.input_vector(None)
        row = []
        for f in forms:
            form = get_formulation(f)
            s = initial_state(m, Settings(formulation=f))
            reps = args.repeats if f == "recursive" else max(5, args.repeats // 10)
            row.append(per_call(lambda: form.accelerations(m, s.q, s.qd, s.t, u), reps) * 1e6)
        k = tree_kernel(m)
        k.stabilization("projection")
        s = initial_state(m, Settings(formulation="recursive"))
        walls, nfev = [], 0
        for _ in range(3):
            t0 = time.perf_counter()
            *_, nfev = k.advance("dop853", 0.0, 0.5, s.q, s.qd, 0.0, u, 1e-9, 1e-11, np.inf,
                                 1e-3)
            walls.append(time.perf_counter() - t0)
        label = name + "".join(f" {k}={v}" for k, v in over.items())
        print(f"| {label} | " + " | ".join(f"{v:.1f}" for v in row)
              + f" | {statistics.median(walls) / nfev * 1e6:.2f} ({nfev} rhs) |")
    print("\n| model, rtol | " + " | ".join(f"{f} [ms/s]" for f in ("recursive", "tmt",
                                                                      "newton_euler")) + " |")
    print("|---|---|---|---|")
    for name, over, tol in (("slider_crank", {}, 3.162e-7), ("four_bar", {}, 1e-7),
                            ("n_four_bar", {"N": 2}, 1e-7)):
        m = load_model(str(ROOT / "models" / f"{name}.py"), **over)
        row = []
        for f in ("recursive", "tmt", "newton_euler"):
            s = Settings(formulation=f, rtol=tol, atol=tol * 1e-2)
            st = initial_state(m, s)
            w = []
            for _ in range(3 if f == "recursive" else 1):
                t0 = time.perf_counter()
                advance(m, st, 2.0, None, s)
                w.append(time.perf_counter() - t0)
            row.append(f"{min(w) / 2.0 * 1e3:.3g}")
        label = name + "".join(f" {k}={v}" for k, v in over.items())
        print(f"| {label}, {tol:.0e} | " + " | ".join(row) + " |")
    if args.exudyn:
        sys.path.insert(0, str(ROOT / "bench"))
        import run as B
        rows = [B.run_benchmark(b, 5, 90.0, print) for b in B.benchmarks(False)
                if "slider" in b["name"] or "four-bar" in b["name"]]
        for r in rows:
            print(f"{r['name']}: fmu_mb {r['fm_form']} rtol {r['fm']['param']:.0e} "
                  f"{B.fmt_ms(r['fm'])}, Exudyn h {r['ex']['param']:.0e} {B.fmt_ms(r['ex'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
