"""Imported robots as native FMUs (fmu-mb build robot.urdf): fmpy validate, the initial
angles set as parameters, 1 s from a random q0 with zero torque against Pinocchio's ABA
integrated by RK4 at 1e-5 s; the command line's info/simulate on a URDF."""
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio", reason="the reference dynamics are Pinocchio's (pip pin)")
pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")

from test_import_urdf import (ROBOTS, mimic_map, needs_robots,       # noqa: E402
                              pin_configuration)

from conftest import ROOT                                              # noqa: E402


def pinocchio_rk4(path, q0, t_end=1.0, dt=1e-5, change=None):
    """q(t_end) of the fixed-base robot from rest at q0 (independent joints), zero torque,
    joint damping; change(model) alters Pinocchio's model first (a payload, gravity). With
    mimic joints: Pinocchio's model with them eliminated (mimic=True; CRBA and RNEA), the
    damping of every joint acting through q_free = G q + offset (test_import_urdf.mimic_map);
    returns q_free."""
    pr, pf, Gm, off, red, _ = mimic_map(path)
    if change is not None:
        change(pr)
    pd = pr.createData()
    if pr.nv == pf.nv:
        damping = pr.damping.copy()

        def f(q, v):
            return pin.aba(pr, pd, q, v, -damping * v)
    else:
        def f(q, v):
            qp = pin_configuration(pr, red, q)
            M = pin.crba(pr, pd, qp)
            M = np.triu(M) + np.triu(M, 1).T
            b = pin.rnea(pr, pd, qp, v, np.zeros(pr.nv))
            return np.linalg.solve(M, -b - Gm.T @ (pf.damping * (Gm @ v)))
    q, v = q0.copy(), np.zeros(pr.nv)
    for _ in range(int(round(t_end / dt))):
        a1 = f(q, v)
        q2, v2 = q + 0.5 * dt * v, v + 0.5 * dt * a1
        a2 = f(q2, v2)
        q3, v3 = q + 0.5 * dt * v2, v + 0.5 * dt * a2
        a3 = f(q3, v3)
        q4, v4 = q + dt * v3, v + dt * a3
        a4 = f(q4, v4)
        q = q + dt / 6.0 * (v + 2 * v2 + 2 * v3 + v4)
        v = v + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
    return pr, Gm @ q + off


def build(path, out, *extra):
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "build", str(path), "-o", str(out),
                        "--quiet", *extra], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return out / f"{r.stdout.strip().splitlines()[-1].split('/')[-1]}", time.perf_counter() - t


def check_robot_fmu(tmp_path, rel, seed, extra=(), start=None, change=None):
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    path = ROBOTS / rel
    pr = pin.buildModelFromUrdf(str(path), mimic=True)    # the mimic joints follow
    pm = pin.buildModelFromUrdf(str(path))
    rng = np.random.default_rng(seed)
    lo, hi = pr.lowerPositionLimit, pr.upperPositionLimit
    q0 = lo + (hi - lo) * rng.uniform(0.25, 0.75, pr.nv)
    initial = {f"{pr.names[i]}.q0": float(q0[pr.joints[i].idx_q])
               for i in range(1, pr.njoints) if pr.joints[i].nq}
    # the initial angles are structural: set at build time (docs/import.md)
    sets = [a for k, v in initial.items() for a in ("--set", f"{k}={v!r}")]
    fmu, seconds = build(path, tmp_path, "--no-limits", *extra, *sets)
    assert validate_fmu(str(fmu)) == []
    res = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.1,
                       start_values={"solver.rtol": 1e-11, **(start or {})},
                       output=[f"{pm.names[i]}.{'angle' if pm.joints[i].shortname()[-2] == 'R' else 'position'}"
                               for i in range(1, pm.njoints)])
    assert res["time"][-1] == pytest.approx(1.0)
    _, q_ref = pinocchio_rk4(path, q0, change=change)
    q_fmu = np.array([res[n][-1] for n in res.dtype.names[1:]])
    d = q_fmu - q_ref
    revolute = np.array([n.endswith(".angle") for n in res.dtype.names[1:]])
    d[revolute] = np.angle(np.exp(1j * d[revolute]))    # .angle is in (-pi, pi]
    return np.abs(d).max(), seconds


@needs_robots
@pytest.mark.fmu
@pytest.mark.slow
@pytest.mark.parametrize("rel, seed", [("ur_description/urdf/ur5_robot.urdf", 1),
                                       ("panda_description/urdf/panda.urdf", 2)])
