"""Contacts in spatial models (frictionless; fmu_mb.mechanics.spatial.contacts): point and
sphere on a plane, point-to-point distance limits (end stop, rope), limits on revolute and
prismatic joint coordinates, with seed 000's impact equations and Newton's restitution law.

Checked against closed forms (the impulse of a rigid body hitting a plane at a corner, the
momentum and energy laws of an impact, a slider and a pendulum hitting their stops, a rope
becoming taut, two balls colliding obliquely) and against event times of a finely stepped
reference that shares no code with fmu_mb (scipy's solve_ivp on Euler's equations)."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from fmu_mb import ModelBuilder, ModelError, cardan
from fmu_mb.dynamics import impact
from fmu_mb.dynamics.integrate import Settings, advance, initial_state
from fmu_mb.dynamics.outputs import output_names, output_values
from fmu_mb.errors import InputError
from fmu_mb.mechanics.spatial import rotations as rot
from fmu_mb.mechanics.spatial.elements import angular_velocity

from conftest import model

NE = Settings(formulation="newton_euler", rtol=1e-10, atol=1e-12)


def _outputs(m, state, settings=NE):
    return dict(zip(output_names(m), output_values(m, state, m.input_vector(None),
                                                   settings.formulation)))


def _box_corner_impact(m, x, xd, corner, e):
    """Closed form of a rigid body's frictionless impact at one corner on the floor z = 0:
    (v+, w+, P)."""
    R = rot.matrix(x[3:7][None])[0]
    J = R @ np.array(m.bodies[0].inertia) @ R.T
    rho = R @ np.asarray(corner)
    n = np.array([0.0, 0.0, 1.0])
    v, w = xd[:3], angular_velocity(m, x, xd)[0]
    vn = (v + np.cross(w, rho)) @ n
    k = np.cross(rho, n)
    Jinv = np.linalg.inv(J)
    P = -(1.0 + e) * vn / (1.0 / m.bodies[0].mass + k @ Jinv @ k)
    return v + P * n / m.bodies[0].mass, w + Jinv @ (P * k), P, J, rho


@pytest.mark.parametrize("e", [0.6, 1.0])
def test_box_corner_impact_closed_form(e):
    """The impact equations (eq. 20 with the Euler-parameter mass matrix and normalisation
    rows) give the closed-form impulse and velocities of a body hitting the floor at a
    corner; momentum along the floor and angular momentum about the corner are kept, and
    for e = 1 the kinetic energy."""
    m = model("tumbling_box", e=e)
    x, xd = np.array(m.x0), np.array(m.xd0)
    xd[2] = -2.0                                        # falling
    gap = impact.gaps(m, x)
    i = int(np.argmin(gap))
    x[2] -= gap[i]                                      # the lowest corner touches the floor
    res = impact.impact(m, x, xd)
    c = m.contacts[i]
    v1, w1, P, J, rho = _box_corner_impact(m, x, xd, c.point, e)
    assert res.impacted[i] and res.impacted.sum() == 1
    assert res.p[i] == pytest.approx(P, rel=1e-10)
    np.testing.assert_allclose(res.xd[:3], v1, atol=1e-10)
    np.testing.assert_allclose(angular_velocity(m, x, res.xd)[0], w1, atol=1e-10)
    assert res.v_plus[i] == pytest.approx(-e * res.v_minus[i], rel=1e-10)
    mass = m.bodies[0].mass
    w0 = angular_velocity(m, x, xd)[0]
    np.testing.assert_allclose(mass * res.xd[:2], mass * xd[:2], atol=1e-12)
    L0 = J @ w0 + mass * np.cross(-rho, xd[:3])        # about the corner
    L1 = J @ w1 + mass * np.cross(-rho, v1)
    np.testing.assert_allclose(L1, L0, atol=1e-10)
    T0 = 0.5 * mass * xd[:3] @ xd[:3] + 0.5 * w0 @ J @ w0
    T1 = 0.5 * mass * v1 @ v1 + 0.5 * w1 @ J @ w1
    if e == 1.0:
        assert T1 == pytest.approx(T0, rel=1e-10)
    assert res.energy_loss[i] == pytest.approx(T0 - T1, rel=1e-8, abs=1e-12)


def _free_flight_event(m):
    """Time of the first corner contact of the box in free flight, from a reference that
    shares no code with fmu_mb: Euler's equations in body axes and the quaternion kinematics
    by solve_ivp at rtol 1e-12, the lowest corner's gap located by brentq."""
    b = m.bodies[0]
    Jb = np.array(b.inertia)
    q0 = np.array(m.x0[3:7])
    R0 = rot.matrix(q0[None])[0]
    wb0 = R0.T @ np.array(b.angular_velocity)
    r0, v0 = np.array(m.x0[:3]), np.array(m.xd0[:3])
    g = np.array(m.gravity)

    def f(t, y):
        q, wb = y[:4], y[4:]
        e0, e1, e2, e3 = q
        # q' = 1/2 q (x) (0, wb)
        qd = 0.5 * np.array([-e1 * wb[0] - e2 * wb[1] - e3 * wb[2],
                             e0 * wb[0] + e2 * wb[2] - e3 * wb[1],
                             e0 * wb[1] + e3 * wb[0] - e1 * wb[2],
                             e0 * wb[2] + e1 * wb[1] - e2 * wb[0]])
        wd = np.linalg.solve(Jb, -np.cross(wb, Jb @ wb))
        return np.concatenate([qd, wd])
    sol = solve_ivp(f, (0.0, 1.0), np.concatenate([q0, wb0]), rtol=1e-12, atol=1e-13,
                    dense_output=True, method="DOP853")
    corners = np.array([c.point for c in m.contacts])
    radius = m.contacts[0].offset

    def lowest(t):
        q = sol.sol(t)[:4]
        R = rot.matrix((q / np.linalg.norm(q))[None])[0]
        z = r0[2] + v0[2] * t + 0.5 * g[2] * t * t + (corners @ R.T)[:, 2]
        return z.min() - radius
    ts = np.linspace(0.0, 1.0, 2001)
    k = next(k for k in range(1, len(ts)) if lowest(ts[k]) < 0)
    return brentq(lowest, ts[k - 1], ts[k], xtol=1e-14)


