"""The contact event loop of spatial models in C (native/event_loop.h over the spatial kernel,
native/spatial_events.c; formulation recursive): event location on the dense output, impacts
by seed 000 ch.3 eq. 15 with Newton's restitution law, persistent contacts and their release,
in one foreign call per interval.

Checked against the Python event loop of fmu_mb.dynamics.integrate (the same kernel steps,
scipy's dense output and brentq, the impact equations of formulations/_spatial_contacts in
numpy: in q' with the Euler-parameter normalisation rows, where C solves them in the velocity
coordinates of the kernel), against closed forms of a box's impacts (one corner; two corners
at once) and against a finely stepped reference of a pendulum between its stops."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fmu_mb import ModelBuilder
from fmu_mb.dynamics.formulations import recursive
from fmu_mb.dynamics.integrate import Settings, advance, initial_state
from fmu_mb.dynamics.outputs import output_names, output_values
from fmu_mb.engine.spatial_kernel import spatial_contact_events
from fmu_mb.errors import IntegrationError
from fmu_mb.mechanics.spatial import rotations as rot
from fmu_mb.mechanics.spatial.elements import angular_velocity

from conftest import MODELS, model

FIELDS = ("impacts", "last_time", "last_impulse", "energy_loss", "active")
K_TYRE = 357859.232809      # the double wishbone's default tyre stiffness: tyre.h = -k z_road


@pytest.fixture
def python_loop(monkeypatch):
    """Run recursive's contact models through the Python event loop."""
    def use(flag):
        monkeypatch.setattr(recursive, "NATIVE_EVENTS", not flag)
    return use


def _records(m, s):
    c = (s.extra or {}).get("contacts", {x.name: dict.fromkeys(FIELDS, 0.0) for x in m.contacts})
    return np.array([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])


def _trajectory(m, settings, t_end, dt, u=None):
    """(q, qd, records) after each interval of dt."""
    s = initial_state(m, settings)
    out = []
    for k in range(1, int(round(t_end / dt)) + 1):
        s = advance(m, s, k * dt, u(k * dt) if callable(u) else u, settings)
        out.append((s.q.copy(), s.qd.copy(), _records(m, s)))
    return s, out


def _equal(a, b, tol=1e-12):
    """Every interval's q, qd and records (impact counts, event times, impulses, energy
    losses, persistent flags) of the two runs agree to tol relative to the scale of each
    quantity over the run, max(1, largest |value|): after the double wishbone's first impact
    (1134 N.s at 5 m/s) its velocities fall to 0.1 m/s and its last rebounds take 5 N.s, with
    the absolute error the large ones had."""
    assert len(a) == len(b)
    scales = [np.maximum(1.0, np.max([np.abs(y[j]) for y in b], axis=0).max(
        axis=None if j < 2 else 0)) for j in range(3)]
    for k, (x, y) in enumerate(zip(a, b)):
        for j, what in enumerate(("q", "qd", "records")):
            diff = np.abs(x[j] - y[j]) / scales[j]
            assert diff.max(initial=0.0) <= tol, (what, k, x[j], y[j])


def _wishbone_input(t):
    return {"tyre.h": -K_TYRE * (0.1 if t > 0.05 + 1e-12 else 0.0)}


def _pendulum():
    """A pendulum on a revolute joint between two stops (a joint limit, rad)."""
    mb = ModelBuilder("pend_stops", gravity=(0.0, 0.0, -9.81))
    mb.body("rod", mass=1.0, inertia=(0.02, 0.02, 0.001), position=(0.6, 0.0, 0.0))
    mb.revolute("A", mb.ground, "rod", at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0))
    mb.joint_limit("stop", "A", lower=-1.0, upper=0.3, restitution=0.8)
    return mb.build()


CASES = [("tumbling_box", 0.6, 0.05, "dop853"), ("tumbling_box", 0.6, 0.05, "dopri5"),
         ("tumbling_box", 0.5, 0.05, "rk4"), ("double_wishbone", 0.2, 0.01, "dop853"),
         ("pendulum", 2.5, 0.1, "dop853"), ("flat_landing", 0.5, 0.05, "dop853")]


