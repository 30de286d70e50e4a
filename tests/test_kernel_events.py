"""The contact event loop in C (fmu_mb/engine/native/events.c, formulation recursive): event
location on the dense output, impacts by seed 000 ch.3 eq. 15 with Newton's restitution law,
persistent contacts and their release, all in one foreign call per interval.

Checked against the Python event loop of fmu_mb.dynamics.integrate (the same kernel steps,
scipy's dense output and brentq, the impact equations of impact_minimal in numpy), against
the bouncing ball's closed form, and against event times of a finely stepped reference that
shares no code with fmu_mb."""
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.dynamics import integrate
from fmu_mb.dynamics.formulations import recursive
from fmu_mb.dynamics.integrate import Settings, advance, initial_state
from fmu_mb.dynamics.outputs import output_names, output_values
from fmu_mb.engine.kernel import contact_events, dense_coefficients
from fmu_mb.errors import IntegrationError

from conftest import model

FIELDS = ("impacts", "last_time", "last_impulse", "energy_loss", "active")


@pytest.fixture
def python_loop(monkeypatch):
    """Run recursive's contact models through the Python event loop (today's path)."""
    def use(flag):
        monkeypatch.setattr(recursive, "NATIVE_EVENTS", not flag)
    return use


def _trajectory(m, settings, t_end, dt, rate_scale=1.0):
    """(q, qd, records) after each interval of dt, with 1 ms-free chunks so that most impacts
    are seen one by one in the records (impact count, time, impulse, energy loss, active).
    rate_scale multiplies the initial rates (a rounding-sized perturbation: _sensitivity)."""
    s = initial_state(m, settings)
    if rate_scale != 1.0:
        s = dataclasses.replace(s, qd=s.qd * rate_scale)
    out = []
    for k in range(1, int(round(t_end / dt)) + 1):
        s = advance(m, s, k * dt, None, settings)
        c = s.extra["contacts"]
        rec = np.array([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])
        out.append((s.q.copy(), s.qd.copy(), rec))
    return s, out


def _sensitivity(m, settings, t_end, reference):
    """Per interval, the largest change of q and qd of the Python loop when the initial rates
    change by one part in 1e15 either way: how far two computations that differ only by
    rounding can drift apart on this trajectory. Past an impact the two loops differ by
    rounding (numpy's solves vs the engine's), and a trajectory whose free motion between
    impacts amplifies that (the slider-crank after its first impact: x250 over 0.6 s) moves
    beyond a fixed 1e-12 on one machine and not on another."""
    env = np.zeros(len(reference))
    for f in (1.0 + 1e-15, 1.0 - 1e-15):
        _, other = _trajectory(m, settings, t_end, 0.01, rate_scale=f)
        for k, ((q1, qd1, _), (q0, qd0, _)) in enumerate(zip(other, reference)):
            env[k] = max(env[k], np.abs(q1 - q0).max(), np.abs(qd1 - qd0).max())
    return env


CASES = [("bouncing_ball", 2.0, {"e": 0.5}), ("slider_crank_stop", 0.8, {}),
         ("newtons_cradle", 1.0, {}), ("pendulum_wall", 1.5, {}), ("falling_rod", 1.0, {}),
         ("excavator", 1.5, {}),
         ("falling_rod", 0.8, {"theta0": 0.0})]         # a simultaneous impact: lands flat
IDS = [c[0] + "".join(f"-{k}={v}" for k, v in c[2].items()) for c in CASES]


METHOD = "dop853"      # the loops' stepping here; dopri5 (the choice of the default method
                       # auto for contact models) in the next test