def test_box_event_time_and_conservation():
    """The first impact time equals the reference's to 1e-8 s; over a run with several
    impacts (e = 1) the energy, the momentum along the floor and the angular momentum about
    the vertical are kept."""
    m = model("tumbling_box", e=1.0)
    s = initial_state(m, NE)
    te = _free_flight_event(m)
    s1 = advance(m, s, te + 0.01, settings=NE)
    out = _outputs(m, s1)
    hit = [c.name for c in m.contacts if out[f"{c.name}.impacts"] == 1]
    assert len(hit) == 1
    assert out[f"{hit[0]}.last_time"] == pytest.approx(te, abs=1e-8)
    E0 = _outputs(m, s)["energy.total"]
    L = []
    for t in np.arange(0.1, 1.21, 0.1):
        s = advance(m, s, t, settings=NE)
        o = _outputs(m, s)
        assert o["energy.total"] == pytest.approx(E0, rel=1e-8)
        assert o["box.vx"] == pytest.approx(0.5, abs=1e-10)
        assert o["box.vy"] == pytest.approx(0.0, abs=1e-10)
        x, xd = s.q, s.qd
        R = rot.matrix(x[3:7][None])[0]
        J = R @ np.array(m.bodies[0].inertia) @ R.T
        L.append((J @ angular_velocity(m, x, xd)[0])[2])
    assert sum(_outputs(m, s)[f"{c.name}.impacts"] for c in m.contacts) >= 4
    np.testing.assert_allclose(L, L[0], rtol=1e-8)


