"""Contacts in the tree joint coordinates of tmt and lagrange (seed 000 ch.2 eq. 22, ch.3
eq. 15) against newton_euler in absolute coordinates (seed 000 eq. 20) and closed forms."""
import math

import numpy as np
import pytest
from scipy.special import ellipk

import fmu_mb.dynamics.integrate as integrate
from fmu_mb import (InputError, ModelBuilder, Settings, advance, initial_state, output_names,
                    output_values, simulate)
from fmu_mb.dynamics import impact
from fmu_mb.dynamics.impact_minimal import contact_kit
from fmu_mb.errors import ImpactError
from fmu_mb.dynamics.formulations import get_formulation

from conftest import model

G = 9.81
MINIMAL = ("tmt", "lagrange")
# every contact model in models/ with a span that holds several impacts
CASES = [("bouncing_ball", {}, 3.0), ("pendulum_wall", {}, 3.0), ("newtons_cradle", {}, 2.0),
         ("slider_crank_stop", {}, 1.0), ("falling_rod", {}, 1.5),
         ("singular_pendulum", {"method": "classical"}, 3.0)]
# tight enough that the integration error (the only difference between the routes) stays
# well below the tolerances asserted
TIGHT = dict(rtol=1e-12, atol=1e-14)


def record(monkeypatch, formulation):
    """Events handled by advance(): (kind, contact, time, xd after the event) in absolute
    coordinates (mapped through the formulation's T(q))."""
    form = get_formulation(formulation)
    handle = integrate._handle_event
    log = []

    def spy(model, st, kind, i, te, y, settings, kit, *more):
        out = handle(model, st, kind, i, te, y, settings, kit, *more)
        n = out.shape[0] // 2
        log.append((kind, i, te, form.absolute(model, out[:n], out[n:])[1]))
        return out
    monkeypatch.setattr(integrate, "_handle_event", spy)
    return log


def run(monkeypatch, name, overrides, t_end, formulation, dt=0.05):
    m = model(name, **overrides)
    with monkeypatch.context() as mp:
        log = record(mp, formulation)
        rows = simulate(m, t_end, dt, settings=Settings(formulation=formulation, **TIGHT))
    return log, rows


_REFERENCE = {}


def reference(monkeypatch, name, overrides, t_end):
    key = (name, tuple(sorted(overrides.items())), t_end)
    if key not in _REFERENCE:
        _REFERENCE[key] = run(monkeypatch, name, overrides, t_end, "newton_euler")
    return _REFERENCE[key]


# the two formulations of a case run on one pytest-xdist worker (loadgroup), so that the
# case's newton_euler reference (the module's _REFERENCE) is computed once
@pytest.mark.parametrize("formulation", MINIMAL)
@pytest.mark.parametrize("name, overrides, t_end", [
    pytest.param(*case, marks=pytest.mark.xdist_group(f"impact_minimal_{case[0]}"))
    for case in CASES])
def test_same_events_and_trajectories_as_newton_euler(monkeypatch, name, overrides, t_end,
                                                      formulation):
    """Same sequence of impacts (contact by contact), the same impact times to 1e-9 s, the
    same velocities after each impact and the same outputs (poses, contact status and
    forces, joint reactions, energies) on the output grid."""
    ref_log, ref = reference(monkeypatch, name, overrides, t_end)
    log, rows = run(monkeypatch, name, overrides, t_end, formulation)
    assert len(ref_log) >= 2
    assert [e[:2] for e in log] == [e[:2] for e in ref_log]
    for (_, i, t, xd), (_, _, t_ref, xd_ref) in zip(log, ref_log):
        assert abs(t - t_ref) < 1e-9, (i, t, t_ref)
        np.testing.assert_allclose(xd, xd_ref, rtol=0, atol=1e-9 * (1 + abs(xd_ref).max()))
    for col in ref.dtype.names:
        scale = 1.0 + np.abs(ref[col]).max()
        np.testing.assert_allclose(rows[col], ref[col], rtol=0, atol=1e-8 * scale, err_msg=col)


@pytest.mark.slow
@pytest.mark.parametrize("formulation", MINIMAL)
def test_reduction_method_in_joint_coordinates(monkeypatch, formulation):
    """Seed 002 on the singular pendulum: the same passes in q as in x. The string's rod 1
    is massless and the pass starts at det M = d = 1e-4 (sin gamma = 0.01), so the rates of
    the massless rod carry a conditioning of ~1/d: looser than the regular models above."""
    ref_log, ref = reference(monkeypatch, "singular_pendulum", {}, 1.3)
    log, rows = run(monkeypatch, "singular_pendulum", {}, 1.3, formulation)
    assert [e[:2] for e in log] == [e[:2] for e in ref_log]
    assert [e[0] for e in log].count("pass_end") == 3
    for (_, _, t, _), (_, _, t_ref, _) in zip(log, ref_log):
        assert abs(t - t_ref) < 1e-7
    for col in ("ball.x", "ball.y", "ball.vx", "ball.vy", "string.impacts",
                "string.last_time", "energy.total"):
        np.testing.assert_allclose(rows[col], ref[col], rtol=0, atol=1e-5, err_msg=col)


