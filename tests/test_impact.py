"""Contacts and impacts (seed 000 sec. 1.4, eq. 20) against closed forms and hand-derived
impulse equations; event location, persistent contact, outputs, state round trips, errors."""
import json
import math

import numpy as np
import pytest
from scipy.special import ellipk

from fmu_mb import (IntegrationError, ModelBuilder, ModelError, Settings, State,
                    advance, initial_state, output_names, output_spec, output_values,
                    rod_inertia, simulate)
from fmu_mb.dynamics import impact
from fmu_mb.errors import ImpactError

from conftest import engine_equals, model

G = 9.81


def outputs(m, s):
    return dict(zip(output_names(m), output_values(m, s, np.zeros(len(m.inputs)))))


def contact(s, name):
    return s.extra["contacts"][name]


# ---------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("e", [1.0, 0.5])
def test_bouncing_ball_impact_times_and_rebound_heights(e):
    """t_1 = sqrt(2 h0 / g), t_n+1 = t_n + 2 v_n / g with v_n = e^n v0; apex e^2n h0."""
    m = model("bouncing_ball", e=e, h0=1.0)
    r = m.parameter("r").value
    v0 = math.sqrt(2 * G * 1.0)
    s = initial_state(m)
    t_imp, v = v0 / G, v0
    for n in range(1, 5):
        s = advance(m, s, t_imp + 1e-9)
        c = contact(s, "floor")
        assert c["impacts"] == n
        assert abs(c["last_time"] - t_imp) < 1e-12
        assert c["last_impulse"] == pytest.approx((1 + e) * v, rel=1e-12)
        v *= e
        s = advance(m, s, t_imp + v / G)                  # apex of the next flight
        assert s.q[1] - r == pytest.approx(v * v / (2 * G), abs=1e-11)
        assert abs(s.qd[1]) < 1e-10
        t_imp += 2 * v / G


@pytest.mark.parametrize("g", [G, -G])
def test_ball_released_on_the_floor_at_rest(g):
    """h0 = 0: the contact closed at rest at the start. Pressed by gravity (g > 0) it is
    persistent from t0: no impact, the ball at rest on the floor, the floor's force m g (a
    free start would find an impact where the rounding-size gap closes). Pulled by gravity
    (g < 0: along +y) its force would be tensile: released at t0, no impact, the ball rising
    as y - r = |g| t^2 / 2. The same in the Python loop (absolute and joint coordinates), the
    compiled loop and the engine library (the native FMU's code)."""
    from fmu_mb.engine.engine import Engine

    m = model("bouncing_ball", h0=0.0, g=g)
    r, mass = m.parameter("r").value, m.parameter("m").value
    t = np.linspace(0.0, 0.1, 3)
    for f in ("newton_euler", "tmt", "recursive"):
        res = simulate(m, 0.1, 0.05, settings=Settings(formulation=f))
        assert set(res["floor.impacts"]) == {0.0}, f
        if g > 0.0:
            assert set(res["floor.active"]) == {1.0}, f
            np.testing.assert_allclose(res["floor.force"], mass * g, rtol=1e-12)
            np.testing.assert_allclose(res["ball.y"] - r, 0.0, atol=1e-12)
            np.testing.assert_allclose(res["ball.vy"], 0.0, atol=1e-12)
        else:
            assert set(res["floor.active"]) == {0.0} and set(res["floor.force"]) == {0.0}, f
            np.testing.assert_allclose(res["ball.y"] - r, -g * t * t / 2, rtol=1e-9, atol=1e-15)
            np.testing.assert_allclose(res["ball.vy"], -g * t, rtol=1e-9, atol=1e-15)
    eng = Engine(m)
    eng.set_settings(Settings(formulation="newton_euler"))
    eng.initialize()
    engine_equals(eng, res, 0.05)


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_pendulum_hits_wall_after_quarter_period(e):
    """Rod pendulum: T/4 = sqrt(2 l / 3 g) K(sin^2(theta0 / 2)); omega+ = -e omega-;
    tip impulse (1 + e) |omega-| J_O / l; loss (1 - e^2) T-."""
    m = model("pendulum_wall", e=e)
    p = m.parameter_values
    l, th0, mass = p["l"], p["theta0"], p["m"]
    t4 = math.sqrt(2 * l / (3 * G)) * ellipk(math.sin(th0 / 2) ** 2)
    w = math.sqrt(3 * G * (1 - math.cos(th0)) / l)
    s = advance(m, initial_state(m), t4 + 1e-9)
    c = contact(s, "wall")
    assert c["impacts"] == 1
    assert abs(c["last_time"] - t4) < 1e-10
    JO = mass * l * l / 3
    assert c["last_impulse"] == pytest.approx((1 + e) * w * JO / l, rel=1e-8)
    assert c["energy_loss"] == pytest.approx((1 - e * e) * JO * w * w / 2, rel=1e-8, abs=1e-12)
    assert outputs(m, s)["O.rate"] == pytest.approx(e * w, rel=1e-7, abs=1e-7)