@pytest.mark.parametrize("name,t_end,pars", CASES, ids=IDS)
def test_c_loop_equals_the_python_loop(name, t_end, pars, python_loop):
    """Event times, impulses, impact counts, energy losses, persistent flags and the
    velocities after every interval of the C loop equal the Python loop's to 1e-12 (relative
    to max(1, |value|)); so do all contact outputs at the end. Coordinates and rates that
    differ by more stay within 10 times the trajectory's own rounding sensitivity
    (_sensitivity: the Python loop against itself with its initial rates changed by 1e-15)."""
    m = model(name, **pars)
    st = Settings(formulation="recursive", method=METHOD)
    python_loop(False)
    end_c, c = _trajectory(m, st, t_end, 0.01)
    python_loop(True)
    end_p, p = _trajectory(m, st, t_end, 0.01)
    impacts = 0
    envelope = None
    for k, ((qc, qdc, rc), (qp, qdp, rp)) in enumerate(zip(c, p)):
        np.testing.assert_array_equal(rc[:, [0, 4]], rp[:, [0, 4]])   # counts, active
        scale = np.maximum(1.0, np.abs(rp))
        assert np.abs(rc - rp).max() <= 1e-12 * scale.max(), (rc, rp)
        for a, b in ((qc, qp), (qdc, qdp)):
            d = np.abs(a - b).max()
            if d > 1e-12 * max(1.0, np.abs(b).max()):
                if envelope is None:
                    envelope = _sensitivity(m, st, t_end, p)
                assert d <= 10.0 * envelope[k], (k, d, envelope[k])
        impacts = rp[:, 0].sum()
    assert impacts >= 2                              # the run saw impacts
    u = np.zeros(len(m.inputs))
    names = output_names(m)
    oc = output_values(m, end_c, u, "recursive")
    op = output_values(m, end_p, u, "recursive")
    for i, nm in enumerate(names):
        if nm.split(".")[0] in {x.name for x in m.contacts}:
            assert abs(oc[i] - op[i]) <= 1e-12 * max(1.0, abs(op[i])), nm


def test_dopri5_rk4_and_baumgarte_equal_the_python_loop(python_loop):
    """dopri5 (its quartic interpolant), rk4 (fixed steps, a cubic Hermite between them) and
    Baumgarte drift control (no projections) on the slider-crank with its stop: the C loop
    equals the Python loop."""
    m = model("slider_crank_stop")
    for st in (Settings(formulation="recursive", method="dopri5"),
               Settings(formulation="recursive", method="rk4", step=2e-3),
               Settings(formulation="recursive", stabilization="baumgarte")):
        python_loop(False)
        _, c = _trajectory(m, st, 0.6, 0.02)
        python_loop(True)
        _, p = _trajectory(m, st, 0.6, 0.02)
        assert c[-1][2][0, 0] >= 2
        for (qc, qdc, rc), (qp, qdp, rp) in zip(c, p):
            np.testing.assert_allclose(rc, rp, rtol=0, atol=1e-12 * max(1, np.abs(rp).max()))
            np.testing.assert_allclose(qdc, qdp, rtol=0, atol=1e-12 * max(1, np.abs(qdp).max()))


