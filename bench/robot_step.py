"""Franka Panda (7 DoF) 1 ms steps with torque input: fmu_mb's native FMU in a C host, MuJoCo's
mj_step with RK4, and Pinocchio's ABA with RK4 (C++ when a compiler and Pinocchio's headers
are there, else Python), each at the step that gives 1e-6 rad over 1 s; CPU time per 1 ms.

The robot: example-robot-data's panda.urdf with the finger slides fixed (the 7-DoF arm with
its hand; joint damping from the URDF, no joint limits, no contacts), from a seeded q0 at
rest, zero torque: the arm falls under gravity for 1 s (a hard test: it swings through
several radians). The reference q(1 s) is Pinocchio's ABA integrated by RK4 at 1e-5 s. The
accuracy of each engine is max |q(1 s) - q_ref(1 s)| over the joints; for the fixed-step
integrators (MuJoCo RK4, ABA + RK4) the step is halved from 1 ms until it is <= 1e-6 rad, and
the cost per 1 ms of simulated time is that of 1 ms / step steps. The native FMU runs its
settings listed in SETTINGS (rk4 at 1 and 0.5 ms, dopri5 and dop853 at rtol 1e-7, the default
dop853 at rtol 1e-9; each row shows its accuracy) with one communication step of 1 ms per
(setReal of the 7 torque inputs, doStep, getReal of the 7 angles) in bench/robot_host.c (a
C host that sets the solver parameters; CPU time after 200 warm-up steps).

    python bench/robot_step.py [-o out/robot_step] [--steps 2000] [--rounds 3]

The C++ ABA bench (bench/robot_step_aba.cpp) is compiled once into the output folder with
Pinocchio's and Eigen's headers of the pip packages (pin, cmeel-eigen); that takes minutes on
a loaded 2-core machine. Without them, ABA + RK4 is timed from Python (pin.aba per stage)
and the table says so.
"""
import argparse
import importlib.metadata
import re
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
TOL = 1e-6


def panda7(out):
    """The 7-DoF Panda URDF (finger slides fixed) in `out`; its path."""
    dist = importlib.metadata.distribution("example-robot-data")
    src = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/"
                                "panda_description/urdf/panda.urdf")).read_text()
    text = re.sub(r'(<joint name="panda_finger_joint[12]" type=")prismatic(")', r"\1fixed\2",
                  src)
    path = out / "panda7.urdf"
    path.write_text(text)
    return path


def q_start():
    rng = np.random.default_rng(7)
    lo = np.array([-2.9, -1.76, -2.9, -3.07, -2.9, -0.02, -2.9])
    hi = np.array([2.9, 1.76, 2.9, -0.07, 2.9, 3.75, 2.9])
    return lo + (hi - lo) * rng.uniform(0.3, 0.7, 7)


def pin_rk4(urdf, q0, dt, t_end=1.0):
    import pinocchio as pin
    m = pin.buildModelFromUrdf(str(urdf))
    d = m.createData()
    damping = m.damping.copy()
    q, v = q0.copy(), np.zeros(m.nv)

    def f(q, v):
        return pin.aba(m, d, q, v, -damping * v)
    n = int(round(t_end / dt))
    t0 = time.process_time()
    for _ in range(n):
        a1 = f(q, v)
        a2 = f(q + 0.5 * dt * v, v + 0.5 * dt * a1)
        a3 = f(q + 0.5 * dt * (v + 0.5 * dt * a1), v + 0.5 * dt * a2)
        a4 = f(q + dt * (v + 0.5 * dt * a2), v + dt * a3)
        q, v = (q + dt * (v + dt / 6.0 * (a1 + a2 + a3)),
                v + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4))
    return q, (time.process_time() - t0) / n * 1e6


