"""Regenerate docs/validation.md: fmu_mb's results against references that share no code with
it, computed now (nothing is copied from earlier runs).

    python docs/gen_validation.py            # 6 to 7 minutes; writes docs/validation.md
    python docs/gen_validation.py --full     # about 20 min: every robot, 10^4 impacts, all FMUs
    python docs/gen_validation.py --no-fmu   # without the native FMUs (no C compiler needed)
    python docs/gen_validation.py --only a01,a03   # print these tables, write nothing

Each table is one reference: what it is, its source, the tolerance the tests hold fmu_mb to,
and fmu_mb's error per route (in process: `simulate()` with default settings; the
pure-Python Newton-Euler formulation; the model's native FMU in fmpy) or per case. The
references are the test suite's own: closed forms, published solutions (IFToMM A01 to A04,
the Test Set for IVP Solvers), the seeds' worked examples, Exudyn, Pinocchio and MuJoCo; the
checks import the tests' helpers (tests/ and bench/ are on the path), so a number here comes
from the same computation as the test that asserts it.
"""
import argparse
import datetime
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

from fmu_mb import load_model, simulate  # noqa: E402

MODELS = ROOT / "models"
FULL = False            # --full: every robot, 10^4 impacts, every model's FMUs, A02 N = 40


def table(title, source, what, tol, errs, col="route"):
    """A reference's table: rows (label, error, tolerance) from {label: error}; an error that
    is a string says why that row was not computed."""
    return {"title": title, "source": source, "what": f"error in {what}", "col": col,
            "rows": [(k, e, tol) for k, e in errs.items()]}


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _fmu_run(name, stop, interval, start, outputs, tmp):
    """The model's native FMU in fmpy: the outputs at stop."""
    from fmpy import simulate_fmu

    from fmu_mb.fmi.native_build import build_native_fmu
    fmu = build_native_fmu(MODELS / f"{name}.py", Path(tmp) / name)
    r = simulate_fmu(str(fmu), stop_time=stop, output_interval=interval, start_values=start,
                     output=list(outputs))
    return {k: r[k] for k in outputs}, r["time"]


