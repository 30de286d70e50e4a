"""Spatial (3-D) models: derivatives of every joint and element against finite differences,
the Euler-parameter equations against the omega-form Euler equations, and closed forms and
conservation laws of whole motions (torque-free body, heavy top, conical pendulum, Bricard)."""
import math

import numpy as np
import pytest

from fmu_mb import (ModelBuilder, ModelError, Settings, cardan, constant_rate,
                    harmonic, load_model, simulate, sphere_inertia)
from fmu_mb.dynamics.formulations import newton_euler as ne
from fmu_mb.dynamics.integrate import initial_state
from fmu_mb.mechanics import constraints
from fmu_mb.mechanics.elements import applied_forces, element_outputs, potential_energy
from fmu_mb.mechanics.spatial import rotations as rot

from conftest import MODELS


def zoo(gravity=(0.0, 0.0, 0.0), **values):
    """One of every spatial joint, drive and element, bodies in general orientations."""
    mb = ModelBuilder("zoo3", {}, gravity=gravity)
    J = [[0.3, 0.02, -0.01], [0.02, 0.4, 0.03], [-0.01, 0.03, 0.5]]
    b1 = mb.body("b1", mass=2.0, inertia=J, position=(0.5, 0.1, 0.0),
                 orientation=cardan(0.2, -0.3, 0.4))
    b2 = mb.body("b2", mass=1.0, inertia=(0.1, 0.2, 0.25), position=(1.0, 0.5, 0.2),
                 orientation=cardan(-0.5, 0.1, 0.9))
    b3 = mb.body("b3", mass=0.7, inertia=(0.05, 0.06, 0.07), position=(1.2, 0.9, 0.6),
                 orientation=cardan(0.3, 0.6, -0.2))
    b4 = mb.body("b4", mass=0.4, inertia=sphere_inertia(0.4, 0.1), position=(0.4, 0.8, 0.9))
    b5 = mb.body("b5", mass=0.3, inertia=(0.01, 0.02, 0.02), position=(0.0, 1.0, 0.3))
    b6 = mb.body("b6", mass=0.2, inertia=(0.01, 0.01, 0.02), position=(0.3, 1.1, 0.9),
                 orientation=cardan(0.1, 0.2, 0.3))
    mb.revolute("R", mb.ground, b1, at=(0.0, 0.0, 0.0), axis=(0.2, 0.3, 1.0))
    mb.prismatic("P", b1, b2, at=(0.8, 0.3, 0.1), axis=(1.0, 1.0, 0.2))
    mb.cylindrical("C", b2, b3, at=(1.1, 0.7, 0.4), axis=(0.1, 0.2, 1.0))
    mb.spherical("S", b3, b4, at=(0.8, 0.9, 0.8))
    mb.universal("U", b1, b5, at=(0.2, 0.6, 0.2), axis=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.3))
    mb.weld("W", b4, b6, at=(0.2, 0.9, 0.6))
    mb.distance("L", b2, b4, parent_point=(0.1, 0.0, 0.05), child_point=(0.0, 0.05, 0.0))
    mb.drive("spin", "R", harmonic(0.2, 0.5, offset=0.4))
    mb.drive("slide", "P", constant_rate(0.3, 0.1))
    mb.tsda("spring", b1, b4, a_point=(0.1, 0.2, 0.0), b_point=(0.0, 0.05, 0.0),
            stiffness=50.0, free_length=0.5, damping=values.get("c", 0.0))
    mb.rsda("twist", joint="R", stiffness=3.0, free_angle=0.2, damping=values.get("c", 0.0))
    mb.bushing("mount", b2, b3, at=(1.1, 0.6, 0.4), frame=rot.matrix(
        cardan(0.1, 0.2, 0.3)[None])[0], stiffness=(100.0, 200.0, 300.0),
        rotational_stiffness=(5.0, 6.0, 7.0), damping=(1.0, 2.0, 3.0),
        rotational_damping=(0.1, 0.2, 0.3))
    mb.force("push", b4, point=(0.02, 0.01, 0.03), direction=(0.0, 1.0, 1.0), frame="body")
    mb.force("wind", b2, at=(1.0, 0.6, 0.2), direction=(1.0, 1.0, 0.0))
    mb.torque("motor", b3, reaction=b1, axis=(0.0, 0.3, 1.0))
    mb.torque("twister", b5, axis=(1.0, 0.0, 0.0), frame="body")
    mb.torque("turner", b6, axis=(1.0, 0.0, 0.0), reaction=b4)
    mb.point("tip", b3, (0.1, -0.05, 0.2))
    return mb