def _case(name):
    if name == "double_wishbone":
        from fmu_mb import load_model
        return load_model(MODELS / "double_wishbone.py", stops="on"), _wishbone_input
    if name == "pendulum":
        return _pendulum(), None
    if name == "flat_landing":       # two corners land at once (a simultaneous impact)
        return model("tumbling_box", alpha0=0.3, beta0=0.0, wx0=0.0, wy0=0.0, wz0=0.0,
                     vx0=0.0), None
    return model(name), None


@pytest.mark.parametrize("name,t_end,dt,method", CASES,
                         ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_c_loop_equals_the_python_loop(name, t_end, dt, method, python_loop):
    """Event times, impulses, impact counts, energy losses, persistent flags and the state
    after every interval of the C loop equal the Python loop's to 1e-12; so do the contact
    outputs (gap, force) at the end."""
    m, u = _case(name)
    S = Settings(formulation="recursive", method=method, rtol=1e-10, atol=1e-12)
    python_loop(False)
    sc, c = _trajectory(m, S, t_end, dt, u)
    python_loop(True)
    sp, p = _trajectory(m, S, t_end, dt, u)
    assert sum(r[0] for r in c[-1][2]) >= 1                  # there were impacts
    _equal(c, p)
    uv = m.input_vector(u(t_end) if u else None)
    names = output_names(m)
    python_loop(False)
    oc = dict(zip(names, output_values(m, sc, uv, "recursive")))
    python_loop(True)
    op = dict(zip(names, output_values(m, sp, uv, "recursive")))
    for x in m.contacts:
        for f in ("gap", "force", "impacts", "last_time", "last_impulse", "energy_loss",
                  "active"):
            k = f"{x.name}.{f}"
            assert oc[k] == pytest.approx(op[k], rel=1e-10, abs=1e-9), k


def test_double_wishbone_settles_on_its_bump_stop_in_c():
    """Under a 100 mm road step the wheel hits the bump stop (Chrono's E90 travel, 50 mm)
    and stays on it (a persistent contact pushing), all in the C loop."""
    from fmu_mb import load_model
    m = load_model(MODELS / "double_wishbone.py", stops="on")
    S = Settings(formulation="recursive")
    s = initial_state(m, S)
    s = advance(m, s, 0.05, m.input_vector(_wishbone_input(0.0)), S)
    s = advance(m, s, 0.25, m.input_vector(_wishbone_input(0.1)), S)
    u = m.input_vector(_wishbone_input(0.1))
    o = dict(zip(output_names(m), output_values(m, s, u, "recursive")))
    assert o["bump_stop.impacts"] >= 1 and o["bump_stop.active"] == 1.0
    assert o["bump_stop.force"] > 0.0 and abs(o["bump_stop.gap"]) < 1e-9
    assert o["rebound_stop.impacts"] == 0
    assert o["coil_over.length"] >= 0.2753645852320157 - 0.05 - 1e-8


def _box_corner_impact(m, x, xd, rho_b, e):
    """Closed form of a rigid body's frictionless impact on the floor z = 0 at body point
    rho_b: (v+, w+, P)."""
    R = rot.matrix(x[3:7][None])[0]
    J = R @ np.array(m.bodies[0].inertia) @ R.T
    rho = R @ np.asarray(rho_b)
    n = np.array([0.0, 0.0, 1.0])
    v, w = xd[:3], angular_velocity(m, x, xd)[0]
    vn = (v + np.cross(w, rho)) @ n
    k = np.cross(rho, n)
    Jinv = np.linalg.inv(J)
    P = -(1.0 + e) * vn / (1.0 / m.bodies[0].mass + k @ Jinv @ k)
    return v + P * n / m.bodies[0].mass, w + Jinv @ (P * k), P


def _absolute(m, s):
    from fmu_mb.dynamics.formulations import recursive as r
    x, xd = r.absolute(m, s.q, s.qd)
    return np.asarray(x, float), np.asarray(xd, float)


@pytest.mark.parametrize("flat", [False, True])
def test_box_first_impact_closed_form(flat):
    """The box's first impact in the C loop: one corner (the spinning box) or two corners at
    once (the box tilted about x only, landing on an edge: the impulse of a contact at the
    edge's middle, split evenly), against the rigid-body closed form at the C loop's own
    pre-impact state."""
    e = 0.6
    pars = dict(alpha0=0.3, beta0=0.0, wx0=0.0, wy0=0.0, wz0=0.0, vx0=0.0) if flat else {}
    m = model("tumbling_box", e=e, **pars)
    S = Settings(formulation="recursive", rtol=1e-11, atol=1e-13)
    s = initial_state(m, S)
    while not _records(m, s)[:, 0].any():                   # 5 ms chunks to the first impact
        s = advance(m, s, s.t + 0.005, settings=S)
    rec = _records(m, s)
    hit = np.flatnonzero(rec[:, 0] > 0)
    assert len(hit) == (2 if flat else 1) and (rec[hit, 0] == 1).all()
    te = rec[hit[0], 1]
    assert np.all(rec[hit, 1] == te)
    before = advance(m, initial_state(m, S), te - 1e-12, settings=S)   # just before it
    x, xd = _absolute(m, before)
    rho = np.mean([m.contacts[i].point for i in hit], axis=0)     # (the radius adds no arm)
    v1, w1, P = _box_corner_impact(m, x, xd, rho, e)
    np.testing.assert_allclose(rec[hit, 2].sum(), P, rtol=1e-8)
    if flat:
        np.testing.assert_allclose(rec[hit, 2], P / 2, rtol=1e-8)
    after = advance(m, before, te + 1e-12, settings=S)
    xa, xda = _absolute(m, after)
    np.testing.assert_allclose(xda[:3], v1, atol=1e-8)
    np.testing.assert_allclose(angular_velocity(m, xa, xda)[0], w1, atol=1e-8)


def test_pendulum_stops_against_reference():
    """A pendulum between its stops in the C loop: the impact times against a finely stepped
    reference of the pendulum equation, the impulse I_O (1 + e) |rate|."""
    m = _pendulum()
    S = Settings(formulation="recursive", rtol=1e-11, atol=1e-13)
    I0, e = 0.02 + 0.36, 0.8

    def f(t, y):
        return [y[1], -9.81 * 0.6 * math.cos(y[0]) / I0]
    hit = lambda t, y: y[0] + 1.0                                      # noqa: E731
    hit.terminal = True
    ref = solve_ivp(f, (0, 2), [0.0, 0.0], rtol=1e-12, atol=1e-13, events=hit,
                    method="DOP853")
    te, rate = ref.t_events[0][0], ref.y_events[0][0][1]
    s = advance(m, initial_state(m, S), te + 1e-3, settings=S)
    o = dict(zip(output_names(m), output_values(m, s, m.input_vector(None), "recursive")))
    assert o["stop_lower.last_time"] == pytest.approx(te, abs=1e-9)
    assert o["stop_lower.last_impulse"] == pytest.approx(I0 * (1 + e) * abs(rate), rel=1e-7)


def test_outputs_and_errors_of_the_c_loop():
    """The event loop's outputs give the gaps of the kernel's contacts; a bad call (t_end
    before t) is refused and leaves the records as they were."""
    m = model("tumbling_box")
    ev = spatial_contact_events(m)
    S = Settings(formulation="recursive")
    s = initial_state(m, S)
    gap, force = ev.outputs(0.0, s.q, s.qd, None, np.zeros((len(m.contacts), 5)))
    x, _ = _absolute(m, s)
    R = rot.matrix(x[3:7][None])[0]
    want = [x[2] + (R @ np.array(c.point))[2] - c.offset for c in m.contacts]
    np.testing.assert_allclose(gap, want, atol=1e-14)
    assert not force.any()
    rec = np.zeros((len(m.contacts), 5))
    with pytest.raises(IntegrationError, match="invalid kernel arguments"):
        ev.advance("dop853", 1.0, 0.5, s.q, s.qd, 0.0, None, 1e-9, 1e-11, np.inf,
                   ("projection", (10.0, 10.0), 1e-13), 1e-9, 1e-3, 1e-15, 0, rec)
    assert not rec.any()
    # a step budget too small: refused with the budget named, the records unchanged
    with pytest.raises(IntegrationError, match="more than 3 integrator steps"):
        ev.advance("dop853", 0.0, 1.0, s.q, s.qd, 0.0, None, 1e-9, 1e-11, np.inf,
                   ("projection", (10.0, 10.0), 1e-13), 1e-9, 1e-3, 1e-15, 3, rec)
    assert not rec.any()


@pytest.mark.parametrize("h", [0.0123, 0.02, 0.03, 3.0 / 7.0])
def test_tumbling_box_runs_at_any_communication_step(h):
    """The box's 65 impacts whatever the communication step: just after an impact a gap of
    +1e-17 (rounding) once made the event location find a root at the impact's own instant,
    an impact without impulse again and again, until the Zeno guard stopped the run (these
    steps failed so)."""
    from fmu_mb.dynamics.integrate import stepper
    m = model("tumbling_box")
    S = Settings(formulation="recursive")
    s, step = initial_state(m, S), stepper(m, S)
    for k in range(1, int(math.ceil(1.5 / h)) + 1):
        s = step(s, min(k * h, 1.5), np.zeros(0))
    assert _records(m, s)[:, 0].sum() >= 60       # (65 here; the count is chaotic)


def test_engine_contact_outputs_after_a_step_see_other_inputs_and_states():
    """After a step the engine's contact outputs take the event loop's multipliers at the
    step's end (no second acceleration solve) only at that step's own t, y and u: the double
    wishbone resting on its bump stop gives, with another tyre force and after set_state with
    another qd at the same t, the outputs of a new engine set to that state (bit for bit) and
    of fmu_mb.dynamics.outputs (1e-10), and the stop's force moves with the input. (A reuse
    that ignored u or y fails here.)"""
    from fmu_mb import load_model
    from fmu_mb.dynamics.integrate import stepper
    from fmu_mb.dynamics.outputs import Outputs
    from fmu_mb.engine.engine import Engine
    m = load_model(MODELS / "double_wishbone.py", stops="on")
    S = Settings(formulation="recursive")

    def engine(state=None):
        e = Engine(m)
        e.set_settings(S)
        e.initialize(m.t0)
        if state is not None:
            e.set_state(state)
        return e

    eng, st = engine(), initial_state(m, S)
    step = stepper(m, S)
    u1 = m.input_vector({"tyre.h": -K_TYRE * 0.1})
    for _ in range(20):
        eng.do_step(0.01, u1)
        st = step(st, st.t + 0.01, u1)
    names = list(output_names(m))
    i = names.index("bump_stop.force")
    assert eng.records[[c.name for c in m.contacts].index("bump_stop"), 4] == 1.0   # resting
    s = eng.get_state()
    u2 = m.input_vector({"tyre.h": -K_TYRE * 0.12})
    o1 = eng.outputs(u1)
    o2 = eng.outputs(u2)
    np.testing.assert_array_equal(o1, engine(s).outputs(u1))
    np.testing.assert_array_equal(o2, engine(s).outputs(u2))
    ref = Outputs(m, st, u2, "recursive", compiled=False).values()
    assert o2[i] == pytest.approx(ref[i], rel=1e-10)
    assert o2[i] > o1[i] + 1e3                     # 7 kN more from the tyre onto the stop
    np.testing.assert_array_equal(eng.outputs(u1), o1)
    s2 = s.copy()
    n = (len(s) - 2 - 5 * len(m.contacts)) // 2
    s2[1 + n:1 + 2 * n] *= 1.5                     # the same t and q, other rates
    eng.set_state(s2)
    o3 = eng.outputs(u1)
    np.testing.assert_array_equal(o3, engine(s2).outputs(u1))
    assert o3[i] != o1[i]