def pendulum_with_limit(e):
    """pendulum_wall with the wall replaced by a lower limit on the joint angle."""
    mb = ModelBuilder("pendulum_limit", gravity=(0.0, -G))
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
    mb.revolute("O", mb.ground, rod, child_point=(-0.5, 0.0), angle0=-math.pi / 2)
    mb.joint_limit("stop", "O", lower=0.0, restitution=e)
    mb.initial("O", value=math.radians(60.0), rate=0.0)
    return mb.build()


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_revolute_joint_limit_equals_wall_contact(e):
    wall = model("pendulum_wall", e=e)
    lim = pendulum_with_limit(e)
    a = advance(wall, initial_state(wall), 0.6)
    b = advance(lim, initial_state(lim), 0.6)
    assert contact(b, "stop")["last_time"] == pytest.approx(contact(a, "wall")["last_time"],
                                                           abs=1e-10)
    # the limit's impulse is a moment: the wall's impulse times the arm l = 1 m
    assert contact(b, "stop")["last_impulse"] == pytest.approx(
        contact(a, "wall")["last_impulse"], rel=1e-9)
    np.testing.assert_allclose(b.qd, a.qd, atol=1e-9)
    assert outputs(lim, b)["stop.gap"] >= -1e-12


@pytest.mark.parametrize("n", [3, 5])
def test_newtons_cradle_passes_the_velocity_through_the_row(n):
    m = model("newtons_cradle", n=n, e=1.0)
    ne = Settings(formulation="newton_euler")        # reads absolute rates qd[2::3] below
    last = f"c{n - 2}{n - 1}"
    first_t = contact(advance(m, initial_state(m, ne), 0.6, settings=ne), "c01")["last_time"]
    # impact times repeat to ~1e-11 s between runs with different step sequences
    before = advance(m, initial_state(m, ne), first_t - 1e-6, settings=ne)
    after_all = advance(m, initial_state(m, ne), 0.6, settings=ne)
    t_last = contact(after_all, last)["last_time"]
    s = advance(m, initial_state(m, ne), t_last + 1e-6, settings=ne)
    omega_in = before.qd[2]
    omega = s.qd[2::3]
    assert all(contact(s, f"c{i}{i + 1}")["impacts"] == 1 for i in range(n - 1))
    assert omega[-1] == pytest.approx(omega_in, rel=1e-6)
    assert np.abs(omega[:-1]).max() < 1e-3 * abs(omega_in)
    assert sum(contact(s, f"c{i}{i + 1}")["energy_loss"] for i in range(n - 1)) < 1e-12