def random_state(model, seed=1):
    """A state off the constraint manifold with non-unit Euler parameters (the derivatives
    are exact everywhere)."""
    rng = np.random.default_rng(seed)
    x = model.x0 + 0.05 * rng.standard_normal(model.x0.shape)
    xd = rng.standard_normal(model.x0.shape)
    return x, xd


def fd(f, x, v, h=1e-6):
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def test_constraint_jacobian_convective_term_and_phi_t_against_finite_differences():
    model = zoo().build()
    x, xd = random_state(model)
    t = 0.37
    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    n = x.shape[0]
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        np.testing.assert_allclose(
            D[:, i], fd(lambda y: constraints.evaluate(model, y, xd, t)[0], x, e),
            atol=1e-7, err_msg=f"column {i}")
    # conv = d2/ds2 Phi(x + s xd, t + s) at fixed accelerations zero
    h = 1e-4
    ph = [constraints.evaluate(model, x + s * h * xd, xd, t + s * h)[0] for s in (-1, 0, 1)]
    np.testing.assert_allclose(conv, (ph[0] - 2 * ph[1] + ph[2]) / h ** 2, atol=2e-5)
    np.testing.assert_allclose(phi_t, fd(lambda tt: constraints.evaluate(model, x, xd, tt[0])[0],
                                         np.array([t]), np.ones(1)), atol=1e-7)
    # every kind of row is present (5 + 5 + 4 + 3 + 4 + 6 + 1 joint rows, 2 drives, 6 norms)
    assert model.compiled.n_rows == 28 + 2 + 6


def test_joint_coordinates_against_finite_differences():
    model = zoo().build()
    x, xd = random_state(model, 2)
    q, qd, J, conv = constraints.joint_coordinates(model, x, xd)
    np.testing.assert_allclose(qd, J @ xd, atol=1e-12)
    np.testing.assert_allclose(J @ xd, fd(lambda y: constraints.joint_coordinates(
        model, y, xd)[0], x, xd), atol=1e-7)
    h = 1e-4
    qq = [constraints.joint_coordinates(model, x + s * h * xd, xd)[0] for s in (-1, 0, 1)]
    np.testing.assert_allclose(conv, (qq[0] - 2 * qq[1] + qq[2]) / h ** 2, atol=2e-5)


def test_element_forces_are_minus_the_potential_gradient_and_damping_acts_on_rates():
    model = zoo(c=0.0).build()
    x, xd = random_state(model, 3)
    u = np.zeros(len(model.inputs))
    f = applied_forces(model, x, np.zeros_like(x), 0.0, u)      # no gravity, no gyroscopics
    n = x.shape[0]
    grad = np.array([fd(lambda y: np.array([potential_energy(model, y)]), x,
                        np.eye(n)[i])[0] for i in range(n)])
    np.testing.assert_allclose(f, -grad, atol=1e-6)
    # damping: s(x, xd) - s(x, 0) = c e' with e' the finite-difference rate of e
    damped = zoo(c=0.7).build()
    s1 = element_outputs(damped, x, xd, u)
    s0 = element_outputs(damped, x, np.zeros_like(x), u)
    names = [e.name for e in damped.elements]
    for name in ("spring", "twist"):
        k = names.index(name)
        rate = fd(lambda y: np.array([element_outputs(damped, y, xd, u)[k][1]]), x, xd)[0]
        assert s1[k][0] - s0[k][0] == pytest.approx(0.7 * rate, abs=1e-6)
    k = names.index("mount")
    K = np.array([100, 200, 300, 5, 6, 7.0])
    e_of = lambda y: np.array(element_outputs(damped, y, np.zeros_like(y), u)[k]) / K  # noqa
    np.testing.assert_allclose(np.array(s1[k]) - np.array(s0[k]),
                               np.array([1, 2, 3, 0.1, 0.2, 0.3]) * fd(e_of, x, xd), atol=1e-6)


