"""Rim contacts (a cylinder's end circles on the ground plane, fmu_mb.mechanics.spatial.rim):
the gap equals the narrowphase's and a dense sample of the rim; the normal and tangential rows
and their convective terms equal finite differences along a motion on the unit quaternion
sphere; the tangential rows give the material velocity of the rim point (the angular velocity
from the finite-difference rate of the rotation matrix); a disc thrown sliding stops slipping
at the closed-form time and rolls on at 2/3 of its speed."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import Cylinder, ModelBuilder, Plane, cardan, simulate
from fmu_mb.mechanics.contacts import contact_rows
from fmu_mb.mechanics.friction import tangent_basis, tangent_rows
from fmu_mb.mechanics.shapes import collide
from fmu_mb.mechanics.spatial import rotations as rot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import wheel  # noqa: E402


#: the wheel's Cardan angles alpha and gamma are singular at beta = +-pi/2, which a wheel
#: rolling about its y axis passes every half turn (rounding then moves them by up to 2 pi);
#: its orientation is compared through the Euler parameters e0 ... e3
CARDAN = ("wheel.alpha", "wheel.gamma")


def tilted_disc():
    mb = ModelBuilder("disc", gravity=(0, 0, -9.81))
    d = mb.body("d", mass=1.0, inertia=(0.1, 0.2, 0.1), position=(0, 0, 0.5),
                orientation=cardan(0.3, 0.2, 0.1))
    mb.shape(mb.ground, Plane(normal=(0.1, 0.2, 1.0)), name="floor", position=(0, 0, -0.1))
    mb.shape(d, Cylinder(0.3, 0.1), position=(0.05, -0.02, 0.01),
             orientation=cardan(1.5, 0.1, 0.0), friction=0.5)
    return mb.build()


def motion(q, qd, t):
    """A motion through q with rate qd at t = 0, its Euler parameters kept unit."""
    p = q[3:] + t * qd[3:]
    return np.concatenate([q[:3] + t * qd[:3], p / np.linalg.norm(p)])


def random_state(rng):
    q = np.concatenate([rng.normal(size=3), rot.cardan(*rng.uniform(-2, 2, 3))])
    pd = rng.normal(size=4)
    pd -= (pd @ q[3:]) * q[3:]
    return q, np.concatenate([rng.normal(size=3), pd])


def test_rim_gap_is_the_narrowphase_and_the_lowest_rim_point():
    m = tilted_disc()
    assert [c.kind for c in m.contacts] == ["rim_plane", "rim_plane"]
    fl, cyl = m.shapes
    rng = np.random.default_rng(4)
    th = np.linspace(0.0, 2 * np.pi, 40001)
    for _ in range(10):
        q, qd = random_state(rng)
        gap = contact_rows(m, q, qd)[0]
        A = rot.matrix(q[None, 3:])[0]
        Rc, pc = A @ np.array(cyl.rotation), q[:3] + A @ np.array(cyl.position)
        ref = collide(fl, np.array(fl.rotation), np.array(fl.position), cyl, Rc, pc)
        assert gap == pytest.approx([c.gap for c in ref], abs=1e-12)
        n = np.array(fl.rotation)[:, 2]
        for g, z in zip(gap, (-0.05, 0.05)):
            rim = pc + z * Rc[:, 2] + 0.3 * (np.outer(np.cos(th), Rc[:, 0])
                                             + np.outer(np.sin(th), Rc[:, 1]))
            assert g == pytest.approx(((rim - np.array(fl.position)) @ n).min(), abs=1e-8)


def test_rim_rows_and_convective_terms_equal_finite_differences():
    m = tilted_disc()
    rng = np.random.default_rng(5)
    h = 1e-4
    for _ in range(5):
        q, qd = random_state(rng)
        _, Dc, conv = contact_rows(m, q, qd)
        Dt, conv_t = tangent_rows(m, q, qd)
        qdot = (motion(q, qd, 1e-6) - motion(q, qd, -1e-6)) / 2e-6
        qdd = (motion(q, qd, h) - 2 * motion(q, qd, 0) + motion(q, qd, -h)) / h ** 2

        def gap(t):
            return contact_rows(m, motion(q, qd, t), qd)[0]
        assert (gap(1e-6) - gap(-1e-6)) / 2e-6 == pytest.approx(Dc @ qdot, abs=1e-8)
        g2 = (gap(h) - 2 * gap(0.0) + gap(-h)) / h ** 2
        assert g2 == pytest.approx(Dc @ qdd + conv, abs=1e-6)

        def vt(t):
            qt = motion(q, qd, t)
            qdt = (motion(q, qd, t + 1e-6) - motion(q, qd, t - 1e-6)) / 2e-6
            return np.einsum("kij,j->ki", tangent_rows(m, qt, qdt)[0], qdt)
        dvt = (vt(h) - vt(-h)) / (2 * h)
        assert dvt == pytest.approx(np.einsum("kij,j->ki", Dt, qdd) + conv_t, abs=1e-6)


def test_rim_tangential_rows_give_the_rim_points_material_velocity():
    m = tilted_disc()
    fl, cyl = m.shapes
    n = np.array(fl.rotation)[:, 2]
    t1, t2 = tangent_basis(n)
    rng = np.random.default_rng(6)
    for _ in range(5):
        q, qd = random_state(rng)
        qd[3:] /= np.linalg.norm(q[3:])
        Dt, _ = tangent_rows(m, q, qd)
        A = rot.matrix(q[None, 3:])[0]
        dA = (rot.matrix(motion(q, qd, 1e-6)[None, 3:])[0]
              - rot.matrix(motion(q, qd, -1e-6)[None, 3:])[0]) / 2e-6
        W = dA @ A.T                               # the angular velocity's skew matrix
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        Rc, pc = A @ np.array(cyl.rotation), q[:3] + A @ np.array(cyl.position)
        pts = collide(fl, np.array(fl.rotation), np.array(fl.position), cyl, Rc, pc)
        for k, c in enumerate(pts):
            v = qd[:3] + np.cross(w, c.point_b - q[:3])
            assert Dt[k] @ qd == pytest.approx([t1 @ v, t2 @ v], abs=1e-8)


def test_wheel_thrown_sliding_rolls_on_at_two_thirds_of_its_speed():
    """An upright disc (J = m R^2 / 2 about its axis) thrown at v0 without spin slides:
    v' = -mu g, R w' = 2 mu g; slip ends at t* = v0 / (3 mu g), then it rolls at 2/3 v0."""
    g, v0, mu, R = 9.81, 2.0, 0.4, 0.3
    model = wheel.build(v0=v0, w0=0.0, mu=mu, R=R)
    t_star = v0 / (3 * mu * g)
    res = simulate(model, 0.4, 0.02)
    for row in res:
        t = row["time"]
        if t < t_star - 1e-9:
            assert row["wheel.vx"] == pytest.approx(v0 - mu * g * t, rel=1e-8)
        elif t > t_star + 1e-9:
            assert row["wheel.vx"] == pytest.approx(2 / 3 * v0, rel=1e-8)
            assert row["wheel.wy"] * R == pytest.approx(2 / 3 * v0, rel=1e-8)
        assert row["wheel.z"] == pytest.approx(R, abs=1e-9)
        assert abs(row["wheel.y"]) < 1e-9


def test_driven_wheel_rolls_with_the_closed_form_acceleration():
    """A drive torque tau on the rolling disc: x = v0 t + a t^2 / 2 with
    a = tau / (R (m + J / R^2)), J = m R^2 / 2; the rim sticks (rolls) throughout."""
    v0, R, m, tau = 2.0, 0.3, 2.0, 0.5
    model = wheel.build(v0=v0, w0=v0 / R, R=R, m=m)
    assert [c.name for c in model.contacts] == ["floor_tyre_0"]
    res = simulate(model, 0.5, 0.1, inputs={"drive.h": tau})
    a = tau / (R * 1.5 * m)
    for row in res:
        t = row["time"]
        assert row["wheel.x"] == pytest.approx(v0 * t + a * t * t / 2, rel=1e-8, abs=1e-12)
        assert row["wheel.vx"] == pytest.approx(R * row["wheel.wy"], rel=1e-9)
        assert row["floor_tyre_0.state"] == 1.0


def test_steered_wheel_turns_rolling_without_slip():
    """A steering torque turns the rolling disc (its path leaves the x axis, it leans) while
    its rim keeps rolling: the contact sticks, gap 0, and with no drive the energy grows by
    the steering torque's work only (no sliding loss)."""
    model = wheel.build()
    res = simulate(model, 0.6, 0.1, inputs={"steer.h": 0.2})
    assert abs(res[-1]["wheel.y"]) > 0.01 and res[-1]["wheel.z"] < 0.3 - 1e-4
    assert all(row["floor_tyre_0.state"] == 1.0 for row in res)
    assert np.abs(res["floor_tyre_0.gap"]).max() < 1e-9
    assert res[-1]["floor_tyre_0.slide_loss"] == 0.0