def test_cradle_with_losses_reports_the_lost_energy():
    m = model("newtons_cradle", n=3, e=0.7)
    s0 = initial_state(m)
    s = advance(m, s0, 0.6)
    o0, o = outputs(m, s0), outputs(m, s)
    loss = o["c01.energy_loss"] + o["c12.energy_loss"]
    assert loss > 1e-3
    assert o0["energy.total"] - o["energy.total"] == pytest.approx(loss, rel=1e-7)


def test_rod_landing_on_one_end():
    """Impulse P at end A (arm a = l/2 cos theta): P = (1 + e) v0 / (1/m + a^2 / J),
    vy+ = -v0 + P / m, omega+ = -a P / J."""
    m = model("falling_rod", e=0.5, theta0=math.radians(30.0), h0=0.5)
    p = m.parameter_values
    l, mass, e, th = p["l"], p["m"], p["e"], p["theta0"]
    t_imp = math.sqrt(2 * p["h0"] / G)
    s = advance(m, initial_state(m), t_imp + 1e-12)
    c = contact(s, "end_a")
    assert c["impacts"] == 1 and contact(s, "end_b")["impacts"] == 0
    assert abs(c["last_time"] - t_imp) < 1e-12
    v0, a, J = G * t_imp, l / 2 * math.cos(th), mass * l * l / 12
    P = (1 + e) * v0 / (1 / mass + a * a / J)
    assert c["last_impulse"] == pytest.approx(P, rel=1e-10)
    np.testing.assert_allclose(s.qd, [0.0, -v0 + P / mass, -a * P / J], atol=1e-9)


def test_rod_landing_flat_hits_both_ends_at_once():
    m = model("falling_rod", e=0.5, theta0=0.0, h0=0.5)
    t_imp = math.sqrt(2 * 0.5 / G)
    s = advance(m, initial_state(m), t_imp + 1e-12)
    assert contact(s, "end_a")["impacts"] == 1 and contact(s, "end_b")["impacts"] == 1
    np.testing.assert_allclose(s.qd, [0.0, 0.5 * G * t_imp, 0.0], atol=1e-9)


# ---------------------------------------------------------------------- impact equations
def wall_double_pendulum(theta, m1=1.0, m2=0.7, l1=0.55, l2=0.4):
    """Double pendulum with the tip of rod 2 against a wall through it with normal (-1, 0);
    returns the model and x at absolute rod angles theta."""
    mb = ModelBuilder("dp_wall")
    r1 = mb.body("rod1", mass=m1, inertia=rod_inertia(m1, l1))
    r2 = mb.body("rod2", mass=m2, inertia=rod_inertia(m2, l2))
    mb.revolute("A", mb.ground, r1, child_point=(-l1 / 2, 0.0))
    mb.revolute("B", r1, r2, parent_point=(l1 / 2, 0.0), child_point=(-l2 / 2, 0.0))
    e1 = np.array([math.cos(theta[0]), math.sin(theta[0])])
    e2 = np.array([math.cos(theta[1]), math.sin(theta[1])])
    tip = l1 * e1 + l2 * e2
    mb.contact("wall", r2, (l2 / 2, 0.0), line_point=tuple(tip), normal=(-1.0, 0.0))
    x = np.concatenate([l1 / 2 * e1, [theta[0]], l1 * e1 + l2 / 2 * e2, [theta[1]]])
    return mb.build(), x


