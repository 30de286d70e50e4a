"""Spatial contacts, drives and cylinders: wall time of one advance() per formulation, side
by side in one run (python bench/spatial_contacts.py). Models: the tumbling box (1.5 s, many
corner impacts and persistent contacts), the double wishbone with its stops under a 100 mm
road step (0.25 s: seven impacts, then a persistent contact on the bump stop), the driven arm
(2 s, three drives). Only the ratios of one run mean anything (the performance page (docs/performance.md))."""
import time
from pathlib import Path

import numpy as np

from fmu_mb import load_model
from fmu_mb.dynamics.integrate import Settings, advance, initial_state

MODELS = Path(__file__).resolve().parents[1] / "models"
K_TYRE = 357859.232809


def seconds(model, formulation, t_end, u=None, repeat=3):
    best = np.inf
    for _ in range(repeat):
        S = Settings(formulation=formulation)
        s = initial_state(model, S)
        t0 = time.perf_counter()
        advance(model, s, t_end, u, settings=S)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    cases = [("tumbling_box", {}, 1.5, None),
             ("double_wishbone", {"stops": "on"}, 0.25, np.array([-K_TYRE * 0.1, 0.0, 0.0])),
             ("driven_arm", {}, 2.0, None)]
    for name, over, t_end, u in cases:
        m = load_model(MODELS / f"{name}.py", **over)
        times = {f: seconds(m, f, t_end, u) for f in ("newton_euler", "tmt", "recursive")}
        print(f"{name} ({t_end} s): " + ", ".join(f"{f} {v * 1e3:.1f} ms"
                                                  for f, v in times.items()))


if __name__ == "__main__":
    main()