def test_flat_tread_has_two_rims():
    model = wheel.build(width=0.05)
    assert [c.name for c in model.contacts] == ["floor_tyre_0", "floor_tyre_1"]
    assert [c.point[1] for c in model.contacts] == pytest.approx([-0.025, 0.025])


@pytest.mark.parametrize("case", ["sliding", "steered", "tread"])
def test_compiled_loop_equals_the_python_loop(case):
    """The rim rows in C (native/spatial_kernel.c, kind 5: rim_point) in the compiled event
    loop (formulation recursive) against the Python loop (newton_euler): every output at
    every communication point to 1e-9."""
    from fmu_mb.dynamics.integrate import Settings
    kw, inputs, t_end = {
        "sliding": ({"w0": 0.0, "mu": 0.4}, None, 0.4),
        "steered": ({}, {"drive.h": 0.5, "steer.h": 0.2}, 0.6),
        "tread": ({"width": 0.05}, {"drive.h": 0.5}, 0.3)}[case]
    m = wheel.build(**kw)
    tight = dict(rtol=1e-11, atol=1e-13)
    c = simulate(m, t_end, 0.05, inputs=inputs, settings=Settings(formulation="recursive",
                                                                  **tight))
    p = simulate(m, t_end, 0.05, inputs=inputs, settings=Settings(formulation="newton_euler",
                                                                  **tight))
    assert c.dtype.names == p.dtype.names
    for n in c.dtype.names:
        if n in CARDAN:
            continue
        assert np.abs(c[n] - p[n]).max() <= 1e-9 * max(1.0, np.abs(p[n]).max()), n
