"""The integrators of the compiled engine at a 1 ms communication step, per model of models/.

    python bench/integrators.py [--models double_pendulum spatial_chain:N=16 ...]
                                [--time 1.0] [--h 1e-3] [--rounds 5] [--exudyn]
                                [--out bench/results]

For every model the engine library runs (fmu_mb.engine.data.supported), with its default
parameters and no input: a C host (compiled here, linked to the engine library with dlopen)
creates the engine from the model data, initializes it and takes 1 ms mbe_do_step calls, as
an FMU's doStep does, for `--time` seconds. Per setting it prints

- CPU per step: process CPU time (clock_gettime(CLOCK_PROCESS_CPUTIME_ID)) of the steps
  divided by their number, the smallest of --rounds runs, the settings run round-robin in
  each round so that the machine's load falls on all alike;
- the ratio to the previous default (dop853, rtol 1e-9), measured in the same rounds;
- error: the largest coordinate deviation (q: m or rad) at every 0.1 s against a reference,
  dop853 at rtol 1e-12, atol 1e-14 with steps of at most 0.1 ms (so that the tolerance
  limits its steps, not the communication interval).

Settings: "default" (what Settings() gives, the FMU's default), rk4 with one step per
communication step, dopri5 and dop853 at rtol 1e-6, 1e-9, 1e-12 (atol: the default 1e-11).
A model is given by its file's stem, with build arguments after a colon (spatial_chain:N=16).

--exudyn adds, for spatial_chain (revolute joints), Exudyn's KinematicTree with RK44 at 1, 2,
4 and 8 steps per communication step (bench/spatial_chain.py's model of the same chain), its
CPU per communication step from one SolveDynamic over the same time (less a one-step run's:
the set-up) and its error against the same reference (its ODE2 coordinates less q0 are the
same joint angles).
"""
import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fmu_mb import Settings, load_model  # noqa: E402
from fmu_mb.engine.data import model_data, supported  # noqa: E402
from fmu_mb.engine.engine import METHODS, STABILIZATIONS, library_file  # noqa: E402

HOST = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int method; double rtol, atol, step, max_step, max_steps; int stabilization;
    double alpha, beta, proj_tol, contact_tol, contact_velocity, event_tol;
} MbeSettings;
typedef void *(*create_t)(const unsigned char *, size_t, char *, size_t);
typedef int (*nq_t)(const void *);
typedef int (*set_t)(void *, const MbeSettings *, char *, size_t);
typedef int (*init_t)(void *, double, char *, size_t);
typedef int (*step_t)(void *, double, const double *, char *, size_t);
typedef size_t (*ssize_t_)(const void *);
typedef void (*gets_t)(const void *, double *);

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* host LIB BLOB h steps every method rtol atol max_step step stabilization alpha beta
 * proj_tol: prints "cpu <s per step>" and every `every` steps "q <t> <q...>" */
