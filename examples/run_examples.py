"""Run every closed-loop example in fmpy, in libcosim (connect_real_variables) and in libcosim
from a generated OspSystemStructure.xml ("osp"); print settling time, overshoot and
the largest difference between the two masters; then the excavator's closed-loop digging
(three PID FMUs on the cylinders; the tip's tracking error in fmpy and libcosim,
examples/excavator_dig.py); then the rollback example; then the LQR designed on the
cart-pole's linearization (examples/lqr_cart_pole.py).

    python examples/run_examples.py [-o out/examples]

Exits with status 1 when the runs of a loop disagree by more than 1e-9, the rollback run differs
from its replay, or the LQR loop's measured decay rate differs from its design's by more than
0.1 %.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))   # this checkout's fmu_mb
import closed_loop as cl  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--out-dir", default=str(cl.ROOT / "out" / "examples"))
    args = p.parse_args(argv)
    print(f"{'loop':14s} {'master':9s} {'settling [s]':>12s} {'overshoot [%]':>14s} "
          f"{'final':>12s} {'max |fmpy - other|':>18s}")
    ok = True
    for loop in cl.LOOPS:
        plant, ctrl = cl.build(loop, args.out_dir)
        res = {"fmpy": cl.run_fmpy(loop, plant, ctrl),
               "libcosim": cl.run_libcosim(loop, plant, ctrl),
               "osp": cl.run_libcosim_osp(loop, plant, ctrl,
                                          Path(args.out_dir) / f"osp_{loop.name}")}
        diff = max(float(np.max(np.abs(res["fmpy"][k] - r[k])))
                   for r in res.values() for k in res["fmpy"])
        ok &= diff <= 1e-9
        for master, r in res.items():
            settle, over = cl.metrics(r, loop)
            print(f"{loop.name:14s} {master:9s} {settle:12.2f} {over:14.2f} "
                  f"{r[loop.goal][-1]:12.6f} {diff:18.2e}")
    import excavator_dig
    print()
    _, diff = excavator_dig.main(args.out_dir)
    ok &= diff <= 1e-9
    import rollback
    ok &= rollback.main(args.out_dir) == 0
    import lqr_cart_pole
    print()
    lqr = lqr_cart_pole.main(args.out_dir)     # measured decay rate = the sampled design's
    ok &= abs(lqr["rate"]["measured"] / lqr["rate"]["sampled"] - 1.0) <= 1e-3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