def hand_impact(theta, thetad, e, n, m1=1.0, m2=0.7, l1=0.55, l2=0.4):
    """Eq. 20 reduced by hand to the rod angles: Mbar dtheta' = w P, w = Jtip' n,
    w' theta'+ = -e w' theta'-."""
    J1, J2 = m1 * l1 ** 2 / 12, m2 * l2 ** 2 / 12
    c = math.cos(theta[0] - theta[1])
    M = np.array([[m1 * l1 ** 2 / 4 + J1 + m2 * l1 ** 2, m2 * l1 * l2 / 2 * c],
                  [m2 * l1 * l2 / 2 * c, m2 * l2 ** 2 / 4 + J2]])
    p1 = np.array([-math.sin(theta[0]), math.cos(theta[0])])
    p2 = np.array([-math.sin(theta[1]), math.cos(theta[1])])
    w = np.array([l1 * p1 @ n, l2 * p2 @ n])
    vn = w @ thetad
    P = -(1 + e) * vn / (w @ np.linalg.solve(M, w))
    td = thetad + np.linalg.solve(M, w) * P

    def centres(td):
        return np.concatenate([l1 / 2 * p1 * td[0], [td[0]],
                               l1 * p1 * td[0] + l2 / 2 * p2 * td[1], [td[1]]])
    return centres(thetad), centres(td), P


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_double_pendulum_tip_on_wall_matches_hand_derived_eq20(e):
    theta, thetad = (math.radians(-50.0), math.radians(10.0)), np.array([1.3, -2.1])
    m, x = wall_double_pendulum(theta)
    n = np.array([-1.0, 0.0])
    xd_minus, xd_plus, P = hand_impact(theta, thetad, e, n)
    res = impact.impact(m, x, xd_minus, closed=[True], restitution=[e])
    assert res.v_minus[0] < 0
    np.testing.assert_allclose(res.xd, xd_plus, atol=1e-12)
    assert res.p[0] == pytest.approx(P, rel=1e-12)
    # joint impulses from the momentum balances: impulse of joint rows on the child = -r
    mass = m.compiled.mass_diag
    dmom = mass * (xd_plus - xd_minus)
    r_B = P * n - dmom[3:5]
    r_A = P * n - dmom[0:2] - dmom[3:5]
    np.testing.assert_allclose(res.r_k, np.concatenate([r_A, r_B]), atol=1e-12)
    T = [0.5 * np.dot(mass * v, v) for v in (xd_minus, xd_plus)]
    assert res.energy_loss[0] == pytest.approx(T[0] - T[1], rel=1e-10, abs=1e-13)
    if e == 1.0:
        assert T[1] == pytest.approx(T[0], rel=1e-13)      # elastic: kinetic energy kept
    if e == 0.0:
        assert abs(res.v_plus[0]) < 1e-13                    # plastic: no normal velocity
    assert res.v_plus[0] == pytest.approx(-e * res.v_minus[0], abs=1e-13)


def free_rod_on_floor(points):
    mb = ModelBuilder("rod_floor")
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
    for name, px in points:
        mb.contact(name, rod, (px, 0.0))
    return mb.build()


def test_closed_contact_that_would_penetrate_joins_the_impact():
    """Rod flat on the floor, end A approaching, end B separating; A's impulse alone would
    drive B into the floor. By hand (e = 1, J = 1/12): vy+ = 1.25, omega+ = -2.5 from the
    Newton rows; P_A + P_B = 2.25, (P_B - P_A) / 2 = J (omega+ - omega-) -> P_A = 19/12,
    P_B = 2/3."""
    m = free_rod_on_floor([("a", -0.5), ("b", 0.5)])
    res = impact.impact(m, np.zeros(3), np.array([0.0, -1.0, 3.0]))
    np.testing.assert_allclose(res.xd, [0.0, 1.25, -2.5], atol=1e-13)
    np.testing.assert_allclose(res.p, [19 / 12, 2 / 3], atol=1e-13)
    assert list(res.impacted) == [True, False]
    single = impact.impact(m, np.zeros(3), np.array([0.0, -1.0, 3.0]), closed=[True, False])
    assert single.v_plus[1] < 0             # without b the rod would penetrate there


def test_pulling_contact_is_released():
    """Contacts at end A and at the centre C, both approaching, e = 0: solving both gives a
    pulling impulse at C (-0.49); with C released, P_A = 1.51 / 4, C separates."""
    m = free_rod_on_floor([("a", -0.5), ("c", 0.0)])
    res = impact.impact(m, np.zeros(3), np.array([0.0, -0.01, 3.0]), restitution=[0.0, 0.0])
    PA = 1.51 / 4
    np.testing.assert_allclose(res.p, [PA, 0.0], atol=1e-13)
    np.testing.assert_allclose(res.xd, [0.0, -0.01 + PA, 3.0 - 6 * PA], atol=1e-13)
    assert res.v_plus[1] > 0 and abs(res.v_plus[0]) < 1e-13


