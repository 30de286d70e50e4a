"""The README's main job: run every model in models/ and print a summary table.

    python build_scripts/run_all.py [--stop-time T] [--out DIR]

Each model is simulated in-process with simulate() (default solver settings) and its
outputs are written to DIR/<model>.csv.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmu_mb import load_model, simulate  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stop-time", type=float, default=2.0)
    p.add_argument("--out", default=str(ROOT / "out"))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in sorted((ROOT / "models").glob("*.py")):
        model = load_model(path)
        t0 = time.perf_counter()
        r = simulate(model, args.stop_time, 0.01)
        wall = time.perf_counter() - t0
        names = r.dtype.names
        np.savetxt(out / f"{model.name}.csv", r.view((float, len(names))), delimiter=",",
                   header=",".join(names), comments="", fmt="%.17g")
        E = r["energy.total"]
        rows.append((model.name, model.topology.n_bodies, model.topology.dof, len(names) - 1,
                     args.stop_time, wall, np.abs(E - E[0]).max(),
                     r["constraint.residual"].max()))
    head = ("model", "bodies", "DOF", "outputs", "t_end [s]", "wall [s]", "max |dE| [J]",
            "max |Phi|")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:g} | {r[5]:.3f} | {r[6]:.2e} | "
              f"{r[7]:.2e} |")
    print(f"\nCSV files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