def _routes(name, stop, interval, outputs, start, fmu, tmp, **sim):
    """{route: {output: final value}}."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_model(MODELS / f"{name}.py", **start)
        r = simulate(m, stop, interval, **sim)
        out["in process"] = {k: r[k] for k in outputs}, r["time"]
        r = simulate(m, stop, interval, formulation="newton_euler", **sim)
        out["Python (newton_euler)"] = {k: r[k] for k in outputs}, r["time"]
    if fmu:
        out["native FMU (fmpy)"] = _fmu_run(name, stop, interval, start, outputs, tmp)
    return out


# ---------------------------------------------------------------- the references
def double_pendulum(fmu, tmp):
    from test_integrate import reference_double_pendulum
    m = load_model(MODELS / "double_pendulum.py")
    ref = reference_double_pendulum(m.parameter_values, 2.0)
    runs = _routes("double_pendulum", 2.0, 0.01, ("rod1.phi", "rod2.phi"), {}, fmu, tmp)
    return table("Double pendulum of two rods (seeds, ch.1 example 1)",
            "Lagrange's equations in the two absolute angles, scipy DOP853 rtol 1e-13",
            "angles at 2 s [rad]", 1e-7,
            {k: max(abs(v["rod1.phi"][-1] - ref[0]), abs(v["rod2.phi"][-1] - ref[1]))
             for k, (v, _) in runs.items()})


def a02(fmu, tmp):
    from test_integrate import n_four_bar_reference
    ref = n_four_bar_reference(2, 10.0)
    runs = _routes("n_four_bar", 10.0, 0.01, ("B0.x", "B0.y"), {"N": 2}, fmu, tmp)
    return table("IFToMM A02, N-four-bar (N = 2), 10 s through its collinear poses",
            "closed form of the parallel cranks (one coordinate), scipy DOP853 rtol 1e-13",
            "point B0 at 10 s [m]", 1e-6,
            {k: max(abs(v["B0.x"][-1] - ref[0]), abs(v["B0.y"][-1] - ref[1]))
             for k, (v, _) in runs.items()})


def a04(fmu, tmp):
    ref = np.genfromtxt(ROOT / "tests" / "data" / "bricard_p3_reference.csv", delimiter=",",
                        names=True, skip_header=1)
    k = int(np.flatnonzero(np.isclose(ref["t"], 10.0))[0])
    want = np.array([ref["P3x"][k], ref["P3y"][k], ref["P3z"][k]])
    runs = _routes("bricard", 10.0, 0.5, ("P3.x", "P3.y", "P3.z"), {}, fmu, tmp)
    return table("IFToMM A04, Bricard mechanism (redundant loop), 10 s",
            "the loop's one-coordinate Lagrange equation (DOP853 rtol 1e-13) and Exudyn, "
            "agreeing to 1e-9 m (tests/data/bricard_p3_reference.csv)",
            "point P3 at 10 s [m]", 1e-6,
            {k_: float(np.abs(np.array([v["P3.x"][-1], v["P3.y"][-1], v["P3.z"][-1]]) - want)
                       .max()) for k_, (v, _) in runs.items()})


def hinged_body_spring(fmu, tmp):
    m = load_model(MODELS / "hinged_body_spring.py", phi0=0.4)
    p = m.parameter_values
    L, mass, k, g = p["l"], p["m"], p["k"], p["g"]

    def f(t, y):
        B = 2 * L / 3 * np.array([np.cos(y[0]), np.sin(y[0])])
        d = B - np.array([0.0, L / 2])
        lv = np.hypot(*d)
        dlv = d @ (2 * L / 3 * np.array([-np.sin(y[0]), np.cos(y[0])])) / lv
        torque = -mass * g * L / 2 * np.cos(y[0]) - k * (lv - L) * dlv
        return [y[1], torque / (mass * L ** 2 / 3)]

    ref = solve_ivp(f, (0, 1.5), [0.4, 0.0], method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
    runs = _routes("hinged_body_spring", 1.5, 0.01, ("A.angle",), {"phi0": 0.4}, fmu, tmp)
    return table("Hinged body with a spring (seeds, spring-damper example)",
            "one-coordinate equation of motion, scipy DOP853 rtol 1e-13",
            "angle at 1.5 s [rad]", 1e-7,
            {k_: abs(v["A.angle"][-1] - ref[0]) for k_, (v, _) in runs.items()})


def bouncing_ball(fmu, tmp):
    """Impact times of a ball dropped from h with restitution e: t1 = sqrt(2h/g), each
    flight after it e times the previous one (2 e^k sqrt(2h/g))."""
    m = load_model(MODELS / "bouncing_ball.py", e=0.5)
    p = m.parameter_values
    t1 = np.sqrt(2 * p["h0"] / p["g"])
    runs = _routes("bouncing_ball", 2.0, 0.001, ("floor.impacts", "floor.last_time"),
                   {"e": 0.5}, fmu, tmp)
    errs = {}
    for k_, (v, t) in runs.items():
        first = np.flatnonzero(np.diff(v["floor.impacts"]) > 0)[:4] + 1
        times = v["floor.last_time"][first]
        want = t1 + np.cumsum([0.0] + [2 * 0.5 ** j * t1 for j in range(1, len(times))])
        errs[k_] = float(np.abs(times - want).max()) if len(times) == 4 else float("inf")
    return table("Bouncing ball, restitution e = 0.5, first four impacts",
            "closed form: each flight e times the previous one (Newton's restitution law)",
            "impact times [s]", 1e-9, errs)


def incline_block(fmu, tmp):
    """A block released on a plane tilted by alpha = 0.3 rad with mu = 0.2 < tan(alpha):
    its distance along the slope after 1 s is g (sin a - mu cos a) t^2 / 2."""
    alpha, mu, c = 0.3, 0.2, 0.05
    x0, z0 = c / 2 * np.sin(alpha), c / 2 * np.cos(alpha)
    want = 9.81 * (np.sin(alpha) - mu * np.cos(alpha)) / 2
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_model(MODELS / "incline_block.py", alpha=alpha, mu=mu)
        r = simulate(m, 1.0, 0.5)
    runs["in process"] = r
    if fmu:
        runs["native FMU (fmpy)"], _ = _fmu_run("incline_block", 1.0, 0.5, {"mu": mu},
                                                ("block.x", "block.z"), tmp)
    errs = {}
    for k, v in runs.items():
        d = (v["block.x"][-1] - x0) * np.cos(alpha) - (v["block.z"][-1] - z0) * np.sin(alpha)
        errs[k] = abs(d - want) / want
    return table("Block sliding down an incline with Coulomb friction (mu = 0.2, alpha = 0.3 rad)",
            "closed form g (sin alpha - mu cos alpha) t^2 / 2", "distance at 1 s (relative)",
            1e-8, errs)


def rolling_ball(fmu, tmp):
    """A ball thrown at v0 = 2 m/s without spin, mu = 0.3: it rolls from t* = 2 v0 / (7 mu g)
    on at vx = 5/7 v0."""
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs["in process"] = simulate(load_model(MODELS / "rolling_ball.py"), 0.4, 0.1)
    if fmu:
        runs["native FMU (fmpy)"], _ = _fmu_run("rolling_ball", 0.4, 0.1, {}, ("ball.vx",),
                                                tmp)
    want = 5 / 7 * 2.0
    return table("Ball thrown on the ground with Coulomb friction (v0 = 2 m/s, no spin, mu = 0.3)",
            "closed form: rolling from t* = 2 v0 / (7 mu g) = 0.194 s at vx = 5/7 v0",
            "vx at 0.4 s (relative)", 1e-8,
            {k: abs(v["ball.vx"][-1] - want) / want for k, v in runs.items()})


def a01(fmu, tmp):
    import references as R
    runs = _routes("simple_pendulum", 10.0, 0.01, ("bob.x", "bob.y"), {}, fmu, tmp)
    errs = {}
    for k, (v, t) in runs.items():
        x, y = R.simple_pendulum(t)
        errs[k] = float(max(np.abs(v["bob.x"] - x).max(), np.abs(v["bob.y"] - y).max()))
    return table("IFToMM A01, simple pendulum, 10 s",
                 "a 1 kg point mass on a massless 1 m rod released horizontally from rest "
                 "(models/simple_pendulum.py); closed form sin(th/2) = k sn(K - sqrt(g/L) t, k) "
                 "with Jacobi's elliptic functions (scipy.special.ellipj)",
                 "bob position over 10 s [m]", 1e-8, errs)


def a03(fmu, tmp):
    import references as R
    outs = tuple(f"body{k}.phi" for k in range(1, 8))
    runs = _routes("andrews_squeezer", 0.03, 0.001, outs, {}, fmu, tmp)
    want = np.array(R.ANDREWS_Q_AT_003)
    return table("IFToMM A03, Andrews' squeezing mechanism, 0.03 s",
                 "the seven-body mechanism of Hairer and Wanner (models/andrews_squeezer.py); "
                 "the Test Set for IVP Solvers' reference solution of problem 'andrews' at "
                 "0.03 s (PSIDE, rtol = atol = 1e-14)",
                 "the seven angles at 0.03 s [rad]", 1e-7,
                 {k: float(np.abs(R.andrews_coordinates([v[o][-1] for o in outs]) - want).max())
                  for k, (v, _) in runs.items()})


def a02_n40(fmu, tmp):
    if not FULL:
        return table("IFToMM A02 with N = 40, 20 s", "closed form of the parallel cranks "
                     "(one coordinate), scipy DOP853 rtol 1e-13", "point B0 at 20 s [m]", 1e-6,
                     {"in process": "not computed: run with --full (2.5 to 4 min)"})
    from test_loops import b0_error, run_a02

    from fmu_mb import Settings
    m = load_model(MODELS / "n_four_bar.py", N=40)
    st = _quiet(run_a02, m, 20.0, Settings(formulation="recursive"))
    return table("IFToMM A02 with N = 40, 20 s", "closed form of the parallel cranks (one "
                 "coordinate), scipy DOP853 rtol 1e-13", "point B0 at 20 s [m]", 1e-6,
                 {"in process": float(b0_error(m, st, "recursive"))})


def seeds(fmu, tmp):
    """The seeds' worked examples, each against its hand-derived closed form."""
    import test_seed_examples as S
    import test_reduction as SR
    from test_tmt import crane_seed

    from fmu_mb import Settings, advance, initial_state, output_names, output_values
    from fmu_mb.dynamics import impact
    from fmu_mb.dynamics.formulations import newton_euler, tmt
    from fmu_mb.mechanics import constraints
    from fmu_mb.mechanics import kinematics as kin
    from fmu_mb.mechanics.elements import applied_forces
    rows = []
    rng = np.random.default_rng(1234)
    m = load_model(MODELS / "double_pendulum.py")
    p = m.parameter_values
    e = 0.0
    for _ in range(5):
        x, xd = rng.normal(size=6), rng.normal(size=6)
        _, D, conv, _ = constraints.evaluate(m, x, xd, 0.0)
        Ds, cs = S.seed_jacobian_and_convective_terms(x, xd, p["l1"], p["l2"])
        e = max(e, np.abs(D - Ds).max(), np.abs(conv - cs).max())
    rows.append(("seed 000 ex. 1, double pendulum: Jacobian and convective terms (vb2.2, "
                 "vb2.3), 5 random states", e, 1e-13))
    e = 0.0
    for phi in [(0.3, 1.2), (-0.7, 2.5), (1.4, 1.4)]:
        mm = load_model(MODELS / "double_pendulum.py", phi1=phi[0], phi2=phi[1])
        s = initial_state(mm, Settings(formulation="newton_euler"))
        dyn = newton_euler.accelerations(mm, s.q, s.qd, 0.0, np.zeros(2))
        M, Q = S.double_pendulum_minimal(phi, [0, 0], p["m1"], p["m2"], p["l1"], p["l2"],
                                         p["g"])
        want = np.linalg.solve(M, Q)
        e = max(e, (np.abs(dyn.qdd[[2, 5]] - want) / np.abs(want)).max())
    rows.append(("seed 000 ex. 1: angular accelerations from rest, 3 poses (relative)", e,
                 1e-12))
    e = 0.0
    for l in (1.0, 0.37):
        ps = kin.PairSet.make([1], [0], [(0.0, l / 2)], [(l / 6, 0.0)])
        length, J, _ = kin.distance(ps, np.array([l / 2, 0, 0, 0, 0, 0.0]), np.zeros(6))
        e = max(e, abs(length[0] - l + l / 6), np.abs(J[0, 3:] - [4 / 5, -3 / 5, -l / 10]).max())
    rows.append(("seed 000 ex. 3, hinged body: spring elongation D_v = -l/6 and its Jacobian",
                 e, 1e-15))
    mh = load_model(MODELS / "hinged_body_spring.py", g=0.0)
    l, k = mh.parameter("l").value, mh.parameter("k").value
    f = applied_forces(mh, np.array([l / 2, 0.0, 0.0]), np.zeros(3), 0.0, np.zeros(1))
    rows.append(("seed 000 ex. 3: spring force on the body, -D_v,i' k D_v",
                 float(np.abs(f + np.array([4 / 5, -3 / 5, -l / 10]) * (-k * l / 6)).max()),
                 1e-13))
    mu = load_model(MODELS / "double_pendulum.py", phi1=np.pi / 2, phi2=np.pi / 2)
    g, m1, m2, l1, l2 = p["g"], p["m1"], p["m2"], p["l1"], p["l2"]
    h = np.array([-(m1 * g * l1 / 2 + m2 * g * (l1 + l2 / 2)), -m2 * g * l2 / 2])
    s = initial_state(mu, Settings(formulation="newton_euler"))
    out = dict(zip(output_names(mu), output_values(mu, s, h)))
    e = max(abs(out["A.fx"] + (m1 + m2) * g) / ((m1 + m2) * g), abs(out["B.fx"] + m2 * g)
            / (m2 * g), abs(out["A.fy"]), abs(out["B.fy"]))
    rows.append(("seed 000 (vb2.4): statics reactions of the upright double pendulum "
                 "(relative)", e, 1e-12))
    mc = load_model(MODELS / "container_crane.py", mc=37.0)
    pc = mc.parameter_values
    e = 0.0
    for _ in range(5):
        q, qd, Qx = rng.normal(size=2) * 2, rng.normal(size=2), rng.normal() * 100
        Mbar, fbar, *_ = tmt.reduced_equations(mc, q, qd, 0.0, np.array([Qx]))
        M, rhs = crane_seed(q, qd, Qx, pc["m"], pc["mc"], pc["l"], pc["g"])
        e = max(e, np.abs(Mbar - M).max() / np.abs(M).max(),
                np.abs(fbar - rhs).max() / np.abs(rhs).max())
    rows.append(("seed 000 (vb1.9), container crane: reduced mass matrix and forces of tmt "
                 "(relative)", e, 1e-12))
    md = load_model(MODELS / "container_crane_driven.py")
    pd = md.parameter_values
    r = simulate(md, 2.0, 0.1, formulation="tmt")
    w = 2 * np.pi * pd["frequency"]
    xdd = pd["amplitude"] * w * w * np.cos(w * r["time"])
    phi, phid = r["phi.angle"], r["phi.rate"]
    phidd = (-pd["g"] * np.sin(phi) - xdd * np.cos(phi)) / pd["l"]
    Qx = pd["m"] * xdd + pd["m"] * pd["l"] * (np.cos(phi) * phidd - phid ** 2 * np.sin(phi))
    rows.append(("seed 001, driven crane: the drive's effort is the seed's cart force Q_x "
                 "(relative to max Q_x)",
                 float(np.abs(r["cart_motion.effort"] - Qx).max() / np.abs(Qx).max()), 1e-9))
    ms = load_model(MODELS / "singular_pendulum.py", m=2.0, L=0.7)
    e = 0.0
    for alpha, gamma in [(0.3, 1.2), (-0.4, 0.05), (1.0, -2.0)]:
        rod1 = [0.35 * np.sin(alpha), -0.35 * np.cos(alpha), alpha - np.pi / 2]
        ball = [0.7 * np.sin(alpha) + 0.7 * np.sin(alpha + gamma),
                -0.7 * np.cos(alpha) - 0.7 * np.cos(alpha + gamma), alpha + gamma - np.pi / 2]
        x = np.array(rod1 + ball)
        c = 1 + np.cos(gamma)
        e = max(e, np.abs(impact.reduced_mass_matrix(ms, x)
                          - 0.98 * np.array([[2 * c, c], [c, 1.0]])).max(),
                abs(impact.criterion(ms, x, 0) - np.sin(gamma) ** 2))
    rows.append(("seed 002 eq. (1), singular pendulum: reduced mass matrix and det M / (m L^2)^2"
                 " = sin^2 gamma", e, 1e-12))
    for method, tol in (("classical", 1e-12), ("reduction", 1e-7)):
        mm = load_model(MODELS / "singular_pendulum.py", method=method, k=1.0)
        pp = mm.parameter_values
        st = advance(mm, initial_state(mm), 0.6)
        c = st.extra["contacts"]["string"]
        rows.append((f"seed 002: first impact time of the string, {method} impact equations "
                     "[s]", abs(c["last_time"] - SR.first_impact_time(pp["alpha0"],
                                                                       pp["gamma0"])), tol))
    return {"title": "The seeds' worked examples",
            "source": "hand-derived closed forms of seeds 000 (examples 1 and 3, the container "
                      "crane), 001 (inverse dynamics) and 002 (Drenovac's reduction); the "
                      "checks of tests/test_seed_examples.py, test_tmt.py, "
                      "test_inverse_dynamics.py, test_reduction.py",
            "what": "error in the worked number", "col": "example", "rows": rows}