def test_spinning_ball_on_plane():
    """A ball spinning about a horizontal axis dropped on the floor: frictionless, so its
    spin and horizontal velocity stay; the bounce is Newton's law, v+ = -e v-, at the time
    of free fall, with impulse m (1 + e) v- and energy loss m (1 - e^2) v-^2 / 2."""
    mb = ModelBuilder("ball", gravity=(0.0, 0.0, -9.81))
    m_, r, h, e = 0.5, 0.1, 0.8, 0.7
    I = 0.4 * m_ * r * r
    mb.body("ball", mass=m_, inertia=(I, I, I), position=(0.0, 0.0, r + h),
            velocity=(0.2, -0.1, 0.0), angular_velocity=(7.0, 0.0, 3.0))
    mb.contact("floor", "ball", radius=r, plane_point=(0.0, 0.0, 0.0), normal=(0, 0, 1),
               restitution=e)
    m = mb.build()
    t1 = math.sqrt(2 * h / 9.81)
    v = 9.81 * t1
    s = advance(m, initial_state(m, NE), t1 + 0.05, settings=NE)
    o = _outputs(m, s)
    assert o["floor.last_time"] == pytest.approx(t1, abs=1e-9)
    assert o["floor.last_impulse"] == pytest.approx(m_ * (1 + e) * v, rel=1e-9)
    assert o["floor.energy_loss"] == pytest.approx(0.5 * m_ * (1 - e * e) * v * v, rel=1e-8)
    assert o["ball.vz"] == pytest.approx(e * v - 9.81 * 0.05, rel=1e-8)
    assert (o["ball.wx"], o["ball.wy"], o["ball.wz"]) == pytest.approx((7.0, 0.0, 3.0),
                                                                       abs=1e-9)
    assert (o["ball.vx"], o["ball.vy"]) == pytest.approx((0.2, -0.1), abs=1e-12)
    assert o["floor.gap"] == pytest.approx(e * v * 0.05 - 0.5 * 9.81 * 0.05 ** 2, rel=1e-8)


def test_ball_comes_to_rest_and_pushes():
    """With e = 0 the ball stays on the floor: a persistent contact whose force is m g."""
    mb = ModelBuilder("ball0", gravity=(0.0, 0.0, -9.81))
    mb.body("ball", mass=2.0, inertia=(0.01,) * 3, position=(0.0, 0.0, 0.3))
    mb.contact("floor", "ball", radius=0.1, restitution=0.0)
    m = mb.build()
    s = advance(m, initial_state(m, NE), 0.5, settings=NE)
    o = _outputs(m, s)
    assert o["floor.active"] == 1.0 and o["floor.impacts"] == 1
    assert o["floor.force"] == pytest.approx(2.0 * 9.81, rel=1e-9)
    assert o["ball.z"] == pytest.approx(0.1, abs=1e-9)


def test_two_balls_oblique_collision():
    """Two equal balls (point-point contact, side "apart", no gravity) colliding obliquely
    with e = 1 exchange the velocity components along the line of centres; the others stay."""
    mb = ModelBuilder("balls", gravity=(0.0, 0.0, 0.0))
    R = 0.05
    mb.body("a", mass=1.0, inertia=(1e-3,) * 3, position=(0.0, 0.0, 0.0),
            velocity=(1.0, 0.0, 0.2))
    mb.body("b", mass=1.0, inertia=(1e-3,) * 3, position=(0.5, 0.06, 0.0),
            velocity=(0.0, 0.0, 0.1))
    mb.contact_points("touch", "a", "b", distance=2 * R, restitution=1.0)
    m = mb.build()
    # the contact time of straight lines, and the line of centres there
    ra, rb = np.array([0.0, 0.0, 0.0]), np.array([0.5, 0.06, 0.0])
    va, vb = np.array([1.0, 0.0, 0.2]), np.array([0.0, 0.0, 0.1])
    dr, dv = rb - ra, vb - va
    a_, b_, c_ = dv @ dv, 2 * dr @ dv, dr @ dr - 4 * R * R
    tc = (-b_ - math.sqrt(b_ * b_ - 4 * a_ * c_)) / (2 * a_)
    u = (dr + dv * tc) / (2 * R)
    va1 = va - (va - vb) @ u * u
    vb1 = vb + (va - vb) @ u * u
    # (the event loop samples the gaps at 4 points per step: force-free flight would take one
    # step over the whole second and step over the short dip of this grazing contact)
    s = advance(m, initial_state(m, NE), 1.0, settings=Settings(
        formulation="newton_euler", rtol=1e-10, atol=1e-12, max_step=0.05))
    o = _outputs(m, s)
    assert o["touch.last_time"] == pytest.approx(tc, abs=1e-9)
    np.testing.assert_allclose([o["a.vx"], o["a.vy"], o["a.vz"]], va1, atol=1e-9)
    np.testing.assert_allclose([o["b.vx"], o["b.vy"], o["b.vz"]], vb1, atol=1e-9)
    assert o["touch.energy_loss"] == pytest.approx(0.0, abs=1e-12)