def test_inadmissible_impact_raises():
    """A point pinched between two coincident walls facing each other with e = 1 cannot
    rebound without penetrating the other wall."""
    mb = ModelBuilder("pinched")
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.contact("lo", b, normal=(0.0, 1.0))
    mb.contact("hi", b, normal=(0.0, -1.0))
    m = mb.build()
    with pytest.raises(ImpactError, match=r"no admissible impact solution for the closed "
                                          r"contacts \['lo', 'hi'\]"):
        impact.impact(m, np.zeros(3), np.array([0.0, -1.0, 0.0]))


# ---------------------------------------------------------------------- persistent contact
def test_ball_comes_to_rest_with_contact_force_equal_to_weight():
    """e = 0.8: the impacts accumulate at t = t1 (1 + e) / (1 - e); the contact then holds
    the ball with a force m g and no penetration creeps in."""
    m = model("bouncing_ball", e=0.8, h0=1.0)
    t1 = math.sqrt(2 / G)
    t_rest = t1 * 1.8 / 0.2
    s0 = initial_state(m)
    s = advance(m, s0, 6.0)
    c = contact(s, "floor")
    # the impacts stop when the rebound speed e^k v0 falls below settings.contact_velocity
    # (then the contact persists): no Zeno crawl through ever smaller bounces
    v0 = math.sqrt(2 * G * outputs(m, s0)["floor.gap"])
    assert c["impacts"] == math.ceil(math.log(Settings().contact_velocity / v0) / math.log(0.8))
    assert c["active"]
    assert t_rest - 1e-3 < c["last_time"] < t_rest
    o = outputs(m, s)
    mg = m.parameter("m").value * G
    assert o["floor.force"] == pytest.approx(mg, rel=1e-12)
    assert abs(o["floor.gap"]) < 1e-13 and abs(o["ball.vy"]) < 1e-13
    assert o["floor.active"] == 1.0
    assert o["floor.energy_loss"] == pytest.approx(mg * 1.0, rel=1e-12)
    s = advance(m, s, 30.0)
    o = outputs(m, s)
    assert abs(o["floor.gap"]) < 1e-13 and o["floor.active"] == 1.0


def test_persistent_contact_is_released_when_the_force_turns_tensile():
    """A ball resting on a floor is lifted by an upward force input larger than its weight:
    the contact lets go at once and the ball accelerates at (F - m g) / m."""
    mb = ModelBuilder("lift", gravity=(0.0, -G))
    ball = mb.body("ball", mass=2.0, inertia=0.01, position=(0.0, 0.1))
    mb.contact("floor", ball, radius=0.1, restitution=0.0)
    mb.force("lift", ball, direction=(0.0, 1.0))
    m = mb.build()
    s = initial_state(m)
    s = State(s.t, s.q, s.qd, 0.0, s.coords, {"contacts": {"floor": {"active": True}}})
    s = advance(m, s, 0.5, {"lift.h": 10.0})
    assert abs(s.q[1] - 0.1) < 1e-12 and contact(s, "floor")["active"]
    s = advance(m, s, 1.0, {"lift.h": 30.0})
    assert not contact(s, "floor")["active"]
    assert s.q[1] - 0.1 == pytest.approx((30.0 / 2.0 - G) * 0.5 ** 2 / 2, rel=1e-9)