int main(int argc, char **argv)
{
    if (argc != 15) { fprintf(stderr, "usage\n"); return 2; }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    FILE *f = fopen(argv[2], "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *blob = malloc(size);
    if (fread(blob, 1, size, f) != (size_t)size) return 2;
    fclose(f);
    double h = atof(argv[3]);
    long steps = atol(argv[4]), every = atol(argv[5]);
    MbeSettings s = {0};
    s.method = atoi(argv[6]); s.rtol = atof(argv[7]); s.atol = atof(argv[8]);
    s.max_step = atof(argv[9]); s.step = atof(argv[10]); s.stabilization = atoi(argv[11]);
    s.alpha = atof(argv[12]); s.beta = atof(argv[13]); s.proj_tol = atof(argv[14]);
    char err[1024];
    void *e = ((create_t)dlsym(lib, "mbe_create"))(blob, size, err, sizeof err);
    if (!e) { fprintf(stderr, "%s\n", err); return 1; }
    int n = ((nq_t)dlsym(lib, "mbe_n_q"))(e), ni = ((nq_t)dlsym(lib, "mbe_n_inputs"))(e);
    if (((set_t)dlsym(lib, "mbe_set_settings"))(e, &s, err, sizeof err) ||
        ((init_t)dlsym(lib, "mbe_initialize"))(e, 0.0, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    step_t step = (step_t)dlsym(lib, "mbe_do_step");
    size_t ns = ((ssize_t_)dlsym(lib, "mbe_state_size"))(e);
    gets_t get = (gets_t)dlsym(lib, "mbe_get_state");
    double *u = calloc(ni + 1, sizeof(double)), *st = calloc(ns, sizeof(double));
    double *qs = calloc((steps / every + 1) * (n + 1), sizeof(double));
    int rows = 0;
    double c0 = cpu();
    for (long k = 1; k <= steps; k++) {
        if (step(e, h, ni ? u : NULL, err, sizeof err)) {
            fprintf(stderr, "step %ld: %s\n", k, err);
            return 1;
        }
        if (k % every == 0) {
            get(e, st);
            memcpy(qs + rows * (n + 1), st, sizeof(double) * (n + 1));
            rows++;
        }
    }
    double c1 = cpu();
    printf("cpu %.9g\n", (c1 - c0) / steps);
    for (int r = 0; r < rows; r++) {
        printf("q");
        for (int i = 0; i <= n; i++)
            printf(" %.17g", qs[r * (n + 1) + i]);
        printf("\n");
    }
    return 0;
}
"""

PREVIOUS = ("dop853", 1e-9)                 # the default before the measurement below
REFERENCE = Settings(method="dop853", rtol=1e-12, atol=1e-14, max_step=1e-4)


def settings_list():
    out = [("default", Settings()), ("rk4", Settings(method="rk4"))]
    for method in ("dopri5", "dop853"):
        for rtol in (1e-6, 1e-9, 1e-12):
            out.append((f"{method} {rtol:.0e}", Settings(method=method, rtol=rtol)))
    return out


def build_host(tmp):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        sys.exit("bench/integrators.py needs a C compiler")
    src, exe = tmp / "host.c", tmp / "host"
    src.write_text(HOST)
    subprocess.run([cc, "-O2", "-o", str(exe), str(src), "-ldl"], check=True)
    return exe


def run(exe, lib, blob, s, h, steps, every):
    ms = s.max_step if np.isfinite(s.max_step) else float("inf")
    args = [str(exe), str(lib), str(blob), repr(h), str(steps), str(every),
            str(METHODS[s.method]), repr(s.rtol), repr(s.atol), repr(ms), repr(s.step),
            str(STABILIZATIONS[s.stabilization]), repr(s.baumgarte[0]), repr(s.baumgarte[1]),
            repr(s.projection_tol)]
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode:
        return None, res.stderr.strip()[-300:]
    lines = res.stdout.split("\n")
    c = float(lines[0].split()[1])
    q = np.array([[float(v) for v in ln.split()[1:]] for ln in lines[1:] if ln.startswith("q")])
    return c, q


def load(spec):
    """A model of models/ from "name" or "name:KEY=VALUE,KEY=VALUE" (build arguments)."""
    name, _, args = spec.partition(":")
    kw = {}
    for item in filter(None, args.split(",")):
        k, _, v = item.partition("=")
        kw[k] = int(v) if v.lstrip("-").isdigit() else v
    return load_model(ROOT / "models" / f"{name}.py", **kw), kw


def exudyn_rk44(n, t_end, h, rounds):
    """(CPU s per step, joint angles at every 0.1 s) of Exudyn RK44 on the chain with steps
    h (its coordinates less q0: fmu_mb's angles are 0 at the built pose)."""
    import time

    import spatial_chain as SCB

    best, setup, qs = np.inf, np.inf, None
    saved = SCB.T_END
    try:
        samples = []
        for _ in range(rounds):       # the run's CPU less that of a one-step run (set-up)
            for t, key in ((t_end, "run"), (h, "setup")):
                SCB.T_END = t
                ex = SCB.Exudyn(n, "RK44")
                c0 = time.process_time()
                ex.run(h)
                c = time.process_time() - c0
                if key == "run":
                    best = min(best, c)
                else:
                    setup = min(setup, c)
        for k in range(1, int(round(t_end / 0.1)) + 1):    # one run per sample time
            SCB.T_END = k * 0.1
            samples.append(_exudyn_angles(SCB, n, h) - SCB.Q0)
        qs = np.array(samples)
    finally:
        SCB.T_END = saved
    return (best - setup) / (int(round(t_end / h)) - 1), qs


def _exudyn_angles(SCB, n, h):
    ex = SCB.Exudyn(n, "RK44")
    captured = {}
    orig = SCB.tip_of_angles

    def grab(q):
        captured["q"] = np.array(q, float)
        return orig(q)
    SCB.tip_of_angles = grab
    try:
        ex.run(h)
    finally:
        SCB.tip_of_angles = orig
    return captured["q"]


def model_names(requested):
    if requested:
        return requested
    names = []
    for p in sorted((ROOT / "models").glob("*.py")):
        try:
            m = load_model(p)
        except Exception:                  # (a model file that needs arguments)
            continue
        if supported(m) is None:
            names.append(p.stem)
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--time", type=float, default=1.0)
    ap.add_argument("--h", type=float, default=1e-3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--exudyn", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    steps = int(round(a.time / a.h))
    every = max(1, int(round(0.1 / a.h)))
    lib = library_file()
    rows = []
    d = Settings()
    print(f"1 ms communication steps over {a.time:g} s, no input; default = {d.method} rtol "
          f"{d.rtol:g} atol {d.atol:g}; CPU us per step (min of {a.rounds}), ratio to the "
          f"previous default (dop853 rtol 1e-9), largest |q - q_ref| at every 0.1 s")
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        exe = build_host(tmp)
        for name in model_names(a.models):
            model, kw = load(name)
            blob = tmp / f"{name.replace(':', '_').replace('=', '').replace(',', '_')}.bin"
            blob.write_bytes(model_data(model).to_bytes(None))
            _, qref = run(exe, lib, blob, REFERENCE, a.h, steps, every)
            if qref is None or isinstance(qref, str):
                print(f"{name}: the reference failed: {qref}")
                continue
            n = qref.shape[1] - 1                    # (columns: t, q)
            sets = settings_list()
            best = {k: np.inf for k, _ in sets}
            err = {}
            for _ in range(a.rounds):
                for key, s in sets:
                    c, q = run(exe, lib, blob, s, a.h, steps, every)
                    if c is None:
                        err[key] = q
                        continue
                    best[key] = min(best[key], c)
                    err[key] = float(np.max(np.abs(q[:, 1:] - qref[:, 1:])))
            if a.exudyn and name.startswith("spatial_chain") and \
                    kw.get("joint", "revolute") == "revolute":
                sys.path.insert(0, str(HERE))
                for div in (1, 2, 4, 8):    # RK44 at 1, 2, 4, 8 steps per interval
                    c, qx = exudyn_rk44(n, a.time, a.h / div, a.rounds)
                    key = f"Exudyn RK44, {div} step{'s' if div > 1 else ''} per interval"
                    sets = sets + [(key, None)]
                    best[key] = c * div          # per communication step
                    err[key] = float(np.max(np.abs(qx - qref[:, 1:])))
            prev = best[f"{PREVIOUS[0]} {PREVIOUS[1]:.0e}"]
            print(f"\n{name} ({n} coordinates)")
            print("| setting | CPU us/step | vs previous default | error |")
            print("|---|---:|---:|---:|")
            for key, _ in sets:
                if isinstance(err.get(key), str):
                    print(f"| {key} | failed: {err[key]} | | |")
                    continue
                print(f"| {key} | {best[key] * 1e6:.2f} | {best[key] / prev:.2f} | "
                      f"{err[key]:.1e} |")
                rows.append((name, key, best[key], best[key] / prev, err[key]))
            sys.stdout.flush()
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "integrators.csv", "w") as fh:
            fh.write("model,setting,cpu_s_per_step,ratio_previous_default,error\n")
            for r in rows:
                fh.write(",".join(map(str, r)) + "\n")


if __name__ == "__main__":
    main()