def test_loads_do_the_virtual_power_of_force_times_velocity_and_torque_times_omega():
    model = zoo().build()
    x, xd = random_state(model, 4)
    X, Xd = x.reshape(-1, 7), xd.reshape(-1, 7)
    omega = 2 * np.einsum("kij,kj->ki", rot.E_matrix(X[:, 3:]), Xd[:, 3:])   # global axes
    names = list(model.input_names)
    base = applied_forces(model, x, xd, 0.0, np.zeros(len(names)))
    A = rot.matrix(X[:, 3:])

    def power(inp):
        u = np.zeros(len(names))
        u[names.index(inp)] = 1.0
        return float(xd @ (applied_forces(model, x, xd, 0.0, u) - base))

    def point_velocity(b, s):
        # r + A(p) s is quadratic in (r, p): the central difference is exact for any step,
        # so a large step leaves only roundoff
        return fd(lambda y: y[7 * b:7 * b + 3] + rot.rotate(y[7 * b + 3:7 * b + 7][None],
                                                             np.array([s]))[0], x, xd, h=0.5)
    d = np.array([0.0, 1.0, 1.0]) / math.sqrt(2)
    # the body-frame direction scales with |p|^2 off the manifold, as A(p) does
    assert power("push.h") == pytest.approx(
        (A[3] @ d) @ point_velocity(3, (0.02, 0.01, 0.03)), rel=1e-8)
    s_wind = model.elements[[e.name for e in model.elements].index("wind")].b_point
    assert power("wind.h") == pytest.approx(
        np.array([1.0, 1.0, 0.0]) / math.sqrt(2) @ point_velocity(1, s_wind), rel=1e-8)
    ax = np.array([0.0, 0.3, 1.0]) / math.hypot(0.3, 1.0)
    assert power("motor.h") == pytest.approx(ax @ (omega[2] - omega[0]), rel=1e-8)
    assert power("twister.h") == pytest.approx((A[4] @ [1.0, 0, 0]) @ omega[4], rel=1e-8)


