"""Implicit DAE integrators (generalized_alpha, trapezoidal) and explicit Euler.

Checked against independent results: tight dop853 runs, closed forms (a mass on a spring),
the amplification matrix of the generalized-alpha recurrence derived here from Chung and
Hulbert's coefficients, the IFToMM A02 closed form of the N-four-bar, a rigid pendulum for
the bushing pendulum, and Exudyn's generalized-alpha at the same step.
"""
import math
import subprocess
import sys

import numpy as np
import pytest

from fmu_mb import (InputError, IntegrationError, ModelBuilder, Settings, advance,
                    initial_state, rod_inertia, simulate)
from fmu_mb.dynamics import implicit
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.dynamics.state import State

from conftest import MODELS, ROOT, model

IMPLICIT = ["generalized_alpha", "trapezoidal"]


def crank_angle(m, st, form):
    F = get_formulation(form)
    x, _ = F.absolute(m, st.q, st.qd)
    return x[2]                                   # crank.phi: the first body


def orders(errors):
    e = np.asarray(errors)
    return np.log2(e[:-1] / e[1:])


# ------------------------------------------------------------------ convergence orders
@pytest.mark.parametrize("form", ["newton_euler", "tmt"])
@pytest.mark.parametrize("method,dae_form", [("generalized_alpha", "index3"),
                                             ("trapezoidal", "index2"),
                                             ("generalized_alpha", "ggl")])
def test_second_order_on_the_slider_crank(method, dae_form, form):
    """Crank angle at 0.3 s against dop853 at rtol 1e-12: error ratio 4 per halving of h."""
    m = model("slider_crank")
    s0 = initial_state(m, Settings(formulation=form))
    ref = advance(m, s0, 0.3, settings=Settings(formulation=form, rtol=1e-12, atol=1e-14))
    errs = []
    for h in (4e-3, 2e-3, 1e-3):
        st = Settings(formulation=form, method=method, step=h, dae_form=dae_form,
                      stabilization="none")
        r = advance(m, s0, 0.3, settings=st)
        errs.append(abs(crank_angle(m, r, form) - crank_angle(m, ref, form)))
    p = orders(errs)
    assert np.all((p > 1.8) & (p < 2.2)), (errs, p)


def test_euler_is_first_order_and_drifts_without_projection():
    """Forward Euler (seed 000 eq. 21) on the double pendulum: error ratio 2 per halving; with
    stabilization 'none' the joints come apart (seed 000 sec. 1.5), the gap shrinking with h."""
    m = model("double_pendulum")
    ne = Settings(formulation="newton_euler")         # absolute coordinates: the joints drift
    s0 = initial_state(m, ne)
    ref = advance(m, s0, 0.2, settings=Settings(formulation="newton_euler", rtol=1e-12,
                                                atol=1e-14))
    errs, gaps = [], []
    for h in (2e-3, 1e-3, 5e-4):
        r = simulate(m, 0.2, 0.2, method="euler", step=h, stabilization="none",
                     formulation="newton_euler")
        errs.append(abs(r["rod2.phi"][-1] - ref.q[5]))
        gaps.append(r["constraint.residual"][-1])
    p = orders(errs)
    assert np.all((p > 0.85) & (p < 1.15)), (errs, p)
    assert gaps[0] > 1e-4 and gaps[0] > gaps[1] > gaps[2]
    r = simulate(m, 0.2, 0.2, method="euler", step=1e-3,         # default projection
                 formulation="newton_euler")
    assert r["constraint.residual"][-1] < 1e-12


# ------------------------------------------------------------------ dissipation vs rho_inf
def oscillator(k=400.0, inertia=1.0, x0=0.1):
    """A disc on a revolute joint at its centre with a torsional spring (RSDA, linear for
    any angle): x'' = -(k/J) x for the joint angle x, omega = 20 rad/s."""
    mb = ModelBuilder("oscillator", {}, gravity=(0.0, 0.0))
    body = mb.body("disc", mass=1.0, inertia=inertia)
    mb.revolute("P", mb.ground, body)
    mb.rsda("spring", joint="P", stiffness=k, input=False)
    mb.initial("P", value=x0, rate=0.0)
    return mb.build()


