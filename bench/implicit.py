"""fmu_mb's implicit methods against Exudyn's on the same models and fixed steps.

    python bench/implicit.py [--quick] [--out bench/results/implicit.md]

Models: the slider-crank (models/slider_crank.py, crank at 10 rad/s) and the IFToMM A02
N-four-bar (models/n_four_bar.py, N = 2), 2 s, references from bench/references.py
(hand-derived minimal-coordinate equations, scipy DOP853 at rtol 1e-13). For each fixed step
h: fmu_mb generalized_alpha (rho_inf 0.9, index 3; newton_euler and tmt), fmu_mb trapezoidal
(index 2, projection), Exudyn GeneralizedAlpha (spectralRadius 0.9, index 3, modified Newton)
and Exudyn TrapezoidalIndex2. Reported: the largest joint-angle error at 2 s and the wall time
of the solver call (one run each, engines alternating; absolute times vary by tens of percent
on a loaded machine, the ratios are what counts).
"""
import argparse
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import fmu_mb  # noqa: E402,F401  (limits BLAS threads before numpy loads)
import numpy as np  # noqa: E402
from fmu_mb import Settings, advance, initial_state, load_model, output_names  # noqa: E402
from fmu_mb import output_values  # noqa: E402

import references as R  # noqa: E402

T_END = 2.0
STEPS = [2e-3, 1e-3, 5e-4, 2e-4, 1e-4]
CAP = 60.0       # a variant slower than this [s] is not run at the smaller steps


def fmu_mb_run(model_file, overrides, names, settings):
    m = load_model(str(ROOT / "models" / model_file), **overrides)
    idx = {n: i for i, n in enumerate(output_names(m))}
    s0 = initial_state(m, settings)
    t0 = time.perf_counter()
    s = advance(m, s0, T_END, None, settings)
    wall = time.perf_counter() - t0
    v = output_values(m, s, m.input_vector(None), settings.formulation)
    return wall, {k: v[idx[f"{k}.angle"]] for k in names}


def exudyn_run(planar, h, solver):
    """bench/exudyn_models.Planar.run with the solver type as a parameter."""
    import exudyn as exu
    import exudyn_models as X

    SC, mbs, nodes, phi0 = planar.build()
    s = X._settings(T_END, round(T_END / h))
    s.timeIntegration.newton.useModifiedNewton = True
    s.timeIntegration.generalizedAlpha.spectralRadius = 0.9
    t0 = time.perf_counter()
    mbs.SolveDynamic(s, solverType=getattr(exu.DynamicSolverType, solver))
    wall = time.perf_counter() - t0
    q = mbs.systemData.GetODE2Coordinates()
    ang = {name: phi0[name] + q[mbs.GetNodeODE2Index(nd) + 2] for name, nd in nodes.items()}
    joints = {}
    for jn, parent, _, child, _ in planar.joints:
        joints[jn] = ang[child] - (0.0 if parent is None else ang[parent])
    return wall, joints


def error(joints, ref):
    return max(abs(math.remainder(joints[k] - ref[k], 2 * math.pi)) for k in ref)


def cases():
    import exudyn_models as X

    sc = R.SliderCrank()
    fb = [f"O{i}" for i in range(3)] + [f"L{i}" for i in range(2)] + [f"R{i}" for i in range(2)]
    return [
        dict(name="slider-crank", fm=("slider_crank.py", {}, ["O", "A", "B"]),
             ex=lambda: X.slider_crank(sc.bodies(0.0, 10.0)),
             ref=R.slider_crank(t_end=T_END)[0]),
        dict(name="N-four-bar N=2", fm=("n_four_bar.py", {"N": 2}, fb),
             ex=lambda: X.n_four_bar(2, R.four_bar_bodies(2, math.pi / 2, -1.0)),
             ref=R.n_four_bar(2, t_end=T_END)[0]),
    ]


VARIANTS = [
    ("fmu_mb generalized_alpha (newton_euler)",
     dict(method="generalized_alpha", formulation="newton_euler")),
    ("fmu_mb generalized_alpha (tmt)", dict(method="generalized_alpha", formulation="tmt")),
    ("fmu_mb trapezoidal (newton_euler)", dict(method="trapezoidal", formulation="newton_euler")),
    ("Exudyn GeneralizedAlpha", "GeneralizedAlpha"),
    ("Exudyn TrapezoidalIndex2", "TrapezoidalIndex2"),
]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="steps 2e-3 and 1e-3 only")
    p.add_argument("--out", default=str(HERE / "results" / "implicit.md"))
    args = p.parse_args(argv)
    import exudyn as exu

    steps = STEPS[:2] if args.quick else STEPS
    lines = [f"# Implicit methods: fmu_mb against Exudyn {exu.__version__}", "",
             f"`python bench/implicit.py{' --quick' if args.quick else ''}`, t = {T_END} s; "
             f"error = largest joint-angle error at {T_END} s [rad]; wall = solver call [s].",
             ""]
    for case in cases():
        lines += [f"## {case['name']}", "",
                  "| h [s] | " + " | ".join(v[0] for v in VARIANTS) + " |",
                  "|---" * (len(VARIANTS) + 1) + "|"]
        slow = set()
        for h in steps:
            cells = []
            for label, spec in VARIANTS:
                if label in slow:
                    cells.append(f"skipped (> {CAP:g} s at a larger h)")
                    continue
                try:
                    if isinstance(spec, str):
                        wall, joints = exudyn_run(case["ex"](), h, spec)
                    else:
                        f, ov, names = case["fm"]
                        wall, joints = fmu_mb_run(f, ov, names, Settings(step=h, **spec))
                    cells.append(f"{error(joints, case['ref']):.2e} / {wall:.3f}")
                    if wall > CAP:
                        slow.add(label)
                except Exception as exc:                         # noqa: BLE001
                    cells.append(f"fails ({type(exc).__name__})")
                print(f"{case['name']:>16} h={h:g} {label}: {cells[-1]}", flush=True)
            lines.append(f"| {h:g} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("Cells: error [rad] / wall time [s].")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