def cpp_aba(out, urdf):
    """The compiled C++ ABA + RK4 bench, or (None, why)."""
    import pinocchio as pin
    exe = out / "robot_step_aba"
    model = out / "panda7.bin"
    pin.buildModelFromUrdf(str(urdf)).saveToBinary(str(model))
    if exe.exists():
        return exe, model, None
    cxx = shutil.which("g++") or shutil.which("c++")
    prefix = Path(importlib.metadata.distribution("pin").locate_file("cmeel.prefix"))
    if cxx is None or not (prefix / "include" / "eigen3").is_dir():
        return None, None, ("no C++ compiler or no Eigen headers (pip cmeel-eigen): ABA + RK4 "
                            "from Python")
    res = subprocess.run(
        [cxx, "-O3", "-DNDEBUG", "-march=native", "-std=c++17",
         "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
         "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30", f"-I{prefix / 'include'}",
         f"-I{prefix / 'include' / 'eigen3'}", str(HERE / "robot_step_aba.cpp"), "-o", str(exe),
         f"-L{prefix / 'lib'}", "-lpinocchio_default", "-lboost_serialization",
         "-lboost_filesystem", f"-Wl,-rpath,{prefix / 'lib'}"], capture_output=True, text=True)
    if res.returncode != 0:
        return None, None, f"the C++ bench did not compile: {res.stderr[-300:]}"
    return exe, model, None


def run_cpp(exe, model, q0, dt, steps):
    res = subprocess.run([str(exe), str(model), repr(float(dt)), str(steps),
                          *(repr(float(x)) for x in q0)],
                         capture_output=True, text=True, check=True)
    f = dict(line.split("=", 1) for line in res.stdout.split())
    return np.array([float(x) for x in f["q"].split(",")]), float(f["cpu_us_per_step"])


def mujoco_model(urdf):
    import mujoco
    from lxml import etree
    root = etree.parse(str(urdf)).getroot()
    for tag in ("visual", "collision"):
        for el in list(root.iter(tag)):
            el.getparent().remove(el)
    m = mujoco.MjModel.from_xml_string(etree.tostring(root).decode())
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    return m


def run_mujoco(m, q0, dt, t_end=1.0, time_it=False, rounds=3):
    """(q(t_end), CPU us per 1 ms: one mj_step call of 1 ms / dt steps per ms, ctrl set)."""
    import mujoco
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    k = int(round(1e-3 / dt))
    n = int(round(t_end / 1e-3))
    for _ in range(n):
        d.ctrl[:] = 0.0
        mujoco.mj_step(m, d, k)
    q = d.qpos.copy()
    cost = None
    if time_it:
        costs = []
        for _ in range(rounds):
            d = mujoco.MjData(m)
            d.qpos[:] = q0
            t0 = time.process_time()
            for _ in range(n):
                d.qfrc_applied[0] = 0.0            # the torque input of joint 1
                mujoco.mj_step(m, d, k)
                d.qpos[:7].copy()                  # the outputs
            costs.append((time.process_time() - t0) / n * 1e6)
        cost = statistics.median(costs)
    return q, cost


#: native FMU settings tried, cheapest first: (label, {parameter: value})
SETTINGS = ([(f"rk4, step 1/{k} ms", {"solver.method": "rk4", "solver.step": 1e-3 / k})
             for k in (1, 2, 3, 4)]
            + [(f"dopri5, rtol {r:g}", {"solver.method": "dopri5", "solver.rtol": r})
               for r in (1e-6, 1e-7)]
            + [("dop853, rtol 1e-7", {"solver.method": "dop853", "solver.rtol": 1e-7}),
               ("dop853, rtol 1e-9 (default)", {})])