def test_rope_becomes_taut():
    """A ball thrown horizontally from the anchor of a rope of length L (point-point contact,
    side "within", e = 0): the rope becomes taut when |r| = L, and the impact removes the
    radial velocity."""
    mb = ModelBuilder("rope", gravity=(0.0, 0.0, -9.81))
    L, v0 = 1.0, 2.0
    mb.body("ball", mass=0.3, inertia=(1e-4,) * 3, velocity=(v0, 0.5, 0.0))
    mb.contact_points("rope", mb.ground, "ball", distance=L, side="within", restitution=0.0)
    m = mb.build()
    def radius(t):
        return math.hypot(v0 * t, 0.5 * t, 0.5 * 9.81 * t * t) - L
    tc = brentq(radius, 0.01, 2.0, xtol=1e-15)
    r = np.array([v0 * tc, 0.5 * tc, -0.5 * 9.81 * tc * tc])
    v = np.array([v0, 0.5, -9.81 * tc])
    u = r / L
    v1 = v - (v @ u) * u
    s = advance(m, initial_state(m, NE), tc + 1e-3, settings=NE)
    o = _outputs(m, s)
    assert o["rope.impacts"] == 1 and o["rope.active"] == 1.0
    assert o["rope.last_time"] == pytest.approx(tc, abs=1e-9)
    assert o["rope.last_impulse"] == pytest.approx(0.3 * (v @ u), rel=1e-7)
    s_at = advance(m, initial_state(m, NE), tc + 1e-12, settings=NE)
    np.testing.assert_allclose(s_at.qd[:3], v1, atol=1e-6)
    assert o["rope.gap"] == pytest.approx(0.0, abs=1e-9)


def test_prismatic_stop():
    """A slider on an inclined prismatic joint hits its lower stop: at t = sqrt(2 d / a) with
    v- = a t (a = g sin(incline)), rebound -e v-, impulse m (1 + e) v-."""
    mb = ModelBuilder("slider3", gravity=(0.0, 0.0, -9.81))
    inc, d, e, mass = 0.4, 0.3, 0.5, 1.5
    axis = (math.cos(inc), 0.0, math.sin(inc))
    mb.body("s", mass=mass, inertia=(0.01, 0.02, 0.03))
    mb.prismatic("P", mb.ground, "s", at=(0.0, 0.0, 0.0), axis=axis)
    mb.joint_limit("stop", "P", lower=-d, restitution=e)
    m = mb.build()
    a = 9.81 * math.sin(inc)
    t1 = math.sqrt(2 * d / a)
    s = advance(m, initial_state(m, NE), t1 + 0.02, settings=NE)
    o = _outputs(m, s)
    assert o["stop.last_time"] == pytest.approx(t1, abs=1e-9)
    assert o["stop.last_impulse"] == pytest.approx(mass * (1 + e) * a * t1, rel=1e-8)
    assert o["P.rate"] == pytest.approx(e * a * t1 - a * 0.02, rel=1e-8)
    assert o["stop.gap"] == pytest.approx(o["P.position"] + d, abs=1e-12)


def test_revolute_stops_against_reference():
    """A pendulum on a revolute joint with both stops (bump and rebound): the impact times
    against a finely stepped reference of the pendulum equation, the rebound rate -e times
    the approach rate, the impulse I_O (1 + e) |rate| [N.m.s]."""
    mb = ModelBuilder("pend3", gravity=(0.0, 0.0, -9.81))
    mass, l, e = 1.0, 0.6, 0.8
    Ic = 0.02
    mb.body("rod", mass=mass, inertia=(Ic, Ic, 0.001), position=(l, 0.0, 0.0))
    mb.revolute("A", mb.ground, "rod", at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0))
    mb.joint_limit("stop", "A", lower=-1.0, upper=0.3, restitution=e)
    m = mb.build()
    I0 = Ic + mass * l * l
    # angle th about -y from the x axis: z = l sin th; th'' = -m g l cos th / I0
    def f(t, y):
        return [y[1], -mass * 9.81 * l * math.cos(y[0]) / I0]
    def hit(t, y):
        return y[0] + 1.0
    hit.terminal = True
    ref = solve_ivp(f, (0, 2), [0.0, 0.0], rtol=1e-12, atol=1e-13, events=hit,
                    method="DOP853")
    te, rate = ref.t_events[0][0], ref.y_events[0][0][1]
    s = advance(m, initial_state(m, NE), te + 1e-3, settings=NE)
    o = _outputs(m, s)
    assert o["stop_lower.last_time"] == pytest.approx(te, abs=1e-8)
    assert o["stop_lower.last_impulse"] == pytest.approx(I0 * (1 + e) * abs(rate), rel=1e-6)
    assert m.compiled.contacts.units == ("rad", "rad")
    # then it swings up to the upper stop (0.3 rad) with the rebound energy
    ref2 = solve_ivp(f, (te, te + 3), [-1.0, -e * rate], rtol=1e-12, atol=1e-13,
                     events=lambda t, y: y[0] - 0.3, method="DOP853")
    if len(ref2.t_events[0]):
        te2 = ref2.t_events[0][0]
        s = advance(m, s, te2 + 1e-3, settings=NE)
        assert _outputs(m, s)["stop_upper.last_time"] == pytest.approx(te2, abs=1e-7)