def test_mass_matrix_and_gyroscopic_term_against_the_omega_form_euler_equations():
    mb = ModelBuilder("free", {}, gravity=(0.3, -9.81, 1.0))
    J = np.array([[2.0, 0.1, 0.05], [0.1, 3.0, -0.2], [0.05, -0.2, 4.0]])
    w0 = np.array([0.3, -1.2, 2.0])
    b = mb.body("b", mass=2.0, inertia=J, orientation=cardan(0.3, -0.4, 1.1),
                angular_velocity=w0, velocity=(1.0, 2.0, 3.0))
    mb.torque("n", b, axis=(0.0, 0.0, 1.0), value=0.7)
    mb.force("F", b, point=(0.1, 0.2, -0.3), direction=(1.0, 0.0, 0.0), value=2.0)
    m = mb.build()
    dyn = ne.accelerations(m, m.x0, m.xd0, 0.0, np.zeros(2))
    p, pd, pdd = m.x0[3:], m.xd0[3:], dyn.qdd[3:]
    A = rot.matrix(p[None])[0]
    wb = 2 * rot.G_matrix(p[None])[0] @ pd
    np.testing.assert_allclose(A @ wb, w0, atol=1e-14)
    arm = A @ [0.1, 0.2, -0.3]
    n_body = A.T @ (np.array([0, 0, 0.7]) + np.cross(arm, [2.0, 0, 0]))
    wdot = np.linalg.solve(J, n_body - np.cross(wb, J @ wb))   # Euler's equations
    np.testing.assert_allclose(2 * rot.G_matrix(p[None])[0] @ pdd, wdot, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(dyn.qdd[:3], np.array([0.3, -9.81, 1.0]) + [1.0, 0, 0],
                               atol=1e-13)
    assert p @ pdd + pd @ pd == pytest.approx(0.0, abs=1e-13)   # second derivative of p.p


def body_omega(r, name):
    """Angular velocity in body axes from the outputs (global omega, Euler parameters)."""
    p = np.stack([r[f"{name}.e{i}"] for i in range(4)], axis=1)
    w = np.stack([r[f"{name}.w{c}"] for c in "xyz"], axis=1)
    return np.einsum("kji,kj->ki", rot.matrix(p), w), rot.matrix(p)


def test_torque_free_body_conserves_energy_and_momentum_and_flips_about_its_middle_axis():
    J = np.array([1.0, 2.0, 3.0])
    mb = ModelBuilder("dzhanibekov", {}, gravity=(0.0, 0.0, 0.0))
    mb.body("nut", mass=1.0, inertia=J, angular_velocity=(1e-3, 5.0, 1e-3))
    r = simulate(mb.build(), 6.0, 0.02)
    wb, A = body_omega(r, "nut")
    L = np.einsum("kij,kj->ki", A, J * wb)
    np.testing.assert_allclose(L, L[0] + 0 * L, atol=1e-8 * np.abs(L[0]).max())
    T = r["energy.kinetic"]
    np.testing.assert_allclose(T, T[0], rtol=1e-9)
    # the spin about the intermediate axis reverses (the Dzhanibekov flip) ...
    assert wb[:, 1].min() < -4.99 and np.sum(np.diff(np.sign(wb[:, 1])) != 0) == 1
    # ... when Euler's equations in body axes (omega form, scipy) say it does
    from scipy.integrate import solve_ivp

    ref = solve_ivp(lambda t, w: -np.cross(w, J * w) / J, (0.0, 6.0), [1e-3, 5.0, 1e-3],
                    t_eval=r["time"], rtol=1e-12, atol=1e-14, method="DOP853")
    np.testing.assert_allclose(wb, ref.y.T, atol=1e-5)


def test_heavy_top_precesses_steadily_at_the_closed_form_rate():
    from importlib import util

    spec = util.spec_from_file_location("heavy_top", MODELS / "heavy_top.py")
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = load_model(MODELS / "heavy_top.py")
    r = simulate(model, 1.0, 0.02)
    m, l, A, C = 1.0, 0.1, 4e-3, 6e-3
    Omega = mod.steady_precession(m, 9.81, l, A + m * l * l, C, 0.5, 60.0)
    # the symmetry axis keeps its nutation angle and turns about z at Omega
    tip = np.stack([r["tip.x"], r["tip.y"], r["tip.z"]], axis=1)
    np.testing.assert_allclose(tip[:, 2], 3 * l * math.cos(0.5), atol=1e-9)   # cg + 2 l
    azimuth = np.unwrap(np.arctan2(tip[:, 1], tip[:, 0]))
    np.testing.assert_allclose(azimuth - azimuth[0], Omega * r["time"], atol=1e-8)
    # a precession 30 % too fast nutates the axis but conserves energy
    r2 = simulate(load_model(MODELS / "heavy_top.py", precession_offset=0.3 * Omega), 0.5,
                  0.02)
    assert np.ptp(r2["tip.z"]) > 1e-3
    np.testing.assert_allclose(r2["energy.total"], r2["energy.total"][0], rtol=1e-9)
    assert np.abs(r2["constraint.residual"]).max() < 1e-12


@pytest.mark.parametrize("solver", [dict(), dict(method="dopri5", stabilization="baumgarte"),
                                    dict(method="rk4", step=5e-3), dict(method="radau")],
                         ids=["dop853", "dopri5-baumgarte", "rk4", "radau"])
def test_spherical_pendulum_moves_on_its_cone(solver):
    L, alpha, g = 1.2, 0.4, 9.81
    Omega = math.sqrt(g / (L * math.cos(alpha)))       # point mass on a massless rod
    mb = ModelBuilder("conical", {}, gravity=(0.0, 0.0, -g))
    rpos = np.array([L * math.sin(alpha), 0.0, -L * math.cos(alpha)])
    ball = mb.body("ball", mass=2.0, inertia=sphere_inertia(2.0, 0.05), position=tuple(rpos),
                   velocity=tuple(np.cross([0, 0, Omega], rpos)))
    mb.distance("rod", mb.ground, ball, length=L)
    r = simulate(mb.build(), 1.0 if not solver else 0.3, 0.05, **solver)
    tol = 1e-8 if not solver else 1e-6
    np.testing.assert_allclose(r["ball.z"], rpos[2], atol=tol)
    np.testing.assert_allclose(r["ball.x"], rpos[0] * np.cos(Omega * r["time"]), atol=tol)
    np.testing.assert_allclose(r["ball.y"], rpos[0] * np.sin(Omega * r["time"]), atol=tol)
    # the rod's tension: m g / cos(alpha)
    np.testing.assert_allclose(r["rod.tension"], 2.0 * g / math.cos(alpha), rtol=tol)


def test_bricard_runs_10_s_on_its_constraints_with_constant_energy():
    model = load_model(MODELS / "bricard.py")
    t = model.topology
    assert (t.gruebler_dof, t.dof, t.redundant) == (0, 1, 1)
    r = simulate(model, 10.0, 0.5)
    assert r["time"][-1] == 10.0
    assert np.abs(r["constraint.residual"]).max() < 1e-10
    assert np.abs(r["constraint.velocity_residual"]).max() < 1e-10
    np.testing.assert_allclose(r["energy.total"], r["energy.total"][0], atol=1e-8)
    assert np.ptp(r["P3.x"]) > 1.0                    # it really moves
    # the marker is the joint point P3 of rod2 and rod3
    rods = {}
    for k in (2, 3):
        p = np.stack([r[f"rod{k}.e{i}"] for i in range(4)], axis=1)
        rods[k] = (np.stack([r[f"rod{k}.{c}"] for c in "xyz"], axis=1), rot.matrix(p))
    tip2 = rods[2][0] + rods[2][1] @ np.array([0.0, -0.5, 0.0])
    np.testing.assert_allclose(tip2, np.stack([r["P3.x"], r["P3.y"], r["P3.z"]], axis=1),
                               atol=1e-12)


def test_revolute_reaction_at_release_and_a_drive_effort_against_statics():
    mb = ModelBuilder("pend3", {}, gravity=(0.0, 0.0, -9.81))
    rod = mb.body("rod", mass=1.0, inertia=(0.0, 1 / 12, 1 / 12), position=(0.5, 0.0, 0.0))
    mb.revolute("A", mb.ground, rod, at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    r = simulate(mb.build(), 0.01, 0.01)
    # released horizontally: the centre of mass falls at 3 g / 4, the pivot carries m g / 4
    assert r["A.fz"][0] == pytest.approx(9.81 / 4, rel=1e-12)
    assert r["A.fx"][0] == pytest.approx(0.0, abs=1e-12)
    assert r["A.ty"][0] == pytest.approx(0.0, abs=1e-12)        # no torque about the axis
    # a weld carries the weight and its moment: torque of the parent on the child at the
    # joint point = -(r_cg x m gravity)
    mw = ModelBuilder("cantilever", {}, gravity=(0.0, 0.0, -9.81))
    arm = mw.body("arm", mass=2.0, inertia=(0.01, 0.2, 0.2), position=(0.5, 0.0, 0.0),
                  orientation=cardan(0.3, 0.2, 0.1))
    mw.fixed("W", arm, mw.ground, at=(0.0, 0.0, 0.0))      # the ground is the child here
    rw = simulate(mw.build(), 0.1, 0.1)
    # the arm (parent) on the ground (child) is minus the ground on the arm
    np.testing.assert_allclose([rw[f"W.f{c}"][-1] for c in "xyz"], [0, 0, -2 * 9.81],
                               atol=1e-9)
    np.testing.assert_allclose([rw[f"W.t{c}"][-1] for c in "xyz"], [0, 0.5 * 2 * 9.81, 0],
                               atol=1e-9)
    mb.drive("turn", "A", constant_rate(2.0))
    r = simulate(mb.build(), 1.0, 0.1)
    theta = 2.0 * r["time"]
    np.testing.assert_allclose(r["A.angle"], (theta + np.pi) % (2 * np.pi) - np.pi, atol=1e-9)
    # the drive holds the weight: effort + m g (l / 2) cos(theta) = 0 (rate constant)
    np.testing.assert_allclose(r["turn.effort"], -9.81 * 0.5 * np.cos(theta), atol=1e-8)


def test_prismatic_spring_and_bushing_oscillate_at_their_natural_frequencies():
    k, m = 40.0, 0.5
    a = np.array([1.0, 1.0, 0.0]) / math.sqrt(2)
    mb = ModelBuilder("slider3", {}, gravity=(0.0, 0.0, -9.81))
    s = mb.body("s", mass=m, inertia=(0.1, 0.1, 0.1))
    mb.prismatic("P", mb.ground, s, at=(0.0, 0.0, 0.0), axis=tuple(a))
    mb.tsda("k", mb.ground, s, a_point=tuple(-a), stiffness=k, free_length=1.0)
    mb.initial("P", value=0.1)
    r = simulate(mb.build(), 1.0, 0.1)
    w = math.sqrt(k / m)
    np.testing.assert_allclose(r["P.position"], 0.1 * np.cos(w * r["time"]), atol=1e-9)
    np.testing.assert_allclose(r["k.force"], k * 0.1 * np.cos(w * r["time"]), atol=1e-7)

    kr, kt, Izz, m = 3.0, 50.0, 0.02, 1.5
    mb = ModelBuilder("mount", {}, gravity=(0.0, 0.0, 0.0))
    b = mb.body("b", mass=m, inertia=(0.01, 0.015, Izz), velocity=(1e-3, 0, 0),
                angular_velocity=(0, 0, 1e-3))
    mb.bushing("bush", mb.ground, b, at=(0.0, 0.0, 0.0), stiffness=(kt, kt, kt),
               rotational_stiffness=(kr, kr, kr))
    r = simulate(mb.build(), 1.0, 0.1)
    wt, wr = math.sqrt(kt / m), math.sqrt(kr / Izz)
    np.testing.assert_allclose(r["b.x"], 1e-3 / wt * np.sin(wt * r["time"]), atol=1e-11)
    np.testing.assert_allclose(r["b.gamma"], 1e-3 / wr * np.sin(wr * r["time"]), atol=1e-10)
    # the bushing pulls b back: s = K e acts on b against e
    np.testing.assert_allclose(r["bush.fx"], kt * r["b.x"], atol=1e-12)


@pytest.mark.parametrize("formulation", ["tmt", "lagrange"])
def test_joint_coordinate_formulations_run_a_spatial_model(formulation):
    """tmt and lagrange start from the same q0 (the tree
    coordinates) and follow newton_euler (tests/test_spatial_lagrange.py in depth)."""
    model = load_model(MODELS / "heavy_top.py")
    s = initial_state(model, Settings(formulation=formulation))
    assert s.coords == "joint" and s.q.shape == (4,)
    a = simulate(model, 0.05, 0.05, formulation=formulation, rtol=1e-10, atol=1e-10)
    b = simulate(model, 0.05, 0.05, formulation="newton_euler", rtol=1e-10, atol=1e-10)
    for c in ("tip.x", "tip.z", "pivot.fz"):
        assert abs(a[c][-1] - b[c][-1]) < 1e-8 * (1 + abs(b[c][-1])), c


def test_spatial_builder_errors_name_the_item_and_what_was_expected():
    mb = ModelBuilder("bad", {}, gravity=(0.0, 0.0, -9.81))
    with pytest.raises(ModelError, match="body 'b'.*triangle"):
        mb.body("b", mass=1.0, inertia=(1.0, 1.0, 3.0))
    b = mb.body("c", mass=1.0, inertia=(1.0, 1.0, 1.0))
    with pytest.raises(ModelError, match="universal 'U'.*perpendicular"):
        mb.universal("U", mb.ground, b, at=(0, 0, 0), axis=(1, 0, 0), axis2=(1, 1, 0))
    with pytest.raises(ModelError, match="revolute 'R'.*axis"):
        mb.revolute("R", mb.ground, b, at=(0, 0, 0))
    with pytest.raises(ModelError, match="orientation"):
        mb.body("d", mass=1.0, inertia=(1, 1, 1), orientation=np.diag([1.0, 1.0, -1.0]))
    mb.gravity = (0.0, -9.81)
    with pytest.raises(ModelError, match="gravity.*kind"):
        mb.build()
    planar = ModelBuilder("flat", {})
    pb = planar.body("p", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match="spatial models only"):
        planar.spherical("S", planar.ground, pb)


def test_kinematic_analysis_and_inverse_dynamics_of_a_driven_spatial_pendulum():
    from fmu_mb import inverse_dynamics, kinematic_analysis

    mb = ModelBuilder("pend3", {}, gravity=(0.0, 0.0, -9.81))
    rod = mb.body("rod", mass=1.0, inertia=(0.0, 1 / 12, 1 / 12), position=(0.5, 0.0, 0.0))
    mb.revolute("A", mb.ground, rod, at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    mb.drive("turn", "A", harmonic(0.5, 0.7))
    model = mb.build()
    t = 0.3
    ks = kinematic_analysis(model, t)
    w = 2 * math.pi * 0.7
    theta, thd, thdd = (0.5 * math.sin(w * t), 0.5 * w * math.cos(w * t),
                        -0.5 * w * w * math.sin(w * t))
    assert ks.x[0] == pytest.approx(0.5 * math.cos(theta), abs=1e-12)
    assert ks.x[2] == pytest.approx(-0.5 * math.sin(theta), abs=1e-12)
    inv = inverse_dynamics(model, t, ks.x, ks.xd, ks.xdd)
    # I_pivot thdd = effort + m g (l / 2) cos(theta), I_pivot = m l^2 / 3
    assert inv.efforts[0] == pytest.approx(thdd / 3 - 9.81 * 0.5 * math.cos(theta), rel=1e-9)
    assert inv.residual < 1e-9
    r = simulate(model, t, t)
    assert r["turn.effort"][-1] == pytest.approx(inv.efforts[0], rel=1e-7)


def test_body_frame_joint_definitions_equal_the_global_ones_and_info_shows_the_topology(
        capsys):
    from fmu_mb.tools.cli import main

    def pendulum(local):
        mb = ModelBuilder("p", {}, gravity=(0.0, -9.81, 0.0))
        q = cardan(0.4, -0.2, 0.7)
        A = rot.matrix(q[None])[0]
        c = np.array([0.3, -0.4, 0.2])
        link = mb.body("link", mass=1.5, inertia=(0.02, 0.03, 0.04), position=tuple(c),
                       orientation=q, angular_velocity=(0.0, 0.0, 1.0))
        axis = np.array([0.0, 0.6, 0.8])
        if local:       # the same joint in body axes: point and axis seen from each body
            mb.revolute("R", mb.ground, link, parent_point=(0.0, 0.0, 0.0),
                        child_point=tuple(A.T @ -c), parent_axis=tuple(axis))
        else:
            mb.revolute("R", mb.ground, link, at=(0.0, 0.0, 0.0), axis=tuple(axis))
        return mb.build()
    a = simulate(pendulum(False), 0.5, 0.1)
    b = simulate(pendulum(True), 0.5, 0.1)
    for name in ("link.x", "link.y", "link.z", "R.angle", "R.fx", "energy.total"):
        np.testing.assert_allclose(a[name], b[name], atol=1e-12, err_msg=name)
    assert np.ptp(a["R.angle"]) > 0.1
    assert main(["info", str(MODELS / "bricard.py")]) == 0
    out = capsys.readouterr().out
    assert "Gruebler-Kutzbach DOF = 0, DOF from rank(D) = 1, constraints = 35, redundant = 1" \
        in out and "spatial" in out


def test_spatial_four_bar_assembled_from_guesses_moves_like_the_planar_model():
    """The planar four_bar model rebuilt in 3-D (parallel revolute axes: Grübler -2, mobility
    1, three redundant rows), its joints in body axes, its bodies placed along the tree from
    the planar model's guesses: the assembly closes the loop (three redundant rows) and the
    motion equals the planar formulation's."""
    a, b, c, d, mpl, g = 0.1, 0.35, 0.3, 0.4, 2.0, 9.81
    from fmu_mb import slender_rod_inertia

    mb = ModelBuilder("four_bar_3d", {}, gravity=(0.0, -g, 0.0))
    z = (0.0, 0.0, 1.0)

    def rod(name, length, pos, angle):
        return mb.body(name, mass=mpl * length, inertia=slender_rod_inertia(mpl * length, length),
                       position=pos + (0.0,), orientation=cardan(0.0, 0.0, angle))
    crank = rod("crank", a, (0.0, 0.05), 1.5)
    coupler = rod("coupler", b, (0.15, 0.15), -0.2)
    rocker = rod("rocker", c, (0.43, 0.13), 1.4)
    mb.revolute("A0", mb.ground, crank, parent_point=(0, 0, 0), child_point=(-a / 2, 0, 0),
                parent_axis=z, child_axis=z)
    mb.revolute("A", crank, coupler, parent_point=(a / 2, 0, 0), child_point=(-b / 2, 0, 0),
                parent_axis=z, child_axis=z)
    mb.revolute("B", coupler, rocker, parent_point=(b / 2, 0, 0), child_point=(c / 2, 0, 0),
                parent_axis=z, child_axis=z)
    mb.revolute("B0", mb.ground, rocker, parent_point=(d, 0, 0), child_point=(-c / 2, 0, 0),
                parent_axis=z, child_axis=z)
    mb.point("coupler_mid", coupler, (0.0, 0.0, 0.0))
    mb.initial("A0", value=math.pi / 2, rate=5.0)
    mb.initial("B0", guess=math.radians(80.0))      # the planar model's branch guesses
    mb.initial("A", guess=math.radians(-60.0))
    spatial = mb.build()
    t = spatial.topology
    assert (t.gruebler_dof, t.dof, t.redundant) == (-2, 1, 3)
    planar = load_model(MODELS / "four_bar.py")
    rs, rp = simulate(spatial, 1.0, 0.05), simulate(planar, 1.0, 0.05)
    wrap = lambda v: (v + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    np.testing.assert_allclose(wrap(rs["A0.angle"] - rp["A0.angle"]), 0.0, atol=1e-8)
    for name in ("coupler_mid.x", "coupler_mid.y", "energy.total", "B0.rate"):
        np.testing.assert_allclose(rs[name], rp[name], atol=1e-8, err_msg=name)
    np.testing.assert_allclose(rs["coupler_mid.z"], 0.0, atol=1e-12)


def test_cylindrical_joint_coordinates_spin_and_fall_along_the_axis():
    mb = ModelBuilder("sleeve", {}, gravity=(0.0, -9.81, 0.0))
    s = mb.body("s", mass=1.0, inertia=(0.2, 0.1, 0.3), angular_velocity=(0.0, 0.7, 0.0),
                velocity=(0.0, 0.5, 0.0))
    mb.cylindrical("C", mb.ground, s, at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    r = simulate(mb.build(), 1.0, 0.25)
    t = r["time"]
    np.testing.assert_allclose(r["C.angle"], 0.7 * t, atol=1e-10)
    np.testing.assert_allclose(r["C.rate"], 0.7, atol=1e-10)
    np.testing.assert_allclose(r["C.position"], 0.5 * t - 9.81 * t * t / 2, atol=1e-10)
    np.testing.assert_allclose(r["C.velocity"], 0.5 - 9.81 * t, atol=1e-10)
    np.testing.assert_allclose(r["C.fy"], 0.0, atol=1e-10)       # free along the axis


def test_large_initial_joint_coordinates_are_placed_along_the_tree():
    mb = ModelBuilder("chain", {}, gravity=(0.0, 0.0, -9.81))
    prev, values = mb.ground, (-3.0, 2.5, 0.4)
    links = []
    for i, kind in enumerate(("revolute", "revolute", "prismatic")):
        b = mb.body(f"l{i}", mass=1.0, inertia=(0.001, 0.1, 0.1), position=(i + 0.5, 0, 0))
        getattr(mb, kind)(f"J{i}", prev, b, at=(i, 0, 0),
                          axis=[(0, 1, 0), (0, 0, 1), (1, 0, 0)][i])
        mb.initial(f"J{i}", value=values[i], rate=1.0)
        prev = b
        links.append(b)
    r = simulate(mb.build(), 0.01, 0.01)
    assert [r[n][0] for n in ("J0.angle", "J1.angle", "J2.position")] == pytest.approx(
        list(values), abs=1e-12)
    assert [r[n][0] for n in ("J0.rate", "J1.rate", "J2.rate")] == pytest.approx(
        [1.0] * 3, abs=1e-12)
    # forward kinematics by hand: J1 at R_y(-3) (1, 0, 0); l1's centre 0.5 further along
    # R_y(-3) R_z(2.5) x
    Ry = np.array([[math.cos(-3), 0, math.sin(-3)], [0, 1, 0], [-math.sin(-3), 0, math.cos(-3)]])
    Rz = np.array([[math.cos(2.5), -math.sin(2.5), 0], [math.sin(2.5), math.cos(2.5), 0],
                   [0, 0, 1]])
    c1 = Ry @ [1.0, 0, 0] + Ry @ Rz @ [0.5, 0, 0]
    np.testing.assert_allclose([r[f"l1.{c}"][0] for c in "xyz"], c1, atol=1e-12)


@pytest.mark.parametrize("w, which", [((0.5, 0.0, 0.0), 1), ((0.0, 0.8, 0.0), 2)])
def test_universal_joint_angles_turn_about_their_axes(w, which):
    mb = ModelBuilder("cardan", {}, gravity=(0.0, 0.0, 0.0))
    s = mb.body("s", mass=1.0, inertia=(0.2, 0.3, 0.4), angular_velocity=w)
    mb.universal("U", mb.ground, s, at=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
                 axis2=(0.0, 1.0, 0.0))
    r = simulate(mb.build(), 1.0, 0.25)
    rate = max(w)
    other = 3 - which
    np.testing.assert_allclose(r[f"U.angle{which}"], rate * r["time"], atol=1e-10)
    np.testing.assert_allclose(r[f"U.rate{which}"], rate, atol=1e-10)
    np.testing.assert_allclose(r[f"U.angle{other}"], 0.0, atol=1e-10)


def test_arguments_of_the_other_kind_are_refused_not_ignored():
    planar = ModelBuilder("flat", {})
    b = planar.body("b", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match="revolute 'R'.*at.*spatial models"):
        planar.revolute("R", planar.ground, b, at=(0, 0, 0), axis=(0, 0, 1))
    with pytest.raises(ModelError, match="torque 'T'.*axis"):
        planar.torque("T", b, axis=(0, 0, 1))
    spatial = ModelBuilder("solid", {}, gravity=(0.0, 0.0, -9.81))
    c = spatial.body("c", mass=1.0, inertia=(1, 1, 1))
    with pytest.raises(ModelError, match="revolute 'R'.*angle0.*planar models"):
        spatial.revolute("R", spatial.ground, c, at=(0, 0, 0), axis=(0, 0, 1), angle0=0.3)
