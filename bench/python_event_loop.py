"""CPU time of the Python event loop's references that the test suite compares the compiled
loop and the native FMUs with (fmu_mb.dynamics.integrate, formulation newton_euler, or
recursive with NATIVE_EVENTS = False), one run each:

- plank: tests/test_planar_friction_c.py's block thrown onto a plank, rk4 at 1 ms, 1 s;
- deck: tests/data/swing_deck.py, its three cases (box mu 0.8, ball mu 0.2 and 0.05), 0.5 s,
  rtol 1e-11;
- sweeper: tests/data/sweeper.py, 0.3 s, rtol 1e-11;
- tumbling_box: models/tumbling_box.py with the box shape, recursive without the compiled
  events, 1.5 s at 10 ms.

    python bench/python_event_loop.py [names...] [--save DIR]

prints the CPU seconds per reference; --save writes each result (.npy) to DIR, so that two
commits run side by side can be compared number for number (np.array_equal).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data"))

from fmu_mb import ModelBuilder, load_model, simulate  # noqa: E402
from fmu_mb.dynamics.formulations import recursive  # noqa: E402
from fmu_mb.dynamics.integrate import Settings, advance, initial_state  # noqa: E402
from fmu_mb.dynamics.outputs import output_values  # noqa: E402

TIGHT = dict(rtol=1e-11, atol=1e-13)


def _plank_model(mu=0.4, m=1.0, M=3.0, v0=2.0):
    mb = ModelBuilder("plank", gravity=(0.0, -9.81))
    p = mb.body("plank", mass=M, inertia=1.0)
    mb.prismatic("rail", "ground", p, axis=(1.0, 0.0))
    b = mb.body("block", mass=m, inertia=0.01, position=(0.0, 0.05), velocity=(v0, 0.0))
    for k, sx in enumerate((-0.1, 0.1)):
        mb.contact(f"c{k}", b, (sx, -0.05), other=p, normal=(0.0, 1.0), restitution=0.0,
                   friction=mu)
    return mb.build()


def _table(r):
    return np.array(r.tolist())


def plank():
    return _table(simulate(_plank_model(), 1.0, 0.05,
                           settings=Settings(formulation="newton_euler", method="rk4",
                                             step=1e-3)))


def deck():
    return np.concatenate([_table(simulate(
        load_model(ROOT / "tests" / "data" / "swing_deck.py", shape=shape, mu=mu), 0.5, 0.05,
        settings=Settings(formulation="newton_euler", **TIGHT)))
        for shape, mu in (("box", 0.8), ("ball", 0.2), ("ball", 0.05))], axis=1)


def sweeper():
    import sweeper as sw
    return _table(simulate(sw.build(), 0.3, 0.01,
                           settings=Settings(formulation="newton_euler", **TIGHT)))


def tumbling_box():
    model = load_model(ROOT / "models" / "tumbling_box.py", shape="box")
    old, recursive.NATIVE_EVENTS = recursive.NATIVE_EVENTS, False
    try:
        S = Settings(formulation="recursive")
        s = initial_state(model, S)
        u = model.input_vector(None)
        rows = [np.asarray(output_values(model, s, u, "recursive"))]
        for k in range(1, 151):
            s = advance(model, s, k * 0.01, u, S)
            rows.append(np.asarray(output_values(model, s, u, "recursive")))
        return np.array(rows)
    finally:
        recursive.NATIVE_EVENTS = old


CASES = {"plank": plank, "deck": deck, "sweeper": sweeper, "tumbling_box": tumbling_box}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"references among {list(CASES)} (all)")
    ap.add_argument("--save", type=Path)
    a = ap.parse_args()
    unknown = [n for n in a.names if n not in CASES]
    if unknown:
        ap.error(f"unknown references {unknown}; expected some of {list(CASES)}")
    for name in a.names or list(CASES):
        t0 = time.process_time()
        out = CASES[name]()
        print(f"{name:14s} {time.process_time() - t0:7.2f} s CPU", flush=True)
        if a.save:
            a.save.mkdir(parents=True, exist_ok=True)
            np.save(a.save / f"{name}.npy", out)


if __name__ == "__main__":
    main()