def test_spatial_contact_errors():
    mb = ModelBuilder("bad", gravity=(0.0, 0.0, -9.81))
    mb.body("ball", mass=1.0, inertia=(0.01,) * 3, position=(0.0, 0.0, 1.0))
    with pytest.raises(ModelError, match="normal"):
        mb.contact("c", "ball", normal=(0.0, 0.0, 0.0))
    with pytest.raises(ModelError, match="line_point"):
        mb.contact("c", "ball", line_point=(0.0, 0.0))
    with pytest.raises(ModelError, match="method 'impact' only"):
        mb.contact_points("c", mb.ground, "ball", distance=1.0, method="reduction",
                          singular_joint="x")
    with pytest.raises(ModelError, match="restitution"):
        mb.contact("c", "ball", restitution=1.5)
    mb.contact("c", "ball", radius=0.1)               # the failed calls declared nothing
    m = mb.build()
    with pytest.raises(InputError, match="'minimal' does not handle contacts"):
        advance(m, initial_state(m, NE), 0.1, settings=Settings(formulation="minimal"))
    s = initial_state(m, NE)
    with pytest.raises(InputError, match="Reduction Method is planar"):
        from fmu_mb.dynamics.formulations._spatial_contacts import contact_kit
        contact_kit("tmt").criterion(m, s.q, 0)


K_TYRE = 357859.232809      # the double wishbone's default tyre stiffness: tyre.h = -k z_road