def amplification(rho, w, h):
    """Amplification matrix of (q, v, a) for q'' = -w^2 q, written from Chung and Hulbert's
    parameters: (1 - am) a1 + am a0 = -(1 - af) w^2 q1 - af w^2 q0 and Newmark's updates."""
    am, af = (2 * rho - 1) / (rho + 1), rho / (rho + 1)
    g = 0.5 - am + af
    b = 0.25 * (1 - am + af) ** 2
    L = np.array([[1.0, 0.0, -h * h * b], [0.0, 1.0, -h * g], [(1 - af) * w * w, 0.0, 1 - am]])
    R = np.array([[1.0, h, h * h * (0.5 - b)], [0.0, 1.0, h * (1 - g)], [-af * w * w, 0.0, -am]])
    return np.linalg.solve(L, R)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.0])
def test_spectral_radius_at_large_steps_is_rho_inf(rho):
    w = 20.0
    A = amplification(rho, w, 1e4 * 2 * math.pi / w)
    assert max(abs(np.linalg.eigvals(A))) == pytest.approx(rho, abs=1e-3)
    if rho == 0.0:
        return
    # the integrator at h / T = 1000 follows A^n, whose spectral radius is rho_inf within 1 %:
    # |y_n|^(1/n) -> rho (the eigenvalues at h / T -> inf coincide, so n^2 rho^n)
    h = 1000 * 2 * math.pi / w
    A = amplification(rho, w, h)
    assert max(abs(np.linalg.eigvals(A))) == pytest.approx(rho, rel=0.01)
    m = oscillator()
    st = Settings(formulation="tmt", method="generalized_alpha", rho_inf=rho, step=h,
                  stabilization="none", newton_tol=1e-15)
    s, y = initial_state(m, st), np.array([0.1, 0.0, -w * w * 0.1])
    for k in range(20):
        s = advance(m, s, s.t + h, settings=st)
        y = A @ y
        assert s.q[0] == pytest.approx(y[0], rel=1e-6, abs=1e-15)
        assert s.qd[0] == pytest.approx(y[1], rel=1e-6, abs=1e-13)
    assert abs(s.q[0]) < 0.1 * 21 ** 2 * rho ** 20


@pytest.mark.parametrize("form", ["tmt", "newton_euler"])
@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_amplitude_decay_follows_the_amplification_matrix(rho, form):
    """h / T = 0.05 over 10 periods: the computed (q, v) equal A^n (q0, v0, a0) and the
    amplitude decays like |lambda_1|^n of the principal eigenvalue."""
    w, x0 = 20.0, 0.1
    h = 0.05 * 2 * math.pi / w
    m = oscillator(x0=x0)
    st = Settings(formulation=form, method="generalized_alpha", rho_inf=rho, step=h,
                  stabilization="none", newton_tol=1e-13)
    i = 0 if form == "tmt" else 2                 # the joint angle = phi of the disc
    s = initial_state(m, st)
    A = amplification(rho, w, h)
    y = np.array([x0, 0.0, -w * w * x0])
    for _ in range(200):
        s = advance(m, s, s.t + h, settings=st)
        y = A @ y
        assert s.q[i] == pytest.approx(y[0], abs=1e-9)
        assert s.qd[i] == pytest.approx(y[1], abs=1e-8)
    lam1 = max(abs(np.linalg.eigvals(A)))
    decay = math.hypot(s.q[i], s.qd[i] / w) / x0
    assert decay < 0.999                                     # measurable dissipation
    assert decay == pytest.approx(lam1 ** 200, rel=5e-3)


def test_trapezoidal_conserves_the_oscillator_amplitude():
    w, x0 = 20.0, 0.1
    m = oscillator(x0=x0)
    r = simulate(m, 2.0, 0.05, method="trapezoidal", step=0.01)
    amp = np.hypot(r["P.angle"], r["P.rate"] / w)
    assert np.abs(amp - x0).max() < 1e-9
    # phase error of the trapezoidal rule: w_h = (2 / h) atan(w h / 2)
    wh = 2 / 0.01 * math.atan(w * 0.01 / 2)
    assert r["P.angle"][-1] == pytest.approx(x0 * math.cos(wh * 2.0), abs=1e-8)