def friction_closed_forms(fmu, tmp):
    """Coulomb friction's closed forms beyond the sliding block and the thrown ball."""
    import test_friction as TF
    import test_rim as TR

    from fmu_mb.dynamics.integrate import Settings
    rows = []
    alpha, c = 0.3, 0.05
    x0, z0 = c / 2 * np.sin(alpha), c / 2 * np.cos(alpha)

    def stuck(v):
        d = (v["block.x"][-1] - x0) * np.cos(alpha) - (v["block.z"][-1] - z0) * np.sin(alpha)
        return float(max(abs(d), abs(v["block.y"][-1])))
    r = _quiet(simulate, load_model(MODELS / "incline_block.py", alpha=alpha, mu=0.5), 2.0, 1.0)
    rows.append(("block on the incline sticks (mu = 0.5 > tan 0.3), distance after 2 s [m], in "
                 "process", stuck(r), 1e-9))
    if fmu:
        v, _ = _fmu_run("incline_block", 2.0, 1.0, {"mu": 0.5},
                        ("block.x", "block.y", "block.z"), tmp)
        rows.append(("the same, native FMU (fmpy) [m]", stuck(v), 1e-9))
    v0, w0, R = 2.0, -60.0, 0.1
    want = (5 * v0 + 2 * R * w0) / 7
    r = _quiet(simulate, load_model(MODELS / "rolling_ball.py", v0=v0, w0=w0), 1.0, 0.5,
               settings=Settings(rtol=1e-11, atol=1e-13))
    rows.append(("ball with backspin (w0 = -60 rad/s) comes back rolling at (5 v0 + 2 r w0) / 7"
                 ", vx at 1 s (relative), in process", abs(r["ball.vx"][-1] - want) / abs(want),
                 1e-8))
    if fmu:
        v, _ = _fmu_run("rolling_ball", 1.0, 0.5, {"w0": w0, "solver.rtol": 1e-11,
                                                   "solver.atol": 1e-13}, ("ball.vx",), tmp)
        rows.append(("the same, native FMU (fmpy)", abs(v["ball.vx"][-1] - want) / abs(want),
                     1e-8))
    for mu in (0.5, 0.1):
        a_, r_ = 0.4, 0.1
        res = _quiet(simulate, TF._disc(a_, mu, r_), 1.0, 0.25)
        rolls = mu > np.tan(a_) / 3
        a = 2 / 3 * 9.81 * np.sin(a_) if rolls else 9.81 * (np.sin(a_) - mu * np.cos(a_))
        dx, dy = res["disc.x"] + r_ * np.sin(a_), res["disc.y"] - r_ * np.cos(a_)
        s = -(dx * np.cos(a_) + dy * np.sin(a_))
        t = res["time"][1:]
        rows.append((f"planar disc down a 0.4 rad incline, mu = {mu}: "
                     f"{'rolls, a = 2/3 g sin' if rolls else 'slips, a = g (sin - mu cos)'}"
                     ", distance (relative), in process",
                     float(np.abs(s[1:] - a * t ** 2 / 2).max() / (a / 2)), 1e-9))
    g, v0, mu, R = 9.81, 2.0, 0.4, 0.3
    res = _quiet(simulate, TR.wheel.build(v0=v0, w0=0.0, mu=mu, R=R), 0.4, 0.02)
    rows.append(("spatial wheel thrown sliding rolls on at 2/3 v0 after t* = v0 / (3 mu g), vx "
                 "at 0.4 s (relative), in process", abs(res["wheel.vx"][-1] - 2 / 3 * v0)
                 / (2 / 3 * v0), 1e-8))
    mu, m, M, v0 = 0.4, 1.0, 3.0, 2.0
    res = _quiet(simulate, TF._plank(mu, m, M, v0), 1.0, 0.05)
    v_end = m * v0 / (m + M)
    rows.append(("block thrown onto a free plank (body-body friction): both move on at "
                 "m v0 / (m + M), velocities at 1 s [m/s], in process",
                 float(max(abs(res["block.vx"][-1] - v_end), abs(res["plank.vx"][-1] - v_end))),
                 1e-12))
    loss = res["c0.slide_loss"][-1] + res["c1.slide_loss"][-1]
    rows.append(("the same: energy dissipated by sliding, m v0^2 M / (2 (m + M)) [J]",
                 float(abs(loss - m * v0 ** 2 * M / (2 * (m + M)))), 1e-9))
    return {"title": "Coulomb friction: sticking, backspin, rolling discs, a plank",
            "source": "closed forms of the rigid-body motion with Coulomb friction (the checks "
                      "of tests/test_friction.py and tests/test_rim.py)",
            "what": "error in the closed-form quantity", "col": "case", "rows": rows}


