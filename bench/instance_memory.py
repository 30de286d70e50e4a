"""The engine instance's heap against model size: the bytes in use (glibc mallinfo2: in-use
chunks + mmapped blocks) after create + initialise and after the first 10 ms step, the
difference to before the instance, through fmu_mb.engine.Engine (the engine of the native
FMUs), per N, and the growth exponent (least-squares slope of log(bytes) over log(N)).

    python bench/instance_memory.py [--models n_four_bar,pendulum_chain,spatial_chain]
                                    [--sizes 16,32,64,128]

Needs glibc (mallinfo2). Run from another checkout (PYTHONPATH at its root) for its figures.
"""
import argparse
import ctypes
import ctypes.util
import gc
import os
import sys
from pathlib import Path

import numpy as np

import fmu_mb
from fmu_mb.engine.data import model_data
from fmu_mb.engine.engine import Engine

MODELS = Path(fmu_mb.__file__).resolve().parents[1] / "models"


class MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]


def heap_counter():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.mallinfo2.restype = MallInfo2

    def used():
        m = libc.mallinfo2()
        return m.uordblks + m.hblkhd
    return used


def instance_bytes(name, n, used):
    """(after create + initialise, after the first step) in bytes"""
    blob = model_data(fmu_mb.load_model(MODELS / f"{name}.py", N=n)).to_bytes(None)
    Engine(blob=blob, name=name)                 # the library and ctypes loaded
    gc.collect()
    m0 = used()
    e = Engine(blob=blob, name=name)
    e.initialize(0.0)
    m1 = used()
    e.do_step(0.01)
    m2 = used()
    del e
    gc.collect()
    return m1 - m0, m2 - m0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="n_four_bar,pendulum_chain,spatial_chain")
    ap.add_argument("--sizes", default="16,32,64,128")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    used = heap_counter()
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| model | " + " | ".join(f"N = {n}" for n in sizes) + " | exponent |")
    print("|---|" + "---|" * (len(sizes) + 1))
    for name in args.models.split(","):
        rows = [instance_bytes(name, n, used) for n in sizes]
        slope = np.polyfit(np.log(sizes), np.log([r[0] for r in rows]), 1)[0]
        cells = [f"{a / 1024:.0f} KiB" + ("" if a == b else f" ({b / 1024:.0f} KiB stepped)")
                 for a, b in rows]
        print(f"| {name} | " + " | ".join(cells) + f" | {slope:.2f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