# ------------------------------------------------------------------ singular poses, agreement
@pytest.mark.parametrize("method,dae_form,stab", [
    ("generalized_alpha", "index3", "none"), ("generalized_alpha", "index3", "projection"),
    ("generalized_alpha", "ggl", "none"), ("trapezoidal", "index2", "projection")])
def test_n_four_bar_passes_its_singular_poses_with_bounded_residual(method, dae_form, stab):
    """IFToMM A02 (N = 2): the cranks turn through the collinear poses (theta = 0, -pi);
    the residual stays at roundoff and the cranks follow the closed form
    J theta'' = -g c cos(theta)."""
    m = model("n_four_bar")
    from scipy.integrate import solve_ivp
    n, g = 2, 9.81
    J, c = (n + 1) / 3 + n, (n + 1) / 2 + n
    sol = solve_ivp(lambda t, y: [y[1], -g * c / J * math.cos(y[0])], (0, 1.5),
                    [math.pi / 2, -1.0], dense_output=True, rtol=1e-12, atol=1e-12).sol
    dense = sol(np.linspace(0, 1.5, 3001))[0]
    assert dense.min() < -math.pi < 0 < dense.max()    # it passes theta = 0 and -pi
    ref = sol(np.linspace(0, 1.5, 31))[0]
    r = simulate(m, 1.5, 0.05, method=method, step=2e-3, stabilization=stab,
                 dae_form=dae_form)
    assert np.abs(r["constraint.residual"]).max() < 1e-9
    assert np.abs(np.unwrap(r["O0.angle"]) - ref).max() < 2e-3


@pytest.mark.parametrize("name", ["slider_crank", "four_bar"])
@pytest.mark.parametrize("method,form", [("generalized_alpha", "newton_euler"),
                                         ("trapezoidal", "tmt"),
                                         ("generalized_alpha", "lagrange")])
def test_agreement_with_dop853(name, method, form):
    """0.2 s of the slider-crank and the four-bar at h = 5e-4: the joint angles agree with
    dop853 to the methods' truncation error C h^2 (measured with generalized_alpha at this
    step: 6e-5 rad on the slider-crank, 1.1e-4 rad on the four-bar, whose crank turns twice
    as far; the order tests above show the error is C h^2)."""
    m = model(name)
    ref = simulate(m, 0.2, 0.05, formulation=form, rtol=1e-11, atol=1e-13)
    r = simulate(m, 0.2, 0.05, formulation=form, method=method, step=5e-4)
    for col in [c for c in r.dtype.names if c.endswith(".angle")]:
        assert np.abs(r[col] - ref[col]).max() < 2.5e-4, col
    assert np.abs(r["constraint.residual"]).max() < 1e-10


def test_exudyn_generalized_alpha_has_the_same_error_at_the_same_step():
    """Our generalized-alpha (rho_inf 0.9) and Exudyn's on the slider-crank at h = 8e-4:
    crank-angle errors against the hand-derived reference agree within 10 %."""
    pytest.importorskip("exudyn")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import exudyn_models as X
        import references as R
    finally:
        sys.path.pop(0)
    th_ref = R.slider_crank(t_end=0.5)[0]["O"]
    _, joints, _ = X.slider_crank(R.SliderCrank().bodies(0.0, 10.0)).run(0.5, 8e-4)
    m = model("slider_crank")
    st = Settings(formulation="newton_euler", method="generalized_alpha", step=8e-4)
    s = advance(m, initial_state(m, st), 0.5, settings=st)
    ours, theirs = abs(crank_angle(m, s, "newton_euler") - th_ref), abs(joints["O"] - th_ref)
    assert theirs > 1e-6
    assert ours == pytest.approx(theirs, rel=0.1)