def test_double_wishbone_hits_its_bump_stop_under_a_road_step():
    """A 100 mm road step drives the coil-over 90 mm into compression without stops; with
    them the wheel hits the bump stop (travel 50 mm, Chrono's E90) and settles on it: the
    stroke never passes the stop, the wheel stays lower, and the rebound stop is not hit."""
    from fmu_mb import load_model
    from fmu_mb.dynamics.simulate import simulate

    from conftest import MODELS

    def run(stops, z, t_end):
        m = load_model(MODELS / "double_wishbone.py", stops=stops)
        # one method for both runs (the default auto takes dopri5 for models with contacts
        # and may take dop853 for the others), so that stops not hit change nothing
        return simulate(m, t_end, 0.005, formulation="recursive", rtol=1e-9, atol=1e-11,
                        method="dopri5",
                        inputs={"tyre.h": lambda t: -K_TYRE * (z if t >= 0.05 else 0.0)})
    l_s, travel = 0.2753645852320157, 0.05
    free, stop = run("off", 0.1, 0.25), run("on", 0.1, 0.25)
    assert free["coil_over.length"].min() < l_s - travel - 0.03
    assert stop["coil_over.length"].min() >= l_s - travel - 1e-8
    assert stop["bump_stop.impacts"][-1] >= 1 and stop["bump_stop.active"][-1] == 1.0
    assert stop["bump_stop.force"][-1] > 0.0
    first = stop["bump_stop.impacts"] > 0
    t_hit = stop["bump_stop.last_time"][np.argmax(first)] if first.any() else None
    # the free run passes the stop's length first between the same output times
    k = np.argmax(free["coil_over.length"] < l_s - travel)
    assert free["time"][k - 1] <= t_hit <= free["time"][k]
    assert stop["rebound_stop.impacts"][-1] == 0
    assert stop["wheel_centre.z"].max() < free["wheel_centre.z"].max() - 0.03
    # a 20 mm road step stays within the travel: the stops change nothing
    a, b = run("off", 0.02, 0.15), run("on", 0.02, 0.15)
    assert b["bump_stop.impacts"][-1] == 0
    np.testing.assert_allclose(b["wheel_centre.z"], a["wheel_centre.z"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("formulation", ["tmt", "lagrange", "recursive"])
def test_joint_coordinate_formulations_equal_newton_euler(formulation):
    """The box's first impacts in the tree joint coordinates (seed 000 ch.3 eq. 15 with the
    Euler-parameter normalisation rows; recursive: the compiled spatial kernel between the
    events) equal newton_euler's (eq. 20 in x): event times, impulses, velocities. Without
    drift projection: the formulations project onto their rows by different steps (the
    kernel normalises the Euler parameters in C), which alone moves the results by ~1e-9."""
    m = model("tumbling_box", e=0.6)
    out = {}
    for f in ("newton_euler", formulation):
        S = Settings(formulation=f, rtol=1e-11, atol=1e-12, stabilization="none")
        s = advance(m, initial_state(m, S), 0.5, settings=S)
        out[f] = _outputs(m, s, S)
    a, b = out["newton_euler"], out[formulation]
    assert sum(a[f"{c.name}.impacts"] for c in m.contacts) >= 2
    for c in m.contacts:
        for k in ("impacts", "last_time", "last_impulse", "energy_loss"):
            key = f"{c.name}.{k}"
            assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-10), key
    for k in ("box.x", "box.y", "box.z", "box.vx", "box.vz", "box.wx", "box.wy", "box.wz"):
        assert b[k] == pytest.approx(a[k], abs=1e-9), k


@pytest.mark.slow
def test_double_wishbone_stops_recursive_equals_tmt():
    """The double wishbone settling on its bump stop (loops closed by cut joints, a
    persistent contact): formulation recursive (the compiled kernel, the persistent
    contact's row in C) gives tmt's and newton_euler's numbers to 1e-10, the drift
    projection removing the last slow rebound by the same inelastic impulse in all three."""
    from fmu_mb import load_model
    from fmu_mb.dynamics.simulate import simulate

    from conftest import MODELS
    m = load_model(MODELS / "double_wishbone.py", stops="on")
    runs = {}
    for f, stab in (("tmt", "projection"), ("recursive", "projection"),
                    ("newton_euler", "projection")):
        runs[f, stab] = simulate(
            m, 0.17, 0.01, formulation=f, rtol=1e-10, atol=1e-12, stabilization=stab,
            inputs={"tyre.h": lambda t: -K_TYRE * (0.1 if t >= 0.05 else 0.0)})
    for (a, b) in ((("tmt", "projection"), ("recursive", "projection")),
                   (("newton_euler", "projection"), ("recursive", "projection"))):
        ra, rb = runs[a], runs[b]
        assert ra["bump_stop.impacts"][-1] >= 2 and ra["bump_stop.active"][-1] == 1.0
        for k in ("wheel_centre.z", "coil_over.length", "bump_stop.last_time",
                  "bump_stop.impacts"):
            np.testing.assert_allclose(rb[k], ra[k], rtol=0, atol=1e-10, err_msg=k)
        np.testing.assert_allclose(rb["bump_stop.force"], ra["bump_stop.force"], rtol=1e-8,
                                   atol=1e-6)


# ---------------------------------------------------------------- drives in the spatial kernel
def test_driven_arm_recursive_equals_tmt_and_newton_euler():
    """The three drives of models/driven_arm.py evaluated in the compiled spatial kernel
    (rows after the cut joints', laws as data) give tmt's and newton_euler's motion, drive
    efforts and joint reactions."""
    from fmu_mb.dynamics.simulate import simulate

    m = model("driven_arm")
    from fmu_mb.dynamics.formulations import auto_choice
    assert auto_choice(m)[0] == "recursive"
    runs = {f: simulate(m, 1.0, 0.1, formulation=f, rtol=1e-10, atol=1e-12)
            for f in ("recursive", "tmt", "newton_euler")}
    ref = runs["recursive"]
    assert np.abs(ref["shoulder_drive.effort"]).max() > 100.0
    for f in ("tmt", "newton_euler"):
        for col in ref.dtype.names[1:]:
            scale = 1.0 + np.abs(ref[col]).max()
            np.testing.assert_allclose(runs[f][col], ref[col], rtol=0, atol=1e-10 * scale,
                                       err_msg=f"{f} {col}")
    # the prescribed motion itself: waist angle 0.6 t, shoulder 0.5 sin(2 pi 0.3 t)
    t = ref["time"]
    np.testing.assert_allclose(ref["waist.rate"], 0.6, atol=1e-9)
    np.testing.assert_allclose(ref["shoulder.angle"], 0.5 * np.sin(2 * np.pi * 0.3 * t),
                               atol=1e-9)


@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_kernel_drive_effort_against_closed_form(kind):
    """A rod turned at a constant rate about a horizontal hinge needs the torque
    m g (l/2) cos(theta) (gravity only: the rate is constant); a slider moved up a vertical
    guide by the polynomial s = 0.1 t + 0.2 t^2 needs m (g + 0.4). Formulation recursive
    (the drive row in C) against the closed forms."""
    from fmu_mb import constant_rate, polynomial
    from fmu_mb.dynamics.simulate import simulate

    mb = ModelBuilder("driven1", gravity=(0.0, 0.0, -9.81))
    mass, l = 2.0, 0.8
    if kind == "revolute":
        mb.body("rod", mass=mass, inertia=(0.01, mass * l * l / 12, mass * l * l / 12),
                position=(l / 2, 0.0, 0.0))
        mb.revolute("A", mb.ground, "rod", at=(0.0, 0.0, 0.0), axis=(0.0, -1.0, 0.0))
        mb.drive("turn", "A", constant_rate(1.3))
    else:
        mb.body("slider", mass=mass, inertia=(0.01, 0.02, 0.03))
        mb.prismatic("A", mb.ground, "slider", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
        mb.drive("turn", "A", polynomial(0.0, 0.1, 0.2))
    m = mb.build()
    r = simulate(m, 1.0, 0.1, formulation="recursive", rtol=1e-10, atol=1e-12)
    if kind == "revolute":
        expect = mass * 9.81 * (l / 2) * np.cos(1.3 * r["time"])
    else:
        expect = np.full(len(r), mass * (9.81 + 0.4))
        np.testing.assert_allclose(r["A.position"], 0.1 * r["time"] + 0.2 * r["time"] ** 2,
                                   atol=1e-10)
    np.testing.assert_allclose(r["turn.effort"], expect, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- hydraulic cylinders in 3-D
def _lift(e=0.4):
    """A slider of mass 50 kg on a vertical guide, lifted by a cylinder from the ground
    (pins 0.5 m apart at the start; stroke limits 0.4 m and 0.8 m)."""
    mb = ModelBuilder("lift3", gravity=(0.0, 0.0, -9.81))
    mb.body("s", mass=50.0, inertia=(1.0, 1.0, 1.0), position=(0.0, 0.0, 0.5))
    mb.prismatic("guide", mb.ground, "s", at=(0.0, 0.0, 0.5), axis=(0.0, 0.0, 1.0))
    mb.cylinder("lift", mb.ground, "s", a_point=(0.0, 0.0, 0.0), b_point=(0.0, 0.0, 0.0),
                min_length=0.4, max_length=0.8, restitution=e, friction=0.0)
    return mb.build()


@pytest.mark.parametrize("formulation", ["newton_euler", "recursive"])
def test_spatial_cylinder_lifts_to_its_end_stop(formulation):
    """F = h pushes the pins apart: the slider rises at a = F/m - g and hits the upper end
    stop (0.3 m of stroke away) at t = sqrt(2 0.3 / a) with impulse m (1 + e) a t; the
    cylinder's outputs (force, stroke, stroke rate, force on the rod's body, end stops)."""
    m = _lift()
    F, mass, e = 800.0, 50.0, 0.4
    a = F / mass - 9.81
    t1 = math.sqrt(2 * 0.3 / a)
    S = Settings(formulation=formulation, rtol=1e-11, atol=1e-12)
    s = advance(m, initial_state(m, S), t1 + 0.01, {"lift.h": F}, settings=S)
    o = dict(zip(output_names(m), output_values(m, s, np.array([F]), formulation)))
    assert o["lift_upper.last_time"] == pytest.approx(t1, abs=1e-9)
    assert o["lift_upper.last_impulse"] == pytest.approx(mass * (1 + e) * a * t1, rel=1e-8)
    assert o["lift.end_stops"] == 1
    assert o["lift.force"] == pytest.approx(F)
    assert (o["lift.fx"], o["lift.fy"], o["lift.fz"]) == pytest.approx((0.0, 0.0, F),
                                                                       abs=1e-9)
    v = -e * a * t1 + a * 0.01
    assert o["lift.stroke_rate"] == pytest.approx(v, rel=1e-8)
    assert o["lift.stroke"] == pytest.approx(o["lift.length"] - 0.4, abs=1e-12)
    assert o["lift.length"] == pytest.approx(0.8 - e * a * t1 * 0.01 + 0.5 * a * 0.01 ** 2,
                                             abs=1e-9)


def test_spatial_cylinder_errors():
    mb = ModelBuilder("bad3", gravity=(0.0, 0.0, -9.81))
    mb.body("s", mass=1.0, inertia=(1.0, 1.0, 1.0), position=(0.0, 0.0, 0.5))
    with pytest.raises(ModelError, match="pressure inputs"):
        mb.cylinder("c", mb.ground, "s", min_length=0.1, max_length=0.9, piston_area=0.01)
    with pytest.raises(ModelError, match="min_length < max_length"):
        mb.cylinder("c", mb.ground, "s", min_length=0.9, max_length=0.1)
    with pytest.raises(ModelError, match="3-vector"):
        mb.cylinder("c", mb.ground, "s", a_point=(0.0, 0.0), min_length=0.1, max_length=0.9)
    mb.cylinder("c", mb.ground, "s", min_length=0.1, max_length=0.9)  # nothing was declared


@pytest.mark.fmu
def test_double_wishbone_with_stops_fmu_in_fmpy_and_a_c_host(tmp_path):
    """The double wishbone built with its stops (fmu-mb build --set stops=on) hits its bump
    stop under a 100 mm road step in fmpy and in a plain C host, with simulate()'s numbers."""
    import os
    import shutil
    import subprocess
    import zipfile

    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    from fmu_mb import load_model
    from fmu_mb.dynamics.simulate import simulate
    from fmu_mb.fmi.build import build_fmu

    from conftest import MODELS
    path = build_fmu(MODELS / "double_wishbone.py", tmp_path, {"stops": "on"})
    md = fmpy.read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    h = -K_TYRE * 0.1
    names = ["wheel_centre.z", "coil_over.length", "bump_stop.last_time",
             "bump_stop.last_impulse", "bump_stop.force", "bump_stop.impacts"]
    table = np.array([(0.0, h), (1.0, h)], dtype=[("time", float), ("tyre.h", float)])
    r = fmpy.simulate_fmu(str(path), stop_time=0.2, output_interval=0.01, input=table,
                          output=names)
    ref = simulate(load_model(MODELS / "double_wishbone.py", stops="on"), 0.2, 0.01,
                   inputs={"tyre.h": h})
    assert ref["bump_stop.impacts"][-1] >= 1
    for n in names:
        np.testing.assert_allclose(r[n], ref[n], rtol=1e-9, atol=1e-9, err_msg=n)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the C host")
    host = tmp_path / "host"
    subprocess.run([cc, "-O1", "-o", str(host), str(MODELS.parent / "tests" / "c_host" /
                                                    "fmi2_host.c"), "-ldl"], check=True)
    unz = tmp_path / "dw"
    zipfile.ZipFile(path).extractall(unz)
    outs = [vr[n] for n in names[:5]]
    res = subprocess.run([str(host), str(unz), md.guid, md.coSimulation.modelIdentifier,
                          "0.2", "0.01", "--input", f"{vr['tyre.h']}={h!r}", "--out",
                          ",".join(map(str, outs)), "--runs", "1"], capture_output=True,
                         text=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                         timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [list(map(float, line.split(",")))[2:] for line in res.stdout.strip().splitlines()
            if line and line[0] in "0123456789-"]
    # the host sets the input only before each step (fmpy also before initialisation, so
    # the integrators start with other step sizes): the impulse of the last, slow impact of
    # the cascade onto the stop is the most sensitive number (5e-9 relative)
    last = dict(zip(names[:5], rows[-1]))
    for n in names[:5]:
        np.testing.assert_allclose(last[n], ref[n][-1], rtol=1e-8 if n.endswith("impulse")
                                   else 1e-9, atol=1e-9, err_msg=n)
