"""Which formulation is fastest for which class of model: the evidence behind the order of
fmu_mb.dynamics.formulations.AUTO (what `formulation="auto"` picks).

Every model class (open tree, closed loop, drive, contacts, Reduction Method) is simulated
with the default solver settings (dop853, rtol 1e-9, projection) over T seconds with 0.01 s
output intervals in every formulation that accepts it; wall time per simulated second, or
the error that stopped it, and the largest difference of the joint-angle outputs from
newton_euler's at the end.

    python bench/formulations.py [--t-end 0.5] [--only NAME]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmu_mb import FORMULATIONS, FmuMbError, load_model, simulate  # noqa: E402
from fmu_mb.dynamics.formulations import auto_choice  # noqa: E402

CASES = [  # (label, class, model file, parameters)
    ("double pendulum", "open tree", "double_pendulum.py", {}),
    ("chain N=8", "open tree", "pendulum_chain.py", {"N": 8, "phi0": -1.0}),
    ("slider-crank", "closed loop", "slider_crank.py", {}),
    ("four-bar", "closed loop", "four_bar.py", {}),
    ("N-four-bar N=2", "closed loop", "n_four_bar.py", {"N": 2}),
    ("N-four-bar N=10", "closed loop", "n_four_bar.py", {"N": 10}),
    ("crane, driven cart", "drive", "container_crane_driven.py", {}),
    ("bouncing ball", "contact", "bouncing_ball.py", {}),
    ("pendulum wall", "contact", "pendulum_wall.py", {}),
    ("slider-crank stop", "loop + contact", "slider_crank_stop.py", {}),
    ("falling rod", "persistent contacts", "falling_rod.py", {}),
    ("excavator", "cylinders + stops", "excavator.py", {}),
    ("singular pendulum", "Reduction Method", "singular_pendulum.py", {}),
]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--t-end", type=float, default=0.5)
    p.add_argument("--only")
    a = p.parse_args(argv)
    print(f"| model | class | auto picks | " + " | ".join(f"{f} ms/s" for f in FORMULATIONS)
          + " | fastest |")
    print("|---|---|---|" + "---|" * len(FORMULATIONS) + "---|")
    for label, cls, file, pars in CASES:
        if a.only and a.only not in label:
            continue
        m = load_model(str(ROOT / "models" / file), **pars)
        cells, walls, ref = [], {}, None
        for f in FORMULATIONS:
            try:
                simulate(m, 0.02, 0.01, formulation=f)           # warm-up (kernel, caches)
                t0 = time.perf_counter()
                d = simulate(m, a.t_end, 0.01, formulation=f)
                w = (time.perf_counter() - t0) / a.t_end * 1e3
            except FmuMbError as exc:
                cells.append(f"- ({type(exc).__name__})")
                continue
            ang = [n for n in d.dtype.names if n.endswith(".angle")]
            end = np.array([d[n][-1] for n in ang])
            if f == "newton_euler":
                ref = end
            diff = "" if ref is None or f == "newton_euler" else \
                f", {np.max(np.abs(end - ref), initial=0.0):.0e} rad"
            walls[f] = w
            cells.append(f"{w:.3g}{diff}")
        best = min(walls, key=walls.get) if walls else "-"
        print(f"| {label} | {cls} | {auto_choice(m)[0]} | " + " | ".join(cells)
              + f" | {best} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