def native(out, urdf, q0, steps, rounds):
    """[(label, q(1 s), CPU us per 1 ms step in the C host)] of the native FMU's SETTINGS, and
    its build time [s]."""
    from fmpy import extract, read_model_description

    from fmu_mb.fmi.native_build import build_native_fmu
    from fmu_mb.importers import model_file

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = model_file(urdf, out, limits=False)
        fmu = build_native_fmu(src, out, {f"{j}.q0": float(q) for j, q in zip(JOINTS, q0)})
    seconds = time.perf_counter() - t
    md = read_model_description(str(fmu))
    var = {v.name: v for v in md.modelVariables}
    folder = extract(str(fmu), str(out / "panda7_x"))
    host = build_robot_host(out)
    ins = ",".join(str(var[f"{j}.h"].valueReference) for j in JOINTS)
    outs = ",".join(str(var[f"{j}.angle"].valueReference) for j in JOINTS)
    rows = []
    for label, params in SETTINGS:
        args = [f"{'S' if isinstance(v, str) else 'R'}:{var[k].valueReference}={v}"
                for k, v in params.items()]

        def run(n):
            res = subprocess.run([str(host), folder, md.guid, md.coSimulation.modelIdentifier,
                                  "1e-3", str(n), ins, outs, *args], capture_output=True,
                                 text=True, env={})
            if res.returncode != 0:
                raise RuntimeError(res.stderr[-2000:])
            f = dict(line.split("=", 1) for line in res.stdout.split())
            return (np.array([float(x) for x in f["y"].split(",")]),
                    float(f["cpu_us_per_step"]))
        q, _ = run(800)                  # 200 warm-up + 800 steps: q at 1 s
        cost = statistics.median(run(steps)[1] for _ in range(rounds))
        rows.append((label, q, cost))
    return rows, seconds


def build_robot_host(out):
    """bench/robot_host.c compiled into `out` (once)."""
    host = out / "robot_host"
    if not host.exists():
        cc = shutil.which("cc") or shutil.which("gcc")
        subprocess.run([cc, "-O2", "-o", str(host), str(HERE / "robot_host.c"), "-ldl"],
                       check=True)
    return host


def wrap(d):
    return np.angle(np.exp(1j * d))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-o", "--output", default="out/robot_step")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    urdf = panda7(out)
    q0 = q_start()
    rows = []
    exe, model_bin, why = cpp_aba(out, urdf)
    if exe is not None:
        q_ref, _ = run_cpp(exe, model_bin, q0, 1e-5, 100000)
    else:
        q_ref, _ = pin_rk4(urdf, q0, 1e-5)
    print(f"reference: Pinocchio ABA + RK4 at 1e-5 s ({'C++' if exe else 'Python'}); "
          f"q(1 s) = {np.round(q_ref, 4).tolist()}")

    natives, seconds = native(out, urdf, q0, args.steps, args.rounds)
    for label, q, cost in natives:
        rows.append((f"fmu_mb native FMU, C host: {label}", "-",
                     np.abs(wrap(q - q_ref)).max(), cost))
    print(f"native FMU built in {seconds:.1f} s")

    m = mujoco_model(urdf)
    for k in range(1, 65):                       # k RK4 steps per 1 ms
        dt = 1e-3 / k
        q, _ = run_mujoco(m, q0, dt)
        err = np.abs(q - q_ref).max()
        if err <= TOL:
            break
    _, cost = run_mujoco(m, q0, dt, time_it=True, rounds=args.rounds)
    rows.append(("MuJoCo mj_step RK4 (Python loop, nstep per call)", f"1/{k} ms", err, cost))

    for k in range(1, 65):
        dt = 1e-3 / k
        if exe is not None:
            q, per_step = run_cpp(exe, model_bin, q0, dt, int(round(1.0 / dt)))
        else:
            q, per_step = pin_rk4(urdf, q0, dt)
        err = np.abs(q - q_ref).max()
        if err <= TOL:
            break
    if exe is not None:
        per = [run_cpp(exe, model_bin, q0, dt, int(round(1.0 / dt)))[1]
               for _ in range(args.rounds)]
        per_step = statistics.median(per)
    rows.append((f"Pinocchio ABA + RK4 ({'C++' if exe else 'Python: ' + why})", f"1/{k} ms",
                 err, per_step * 1e-3 / dt))
    print(f"\n{'engine':62s} {'step [s]':>9s} {'|q - q_ref|':>12s} {'CPU us / 1 ms':>14s}")
    for name, step, err, cost in rows:
        flag = "" if err <= TOL else "   (above 1e-6 rad)"
        print(f"{name:62s} {step:>9s} {err:12.2e} {cost:14.2f}{flag}")
    return rows


if __name__ == "__main__":
    main()
