"""Persistent contacts in the compiled kernel (formulation recursive): while a contact is
persistent its gap row is closed in C like a cut joint's row (kernel.contact_kernel), so the
phase steps in C and the event loop's contact forces and projections come from C; event
location and the impact equations stay in Python. Checked against tmt (the same q, all
Python) and closed forms."""
import math

import numpy as np
import pytest

from fmu_mb import simulate
from fmu_mb.dynamics import impact_minimal
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.engine.kernel import contact_kernel

from conftest import model

TMT, REC = get_formulation("tmt"), get_formulation("recursive")


@pytest.mark.parametrize("name,t_end,pars", [("bouncing_ball", 1.0, {"e": 0.5, "h0": 0.2}),
                                             ("falling_rod", 1.0, {}),
                                             ("slider_crank_stop", 1.0, {})])
def test_results_and_event_times_equal_tmt(name, t_end, pars):
    """Every output (impact counts, times and impulses included) of recursive equals tmt's
    to the integration tolerance (rtol 1e-10), and each ends with a persistent contact."""
    m = model(name, **pars)
    kw = dict(rtol=1e-10, atol=1e-12)
    a = simulate(m, t_end, 0.01, formulation="recursive", **kw)
    b = simulate(m, t_end, 0.01, formulation="tmt", **kw)
    for col in b.dtype.names:
        scale = 1.0 + np.abs(b[col]).max()
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=1e-7 * scale, err_msg=col)
    assert any(a[c][-1] == 1 for c in a.dtype.names if c.endswith(".active"))


def test_ball_comes_to_rest_at_the_closed_form_time_and_carries_its_weight():
    """Ball dropped from h0 with restitution e: impacts at t0 (1 + 2 e + ... ), at rest at
    t0 (1 + e) / (1 - e) (t0 = sqrt(2 h0 / g)) up to the last bounce below contact_velocity;
    resting, the contact force is m g and the ball stays at its contact height."""
    e, h0, g, r = 0.5, 0.2, 9.81, 0.1
    m = model("bouncing_ball", e=e, h0=h0)
    out = simulate(m, 1.0, 0.01, formulation="recursive", rtol=1e-10, atol=1e-12)
    t0 = math.sqrt(2 * h0 / g)
    rest = t0 * (1 + e) / (1 - e)
    on = out["time"][out["floor.active"] == 1]
    assert on[0] <= rest + 0.01 and out["floor.last_time"][-1] < rest
    assert out["floor.last_time"][-1] > rest - 0.01
    late = out["time"] > rest + 0.02
    np.testing.assert_allclose(out["floor.force"][late], 1.0 * g, rtol=1e-9)
    np.testing.assert_allclose(out["ball.y"][late], r, atol=1e-9)
    np.testing.assert_allclose(out["ball.vy"][late], 0.0, atol=1e-9)


@pytest.mark.parametrize("name", ["falling_rod", "slider_crank_stop"])
def test_contact_forces_and_projection_from_c_equal_tmt(name):
    """The kit's gaps and accelerations with an active contact (C) give tmt's gaps, qdd, cut
    multipliers and contact multipliers; its projection lands on the same manifold."""
    m = model(name)
    kit_r = impact_minimal.contact_kit("recursive")
    kit_t = impact_minimal.contact_kit("tmt")
    s = TMT.initial_state(m)
    n = len(s.q)
    rng = np.random.default_rng(3)
    u = np.zeros(len(m.inputs))
    for active in ([True] + [False] * (len(m.contacts) - 1), [True] * len(m.contacts)):
        active = np.array(active)
        y = np.concatenate([s.q + 0.05 * rng.normal(size=n), rng.normal(size=n)])
        y = kit_t.project(m, y, 0.2, 1e-14, active)
        yr = kit_r.project(m, y + 1e-6, 0.2, 1e-14, active)
        yt = kit_t.project(m, y + 1e-6, 0.2, 1e-14, active)
        np.testing.assert_allclose(yr, yt, rtol=0, atol=1e-9)
        np.testing.assert_allclose(kit_r.gaps(m, y[:n]), kit_t.gaps(m, y[:n]), rtol=0,
                                   atol=1e-14)       # the event loop's gaps, from C
        a = kit_r.accelerations(m, y[:n], y[n:], 0.2, u, active)
        b = kit_t.accelerations(m, y[:n], y[n:], 0.2, u, active)
        sc = 1 + np.abs(b.qdd).max()
        np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-10 * sc)
        np.testing.assert_allclose(a.lam_c, b.lam_c, rtol=0,
                                   atol=1e-10 * (1 + np.abs(b.lam_c).max()))
        np.testing.assert_allclose(a.lam, b.lam, rtol=0, atol=1e-10 * (1 + np.abs(b.lam).max(initial=0.0)))


def test_persistent_phases_do_not_call_the_python_equations(monkeypatch):
    """Once the rod lies on the floor nothing evaluates tmt's contact equations: the phase
    steps in C and its release checks ask the kernel."""
    m = model("falling_rod")
    calls = []
    real = impact_minimal.accelerations

    def counting(model_, form, q, qd, t, u, active, *a, **k):
        calls.append(bool(np.any(active)))
        return real(model_, form, q, qd, t, u, active, *a, **k)

    monkeypatch.setattr(impact_minimal, "accelerations", counting)
    out = simulate(m, 1.5, 0.05, formulation="recursive")
    assert out["end_a.active"][-1] == 1 and out["end_b.active"][-1] == 1
    assert not any(calls)
    assert contact_kernel(m, (0, 1)).m == 2
