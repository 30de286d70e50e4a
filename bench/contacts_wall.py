"""Contact models: wall time of simulate() per formulation, side by side (one process).

    python bench/contacts_wall.py

recursive steps in C between events and through the phases with persistent contacts (their
gap rows closed in C; event location and the impact equations stay in Python); tmt and
newton_euler are all Python. Each formulation runs once briefly before the timed run (the
kernel's build on first use and the imports are not counted). Also the largest difference of any output
against tmt, scaled by max(1, |output|).
"""
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fmu_mb import load_model, output_names, simulate  # noqa: E402

CASES = [("bouncing_ball", 2.0, {}), ("bouncing_ball", 2.0, {"e": 0.5}),   # at rest from 1.35 s
         ("pendulum_wall", 2.0, {}), ("newtons_cradle", 1.0, {}),
         ("slider_crank_stop", 1.0, {}), ("falling_rod", 1.0, {})]


def main():
    print("| model, t_end | recursive [s] | tmt [s] | newton_euler [s] | max diff vs tmt |")
    print("|---|---|---|---|---|")
    for name, t_end, pars in CASES:
        m = load_model(str(ROOT / "models" / f"{name}.py"), **pars)
        runs, walls = {}, {}
        for f in ("recursive", "tmt", "newton_euler"):       # warm-up: kernel build, imports
            simulate(m, 0.01, 0.01, formulation=f)
        for f in ("recursive", "tmt", "newton_euler"):
            t0 = time.perf_counter()
            runs[f] = simulate(m, t_end, 0.05, formulation=f)
            walls[f] = time.perf_counter() - t0
        d = max(np.abs(runs["recursive"][c] - runs["tmt"][c]).max()
                / max(1.0, np.abs(runs["tmt"][c]).max()) for c in output_names(m))
        label = name + "".join(f" {k}={v}" for k, v in pars.items())
        print(f"| {label}, {t_end} s | {walls['recursive']:.3f} | {walls['tmt']:.3f} | "
              f"{walls['newton_euler']:.3f} | {d:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
