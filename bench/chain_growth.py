"""Where the N-link chain's cost growth comes from: right-hand sides per run x cost per
right-hand side, for the compiled route (recursive, dop853 in C).

    python bench/chain_growth.py [--n 2 4 8 ... 256] [--rtol 1e-6 1e-9] [--from results.json]

For each N (models/pendulum_chain.py, phi0 = -1.0 as in run.py) and each rtol (atol =
rtol / 100, as run.py; --from takes each N's tuned rtol from a run.py results.json instead):
one kernel advance() over [0, 2 s] (the fastest of --repeats), the number of right-hand
sides the integrator evaluated (projection-free: an open tree), the wall time per
right-hand side, and the cost of one foreign call that does almost nothing (advance over
1e-12 s: the per-call overhead that a short run also pays). Prints a table and the
least-squares exponents k of x ~ N^k over the N given (and over N >= 8).
"""
import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402,F401  (limits BLAS threads before numpy loads)
import numpy as np  # noqa: E402
from fmu_mb import Settings, initial_state, load_model  # noqa: E402
from fmu_mb.engine.kernel import tree_kernel  # noqa: E402

T_END = 2.0
PHI0 = -1.0


def measure(n, rtol, repeats):
    m = load_model(str(ROOT / "models" / "pendulum_chain.py"), N=n, phi0=PHI0)
    s = Settings(formulation="recursive", rtol=rtol, atol=rtol * 1e-2)
    st = initial_state(m, s)
    k = tree_kernel(m)
    u = m.input_vector(None)

    def run(t_end):
        t0, c0 = time.perf_counter(), time.process_time()
        *_, nfev = k.advance(s.method, 0.0, t_end, st.q, st.qd, 0.0, u, s.rtol, s.atol,
                             s.max_step, s.step)
        return time.perf_counter() - t0, time.process_time() - c0, nfev

    walls, cpus, nfev = zip(*(run(T_END) for _ in range(repeats)))
    call = min(run(1e-12)[1] for _ in range(max(5, repeats)))
    return dict(n=n, rtol=rtol, wall=min(walls), cpu=min(cpus), nfev=nfev[0], call=call,
                us_rhs=min(cpus) / nfev[0] * 1e6)


def slope(rows, key, n_min=0):
    pts = [(r["n"], r[key]) for r in rows if r["n"] >= n_min]
    if len(pts) < 2:
        return float("nan")
    return float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 128, 256])
    p.add_argument("--rtol", type=float, nargs="+", default=[1e-6, 1e-9])
    p.add_argument("--from", dest="src", help="run.py results.json: each N's tuned rtol")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    sets = []
    if a.src:
        rows = json.loads(Path(a.src).read_text())["rows"]
        tuned = {r["n"]: r["fm"]["param"] for r in rows if r.get("n") and r.get("fm")}
        sets.append(("tuned rtol (run.py)", [(n, tuned[n]) for n in a.n if n in tuned]))
    for r in a.rtol:
        sets.append((f"rtol {r:g}", [(n, r) for n in a.n]))
    print(f"`python bench/chain_growth.py {' '.join(argv or sys.argv[1:])}`, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 2 s of the chain, "
          f"phi0 = {PHI0}, recursive dop853 in C\n")
    for label, cases in sets:
        rows = [measure(n, r, a.repeats) for n, r in cases]
        print(f"{label}:\n")
        print("| N | rtol | right-hand sides | CPU [ms] | wall [ms] | CPU us per rhs | one "
              "near-empty call, CPU [us] |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['n']} | {r['rtol']:.3g} | {r['nfev']} | {r['cpu'] * 1e3:.3g} | "
                  f"{r['wall'] * 1e3:.3g} | {r['us_rhs']:.3g} | {r['call'] * 1e6:.3g} |")
        for lo in (0, 8):
            if sum(r["n"] >= lo for r in rows) >= 2 and (lo == 0 or min(r["n"] for r in rows)
                                                         < lo):
                print(f"\nN >= {max(lo, min(r['n'] for r in rows))}: CPU time ~ N^"
                      f"{slope(rows, 'cpu', lo):.2f} = right-hand sides N^"
                      f"{slope(rows, 'nfev', lo):.2f} x cost per rhs N^"
                      f"{slope(rows, 'us_rhs', lo):.2f}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
