"""The README's main job: build every model's FMU into one folder and run each one in fmpy.

    python build_scripts/run_all.py [--out DIR] [--jobs N]

For each model: build DIR/fmus/<model>.fmu (native wherever the model runs in the compiled
engine, else a Python FMU: `fmu-mb build`'s choice; the builds run in N processes, default one
per CPU), validate it with fmpy, simulate it with fmpy over its default experiment, write
DIR/<model>.csv and a plot DIR/<model>.png, and print one row of a summary table (kind,
variables, simulated time, wall time, final outputs), then the build's time per stage summed
over the models (docs/platforms.md).
"""
import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402,F401  (limits BLAS threads before numpy work)
from fmpy import read_model_description, simulate_fmu  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from build_fmus import model_files  # noqa: E402
from fmu_mb.fmi.native_build import build_model_fmu  # noqa: E402
from fmu_mb.fmi.native_platforms import BuildLog  # noqa: E402
from fmu_mb.tools.viz import plot_outputs  # noqa: E402


def key_outputs(names):
    """A few outputs worth showing: joint coordinates, impact counts, then body coordinates;
    and the energy and the constraint residual."""
    picks = [n for n in names if n.endswith((".angle", ".position"))][:2]
    picks += [n for n in names if n.endswith(".impacts")][:1]
    picks += [n for n in names if n.endswith((".y", ".phi")) and n not in picks]
    return picks[:3] + [n for n in ("energy.total", "constraint.residual") if n in names]


def build(path, folder):
    """Build one model's FMU (in a worker process): (fmu, kind, stages, error)."""
    log = BuildLog()
    try:
        fmu, kind, _ = build_model_fmu(path, folder, log=log)
    except Exception as exc:  # reported with the model's row
        return None, None, log.stages, f"{type(exc).__name__}: {exc}"
    return fmu, kind, log.stages, None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "out"))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="builds run at once (default: one per CPU)")
    args = p.parse_args(argv)
    out = Path(args.out)
    (out / "fmus").mkdir(parents=True, exist_ok=True)
    rows, failed = [], []
    files = model_files()
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        built = list(pool.map(build, files, repeat(out / "fmus")))
    build_wall = time.perf_counter() - t0
    stages = {}
    for path, (fmu, kind, steps, error) in zip(files, built):
        for stage, wall, cpu in steps:
            total = stages.setdefault(stage, [0.0, 0.0])
            total[0] += wall
            total[1] += cpu
    for path, (fmu, kind, _, error) in zip(files, built):
        name = path.stem
        try:
            if error:
                raise RuntimeError(error)
            problems = validate_fmu(str(fmu))
            md = read_model_description(str(fmu))
            stop = float(md.defaultExperiment.stopTime)
            t0 = time.perf_counter()
            r = simulate_fmu(str(fmu), stop_time=stop,
                             output_interval=float(md.defaultExperiment.stepSize))
            wall = time.perf_counter() - t0
        except Exception as exc:  # report and go on with the other models
            failed.append((name, f"{type(exc).__name__}: {exc}"))
            continue
        names = r.dtype.names
        np.savetxt(out / f"{name}.csv", r.view((float, len(names))) if all(
            r.dtype[n] == float for n in names) else np.column_stack(
            [r[n].astype(float) for n in names]), delimiter=",", header=",".join(names),
            comments="", fmt="%.17g")
        shown = key_outputs(names)
        units = {v.name: v.unit for v in md.modelVariables if getattr(v, "unit", None)}
        shown = plot_outputs(r, shown, out / f"{name}.png", f"{name} (FMU in fmpy)",
                             units=units)
        final = ", ".join(f"{n} = {r[n][-1]:.6g}" for n in shown[:3])
        rows.append((name, kind, len(md.modelVariables), "ok" if not problems else
                     f"{len(problems)} problems", r["time"][-1], wall, final))
    head = ("model", "FMU", "variables", "validation", "simulated [s]", "wall [s]",
            "final outputs")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:g} | {r[5]:.3f} | {r[6]} |")
    print(f"\nFMUs in {out / 'fmus'}; CSV files and plots in {out}")
    print(f"\nbuilds: {build_wall:.1f} s wall in {max(1, args.jobs)} processes; native FMUs' "
          f"stages summed over the models:")
    for stage, (wall, cpu) in sorted(stages.items(), key=lambda kv: -kv[1][1]):
        print(f"  {stage:<44s} {wall:8.2f} s wall {cpu:8.2f} s CPU")
    for name, err in failed:
        print(f"FAILED {name}: {err}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