# ---------------------------------------------------------------------- impact equations
def random_state(m, form, rng, spread):
    """A consistent state near the initial one: q on the cut rows, qd on their rates."""
    s = form.initial_state(m)
    n = s.q.shape[0]
    y = np.concatenate([s.q + spread * rng.standard_normal(n), rng.standard_normal(n)])
    return form.project(m, y, 0.0, 1e-14)


@pytest.mark.parametrize("formulation", MINIMAL)
@pytest.mark.parametrize("name, overrides", [
    ("pendulum_wall", {}), ("newtons_cradle", {"n": 4}), ("slider_crank_stop", {}),
    ("falling_rod", {}), ("bouncing_ball", {})])
def test_impact_in_q_equals_impact_in_x_mapped_by_Tq(name, overrides, formulation):
    """With every contact closed at a random state: Tq qd+ (seed 000 ch.3 eq. 15) equals xd+
    of seed 000 eq. 20, with the same impulses, rebound rates, active set and energy loss;
    including a closed loop (slider-crank) and several simultaneous contacts (cradle)."""
    m = model(name, **overrides)
    form = get_formulation(formulation)
    kit = contact_kit(formulation)
    rng = np.random.default_rng(5)
    impacted = 0
    for _ in range(8):
        y = random_state(m, form, rng, 0.05)
        n = y.shape[0] // 2
        q, qd = y[:n], y[n:]
        x, xd = form.absolute(m, q, qd)
        if (impact.contact_rows(m, x, xd)[1] @ xd).min() >= 0.0:     # make one approach
            qd, xd = -qd, -xd
        _, _, Tq, _ = form.kinematics(m, q, qd)
        closed = np.ones(len(m.contacts), bool)
        res_x = impact.impact(m, x, xd, 0.0, closed)
        res_q = kit.impact(m, q, qd, 0.0, closed)
        scale = 1.0 + np.abs(xd).max()
        np.testing.assert_allclose(Tq @ res_q.xd, res_x.xd, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(res_q.p, res_x.p, rtol=0, atol=1e-12 * (1 + res_x.p.max()))
        np.testing.assert_allclose(res_q.v_plus, res_x.v_plus, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(res_q.energy_loss, res_x.energy_loss, rtol=0,
                                   atol=1e-12 * (1 + np.abs(res_x.energy_loss).max()))
        assert np.array_equal(res_q.impacted, res_x.impacted)
        impacted += res_x.impacted.sum()
        # Newton's law where an impulse acts, no penetration elsewhere
        target = -m.compiled.contacts.restitution * np.minimum(res_q.v_minus, 0.0)
        hit = res_q.p > 1e-9
        np.testing.assert_allclose(res_q.v_plus[hit], target[hit], rtol=0, atol=1e-12 * scale)
        assert np.all(res_q.v_plus >= target - 1e-12 * scale)
    assert impacted >= 8


@pytest.mark.parametrize("formulation", MINIMAL)
def test_persistent_contact_force_in_q_equals_newton_euler(formulation):
    """Accelerations with persistent contacts as rows in q: Tq qdd + g = xdd and the same
    contact multipliers as newton_euler (falling rod resting on both ends, slider at the
    stop, cradle balls swinging together: there the gap rows' convective term Dc g counts)."""
    for name in ("falling_rod", "slider_crank_stop", "newtons_cradle"):
        m = model(name)
        form = get_formulation(formulation)
        kit = contact_kit(formulation)
        rng = np.random.default_rng(1)
        y = random_state(m, form, rng, 0.05)
        n = y.shape[0] // 2
        active = np.ones(len(m.contacts), bool)
        y = kit.project(m, y, 0.0, 1e-14, active)
        q, qd = y[:n], y[n:]
        x, xd, Tq, g = form.kinematics(m, q, qd)
        u = np.zeros(len(m.inputs))
        dq = kit.accelerations(m, q, qd, 0.0, u, active)
        dx = impact.accelerations(m, x, xd, 0.0, u, active)
        assert np.abs(impact.gaps(m, x)).max() < 1e-12
        np.testing.assert_allclose(Tq @ dq.qdd + g, dx.qdd, rtol=0,
                                   atol=1e-10 * (1 + np.abs(dx.qdd).max()))
        np.testing.assert_allclose(dq.lam_c, dx.lam_c, rtol=0,
                                   atol=1e-10 * (1 + np.abs(dx.lam_c).max()))
        assert np.any(dx.lam_c != 0.0)


# ---------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("formulation", MINIMAL)
@pytest.mark.parametrize("e", [1.0, 0.5])
def test_bouncing_ball_geometric_series(formulation, e):
    """t_1 = sqrt(2 h0 / g), t_n+1 = t_n + 2 e^n v0 / g; the rebound velocity is e times the
    impact velocity e^(n-1) v0."""
    m = model("bouncing_ball", e=e, h0=1.0)
    settings = Settings(formulation=formulation)
    form = get_formulation(formulation)
    s = initial_state(m, settings)
    v0 = math.sqrt(2 * G)
    t_imp, v = v0 / G, v0
    delta = 1e-9
    for n in range(1, 5):
        s = advance(m, s, t_imp + delta, settings=settings)
        c = s.extra["contacts"]["floor"]
        assert c["impacts"] == n
        assert abs(c["last_time"] - t_imp) < 1e-12
        _, xd = form.absolute(m, s.q, s.qd)
        assert xd[1] == pytest.approx(e * v - G * delta, rel=1e-12)
        v *= e
        t_imp += 2 * v / G


@pytest.mark.parametrize("formulation", MINIMAL)
@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_pendulum_on_wall_rebounds_with_minus_e_times_its_rate(formulation, e):
    """Rod pendulum: impact at T/4 = sqrt(2 l / 3 g) K(sin^2(theta0 / 2)) with rate -w,
    w = sqrt(3 g (1 - cos theta0) / l); after it the joint rate is -e (-w)."""
    m = model("pendulum_wall", e=e)
    p = m.parameter_values
    l, th0 = p["l"], p["theta0"]
    t4 = math.sqrt(2 * l / (3 * G)) * ellipk(math.sin(th0 / 2) ** 2)
    w = math.sqrt(3 * G * (1 - math.cos(th0)) / l)
    settings = Settings(formulation=formulation)
    s = advance(m, initial_state(m, settings), t4 + 1e-9, settings=settings)
    c = s.extra["contacts"]["wall"]
    assert c["impacts"] == 1
    assert abs(c["last_time"] - t4) < 1e-10
    assert s.qd[0] == pytest.approx(e * w, rel=1e-7, abs=1e-7)       # q = (O.angle,)
    out = dict(zip(output_names(m), output_values(m, s, np.zeros(0), formulation)))
    assert out["O.rate"] == pytest.approx(e * w, rel=1e-7, abs=1e-7)
    if e == 0.0 and not out["wall.active"]:
        # at T/4 the rod hangs vertically, where gravity presses it on the wall with no
        # torque: the plastic impact leaves it at rest with a zero normal force, so whether
        # the contact is persistent or released is decided by the rate's rounding
        assert abs(s.qd[0]) <= 1e-15 * w
    else:
        assert out["wall.active"] == float(e == 0.0)


def test_reduction_on_a_cut_joint_is_refused():
    """A Reduction contact whose singular joint closes a loop has no coordinate in q: refused
    before the run in tmt and lagrange (newton_euler refuses the loop at the first criterion
    evaluation, as the joint coordinates are not a minimal set)."""
    mb = ModelBuilder("loop", gravity=(0.0, -G))
    a = mb.body("a", mass=1.0, inertia=0.1, position=(0.0, -0.5))
    b = mb.body("b", mass=1.0, inertia=0.1, position=(0.5, -1.0))
    c = mb.body("c", mass=1.0, inertia=0.1, position=(1.0, -0.5))
    mb.revolute("A0", mb.ground, a, parent_point=(0.0, 0.0), child_point=(0.0, 0.5))
    mb.revolute("A", a, b, parent_point=(0.0, -0.5), child_point=(-0.5, 0.0))
    mb.revolute("B", b, c, parent_point=(0.5, 0.0), child_point=(0.0, -0.5))
    mb.revolute("B0", mb.ground, c, parent_point=(1.0, 0.0), child_point=(0.0, 0.5))
    m0 = mb.build()
    cut = m0.topology.cut_joints[0]
    mb.contact_points("stop", mb.ground, b, distance=2.0, side="within", method="reduction",
                      singular_joint=cut)
    m = mb.build()
    for f in MINIMAL:
        with pytest.raises(InputError, match=f"contact 'stop' uses the Reduction Method on "
                                             f"joint '{cut}', a cut joint .* formulation "
                                             f"'{f}'; the Reduction Method needs the joint "
                                             f"coordinates to be a minimal set"):
            advance(m, initial_state(m, Settings(formulation=f)), 0.1,
                    settings=Settings(formulation=f))
    with pytest.raises(ImpactError, match="needs the joint coordinates to be a minimal set"):
        advance(m, initial_state(m), 0.01)