def test_zeno_without_persistent_contact_raises_instead_of_hanging():
    """The event loop gives up with an IntegrationError (it takes seconds); a hang is stopped
    by an alarm after 300 s, a guard against hanging, not a speed target (a wall-time bound
    of 20 s failed on a loaded 2-core machine)."""
    import signal

    def hung(signum, frame):
        raise AssertionError("the Zeno event loop did not stop within 300 s")

    m = model("bouncing_ball", e=0.5)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(300)
    try:
        with pytest.raises(IntegrationError, match="switches state endlessly"):
            advance(m, initial_state(m), 3.0, settings=Settings(contact_velocity=1e-300))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------- joint limit model
def test_slider_crank_end_stop():
    m = model("slider_crank_stop")
    stop, e = m.parameter("stop").value, m.parameter("e").value
    r = simulate(m, 0.6, 0.01)
    assert r["guide.position"].max() <= stop + 1e-12
    assert r["end_stop.impacts"][-1] >= 1
    t_imp = r["end_stop.last_time"][np.argmax(r["end_stop.impacts"] > 0)]
    before = advance(m, initial_state(m), t_imp - 1e-10)
    after = advance(m, initial_state(m), t_imp + 1e-10)
    v_before = outputs(m, before)["guide.rate"]
    v_after = outputs(m, after)["guide.rate"]
    assert v_before > 0.1
    assert v_after == pytest.approx(-e * v_before, rel=1e-6)
    assert r["constraint.residual"].max() < 1e-10


# ---------------------------------------------------------------------- outputs and state
def test_contact_outputs_and_impacts_reported_at_the_end_of_a_step():
    m = model("bouncing_ball", e=0.5)
    spec = {v.name: v for v in output_spec(m)}
    assert spec["floor.impacts"].kind == "integer" and spec["floor.active"].kind == "boolean"
    assert spec["floor.gap"].unit == "m" and spec["floor.last_impulse"].unit == "N.s"
    assert spec["floor.energy_loss"].unit == "J" and spec["floor.last_time"].unit == "s"
    r = simulate(m, 1.0, 0.1)
    t1 = math.sqrt(2 / G)
    k = np.searchsorted(r["time"], t1)          # the first sample after the impact
    assert list(r["floor.impacts"][:k]) == [0.0] * k and r["floor.impacts"][k] == 1.0
    assert r["floor.last_time"][k] == pytest.approx(t1, abs=1e-12)
    assert r["floor.gap"].min() > -1e-12
    assert spec["floor.gap"].unit == "m"
    lim = {v.name: v for v in output_spec(pendulum_with_limit(0.5))}
    assert lim["stop.gap"].unit == "rad" and lim["stop.last_impulse"].unit == "N.m.s"


@pytest.mark.parametrize("t_save", [0.7, 5.0])
def test_state_round_trip_continues_bit_identically(t_save):
    m = model("bouncing_ball", e=0.8)
    s = advance(m, initial_state(m), t_save)
    restored = State.from_dict(json.loads(json.dumps(s.to_dict())))
    assert restored.extra == s.extra
    a, b = advance(m, s, t_save + 1.3), advance(m, restored, t_save + 1.3)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qd, b.qd)
    assert a.extra == b.extra and a.h == b.h


def test_rk4_locates_impacts_on_its_hermite_interpolant():
    m = model("bouncing_ball", e=0.5)
    s = advance(m, initial_state(m), 1.0, settings=Settings(method="rk4", step=0.01))
    c = contact(s, "floor")
    t1 = math.sqrt(2 / G)
    assert c["impacts"] == 2
    assert abs(c["last_time"] - 2 * t1) < 1e-12      # free fall is cubic-exact


