"""CPU time of the parameter program's compilation (fmu_mb.engine.params, run by
native_build.engine_data) for spatial_chain at the given numbers of links, in this process:

    FMU_MB_SERIAL=1 python bench/param_program.py 16 64 128
"""
import importlib.util
import os
import sys
import time

from fmu_mb.fmi.native_build import engine_data


def main(argv):
    path = os.path.join(os.path.dirname(__file__), "..", "models", "spatial_chain.py")
    spec = importlib.util.spec_from_file_location("spatial_chain", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for n in [int(a) for a in argv] or [16, 64]:
        model = mod.build(N=n)
        t = time.process_time()
        _, _, _, fixed = engine_data(model, mod, {"N": n})
        print(f"spatial_chain N = {n}: {time.process_time() - t:.2f} s CPU, "
              f"fixed {sorted(fixed)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