# ------------------------------------------------------------------ stiff bushing
def bushing_pendulum(k=4e8, th0=0.3, rigid=False):
    """A rod of 1 m, 1 kg hanging from its end; the pivot is either a revolute joint or a
    bushing of two stiff TSDAs (k along x and y), whose mode has omega = 2 sqrt(k / m)."""
    mb = ModelBuilder("bushing_pendulum", {}, gravity=(0.0, -9.81))
    ph = -math.pi / 2 + th0
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0),
                  position=(0.5 * math.cos(ph), 0.5 * math.sin(ph)), angle=ph)
    if rigid:
        mb.revolute("O", mb.ground, rod, parent_point=(0.0, 0.0), child_point=(-0.5, 0.0))
        mb.initial("O", value=ph, rate=0.0)
    else:
        for name, a in (("bx", (-1.0, 0.0)), ("by", (0.0, 1.0))):
            mb.tsda(name, mb.ground, rod, a_point=a, b_point=(-0.5, 0.0), stiffness=k,
                    free_length=1.0, input=False)
    return mb.build()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_stiff_bushing_explicit_methods_need_100x_more_steps():
    m, rigid = bushing_pendulum(), bushing_pendulum(rigid=True)
    T = 0.2
    ne = Settings(formulation="newton_euler")         # absolute coordinates, read below
    ref = advance(rigid, initial_state(rigid, ne), T,
                  settings=Settings(formulation="newton_euler", rtol=1e-12, atol=1e-14))
    stats = {}
    st = Settings(formulation="newton_euler", method="generalized_alpha", step=1e-2,
                  rho_inf=0.5)
    s = implicit.advance_implicit(m, initial_state(m, ne), T, m.input_vector(None), st,
                                  get_formulation("newton_euler"), stats)
    assert stats["steps"] == 20
    assert abs(s.q[2] - ref.q[2]) < 1e-4                     # the slow pendulum motion
    # dop853 (compiled, rtol 1e-6): its step settles at the stability limit ~3.3 / omega
    st = Settings(formulation="recursive", rtol=1e-6, atol=1e-8)
    e = advance(m, initial_state(m, st), T, settings=st)
    assert T / e.h > 100 * stats["steps"]
    x, _ = get_formulation("recursive").absolute(m, e.q, e.qd)
    assert abs(x[2] - ref.q[2]) < 1e-4
    # rk4 with 50 times the steps of generalized-alpha is unstable
    with pytest.raises(IntegrationError, match="non-finite"):
        advance(m, initial_state(m, ne), T, settings=Settings(
            formulation="newton_euler", method="rk4", step=1e-2 / 50, stabilization="none"))


# ------------------------------------------------------------------ settings, state, errors
def test_restored_state_continues_bit_identically():
    m = model("slider_crank")
    st = Settings(method="generalized_alpha", step=1e-3)
    s = advance(m, initial_state(m), 0.05, settings=st)
    assert "implicit" in s.extra
    a = advance(m, s, 0.1, settings=st)
    b = advance(m, State.from_dict(s.to_dict()), 0.1, settings=st)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qd, b.qd)


def test_bad_settings_and_unsupported_models_are_refused():
    with pytest.raises(InputError, match="rho_inf"):
        Settings(method="generalized_alpha", rho_inf=1.5)
    with pytest.raises(InputError, match="baumgarte"):
        Settings(method="trapezoidal", stabilization="baumgarte")
    with pytest.raises(InputError, match="index3"):
        Settings(method="trapezoidal", dae_form="index3")
    with pytest.raises(InputError, match="dae_form"):
        Settings(method="generalized_alpha", dae_form="index1")
    with pytest.raises(InputError, match="newton_tol"):
        Settings(method="generalized_alpha", newton_tol=0.0)
    ball = model("bouncing_ball")
    with pytest.raises(InputError, match="contacts"):
        advance(ball, initial_state(ball), 0.1, settings=Settings(method="generalized_alpha"))
    dp = model("double_pendulum")
    st = Settings(formulation="recursive", method="trapezoidal")
    with pytest.raises(InputError, match="tmt"):
        advance(dp, initial_state(dp, st), 0.1, settings=st)


