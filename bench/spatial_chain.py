"""The spatial chain (models/spatial_chain.py) in fmu_mb, Exudyn and MuJoCo at matched accuracy.

    python bench/spatial_chain.py [--quick] [--n 2 4 8 ...] [--joint revolute|spherical]
                                  [--target 1e-6] [--out bench/results]

The same chain in each engine: N rods (L = 0.1 m, m = 0.1 kg, axial inertia m r^2 / 2 with
r = 5 mm), link frames turned by Rx(-pi/2) from link to link, released at rest with every
joint angle q0 = 0.4 rad, gravity -z, 1 s.

- fmu_mb: the fastest spatial formulation that runs the model (recursive when available,
  else tmt or newton_euler), dop853, rtol tuned;
- Exudyn 1.13.6: one ObjectKinematicTree (RevoluteZ joints, jointTransformations Rx(-pi/2);
  minimal coordinates, O(N) per step), explicit RK67 with a fixed step tuned (its automatic
  step size returns NaN in 1.13.6) and DOPRI5 with automatic step size and its tolerance
  tuned, the faster of the two (revolute only: a KinematicTree has no spherical joint);
- MuJoCo: nested bodies with hinge (or ball) joints, the same inertias, contacts disabled, RK4
  and implicitfast with the time step tuned, the faster of the two, stepped with
  mj_step(nstep=...) in one call.

Accuracy: the largest tip (free end of the last rod) coordinate error at 1 s against a tight
reference, MuJoCo RK4 at h = 2e-5 s, cross-checked against fmu_mb recursive at rtol 1e-12
(column "ref check"; tests/test_spatial_tmt.py checks the recursive kernel against tmt and
newton_euler, and Exudyn DOPRI5 at tolerance 1e-12 agrees with both to 1e-8 m at N = 32). Each engine's loosest setting whose error is <= target is timed round-robin (median of
--repeats); cost growth wall ~ N^k is fitted over N >= 8.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402
import numpy as np  # noqa: E402
from fmu_mb import Settings, advance, initial_state, load_model, output_names, output_values  # noqa: E402,E501

from fmu_mb import load_module  # noqa: E402

SC = load_module(str(ROOT / "models" / "spatial_chain.py"))      # the model file's helpers

T_END = 1.0
L, M, RAD, Q0 = 0.1, 0.1, 0.005, 0.4
TOLS = [10.0 ** (-k / 2) for k in range(6, 27)]
STEPS = [1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 5e-5, 2e-5, 1e-5]


def inertia():
    return (0.5 * M * RAD * RAD, M * L * L / 12.0, M * L * L / 12.0)


def tip_of_angles(q):
    points, frames = SC.link_frames(len(q), L, q)
    return points[-1] + frames[-1] @ np.array([L, 0.0, 0.0])


# ------------------------------------------------------------------ engines
class FmuMb:
    def __init__(self, n, joint):
        self.model = load_model(str(ROOT / "models" / "spatial_chain.py"), N=n, joint=joint)
        idx = {k: i for i, k in enumerate(output_names(self.model))}
        self.it = [idx["tip.x"], idx["tip.y"], idx["tip.z"]]
        self.form = None

    def run(self, tol, form=None, t_end=T_END, method="dop853"):
        s = Settings(method=method, formulation=form or self.form, rtol=tol, atol=tol * 1e-2,
                     step=tol)
        st0 = initial_state(self.model, s)
        t0 = time.perf_counter()
        st = advance(self.model, st0, t_end, None, s)
        wall = time.perf_counter() - t0
        v = output_values(self.model, st, self.model.input_vector(None), s.formulation)
        return wall, v[self.it]

    def pick(self, log):
        best = None
        for f in fmu_mb.FORMULATIONS:
            if f == "minimal" or (f != "recursive" and self.model.n_coordinates > 7 * 16):
                continue        # minimal is for closed loops; the others O(N^3) in Python
            try:
                w = min(self.run(1e-6, f, 0.05)[0] for _ in range(2))
            except Exception as exc:                        # noqa: BLE001
                log(f"    fmu_mb {f}: {type(exc).__name__}: {str(exc)[:70]}")
                continue
            log(f"    fmu_mb {f}: {w * 1e3:.1f} ms for 0.05 s")
            if best is None or w < best[1]:
                best = (f, w)
        self.form = best[0]
        return best


class Exudyn:
    def __init__(self, n, solver):
        import exudyn as exu

        self.exu, self.n, self.solver = exu, n, solver

    def run(self, p):
        """p: tolerance (DOPRI5, automatic step size) or the fixed step [s] (RK67, whose
        automatic step size gives NaN here in Exudyn 1.13.6)."""
        exu = self.exu
        from exudyn.itemInterface import NodeGenericODE2, ObjectKinematicTree

        n = self.n
        SCx = exu.SystemContainer()
        mbs = SCx.AddSystem()
        nd = mbs.AddNode(NodeGenericODE2(referenceCoordinates=[0.0] * n,
                                         initialCoordinates=[Q0] * n,
                                         initialCoordinates_t=[0.0] * n,
                                         numberOfODE2Coordinates=n))
        mbs.AddObject(ObjectKinematicTree(
            nodeNumber=nd, jointTypes=[exu.JointType.RevoluteZ] * n,
            linkParents=list(range(-1, n - 1)),
            jointTransformations=exu.Matrix3DList([SC._rx(-math.pi / 2)] * n),
            jointOffsets=exu.Vector3DList([[0.0, 0.0, 0.0]] + [[L, 0.0, 0.0]] * (n - 1)),
            linkInertiasCOM=exu.Matrix3DList([np.diag(inertia())] * n),
            linkCOMs=exu.Vector3DList([[L / 2, 0.0, 0.0]] * n),
            linkMasses=[M] * n, baseOffset=[0.0, 0.0, 0.0], gravity=[0.0, 0.0, -9.81],
            jointForceVector=[0.0] * n))
        mbs.Assemble()
        s = exu.SimulationSettings()
        ti = s.timeIntegration
        fixed = self.solver in ("RK67", "RK44")
        ti.startTime, ti.endTime = 0.0, T_END
        ti.numberOfSteps = int(round(T_END / p)) if fixed else 2
        ti.verboseMode = 0
        s.solution.file.write = False
        s.show.statistics = False
        s.show.computationTime = False
        ti.automaticStepSize = not fixed
        ti.minimumStepSize = 1e-14
        if not fixed:
            ti.relativeTolerance, ti.absoluteTolerance = p, p * 1e-2
        t0 = time.perf_counter()
        mbs.SolveDynamic(s, solverType=getattr(exu.DynamicSolverType, self.solver))
        wall = time.perf_counter() - t0
        return wall, tip_of_angles(np.array(mbs.systemData.GetODE2Coordinates()))


def mjcf(n, joint, integrator, h):
    Ia, I, _ = inertia()
    quat = "0.7071067811865476 -0.7071067811865476 0 0"          # Rx(-pi/2)
    body = ""
    for i in reversed(range(n)):
        pos = "0 0 0" if i == 0 else f"{L} 0 0"
        jt = '<joint type="hinge" axis="0 0 1"/>' if joint == "revolute" else \
            '<joint type="ball"/>'
        site = f'<site name="tip" pos="{L} 0 0"/>' if i == n - 1 else ""
        body = (f'<body pos="{pos}" quat="{quat}">{jt}<inertial pos="{L / 2} 0 0" mass="{M}" '
                f'diaginertia="{Ia} {I} {I}"/>{site}{body}</body>')
    return (f'<mujoco><option timestep="{h}" integrator="{integrator}" gravity="0 0 -9.81">'
            f'<flag contact="disable" energy="disable"/></option>'
            f'<worldbody>{body}</worldbody></mujoco>')


class MuJoCo:
    def __init__(self, n, joint, integrator):
        import mujoco

        self.mj, self.n, self.joint, self.integrator = mujoco, n, joint, integrator

    def run(self, h):
        mj = self.mj
        model = mj.MjModel.from_xml_string(mjcf(self.n, self.joint, self.integrator, h))
        data = mj.MjData(model)
        if self.joint == "revolute":
            data.qpos[:] = Q0
        else:
            data.qpos[:] = np.tile([math.cos(Q0 / 2), 0.0, 0.0, math.sin(Q0 / 2)], self.n)
        steps = int(round(T_END / h))
        # MuJoCo writes its warnings (an unstable step size) to MUJOCO_LOG.TXT in the current
        # directory: run it in a scratch one, so that a bench run leaves nothing in the repository
        here = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="mujoco_") as scratch:
            os.chdir(scratch)
            try:
                mj.mj_forward(model, data)
                t0 = time.perf_counter()
                mj.mj_step(model, data, nstep=steps)
                wall = time.perf_counter() - t0
            finally:
                os.chdir(here)
        return wall, data.site_xpos[0].copy()


# ------------------------------------------------------------------ tuning and timing
def tune(run, params, ref, target, log, label, cap):
    best = None
    for p in params:
        try:
            wall, tip = run(p)
        except Exception as exc:                            # noqa: BLE001
            log(f"    {label} {p:.0e}: fails ({type(exc).__name__}: {str(exc)[:70]})")
            continue
        e = float(np.abs(tip - ref).max())
        log(f"    {label} {p:.0e}: error {e:.2e} m, {wall * 1e3:.2f} ms")
        if best is None or e < best[1]:
            best = (p, e, wall, False)
        if e <= target:
            return (p, e, wall, True)
        if wall > cap:
            break
    return best


def timed(run, p, repeats):
    return statistics.median(run(p)[0] for _ in range(repeats))


def reference(n, joint, log):
    """MuJoCo RK4 at h = 2e-5 s (error ~ h^4, about 1e-11 m here), cross-checked against
    fmu_mb recursive at rtol 1e-12 (an independent formulation and integrator)."""
    ref = MuJoCo(n, joint, "RK4").run(2e-5)[1]
    label = "MuJoCo RK4 h 2e-5"
    check = None
    try:
        check = float(np.abs(FmuMb(n, joint).run(1e-12, "recursive")[1] - ref).max())
        log(f"  reference {label}; fmu_mb recursive rtol 1e-12 differs by {check:.1e} m")
    except fmu_mb.FmuMbError as exc:
        log(f"  reference {label}; no fmu_mb cross-check ({exc})")
    return ref, label, check


def bench_one(n, joint, target, repeats, cap, log):
    log(f"== N = {n} ({joint})")
    ref, rlabel, check = reference(n, joint, log)
    row = dict(n=n, joint=joint, target=target, reference=rlabel, ref_check=check)
    fm = FmuMb(n, joint)
    form, w = fm.pick(log)
    row["fm_form"] = form
    if w * (T_END / 0.05) > 20 * cap:
        log(f"    fmu_mb: estimated {w * T_END / 0.05:.0f} s per run; skipped")
        fmr = None
    else:
        fmr = tune(fm.run, TOLS, ref, target, log, f"fmu_mb {form} rtol", cap)
    row["fm"] = fmr and dict(tol=fmr[0], err=fmr[1], ok=fmr[3],
                             wall=timed(fm.run, fmr[0], repeats))
    exs = []
    if joint == "revolute":
        for solver in ("RK67", "DOPRI5"):
            ex = Exudyn(n, solver)
            r = tune(ex.run, STEPS if solver == "RK67" else TOLS, ref, target, log,
                     f"exudyn {solver} {'h' if solver == 'RK67' else 'tol'}", cap)
            if r and r[3]:
                exs.append((timed(ex.run, r[0], repeats), solver, r))
    row["ex"] = (dict(solver=min(exs)[1], tol=min(exs)[2][0], err=min(exs)[2][1],
                      wall=min(exs)[0]) if exs else None)
    mjs = []
    for integ in ("RK4", "implicitfast"):
        mjr = MuJoCo(n, joint, integ)
        r = tune(mjr.run, STEPS, ref, target, log, f"mujoco {integ} h", cap)
        if r and r[3]:
            mjs.append((timed(mjr.run, r[0], repeats), integ, r))
    row["mj"] = (dict(integrator=min(mjs)[1], h=min(mjs)[2][0], err=min(mjs)[2][1],
                      wall=min(mjs)[0]) if mjs else None)
    log(f"  -> fmu_mb {row['fm']}, exudyn {row['ex']}, mujoco {row['mj']}")
    return row


def growth(rows, key):
    pts = [(r["n"], r[key]["wall"]) for r in rows if r[key] and r["n"] >= 8]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def table(rows, joint, target):
    out = [f"Spatial chain ({joint} joints), tip error <= {target:.0e} m at {T_END:g} s; "
           f"wall time of one 1 s run [ms], median.", "",
           "| N | fmu_mb (formulation, rtol) | Exudyn (solver, tol or h) | MuJoCo (integrator, h) "
           "| fmu_mb / Exudyn | fmu_mb / MuJoCo | ref check [m] |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        fm, ex, mj = r["fm"], r["ex"], r["mj"]

        def cell(d, a, b):
            return "-" if not d else f"{d['wall'] * 1e3:.2f} ({d[a]}, {d[b]:.0e})"

        def ratio(a, b):
            return "-" if not (a and b) else f"{a['wall'] / b['wall']:.2f}"

        fcell = "-" if not fm else f"{fm['wall'] * 1e3:.2f} ({r['fm_form']}, {fm['tol']:.0e})"
        out.append(f"| {r['n']} | {fcell} "
                   f"| {cell(ex, 'solver', 'tol')} | {cell(mj, 'integrator', 'h')} "
                   f"| {ratio(fm, ex)} | {ratio(fm, mj)} | "
                   f"{'-' if r['ref_check'] is None else format(r['ref_check'], '.0e')} |")
    out.append("")
    out.append("Growth exponent k of wall ~ N^k (N >= 8): "
               + ", ".join(f"{name} {k:.2f}" if k is not None else f"{name} -"
                           for name, k in (("fmu_mb", growth(rows, "fm")),
                                           ("Exudyn", growth(rows, "ex")),
                                           ("MuJoCo", growth(rows, "mj")))))
    return "\n".join(out)


def per_step(ns, log, steps=200, h=1e-3):
    """Wall time per fixed RK4 step (four right-hand sides) of each engine: the cost growth of
    one evaluation with N, apart from the step count (which grows with N as the chain whips
    faster). fmu_mb recursive rk4 in C, Exudyn RK44 (KinematicTree), MuJoCo RK4."""
    rows = []
    for n in ns:
        t_end = steps * h
        fm = FmuMb(n, "revolute")
        w_fm = min(fm.run(h, "recursive", t_end, "rk4")[0] for _ in range(3))
        ex = Exudyn(n, "RK44")
        global T_END
        saved, T_END = T_END, t_end
        try:
            w_ex = min(ex.run(h)[0] for _ in range(3))
            w_mj = min(MuJoCo(n, "revolute", "RK4").run(h)[0] for _ in range(3))
        finally:
            T_END = saved
        rows.append((n, w_fm / steps, w_ex / steps, w_mj / steps))
        log(f"  per step N = {n}: fmu_mb {w_fm / steps * 1e6:.1f} us, Exudyn "
            f"{w_ex / steps * 1e6:.1f} us, MuJoCo {w_mj / steps * 1e6:.1f} us")
    out = ["", "Cost of one fixed RK4 step (4 right-hand sides) [us], revolute chain, "
           f"{steps} steps of {h:g} s, best of 3:", "",
           "| N | fmu_mb recursive (C) | Exudyn RK44 | MuJoCo RK4 |", "|---|---|---|---|"]
    out += [f"| {n} | {a * 1e6:.1f} | {b * 1e6:.1f} | {c * 1e6:.1f} |" for n, a, b, c in rows]
    big = [r for r in rows if r[0] >= 8]
    if len(big) >= 2:
        x = np.log([r[0] for r in big])
        ks = [float(np.polyfit(x, np.log([r[i] for r in big]), 1)[0]) for i in (1, 2, 3)]
        out += ["", f"Growth exponent of the per-step cost (N >= 8): fmu_mb {ks[0]:.2f}, "
                f"Exudyn {ks[1]:.2f}, MuJoCo {ks[2]:.2f}"]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 2, 8, 16, one repeat")
    ap.add_argument("--n", type=int, nargs="*", help="chain lengths (default 2 ... 128)")
    ap.add_argument("--joint", default="revolute", choices=("revolute", "spherical"))
    ap.add_argument("--target", type=float, default=1e-6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0, help="stop tuning past this [s]")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--per-step", action="store_true",
                    help="only the per-step cost table (fixed RK4 steps)")
    a = ap.parse_args(argv)
    ns = a.n or ([2, 8, 16] if a.quick else [2, 4, 8, 16, 32, 64, 128])
    repeats = 1 if a.quick else a.repeats

    def log(msg):
        print(msg, flush=True)

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.per_step:
        md = per_step(ns, lambda m: print(m, flush=True))
        (out / "spatial_chain_per_step.md").write_text(md + "\n")
        print(md)
        return
    rows = []
    for n in ns:                      # results written after every N (a long run can stop)
        rows.append(bench_one(n, a.joint, a.target, repeats, a.cap, log))
        md = table(rows, a.joint, a.target)
        (out / f"spatial_chain_{a.joint}.md").write_text(md + "\n")
        (out / f"spatial_chain_{a.joint}.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(md)


if __name__ == "__main__":
    main()