# ---------------------------------------------------------------------- builder errors
@pytest.mark.parametrize("call, message", [
    (lambda mb, b: mb.contact("c", b, restitution=1.5),
     r"contact 'c': restitution must be in \[0, 1\], received 1.5"),
    (lambda mb, b: mb.contact("c", b, normal=(0.0, 0.0)),
     r"contact 'c': normal must be a nonzero vector"),
    (lambda mb, b: mb.contact("c", b, other=b),
     r"contact 'c': body and other are the same body 'b'"),
    (lambda mb, b: mb.contact("c", "nope"), r"contact 'c': unknown body body 'nope'"),
    (lambda mb, b: mb.contact_points("c", b, b, distance=1.0),
     r"contact 'c': a and b are the same body 'b'"),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=1.0, side="near"),
     r"side must be 'apart' or 'within', received 'near'"),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=1.0, method="magic"),
     r"method must be 'impact' or 'reduction', received 'magic'"),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=1.0, method="reduction"),
     r"method 'reduction' needs singular_joint="),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=1.0, method="reduction",
                                     singular_joint="W"),
     r"singular_joint 'W' is a weld joint; expected a revolute or prismatic joint"),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=1.0, sharpening=2.0),
     r"sharpening must be in \(0, 1\], received 2.0"),
    (lambda mb, b: mb.contact_points("c", mb.ground, b, distance=0.0),
     r"distance must be > 0"),
    (lambda mb, b: mb.joint_limit("c", "R"),
     r"joint_limit 'c': give exactly one of lower= or upper="),
    # both ends at once are allowed (two contacts c_lower, c_upper); a
    # reversed pair is refused
    (lambda mb, b: mb.joint_limit("c", "R", lower=1.0, upper=0.0),
     r"expected lower < upper"),
    (lambda mb, b: mb.joint_limit("c", "W", lower=0.0),
     r"joint 'W' is a weld joint without a coordinate"),
    (lambda mb, b: mb.joint_limit("c", "nope", lower=0.0),
     r"joint_limit 'c': unknown joint 'nope'"),
    (lambda mb, b: mb.joint_limit("R", "R", lower=0.0),
     r"contact 'R': the name is already used by a joint"),
])
def test_contact_declaration_errors(call, message):
    mb = ModelBuilder("errs")
    b = mb.body("b", mass=1.0, inertia=0.1)
    b2 = mb.body("b2", mass=1.0, inertia=0.1)
    mb.revolute("R", mb.ground, b)
    mb.weld("W", b, b2)
    with pytest.raises(ModelError, match=message):
        call(mb, b)


@pytest.mark.parametrize("formulation", ["newton_euler", "tmt", "recursive"])
def test_the_start_releases_a_pulling_stop_then_closes_the_pressed_one(formulation):
    """Two sliders on their stops at the start (tests/data/two_stops.py): gravity pulls a off
    its stop and presses b, 5e-10 m (inside contact_tol) above its stop, onto it. As one event
    iteration (native/event_loop.h ev_event_update): a's stop released without an impact,
    then one projection onto the phase left closes b's gap exactly; the Python loop of every
    formulation and the engine library alike, a and b at rest."""
    from pathlib import Path

    from fmu_mb.dynamics.integrate import initial_state
    from fmu_mb.dynamics.outputs import Outputs, output_names
    from fmu_mb.engine.engine import Engine
    from fmu_mb.mechanics.loader import load_model

    m = load_model(Path(__file__).resolve().parent / "data" / "two_stops.py")
    s = Settings(formulation=formulation)
    st = initial_state(m, s)
    names = output_names(m)
    u = np.zeros(len(m.inputs))
    got = dict(zip(names, Outputs(m, st, u, formulation, compiled=False).values()))
    eng = Engine(m)
    eng.set_settings(Settings())
    eng.initialize(m.t0)
    want = dict(zip(names, eng.outputs(u)))
    assert [c["active"] for c in st.extra["contacts"].values()] == [False, True]
    assert list(eng.records[:, 4]) == [0.0, 1.0]
    for name in ("stop_a.gap", "stop_b.gap", "a.x", "b.x", "a.vx", "b.vx"):
        assert abs(got[name]) <= 1e-15 and abs(want[name]) <= 1e-15, (name, got[name],
                                                                       want[name])
    assert got["stop_a.impacts"] == got["stop_b.impacts"] == want["stop_b.impacts"] == 0