def impacts(fmu, tmp):
    import test_friction as TF
    n = 10000 if FULL else 600
    rng = np.random.default_rng(36)
    worst = {}
    TF._random_impacts(TF._bar, n // 2, rng, worst)
    TF._random_impacts(TF._box, n // 2, rng, worst)
    return {"title": f"Frictional impacts never gain energy ({n} random impacts)",
            "source": "the impact law's energy property: random planar bars (two ends) and "
                      "spatial boxes (four corners), random poses, velocities, closed sets, "
                      "restitution and mu in {0.05, 0.3, 0.8, 1.5} (tests/test_friction.py; "
                      "10^4 impacts with --full, 600 by default)",
            "what": "worst case", "col": "property",
            "rows": [("relative energy gain (T+ - T-) / T-", worst["energy_gain"], 1e-12),
                     ("penetrating rebound rate -v+ [m/s]", worst["penetration"], 1e-9),
                     ("tangential impulse beyond the cone |p_t| - mu p [N.s]",
                      worst["outside_cone"], 1e-9)]}


def energy(fmu, tmp):
    from fmu_mb import ModelBuilder
    rows = []
    for name in ("double_pendulum", "four_bar", "n_four_bar"):
        r = _quiet(simulate, load_model(MODELS / f"{name}.py"), 2.0, 0.1)
        E = r["energy.total"]
        rows.append((f"{name}, 2 s, |E - E0| / max(1, |E0|)", float(np.abs(E - E[0]).max()
                                                                   / max(1.0, abs(E[0]))), 1e-7))
    r = _quiet(simulate, load_model(MODELS / "simple_pendulum.py"), 10.0, 0.01)
    rows.append(("simple_pendulum (A01), 10 s, |E - E0| [J]",
                 float(np.abs(r["energy.total"] - r["energy.total"][0]).max()), 1e-9))
    r = _quiet(simulate, load_model(MODELS / "bricard.py"), 10.0, 0.5)
    rows.append(("bricard (A04, redundant loop), 10 s, |E - E0| [J]",
                 float(np.abs(r["energy.total"] - r["energy.total"][0]).max()), 1e-8))
    mb = ModelBuilder("dzhanibekov", {}, gravity=(0.0, 0.0, 0.0))
    mb.body("nut", mass=1.0, inertia=(1.0, 2.0, 3.0), angular_velocity=(1e-3, 5.0, 1e-3))
    r = _quiet(simulate, mb.build(), 6.0, 0.02)
    T = r["energy.kinetic"]
    rows.append(("torque-free body flipping about its middle axis, 6 s, |T - T0| / T0",
                 float(np.abs(T - T[0]).max() / T[0]), 1e-9))
    return {"title": "Energy conservation",
            "source": "conservative models keep their total energy (the checks of "
                      "tests/test_integrate.py, tests/test_spatial.py and tests/test_iftomm.py),"
                      " default settings, in process",
            "what": "energy change", "col": "model", "rows": rows}


def exudyn(fmu, tmp):
    try:
        import exudyn_spatial as es
        import exudyn_models as X
    except ImportError as exc:
        return table("Exudyn", "Exudyn models of the same mechanisms", "", 0.0,
                     {"all": f"not computed: {exc}"})
    rows = []
    for name in ("double_wishbone", "five_point_suspension"):
        c = es.compare(es.road_curb_and_wave, 0.25, name=name)
        rows.append((f"{name}: wheel centre over 0.25 s of curb and wave [m] (tolerance 3x "
                     f"Exudyn's error estimate + 1e-9)", float(c["diff"]),
                     float(3 * c["exudyn_error"] + 1e-9)))
    import references as R

    from fmu_mb import Settings, advance, initial_state
    from test_implicit import crank_angle
    th_ref = R.slider_crank(t_end=0.5)[0]["O"]
    _, joints, _ = X.slider_crank(R.SliderCrank().bodies(0.0, 10.0)).run(0.5, 8e-4)
    m = load_model(MODELS / "slider_crank.py")
    st = Settings(formulation="newton_euler", method="generalized_alpha", step=8e-4)
    s = _quiet(advance, m, initial_state(m, st), 0.5, settings=st)
    ours, theirs = abs(crank_angle(m, s, "newton_euler") - th_ref), abs(joints["O"] - th_ref)
    rows.append(("slider-crank, generalized-alpha at h = 8e-4 s: |our crank-angle error / "
                 "Exudyn's - 1|", abs(ours / theirs - 1.0), 0.1))
    ref = np.genfromtxt(ROOT / "tests" / "data" / "bricard_p3_reference.csv", delimiter=",",
                        names=True, skip_header=1)
    a = np.column_stack([ref["P3x"], ref["P3y"], ref["P3z"]])
    b = np.column_stack([ref["exudynx"], ref["exudyny"], ref["exudynz"]])
    rows.append(("Bricard (A04) reference: the one-coordinate Lagrange route against Exudyn, "
                 "P3 over 10 s [m]", float(np.abs(a - b).max()), 1e-9))
    return {"title": "Exudyn: the same models in an independent engine",
            "source": "Exudyn models of the suspensions (bench/exudyn_spatial.py, Richardson-"
                      "extrapolated), the slider-crank (bench/exudyn_models.py) and the Bricard "
                      "mechanism (bench/bricard_reference.py); the checks of "
                      "tests/test_suspensions.py, tests/test_implicit.py, tests/test_bricard.py",
            "what": "difference", "col": "model", "rows": rows}


def pinocchio(fmu, tmp):
    try:
        import test_import_urdf as U
    except BaseException as exc:               # pytest's Skipped when pinocchio is missing
        return table("Pinocchio", "", "", 0.0, {"all": f"not computed: {exc}"})
    files = U.ALL if FULL else U.FAST
    rows = []
    for f in files:
        for floating in (False, True):
            label = f"{f}, {'floating' if floating else 'fixed'} base"
            reason = U.SKIPPED.get(f) if not (floating and f in U.FLOATING_ONLY) else None
            if reason:
                rows.append((label, f"not run: {reason}", 1e-9))
                continue
            m, pm = U.load(U.ROBOTS / f, floating)
            rows.append((label, float(U.worst_difference(m, pm, floating)), 1e-9))
    which = "every URDF of the package" if FULL else \
        f"{len(files)} robots (every one of the {len(U.ALL)} URDFs with --full)"
    return {"title": "Imported URDF robots against Pinocchio's ABA",
            "source": f"example-robot-data's URDFs, {which}; 20 random states and joint "
                      "torques each, Pinocchio's articulated-body algorithm; the checks of "
                      "tests/test_import_urdf.py",
            "what": "difference in joint accelerations, max |qdd - ABA| / max(1, |ABA|)",
            "col": "robot",
            "rows": rows}


def pinocchio_fmu(fmu, tmp):
    if not fmu:
        return table("Native robot FMUs against Pinocchio", "", "", 1e-7,
                     {"all": "not computed: --no-fmu"})
    import test_import_fmu as F
    cases = [("ur_description/urdf/ur5_robot.urdf", 1)]
    if FULL:
        cases.append(("panda_description/urdf/panda.urdf", 2))
    rows = []
    for k, (rel, seed) in enumerate(cases):
        out = Path(tmp) / f"robot{k}"
        out.mkdir()
        err, _ = F.check_robot_fmu(out, rel, seed)
        rows.append((f"{rel}: native FMU (fmpy), 1 s from a random pose", float(err), 1e-7))
    return {"title": "Native robot FMUs against Pinocchio",
            "source": "the robot's native FMU (built with `fmu-mb build`, run in fmpy at "
                      "solver.rtol 1e-11) against Pinocchio's ABA integrated by RK4 at 1e-5 s "
                      "(tests/test_import_fmu.py; the UR5, and the Panda with --full)",
            "what": "difference in joint angles after 1 s [rad]", "col": "robot", "rows": rows}


def mujoco_checks(fmu, tmp):
    try:
        import mujoco
        import test_import_mjcf as J
    except BaseException as exc:
        return table("MuJoCo", "", "", 1e-8, {"all": f"not computed: {exc}"})
    import pytest
    p = ROOT / "tests" / "data" / "mjcf" / "arm.xml"
    rows = [("tests/data/mjcf/arm.xml", float(J.compare(mujoco.MjModel.from_xml_path(str(p)),
                                                        p)), 1e-8)]
    missing = []
    for name in J.MENAGERIE:
        try:
            rows.append((f"Menagerie {name}", float(J.menagerie_difference(
                J.menagerie_file(name))), 1e-8))
        except pytest.skip.Exception as exc:
            missing.append((name, str(exc)))
    if missing:
        rows.append((f"Menagerie: {', '.join(n for n, _ in missing)}",
                     f"not computed: {missing[0][1]}", 1e-8))
    return {"title": "Imported MJCF models against MuJoCo's mj_forward",
            "source": "MuJoCo's own forward dynamics (mj_forward's qacc; contacts, limits and "
                      "friction loss disabled) at 20 random states of each model: a test arm "
                      "and ten robots of the mujoco-menagerie package, which downloads each "
                      "robot on first use (or reads FMU_MB_MENAGERIE_DIR); the checks of "
                      "tests/test_import_mjcf.py",
            "what": "difference in joint accelerations (relative)", "col": "model", "rows": rows}


def fmpy_validate(fmu, tmp):
    if not fmu:
        return table("fmpy's validator", "", "", 0, {"all": "not computed: --no-fmu"})
    from fmpy.validation import validate_fmu

    from fmu_mb.errors import FmuMbError
    from fmu_mb.fmi.native_build import build_model_fmu
    from fmu_mb.fmi.native_fmi3 import build_model_fmu3
    names = sorted(p.stem for p in MODELS.glob("*.py") if not p.name.startswith("_"))
    if not FULL:
        names = ["simple_pendulum", "andrews_squeezer", "bricard", "rolling_ball"]
    rows = []
    for name in names:
        for fmi in (2, 3):
            out = Path(tmp) / f"validate_{name}_{fmi}"
            out.mkdir()
            try:
                path = (_quiet(build_model_fmu3, MODELS / f"{name}.py", out, {}, None,
                               platforms="x86_64-linux")[0] if fmi == 3 else
                        _quiet(build_model_fmu, MODELS / f"{name}.py", out, {},
                               platforms="linux64")[0])
            except FmuMbError as exc:
                if fmi == 3 and "FMI 3.0 FMUs are" in str(exc):
                    rows.append((f"{name}, FMI 3.0", "not built: the model runs only in "
                                 "Python (its FMU is FMI 2.0)", 0))
                    continue
                raise
            rows.append((f"{name}, FMI {fmi}.0", len(validate_fmu(str(path))), 0))
    return {"title": "fmpy's validator on the models' FMUs",
            "source": "fmpy.validation.validate_fmu on the FMI 2.0 and 3.0 FMU of " +
                      ("every model in models/" if FULL else
                       "four models (every model in models/ with --full)") +
                      " (tests/test_validate_all.py)",
            "what": "problems found", "col": "FMU", "rows": rows}


CHECKS = [a01, a02, a02_n40, a03, a04, double_pendulum, hinged_body_spring, seeds,
          bouncing_ball, incline_block, rolling_ball, friction_closed_forms, impacts, energy,
          exudyn, pinocchio, pinocchio_fmu, mujoco_checks, fmpy_validate]

MORE = [
    ("the suspensions and the Bricard mechanism: the recursive kernel against the TMT and "
     "Newton-Euler formulations", "`tests/test_spatial_kernel.py`"),
    ("collision shapes: the narrowphase against scipy-minimised distances",
     "`tests/test_shapes.py`, `tests/test_rim.py`"),
    ("assembly branches of a Watt six-bar, a four-bar and a slider-crank in closed form",
     "`tests/test_assembly_declared.py`"),
    ("the tumbling box's impacts against seed 000's impact equations",
     "`tests/test_spatial_contacts.py`"),
    ("the double wishbone's FMU in fmpy and libcosim", "`tests/test_suspensions.py`"),
    ("seed 003's debugging advice: the constraint Jacobian D and D xd against finite "
     "differences of the constraints, element forces against the potential energy",
     "`tests/test_constraints.py`"),
    ("generalized-alpha: the amplification matrix from Chung and Hulbert's coefficients, its "
     "spectral radius rho_inf at large steps", "`tests/test_implicit.py`"),
    ("every model's FMU in fmpy, libcosim and a C host against `simulate()`",
     "`tests/test_fmu.py`, `tests/test_native_fmu.py`, `tests/test_examples.py`"),
]


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=30).stdout.strip() or "?"
    except OSError:
        return "?"


def _fmt(e):
    return e if isinstance(e, str) else str(e) if isinstance(e, int) else f"{e:.2e}"


def _within(e, tol):
    return "-" if isinstance(e, str) else ("yes" if e <= tol else "NO")


def _cell(text):
    return str(text).replace("|", "\\|")


def render(t, when):
    lines = [f"## {t['title']}", ""]
    if t["source"]:
        lines += [f"Reference: {t['source']}.", ""]
    lines += [f"Computed {when} in {t['seconds']:.0f} s.", "",
              f"| {t['col']} | {_cell(t['what'])} | tolerance | within |", "|---|---|---|---|"]
    lines += [f"| {_cell(k)} | {_cell(_fmt(e))} | {tol:.2g} | {_within(e, tol)} |"
              for k, e, tol in t["rows"]]
    bad = [k for k, e, tol in t["rows"] if not isinstance(e, str) and not e <= tol]
    lines += ["", "**Outside the tolerance.**" if bad else "", ""]
    return lines


def main(argv=None):
    global FULL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-fmu", action="store_true", help="skip the native FMU routes")
    ap.add_argument("--full", action="store_true",
                    help="every URDF robot, 10^4 impacts, every model's FMUs validated, IFToMM "
                         "A02 with N = 40 (about 20 min)")
    ap.add_argument("--only", help="comma-separated check names: print their tables, write "
                                   "nothing")
    ap.add_argument("-o", default=str(ROOT / "docs" / "validation.md"))
    args = ap.parse_args(argv)
    FULL = args.full
    checks = CHECKS
    if args.only:
        checks = [c for c in CHECKS if c.__name__ in args.only.split(",")]
    t0 = time.time()
    when = f"on {datetime.date.today().isoformat()} at commit `{commit()}`"
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for check in checks:
            t1 = time.time()
            try:
                t = check(not args.no_fmu, tmp)
            except Exception as exc:               # the page names the check that failed
                t = table(check.__name__, "", "the check", 0.0,
                          {"check": f"failed: {type(exc).__name__}: {exc}"})
                t["failed"] = True
            t["seconds"] = time.time() - t1
            tables.append(t)
            print(f"{check.__name__}: {t['seconds']:.0f} s", file=sys.stderr)
    body = [line for t in tables for line in render(t, when)]
    bad = [t["title"] for t in tables if t.get("failed") or any(
        not isinstance(e, str) and not e <= tol for _, e, tol in t["rows"])]
    if args.only:
        print("\n".join(body))
        return 1 if bad else 0
    mode = ("`--full`" if FULL else "the default subset (the slow parts, named in their "
            "tables, run with `--full`)")
    lines = ["# Validation report", "",
             "fmu_mb's results against references that share no code with it: published "
             "benchmark solutions, closed forms, the seeds' worked examples, and independent "
             "engines (Exudyn, Pinocchio, MuJoCo). Every number below was computed by "
             "`python docs/gen_validation.py` "
             f"{when}, {mode}, in {time.time() - t0:.0f} s of wall time; the checks are the "
             "test suite's "
             "own (the script imports their helpers).", "",
             "Routes: *in process* is `simulate()` with default settings (formulation auto: "
             "the compiled engine in process); *Python (newton_euler)* the pure-Python "
             "Newton-Euler formulation with Lagrange multipliers; *native FMU (fmpy)* the "
             "model's native FMU built now and run in fmpy. A row that was not computed says "
             "why.", ""] + body
    lines += ["## More references checked by the test suite", "",
              "| reference | where |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in MORE] + [""]
    Path(args.o).write_text("\n".join(lines))
    print(f"wrote {args.o} ({time.time() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
