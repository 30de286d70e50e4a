"""Cost of one right-hand side of the spatial models per formulation, side by side.

    python bench/spatial_rhs.py [--repeats 200]

For each spatial model: the time of one `accelerations()` call from Python (newton_euler in
absolute coordinates, tmt and lagrange in the tree joint coordinates) at the initial state
with every velocity coordinate raised by 0.1 (so the velocity terms are not zero), and the
ratio lagrange / tmt. The fastest of the repeats (timeit's convention: on a shared machine
the other processes only ever add time) and the median, one process, the formulations
interleaved.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fmu_mb import load_model  # noqa: E402
from fmu_mb.dynamics.formulations import get_formulation  # noqa: E402

CASES = [("heavy_top", {}), ("bricard", {}), ("five_point_suspension", {}),
         ("double_wishbone", {}), ("spatial_chain", {"N": 8}),
         ("spatial_chain", {"N": 8, "joint": "spherical"}), ("spatial_chain", {"N": 32})]
FORMS = ("newton_euler", "tmt", "lagrange")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args(argv)
    print("| model | n (q) | newton_euler [us] | tmt [us] | lagrange [us] | lagrange / tmt "
          "(fastest) | lagrange / tmt (median) |")
    print("|---|---|---|---|---|---|---|")
    for name, kw in CASES:
        model = load_model(ROOT / "models" / f"{name}.py", **kw)
        u = model.input_vector(None)
        tmt = get_formulation("tmt")
        s = tmt.initial_state(model)
        q, qd = s.q, s.qd + 0.1
        x, xd = tmt.absolute(model, q, qd)          # the same motion in absolute coordinates
        calls = {}
        for f in FORMS:
            form = get_formulation(f)
            y = (x, xd) if f == "newton_euler" else (q, qd)
            calls[f] = (lambda form=form, y=y: form.accelerations(model, *y, 0.0, u))
            calls[f]()
        times = {f: [] for f in FORMS}
        for _ in range(args.repeats):
            for f in FORMS:
                t0 = time.perf_counter()
                calls[f]()
                times[f].append(time.perf_counter() - t0)
        best = {f: min(v) * 1e6 for f, v in times.items()}
        med = {f: statistics.median(v) * 1e6 for f, v in times.items()}
        label = name + "".join(f" {k}={v}" for k, v in kw.items())
        print(f"| {label} | {q.shape[0]} | {best['newton_euler']:.0f} | {best['tmt']:.0f} | "
              f"{best['lagrange']:.0f} | {best['lagrange'] / best['tmt']:.2f} | "
              f"{med['lagrange'] / med['tmt']:.2f} |")


if __name__ == "__main__":
    main()
