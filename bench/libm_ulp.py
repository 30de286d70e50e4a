"""How much the compiled engine's results move when the math library differs in the last bit.

Runs each model's default experiment in the engine library (fmu_mb.engine.engine.Engine)
twice: with the system's libm, and with a small preloaded library that makes 1 in 16 results
of sin, cos, sincos, tan, exp, log, acos, asin, atan, atan2, pow and hypot one ulp larger (a
stand-in for another platform's libm, such as MinGW-w64's on win64). Prints the largest
difference of the outputs relative to max(1, |value|) per model. Linux with a C compiler.

    python bench/libm_ulp.py [model ...]        # default: a selection of models/
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["excavator", "four_bar", "heavy_top", "slider_crank_stop", "double_wishbone",
           "double_pendulum", "tumbling_box", "newtons_cradle"]

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
static int flip(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    b ^= b >> 29;
    b *= 0x9E3779B97F4A7C15ull;
    return (b >> 60) == 0;
}
#define W1(f) double f(double x) { static double (*g)(double); \
    if (!g) g = (double (*)(double))dlsym(RTLD_NEXT, #f); \
    double r = g(x); return flip(x) ? nextafter(r, INFINITY) : r; }
#define W2(f) double f(double x, double y) { static double (*g)(double, double); \
    if (!g) g = (double (*)(double, double))dlsym(RTLD_NEXT, #f); \
    double r = g(x, y); return flip(x + y) ? nextafter(r, INFINITY) : r; }
W1(sin) W1(cos) W1(tan) W1(exp) W1(log) W1(acos) W1(asin) W1(atan) W2(atan2) W2(pow) W2(hypot)
void sincos(double x, double *s, double *c)
{
    static void (*g)(double, double *, double *);
    if (!g) g = (void (*)(double, double *, double *))dlsym(RTLD_NEXT, "sincos");
    g(x, s, c);
    if (flip(x)) { *s = nextafter(*s, INFINITY); *c = nextafter(*c, INFINITY); }
}
"""

RUN = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from fmu_mb import load_model
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.engine.engine import Engine
from fmu_mb.mechanics.loader import load_module
out = {}
for path in sys.argv[1:]:
    exp = getattr(load_module(path), "DEFAULT_EXPERIMENT", {}) or {}
    e = Engine(load_model(path))
    e.set_settings(Settings())
    e.initialize(0.0)
    h, stop = exp.get("step_size", 0.01), exp.get("stop_time", 1.0)
    u, ys = np.zeros(e.n_inputs), []
    for _ in range(int(round(stop / h))):
        e.do_step(h, u)
        ys.append(e.outputs(u).tolist())
    out[path] = ys
print(json.dumps(out))
"""


def main(names):
    import numpy as np

    files = [str(ROOT / "models" / f"{n}.py") for n in names]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        shim = Path(tmp) / "ulp.so"
        (Path(tmp) / "ulp.c").write_text(SHIM)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(Path(tmp) / "ulp.c"), "-o",
                        str(shim), "-ldl"], check=True)
        runs = [json.loads(subprocess.run([sys.executable, "-c", RUN, *files], env=e,
                                          capture_output=True, text=True, check=True).stdout)
                for e in (env, dict(env, LD_PRELOAD=str(shim)))]
    for name, path in zip(names, files):
        a, b = np.array(runs[0][path]), np.array(runs[1][path])
        rel = np.abs(a - b) / np.maximum(1.0, np.abs(a))
        print(f"{name:22s} largest relative difference {rel.max():.2g}")


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