def test_cosimulation_steps_equal_the_python_loop(python_loop):
    """integrate.stepper (the co-simulation path, one C call per 1 ms step, the records
    carried in State.extra) gives the Python loop's states and records: the excavator's boom
    falls onto its lower end stop, bounces five times (e = 0.2) and stays there (persistent).
    Impulses are compared relative to the largest impulse of the contact's bounce sequence:
    each bounce scales the impulse by ~e while rounding differences grow, so the fifth impulse
    (1e-3 of the first) moves by 2e-11 of itself in either loop for a 1e-15 change of the
    initial q (measured); against the sequence's scale it stays below 1e-12."""
    m = model("excavator")
    st = Settings()
    u = np.zeros(len(m.inputs))
    res = []
    for flag in (False, True):
        python_loop(flag)
        step = integrate.stepper(m, st)
        s = initial_state(m, st)
        recs = []
        for k in range(1, 1301):
            s = step(s, k * 1e-3, u)
            c = s.extra["contacts"]
            recs.append([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])
        res.append((s, np.array(recs)))
    (c, rc), (p, rp) = res
    assert p.extra["contacts"]["boom_cyl_lower"]["impacts"] >= 5
    assert p.extra["contacts"]["boom_cyl_lower"]["active"]
    np.testing.assert_allclose(c.q, p.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.qd, p.qd, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(rc[..., [0, 4]], rp[..., [0, 4]])
    scale = np.maximum(1.0, np.abs(rp).max(axis=0))          # per contact and field
    assert (np.abs(rc - rp) <= 1e-12 * scale).all()


def test_reuse_across_calls_sees_a_changed_input_or_state(python_loop):
    """The C loop starts a call from what the last call computed at its end (f(t, y), the
    contact multipliers of the tension check, the event values at t0) only when t, y and u
    are those of that end. The excavator resting on its boom stop (1 ms co-simulation steps):
    a kick of the boom's rate between two calls (the same t, another qd) and then a boom
    cylinder force that lifts the arm off the stop (the same t and y, another u) must be seen
    as the Python loop sees them (which recomputes everything each call): the stop is
    released in the first call after the force is applied, and the states and records equal
    the Python loop's to 1e-12 throughout. (Checked: a reuse that ignored u fails at the force's
    step, one that ignored y differs from the Python loop after the kick.)"""
    from dataclasses import replace
    m = model("excavator")
    st = Settings()
    names = [str(getattr(i, "name", i)) for i in m.inputs]
    res = []
    for flag in (False, True):
        python_loop(flag)
        step = integrate.stepper(m, st)
        s = initial_state(m, st)
        u = np.zeros(len(m.inputs))
        recs, released = [], None
        for k in range(1, 1321):
            if k == 1260:                       # resting: kick the boom's rate upwards
                qd = s.qd.copy()
                qd[0] += 1e-3
                s = replace(s, qd=qd)
            if k == 1300:                       # lift off the stop (2 MN on the boom cylinder)
                u[names.index("boom_cyl.h")] = 2e6
            s = step(s, k * 1e-3, u)
            c = s.extra["contacts"]
            recs.append([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])
            if released is None and k >= 1300 and not c["boom_cyl_lower"]["active"]:
                released = k
        res.append((s, np.array(recs), released))
    (c, rc, kc), (p, rp, kp) = res
    assert rp[1250, :, 4].any()                 # resting in persistent contact before
    assert kc == kp == 1300
    np.testing.assert_allclose(c.q, p.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.qd, p.qd, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(rc[..., [0, 4]], rp[..., [0, 4]])
    scale = np.maximum(1.0, np.abs(rp).max(axis=0))
    assert (np.abs(rc - rp) <= 1e-12 * scale).all()


def test_bouncing_ball_matches_its_closed_form():
    """Ball dropped from h0 (free flight: dop853 integrates the parabola exactly): impact k at
    t_k = t0 (1 + 2 e + ... + 2 e^(k-1)), t0 = sqrt(2 h0 / g), with the velocity before it
    v_k = e^(k-1) sqrt(2 g h0), the impulse m (1 + e) v_k, the rebound e v_k and the energy
    loss m v_k^2 (1 - e^2) / 2 each; read after each impact from the records."""
    e, h0, g, mass = 0.8, 1.0, 9.81, 1.0
    m = model("bouncing_ball", e=e, h0=h0)
    st = Settings(formulation="recursive")
    t0, v0 = math.sqrt(2 * h0 / g), math.sqrt(2 * g * h0)
    s = initial_state(m, st)
    t_k, loss = t0, 0.0
    for k in range(1, 8):
        v_k = e ** (k - 1) * v0
        s = advance(m, s, t_k + 1e-3, None, st)   # just after impact k
        c = s.extra["contacts"]["floor"]
        loss += mass * v_k ** 2 * (1 - e * e) / 2
        assert c["impacts"] == k
        assert abs(c["last_time"] - t_k) <= 1e-12 * t_k
        assert abs(c["last_impulse"] - mass * (1 + e) * v_k) <= 1e-12 * v0
        assert abs(c["energy_loss"] - loss) <= 1e-12 * mass * v0 ** 2
        assert abs(s.qd[1] - (e * v_k - g * 1e-3)) <= 1e-12 * v0
        t_k += 2 * e * v_k / g


def _pendulum_reference(theta0, l, g, e, h=2e-5):
    """First and second impacts of a uniform rod (pivot at one end, theta from the downward
    vertical) with a wall at theta = 0, by classical RK4 steps of theta'' = -(3 g / 2 l)
    sin(theta) of h and a cubic Hermite root between the steps that straddle theta = 0; the
    rebound is -e times the rate before. No fmu_mb code."""
    w2 = 1.5 * g / l

    def f(y):
        return np.array([y[1], -w2 * math.sin(y[0])])

    t, y, times = 0.0, np.array([theta0, 0.0]), []
    while len(times) < 2:
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y1 = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if y1[0] <= 0.0 < y[0]:                  # the tip reaches the wall in this step
            a, b = 0.0, 1.0
            for _ in range(60):                   # bisection on the Hermite cubic
                s = (a + b) / 2
                p = ((2 * s ** 3 - 3 * s ** 2 + 1) * y[0] + (s ** 3 - 2 * s ** 2 + s) * h * y[1]
                     + (-2 * s ** 3 + 3 * s ** 2) * y1[0] + (s ** 3 - s ** 2) * h * y1[1])
                a, b = (s, b) if p > 0 else (a, s)
            s = (a + b) / 2
            te = t + s * h
            # the rate at te from energy (exact for this conservative flight)
            rate = -math.sqrt(2 * w2 * (1 - math.cos(y[0])) + y[1] ** 2)
            times.append((te, rate))
            t, y = te, np.array([0.0, -e * rate])
            continue
        t, y = t + h, y1
    return times


def test_pendulum_wall_event_times_equal_a_finely_stepped_reference():
    """The rod's impacts on the wall: the C loop's times and rebound rates equal those of a
    finely stepped RK4 reference (h = 20 us, local error ~ h^5) to 1e-9 s and 1e-9 rad/s."""
    theta0, l, g, e = math.radians(60.0), 1.0, 9.81, 0.5
    m = model("pendulum_wall", e=e)
    ref = _pendulum_reference(theta0, l, g, e)
    st = Settings(formulation="recursive", rtol=1e-12, atol=1e-14)
    s = initial_state(m, st)
    for k, (te, rate) in enumerate(ref, start=1):
        s = advance(m, s, te + 1e-6, None, st)
        c = s.extra["contacts"]["wall"]
        assert c["impacts"] == k
        assert abs(c["last_time"] - te) <= 1e-9
        # the impulse on the tip: J_O (w+ - w-) / l with J_O = m l^2 / 3 (about the pivot)
        assert abs(c["last_impulse"] - (1.0 * l / 3) * (1 + e) * abs(rate)) <= 1e-9
        assert abs(s.qd[0] - (-e * rate)) <= 1e-6     # 1 us after the impact


def test_zeno_guard_and_the_state_kept():
    """Bounces that never become persistent (contact_velocity far below any rebound) end in
    the Zeno guard's IntegrationError, fast, at the accumulation point of the bounces,
    t0 (1 + e) / (1 - e) = 1.3546 s with t0 = sqrt(2 h0 / g), and the caller's state is
    untouched."""
    m = model("bouncing_ball", e=0.5)
    st = Settings(formulation="recursive", contact_velocity=1e-300)
    s = initial_state(m, st)
    q0, qd0, extra0 = s.q.copy(), s.qd.copy(), repr(s.extra)
    with pytest.raises(IntegrationError, match="floor. switches state endlessly at t = 1.354"):
        advance(m, s, 3.0, None, st)
    assert np.array_equal(s.q, q0) and np.array_equal(s.qd, qd0) and repr(s.extra) == extra0


def test_step_budget_in_the_c_loop():
    """settings.max_steps stops the C loop with the Python loop's message."""
    m = model("slider_crank_stop")
    st = Settings(formulation="recursive", max_steps=20)
    s = initial_state(m, st)
    with pytest.raises(IntegrationError, match="more than 20 integrator steps"):
        advance(m, s, 10.0, None, st)


def test_dense_output_coefficients_are_scipys():
    """The interpolants' coefficients compiled into events.c are scipy's, bit for bit."""
    from scipy.integrate import RK45
    from scipy.integrate._ivp import dop853_coefficients as dc

    P, AX, CX, D = dense_coefficients()
    assert np.array_equal(P, RK45.P)
    assert np.array_equal(AX, dc.A[13:16])
    assert np.array_equal(CX, dc.C[13:16])
    assert np.array_equal(D, dc.D)


def test_one_event_loop_per_model_and_no_shared_workspace():
    """Two models' event loops are independent objects; interleaved calls give the results
    of separate runs (all state lives in the ContactEvents instance)."""
    a, b = model("bouncing_ball", e=0.5), model("bouncing_ball", e=0.9, h0=0.3)
    assert contact_events(a) is contact_events(a) and contact_events(a) is not contact_events(b)
    st = Settings(formulation="recursive")
    alone = [advance(x, initial_state(x, st), 1.0, None, st) for x in (a, b)]
    sa, sb = initial_state(a, st), initial_state(b, st)
    for k in range(1, 11):
        sa = advance(a, sa, 0.1 * k, None, st)
        sb = advance(b, sb, 0.1 * k, None, st)
    for x, y in ((sa, alone[0]), (sb, alone[1])):
        assert x.extra["contacts"]["floor"]["impacts"] == y.extra["contacts"]["floor"]["impacts"]


@pytest.mark.parametrize("name,t", [("falling_rod", 1.0), ("slider_crank_stop", 0.9),
                                    ("excavator", 1.5)])
def test_contact_outputs_from_c_equal_the_python_outputs(name, t):
    """ContactEvents.outputs (what a native FMU serves for C.gap and C.force) equals the
    outputs of fmu_mb.dynamics.outputs (gaps and the persistent contacts' forces from the
    absolute-coordinate equations, numpy) at a state with persistent contacts."""
    m = model(name)
    st = Settings(formulation="recursive")
    s = advance(m, initial_state(m, st), t, None, st)
    c = s.extra["contacts"]
    rec = np.array([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])
    assert rec[:, 4].any()
    u = np.zeros(len(m.inputs))
    gap, force = contact_events(m).outputs(s.t, s.q, s.qd, u, rec)
    out = dict(zip(output_names(m), output_values(m, s, u, "recursive")))
    for i, x in enumerate(m.contacts):
        assert abs(gap[i] - out[f"{x.name}.gap"]) <= 1e-12
        f_ref = out[f"{x.name}.force"]
        assert abs(force[i] - f_ref) <= 1e-9 * max(1.0, abs(f_ref)), (x.name, force[i], f_ref)


def test_simultaneous_impact_on_touching_balls_matches_newtons_law(python_loop):
    """Newton's cradle, three equal balls, zero clearance, e = 1: ball 0 strikes the two
    touching balls. Both contacts are closed; the impact's active set first takes c01 alone,
    whose impulse would make c12 penetrate, so it adds c12 and solves both (seed 000 eq. 15
    for the set): Newton's law on both rows (v1+ - v0+ = v, v2+ - v1+ = 0) and momentum give
    v0+ = -v/3, v1+ = v2+ = 2 v / 3, with no energy lost. The C loop gives that, and the
    Python loop's impulse, time and velocities. (Afterwards balls 1 and 2 swing together with
    a zero contact force, whose persistent flag hinges on rounding in either loop.)"""
    m = model("newtons_cradle", clearance=0.0)
    st = Settings(formulation="recursive")
    python_loop(False)
    te = advance(m, initial_state(m, st), 0.6, None, st).extra["contacts"]["c01"]["last_time"]
    before = advance(m, initial_state(m, st), te - 1e-7, None, st)
    after = advance(m, initial_state(m, st), te + 1e-7, None, st)
    w = before.qd[0]                                 # pivot rates: v_i = l w_i at the bottom
    assert w > 0.5
    np.testing.assert_allclose(after.qd, [-w / 3, 2 * w / 3, 2 * w / 3], rtol=0, atol=1e-8 * w)
    c = after.extra["contacts"]
    assert c["c01"]["impacts"] == 1 and c["c12"]["impacts"] == 0       # (c12: v- = 0)
    assert abs(c["c01"]["energy_loss"]) + abs(c["c12"]["energy_loss"]) <= 1e-12
    python_loop(True)
    ref = advance(m, initial_state(m, st), te + 1e-7, None, st)
    np.testing.assert_allclose(after.qd, ref.qd, rtol=0, atol=1e-12 * w)
    for f in ("impacts", "last_time", "last_impulse", "energy_loss"):
        for k in ("c01", "c12"):
            assert abs(c[k][f] - ref.extra["contacts"][k][f]) <= 1e-12 * max(1, abs(c[k][f]))


def _kernel_data(m):
    """The arguments TreeKernel(m) passes to mbk_create (read while it makes a kernel)."""
    import ctypes

    from fmu_mb.engine import kernel as K

    lib, got = K.library(), {}
    real = lib.mbk_create

    def spy(nb, n, ji, jd, ne, ei, ed, mass, inertia, gx, gy):
        def arr(ptr, ct, k):
            return np.array((ct * k).from_address(ptr)) if k else np.zeros(0)
        got.update(nb=nb, n=n, ne=ne, gx=gx, gy=gy, ji=arr(ji, ctypes.c_int, 5 * nb),
                   jd=arr(jd, ctypes.c_double, 8 * nb), ei=arr(ei, ctypes.c_int, 5 * ne),
                   ed=arr(ed, ctypes.c_double, 10 * ne), mass=arr(mass, ctypes.c_double, nb),
                   inertia=arr(inertia, ctypes.c_double, nb))
        return real(nb, n, ji, jd, ne, ei, ed, mass, inertia, gx, gy)
    lib.mbk_create = spy
    try:
        K.TreeKernel(m)
    finally:
        lib.mbk_create = real
    return got


@pytest.mark.parametrize("name,t_end", [("slider_crank_stop", 1.0), ("excavator", 1.5)])
def test_a_c_host_runs_the_event_loop_without_python(name, t_end, tmp_path):
    """tests/c_host/events_host.c builds the kernel and its event loop from the model's data
    through the library's C API alone (no Python in its process, as the native FMU's engine
    will) and integrates with mbk_advance_events: the same state, step size and contact
    records as the in-process call, bit for bit."""
    import shutil
    import subprocess

    from fmu_mb.engine import kernel as K
    from fmu_mb.engine import tableaus as T

    cc = K.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    m = model(name)
    st = Settings(formulation="recursive")
    s0 = initial_state(m, st)
    d = _kernel_data(m)
    ri, rd = K.loop_rows(m)
    di, dp, _ = K.drive_data(m)
    nc = len(m.contacts)
    ci, cd = K.contact_rows(m, tuple(range(nc)))
    C = m.compiled
    G = (np.zeros((0, 0)) if C.tsda_gain is None else np.asarray(C.tsda_gain, float))
    ni = len(m.inputs)
    u = np.zeros(ni)
    rec = np.zeros((nc, 5))
    par = [s0.t, t_end, 0.0, st.rtol, st.atol, st.max_step, 1, *st.baumgarte,
           st.projection_tol, st.contact_tol, st.contact_velocity, st.event_tol,
           st.max_steps, 0, 0, 0, 0, st.step]
    words = []

    def put(*vals):
        for v in vals:
            words.extend(repr(float(x)) if isinstance(x, float) else str(int(x))
                         for x in np.ravel(v).tolist())
    for S, order, A, B, Cc, E, E3, E5 in (
            (T.RK45_STAGES, T.RK45_ERROR_ORDER, T.RK45_A, T.RK45_B, T.RK45_C, T.RK45_E, None,
             None),
            (T.DOP853_STAGES, T.DOP853_ERROR_ORDER, T.DOP853_A, T.DOP853_B, T.DOP853_C, None,
             T.DOP853_E3, T.DOP853_E5)):
        put(S, order, E is not None, E3 is not None)
        words.extend(repr(float(x)) for x in np.ravel(A).tolist() + list(B) + list(Cc)
                     + (list(E) if E is not None else [])
                     + (list(E3) + list(E5) if E3 is not None else []))
    put(d["nb"], d["n"], d["ne"])
    words += [repr(float(d["gx"])), repr(float(d["gy"]))]
    put(d["ji"])
    words += [repr(float(x)) for x in d["jd"]]
    put(d["ei"])
    words += [repr(float(x)) for x in np.concatenate([d["ed"], d["mass"], d["inertia"]])]
    put(len(ri), ri)
    words += [repr(float(x)) for x in rd.ravel()]
    put(G.shape[0], G.shape[1] if G.ndim == 2 else 0)
    words += [repr(float(x)) for x in G.ravel()]
    put(len(di), len(dp) if len(di) else 0, di)
    words += [repr(float(x)) for x in (dp if len(di) else [])]
    put(nc, ci)
    words += [repr(float(x)) for x in np.concatenate([cd.ravel(), C.contacts.restitution])]
    put(ni)
    words += [repr(float(x)) for x in u]
    put(1)                                             # dop853
    words += [repr(float(x)) for x in np.concatenate([par, s0.q, s0.qd, rec.ravel()])]
    data = tmp_path / "model.txt"
    data.write_text(" ".join(words))             # (max_step inf is read by %lf as inf)
    lib = K.library_path()
    exe = tmp_path / "events_host"
    src = Path(__file__).parent / "c_host" / "events_host.c"
    p = subprocess.run([cc, "-O2", "-o", str(exe), str(src), str(lib), "-lm",
                        f"-Wl,-rpath,{lib.parent}"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = subprocess.run([str(exe), str(data)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = np.array([float(v) for v in r.stdout.split()])
    assert out[0] == 0
    n = len(s0.q)
    q, qd, h, rec_c, _, events = contact_events(m).advance(
        "dop853", s0.t, t_end, s0.q, s0.qd, 0.0, u, st.rtol, st.atol, st.max_step,
        (st.stabilization, st.baumgarte, st.projection_tol), st.contact_tol,
        st.contact_velocity, st.event_tol, st.max_steps, rec)
    assert events >= 2 and rec_c[:, 4].any()
    assert np.array_equal(out[1:1 + 2 * n], np.concatenate([q, qd]))
    assert out[1 + 2 * n] == h
    assert np.array_equal(out[2 + 2 * n:], rec_c.ravel())
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_driven_joint_and_stops_equal_the_python_loop(python_loop):
    """A crank driven by a harmonic law (a prescribed coordinate: the hybrid articulated-body
    algorithm in the accelerations and in the impact solves, where its rate keeps s'(t)) pulls
    a slider through a spring against its two stops: the C loop equals the Python loop
    (impacts, then persistent contact on the upper stop)."""
    from fmu_mb import ModelBuilder, harmonic, rod_inertia

    mb = ModelBuilder("driven_stop", {})
    mb.gravity = (0.0, -9.81)
    arm = mb.body("arm", mass=1.0, inertia=rod_inertia(1.0, 0.5))
    slider = mb.body("slider", mass=0.5, inertia=1e-3)       # at the guide's 0
    mb.revolute("O", mb.ground, arm, child_point=(-0.25, 0.0))
    mb.drive("spin", "O", harmonic(0.6, 3.0, offset=0.0))
    mb.prismatic("guide", mb.ground, slider, axis=(1.0, 0.0))
    mb.tsda("spring", arm, slider, a_point=(0.25, 0.0), stiffness=200.0, free_length=0.3,
            damping=1.0)
    mb.joint_limit("stop", "guide", upper=0.03, lower=-0.03, restitution=0.5)
    m = mb.build()
    st = Settings(formulation="recursive")
    python_loop(False)
    _, c = _trajectory(m, st, 1.2, 0.02)
    python_loop(True)
    _, p = _trajectory(m, st, 1.2, 0.02)
    assert p[-1][2][:, 0].sum() >= 5 and p[-1][2][:, 4].any()
    for (qc, qdc, rc), (qp, qdp, rp) in zip(c, p):
        np.testing.assert_array_equal(rc[:, [0, 4]], rp[:, [0, 4]])
        assert (np.abs(rc - rp) <= 1e-12 * np.maximum(1.0, np.abs(rp))).all()
        np.testing.assert_allclose(qdc, qdp, rtol=0, atol=1e-12 * max(1, np.abs(qdp).max()))
        np.testing.assert_allclose(qc, qp, rtol=0, atol=1e-12 * max(1, np.abs(qp).max()))