@pytest.mark.parametrize("method", IMPLICIT)
def test_lock_up_fails_the_newton_iteration_and_keeps_the_state(method):
    """The non-Grashof four-bar of tests/data cannot close its loop beyond a crank angle of
    acos(0.65) (t = 0.86 s at 1 rad/s): the step there raises and names the time."""
    from fmu_mb import load_model
    m = load_model(ROOT / "tests" / "data" / "locking_four_bar.py")
    st = Settings(method=method, step=1e-3)
    s = advance(m, initial_state(m), 0.5, settings=st)
    q = s.q.copy()
    with pytest.raises(IntegrationError, match="did not converge in the step from t = 0.86"):
        advance(m, s, 1.5, settings=st)
    assert np.array_equal(s.q, q)


# ------------------------------------------------------------------ the command line, FMU
@pytest.mark.slow
def test_cli_generalized_alpha_slider_crank_matches_dop853(tmp_path):
    """fmu-mb simulate models/slider_crank.py --method generalized_alpha --step 1e-4
    --stop-time 2 (default formulation: auto runs the implicit methods in
    tmt) against dop853 at rtol 1e-10: the crank angle agrees to 1e-5 rad (tmt: 5.1e-6; in
    newton_euler the truncation error at this step is 1.5e-5 rad, as Exudyn's
    generalized-alpha's 1.46e-5 rad at 2 s, the performance page (docs/performance.md))."""
    out = {}
    for label, extra in (("ga", ["--method", "generalized_alpha", "--step", "1e-4"]),
                         ("ref", ["--rtol", "1e-10"])):
        path = tmp_path / f"{label}.csv"
        subprocess.run([sys.executable, "-m", "fmu_mb", "simulate",
                        str(MODELS / "slider_crank.py"), "--stop-time", "2", "--quiet",
                        "-o", str(path)] + extra, check=True, cwd=ROOT, timeout=600)
        out[label] = np.genfromtxt(path, delimiter=",", names=True)
    err = np.abs(out["ga"]["Oangle"] - out["ref"]["Oangle"]).max()
    assert err < 1e-5, err
    assert np.abs(out["ga"]["constraintresidual"]).max() < 1e-12


@pytest.mark.fmu
def test_fmu_runs_generalized_alpha_like_simulate(shared_fmu):
    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    path = shared_fmu(MODELS / "slider_crank.py", "python")
    start = {"solver.method": "generalized_alpha", "solver.step": 1e-3,
             "solver.rho_inf": 0.8, "solver.newton_tol": 1e-10}
    r = fmpy.simulate_fmu(str(path), stop_time=0.5, output_interval=0.01, start_values=start)
    assert r["time"][-1] == pytest.approx(0.5, abs=1e-12)
    m = model("slider_crank")
    ref = simulate(m, 0.5, 0.01, method="generalized_alpha", step=1e-3, rho_inf=0.8)
    for col in ("O.angle", "A.angle", "slider.x", "O.fx"):
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
    dop = simulate(m, 0.5, 0.01)        # really generalized_alpha: its error at h = 1e-3 s
    assert 1e-5 < np.abs(r["O.angle"] - dop["O.angle"]).max() < 1e-3     # is 3e-4 rad


def test_drift_example_writes_its_figure(tmp_path):
    """examples/drift_euler.py runs headless and writes the PNG of seed 000 sec. 1.5."""
    out = tmp_path / "drift.png"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "drift_euler.py"), "-o",
                        str(out), "--steps", "1e-2", "5e-3"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 10_000
    gaps = [float(line.split()[1]) for line in r.stdout.splitlines()[1:3]]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] > 1e-4


def test_euler_runs_the_contact_event_loop():
    """Forward Euler steps the event loop like rk4 (Hermite dense output): the ball's first
    impact is found and its height follows dop853 to the method's first-order error."""
    m = model("bouncing_ball")
    r = simulate(m, 0.6, 0.1, method="euler", step=5e-4)
    ref = simulate(m, 0.6, 0.1)
    assert r["floor.impacts"][-1] == ref["floor.impacts"][-1] >= 1
    assert np.abs(r["ball.y"] - ref["ball.y"]).max() < 5e-3
