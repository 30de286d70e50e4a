"""Seed 000 sec. 1.5: the drift of the double pendulum under forward Euler.

The index-1 equations (seed 000 eq. 12) integrated by x(t + dt) = x + xd dt,
xd(t + dt) = xd + xdd dt (eq. 21) over 0.5 s: without drift control the joints A and B come
apart, the gaps shrink with the step size, and the pose at 0.5 s depends on the step. With
the default projection the joints stay closed at every step size.

    python examples/drift_euler.py [-o drift_euler.png]

The seed's figure shows four step sizes whose values the text does not give; this script
uses 1e-2, 5e-3, 2e-3 and 1e-3 s. It prints the joint gap and the pose at 0.5 s per step size
and writes a PNG (headless): joint gap |Phi| over time without and with projection, and the
rods at 0.5 s for each step size against a tight dop853 run.
"""
import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmu_mb import load_model, simulate  # noqa: E402

STEPS = (1e-2, 5e-3, 2e-3, 1e-3)
T_END = 0.5


def run(model, step, stabilization):
    return simulate(model, T_END, 0.01, method="euler", step=step, stabilization=stabilization,
                    formulation="newton_euler")       # absolute coordinates: the joints drift


def rods(r, k=-1):
    """Points A (ground pivot), the end of rod 1 and the end of rod 2 at sample k, as drawn
    from each body's own pose (a gap shows as a broken line)."""
    pts = []
    for rod, length in (("rod1", 0.55), ("rod2", 0.55)):
        x, y, phi = r[f"{rod}.x"][k], r[f"{rod}.y"][k], r[f"{rod}.phi"][k]
        d = 0.5 * length * np.array([np.cos(phi), np.sin(phi)])
        pts.append((np.array([x, y]) - d, np.array([x, y]) + d))
    return pts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", default="drift_euler.png")
    p.add_argument("--steps", type=float, nargs="+", default=list(STEPS),
                   help="step sizes [s] (default: %(default)s)")
    args = p.parse_args(argv)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    model = load_model(ROOT / "models" / "double_pendulum.py")
    ref = simulate(model, T_END, 0.01, rtol=1e-12, atol=1e-14, formulation="newton_euler")
    fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(15, 4.6))
    print(f"{'dt [s]':>8} {'gap none [m]':>13} {'gap proj [m]':>13} "
          f"{'rod2.phi none':>14} {'rod2.phi proj':>14}   (dop853: {ref['rod2.phi'][-1]:.5f})")
    for step, color in zip(args.steps, ("C3", "C1", "C2", "C0", "C4", "C5")):
        free, proj = run(model, step, "none"), run(model, step, "projection")
        ax0.semilogy(free["time"], np.maximum(free["constraint.residual"], 1e-17), color=color,
                     label=f"dt = {step:g} s")
        ax1.semilogy(proj["time"], np.maximum(proj["constraint.residual"], 1e-17),
                     color=color, label=f"dt = {step:g} s")
        for a, b in rods(free):
            ax2.plot([a[1], b[1]], [-a[0], -b[0]], "-o", color=color, ms=3)
        print(f"{step:8.0e} {free['constraint.residual'][-1]:13.3e} "
              f"{proj['constraint.residual'][-1]:13.3e} {free['rod2.phi'][-1]:14.5f} "
              f"{proj['rod2.phi'][-1]:14.5f}")
    for a, b in rods(ref):
        ax2.plot([a[1], b[1]], [-a[0], -b[0]], "-", color="k", lw=2.5, alpha=0.4)
    ax0.set(title="forward Euler, no drift control", xlabel="t [s]",
            ylabel="constraint residual |Phi| [m]")
    ax1.set(title="forward Euler with projection", xlabel="t [s]")
    ax1.set_ylim(ax0.get_ylim())
    ax2.set(title=f"pose at t = {T_END} s, no drift control (grey: dop853)",
            xlabel="y [m]", ylabel="-x [m] (gravity along +x)", aspect="equal")
    ax0.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