def test_native_robot_fmu_follows_pinocchio(tmp_path, rel, seed):
    err, seconds = check_robot_fmu(tmp_path, rel, seed)
    print(f"{rel}: |q_fmu - q_pinocchio| = {err:.2e} rad after 1 s; build {seconds:.1f} s")
    assert err < 1e-7


@needs_robots
@pytest.mark.fmu
@pytest.mark.slow
def test_native_fmu_parameters_payload_and_gravity_act_as_in_pinocchio(tmp_path):
    """The parameter program of an imported robot: payload (at wrist_3_link's origin) and
    gravity set as start values of the native UR5 FMU give Pinocchio's motion with the same
    point mass and gravity."""
    def change(pm):
        j = pm.getJointId("wrist_3_joint")
        pm.inertias[j] = pm.inertias[j] + pin.Inertia(1.5, np.zeros(3), np.zeros((3, 3)))
        pm.gravity.linear = np.array([0.0, 0.0, -6.0])
    err, _ = check_robot_fmu(tmp_path, "ur_description/urdf/ur5_robot.urdf", 3,
                             extra=("--payload-link", "wrist_3_link"),
                             start={"payload": 1.5, "gravity": 6.0}, change=change)
    assert err < 1e-7


@needs_robots
def test_cli_info_and_simulate_take_a_urdf(tmp_path):
    path = ROBOTS / "double_pendulum_description/urdf/double_pendulum.urdf"
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "info", str(path), "--base",
                        "floating"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "joint2.h [N.m]" in r.stdout and "joint1.q0" in r.stdout
    out = tmp_path / "dp.csv"
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "simulate", str(path), "--stop-time",
                        "0.2", "--set", "joint1.q0=0.3", "--input", "joint2.h=0.1", "-o",
                        str(out), "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    head = out.read_text().splitlines()[0].split(",")
    first = out.read_text().splitlines()[1].split(",")
    assert float(first[head.index("joint1.angle")]) == pytest.approx(0.3)


@pytest.mark.fmu
@pytest.mark.slow
def test_mjcf_arm_with_armature_and_limits_as_native_fmu_equals_python(tmp_path):
    """tests/data/mjcf/arm.xml (armature, joint limits with impacts, a free body) as a native
    FMU: its outputs equal the in-process tmt simulation (the Python reference of the
    armature) to 1e-9."""
    pytest.importorskip("mujoco", reason="MJCF import needs mujoco")
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    from fmu_mb import Settings, simulate
    from fmu_mb.importers.mjcf import load_mjcf

    src = ROOT / "tests" / "data" / "mjcf" / "arm.xml"
    fmu, _ = build(src, tmp_path)
    assert validate_fmu(str(fmu)) == []
    h = {"yaw.h": 0.5, "pitch.h": -0.3, "slide.h": 0.2}
    inp = np.array([(0.0, *h.values()), (1.0, *h.values())],
                   dtype=[("time", float)] + [(k, float) for k in h])
    r = simulate_fmu(str(fmu), stop_time=0.5, output_interval=0.05, input=inp,
                     start_values={"solver.rtol": 1e-11, "solver.atol": 1e-13})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_mjcf(src)
    p = simulate(m, 0.5, 0.05, inputs=h, settings=Settings(formulation="tmt", rtol=1e-11,
                                                           atol=1e-13))
    assert r["yaw_limit_upper.impacts"][-1] == p["yaw_limit_upper.impacts"][-1] == 1
    for n in ("yaw.angle", "pitch.angle", "roll.angle", "slide.position", "wrist.x", "free.z"):
        assert abs(r[n][-1] - p[n][-1]) < 1e-9, n


@needs_robots
@pytest.mark.fmu
@pytest.mark.slow
def test_panda_computed_torque_example_tracks_its_trajectory(tmp_path):
    """examples/panda_pd.py: the Panda's native FMU with the computed-torque controller FMU in
    fmpy follows the sinusoidal reference to 1e-3 rad after the start (the one-sample delay
    of the Jacobi loop is what remains; a wrong plant or sign would leave radians)."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import panda_pd
        err = panda_pd.main(["--stop-time", "2", "-o", str(tmp_path)])
    finally:
        sys.path.remove(str(ROOT / "examples"))
    assert err.shape[1] == 9 and err.max() < 1e-3
