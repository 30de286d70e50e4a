"""The compiled 'recursive' formulation (fmu_mb/native/kernel.c through fmu_mb/kernel.py)
against independent references: tmt and newton_euler at random states, the Python element
forces, the Python integrators (scipy's steppers) with the same Settings, closed forms and
conservation laws; bad input and the compile cache.

Kernel calls that might never return (an endless C loop cannot be interrupted in-process) run
in a fresh interpreter with a timeout (`isolated`).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import (IntegrationError, InputError, ModelBuilder, Settings, SingularSystemError,
                    State, advance, initial_state, rod_inertia)
from fmu_mb.engine import kernel
from fmu_mb.mechanics.elements import applied_forces, kinetic_energy, potential_energy
from fmu_mb.dynamics.formulations import get_formulation, newton_euler, tmt
from fmu_mb.dynamics.integrate import check_settings
from fmu_mb.engine.kernel import KernelUnavailable, supported, tree_kernel
from fmu_mb.mechanics.tree import transform, tree_coordinates

from conftest import ROOT, model, python_drive
from test_formulations_agree import joint_accelerations
from test_seed_examples import double_pendulum_minimal
from test_tmt import crane_seed, reversed_tree

REC = get_formulation("recursive")
TESTS = Path(__file__).resolve().parent


# ---------------------------------------------------------------------- models
def tree_zoo():
    """Every ingredient the kernel supports: revolute joints with angle0 (one declared
    child -> parent), skewed prismatic joints with angle0 declared parent -> child (P1) and
    child -> parent (P3: the placed body is the joint's child, sign -1), a weld, a point mass
    in the middle of the tree, a floating body held only by TSDAs (a free root), RSDAs between
    non-adjacent bodies and to the ground, forces in the global and the body frame at offset
    points, torques with and without a reaction body, inputs on most elements, gravity with
    both components."""
    mb = ModelBuilder("tree_zoo", gravity=(1.3, -9.81))
    a = mb.body("a", mass=1.2, inertia=rod_inertia(1.2, 0.8))
    b = mb.body("b", mass=0.6, inertia=0.03)
    p = mb.body("p", mass=0.25, inertia=0.0)                 # point mass in the middle
    c = mb.body("c", mass=0.4, inertia=0.02)
    w = mb.body("w", mass=0.3, inertia=0.01)
    d = mb.body("d", mass=0.5, inertia=0.04)
    fl = mb.body("fl", mass=0.7, inertia=0.05, position=(1.5, 0.4), angle=0.3,
                 velocity=(0.2, -0.1), angular_velocity=0.5)
    mb.revolute("R0", mb.ground, a, parent_point=(0.1, -0.2), child_point=(-0.4, 0.05),
                angle0=0.35)
    mb.prismatic("P1", a, b, axis=(0.8, 0.6), parent_point=(0.3, 0.02),
                 child_point=(-0.1, 0.04), angle0=0.25)
    mb.revolute("R2", p, b, parent_point=(0.0, 0.0), child_point=(0.15, -0.05), angle0=-0.5)
    mb.prismatic("P3", c, p, axis=(-0.3, 1.0), parent_point=(0.2, 0.1),
                 child_point=(0.0, 0.0), angle0=0.6)
    mb.weld("W", c, w, parent_point=(0.1, 0.0), child_point=(-0.05, 0.02), angle0=-0.7)
    mb.revolute("R5", w, d, parent_point=(0.12, -0.03), child_point=(-0.2, 0.0), angle0=0.15)
    mb.tsda("s_ground", mb.ground, fl, a_point=(2.0, 1.0), b_point=(0.1, 0.05), stiffness=40.0,
            free_length=0.6, damping=0.3)
    mb.tsda("s_tree", d, fl, a_point=(0.1, 0.0), b_point=(-0.1, 0.02), stiffness=25.0,
            free_length=0.4, damping=0.2)
    mb.rsda("twist", a, c, stiffness=3.0, free_angle=0.4, damping=0.05)
    mb.rsda("anchor", mb.ground, d, stiffness=2.0, free_angle=-0.3, damping=0.1)
    mb.force("push_g", b, point=(0.05, -0.02), direction=(1.0, 2.0), frame="global", value=0.7)
    mb.force("push_b", d, point=(0.15, 0.03), direction=(0.0, 1.0), frame="body", value=-0.4)
    mb.torque("motor", w, reaction=a, value=0.3)
    mb.torque("spin", fl, value=0.1, input=False)
    mb.initial("R0", value=0.2, rate=0.3)
    mb.initial("P1", value=0.1, rate=-0.2)
    mb.initial("R2", value=0.4)
    mb.initial("P3", value=0.05, rate=0.1)
    mb.initial("R5", value=-0.3, rate=0.4)
    return mb.build()


def floating_subtree(gravity=(0.5, -3.0)):
    """Two floating subtrees: the free root ('leaf', declared first, a point mass) carries
    children through a reversed prismatic joint and a revolute joint; a second free root with
    a welded body. Internal TSDA, RSDA, torque with reaction, body-frame force."""
    mb = ModelBuilder("floating_subtree", gravity=gravity)
    leaf = mb.body("leaf", mass=0.3, inertia=0.0)
    mid = mb.body("mid", mass=0.5, inertia=0.02)
    root = mb.body("root", mass=1.0, inertia=0.1, position=(0.3, 2.0), angle=0.4,
                   velocity=(1.0, 0.5), angular_velocity=2.0)
    other = mb.body("other", mass=0.8, inertia=0.07, position=(-1.0, 0.5), angle=-0.2,
                    velocity=(-0.3, 0.2), angular_velocity=-1.0)
    sat = mb.body("sat", mass=0.2, inertia=0.01)
    mb.revolute("H", root, mid, parent_point=(0.5, 0.0), child_point=(-0.2, 0.1), angle0=0.3)
    mb.prismatic("S", leaf, mid, axis=(1.0, -0.4), parent_point=(0.1, 0.0),
                 child_point=(0.2, 0.05), angle0=0.2)
    mb.weld("Wd", other, sat, parent_point=(0.3, 0.0), child_point=(-0.1, 0.0), angle0=1.0)
    mb.tsda("link", mid, other, a_point=(0.1, 0.0), stiffness=10.0, free_length=1.0,
            damping=0.1)
    mb.rsda("tw", leaf, sat, stiffness=1.0, damping=0.2)
    mb.torque("tq", root, reaction=sat, value=0.5)
    mb.force("fb", leaf, point=(0.1, 0.1), direction=(0.0, 1.0), frame="body")
    mb.initial("H", rate=0.7)
    mb.initial("S", value=0.1, rate=-0.3)
    return mb.build()


CASES = {"double_pendulum": lambda: model("double_pendulum"),
         "pendulum_chain": lambda: model("pendulum_chain", N=5),
         "hinged_body_spring": lambda: model("hinged_body_spring"),
         "container_crane": lambda: model("container_crane"),
         "reversed_tree": reversed_tree,
         "tree_zoo": tree_zoo,
         "floating_subtree": floating_subtree}


def scaled_close(a, b, tol, what=""):
    """|a - b| <= tol * max(1, |b|) elementwise-max; returns the scaled disagreement."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, what
    scale = max(1.0, np.abs(b).max(initial=0.0))
    err = np.abs(a - b).max(initial=0.0) / scale
    assert err <= tol, f"{what}: scaled disagreement {err:.3g} > {tol:g}"
    return err


def random_state(m, rng, scale=1.0):
    n = len(tree_coordinates(m))
    return (rng.uniform(0.0, 2.0), rng.normal(scale=scale, size=n), rng.normal(size=n),
            rng.normal(scale=2.0, size=len(m.inputs)))


def isolated(code, timeout=60.0):
    """Run `code` in a fresh interpreter (tests/ and the checkout on sys.path); return the
    JSON object it prints last. A call that never returns fails the test after `timeout` s
    instead of hanging the run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TESTS), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, cwd=str(TESTS), env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout:g} s: the kernel call never returned")
    assert p.returncode == 0, f"child failed ({p.returncode}): {p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- 1. accelerations
def test_every_case_is_supported_and_placed_as_tmt_places_it():
    for name, make in CASES.items():
        m = make()
        assert supported(m) is None, name
        assert REC.coordinates(m) == tmt.coordinates(m), name
    zoo_names = tree_coordinates(tree_zoo())
    assert zoo_names[-3:] == ("fl.x", "fl.y", "fl.phi")         # the free root's own q


@pytest.mark.parametrize("name", CASES)
def test_accelerations_agree_with_tmt_and_newton_euler(name):
    m = CASES[name]()
    rng = np.random.default_rng(20260 + len(name))
    worst = 0.0
    for _ in range(6):
        t, q, qd, u = random_state(m, rng)
        dyn = REC.accelerations(m, q, qd, t, u)
        ref = tmt.accelerations(m, q, qd, t, u)
        x, xd, _, _ = transform(m, q, qd)
        worst = max(worst, scaled_close(dyn.x, x, 1e-12, "x"),
                    scaled_close(dyn.xd, xd, 1e-12, "xd"),
                    scaled_close(dyn.qdd, ref.qdd, 1e-10, "qdd vs tmt"),
                    scaled_close(dyn.xdd, ref.xdd, 1e-10, "xdd vs tmt"))
        ne = newton_euler.accelerations(m, x, xd, t, u)          # absolute coordinates
        worst = max(worst, scaled_close(dyn.xdd, ne.qdd, 1e-10, "xdd vs newton_euler"),
                    scaled_close(dyn.qdd, joint_accelerations(m, x, xd, ne.qdd), 1e-10,
                                 "qdd vs newton_euler"))
        # the rest of the Dynamics record and the absolute() of the formulation
        assert dyn.t == t and np.array_equal(dyn.u, u) and dyn.lam_cut.shape == (0,)
        xa, xda = REC.absolute(m, q, qd)
        scaled_close(xa, x, 1e-12, "absolute x")
        scaled_close(xda, xd, 1e-12, "absolute xd")
    assert worst < 1e-10


def test_accelerations_do_not_depend_on_earlier_calls():
    """The kernel keeps workspace between calls: the same state gives the same answer
    whatever was computed before (and the returned arrays are copies)."""
    m = tree_zoo()
    rng = np.random.default_rng(5)
    t, q, qd, u = random_state(m, rng)
    first = REC.accelerations(m, q, qd, t, u)
    keep = first.qdd.copy()
    for _ in range(3):
        REC.accelerations(m, *random_state(m, rng)[1:3], 0.0, rng.normal(size=len(m.inputs)))
    again = REC.accelerations(m, q, qd, t, u)
    assert np.array_equal(again.qdd, keep) and np.array_equal(first.qdd, keep)
    assert np.array_equal(again.xdd, first.xdd)


def test_rod_pendulum_is_the_closed_form():
    """Uniform rod of length l hinged at one end (angle0, offset pivot, gravity with both
    components): phi = angle0 + q, J_pivot qdd = (l/2) m (gy cos phi - gx sin phi),
    J_pivot = m l^2 / 3; the centre of mass moves on the circle of radius l/2."""
    gx, gy, m_, l, a0 = 0.7, -9.81, 1.7, 0.9, 0.4
    mb = ModelBuilder("rod", gravity=(gx, gy))
    rod = mb.body("rod", mass=m_, inertia=rod_inertia(m_, l))
    mb.revolute("A", mb.ground, rod, parent_point=(0.3, -0.2), child_point=(-l / 2, 0.0),
                angle0=a0)
    m = mb.build()
    rng = np.random.default_rng(11)
    for _ in range(6):
        q, qd = rng.normal(size=1) * 2, rng.normal(size=1) * 3
        dyn = REC.accelerations(m, q, qd, 0.0, np.zeros(0))
        phi, w = a0 + q[0], qd[0]
        qdd = (l / 2) * m_ * (gy * np.cos(phi) - gx * np.sin(phi)) / (m_ * l ** 2 / 3)
        np.testing.assert_allclose(dyn.qdd, [qdd], rtol=1e-13, atol=1e-13)
        c, s = np.cos(phi), np.sin(phi)
        np.testing.assert_allclose(dyn.x, [0.3 + l / 2 * c, -0.2 + l / 2 * s, phi],
                                   rtol=0, atol=1e-14)
        np.testing.assert_allclose(dyn.xdd, [l / 2 * (-s * qdd - c * w * w),
                                             l / 2 * (c * qdd - s * w * w), qdd],
                                   rtol=0, atol=1e-12)
    # pendulum_chain with one link: the brief's -(m g l/2 cos q) / (m l^2 / 3)
    m = model("pendulum_chain", N=1)
    p = m.parameter_values
    for q in (-1.0, 0.3, 2.0):
        qdd = REC.accelerations(m, np.array([q]), np.zeros(1), 0.0, np.zeros(0)).qdd[0]
        expect = -(p["link_mass"] * p["g"] * p["link_length"] / 2 * np.cos(q)) / (
            p["link_mass"] * p["link_length"] ** 2 / 3)
        assert qdd == pytest.approx(expect, rel=1e-13)


def test_double_pendulum_and_crane_are_the_seed_closed_forms():
    m = model("double_pendulum")
    p = m.parameter_values
    P = np.array([[1.0, 0.0], [1.0, 1.0]])                  # rod angles from joint angles
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, qd, h = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
        M, Q = double_pendulum_minimal(P @ q, P @ qd, p["m1"], p["m2"], p["l1"], p["l2"],
                                       p["g"], h)
        qdd = REC.accelerations(m, q, qd, 0.0, h).qdd
        np.testing.assert_allclose(P @ qdd, np.linalg.solve(M, Q), rtol=1e-12, atol=1e-12)
    m = model("container_crane")
    p = m.parameter_values
    for _ in range(4):
        q, qd, Qx = rng.normal(size=2) * 2, rng.normal(size=2), rng.normal() * 100
        M, rhs = crane_seed(q, qd, Qx, p["m"], p["mc"], p["l"], p["g"])
        qdd = REC.accelerations(m, q, qd, 0.0, np.array([Qx])).qdd
        np.testing.assert_allclose(qdd, np.linalg.solve(M, rhs), rtol=1e-12, atol=1e-12)


def test_micro_scale_chain_is_not_singular():
    """The singularity test of the articulated-body algorithm must be scale free: a chain of
    0.1 um links (pendulum_chain's range goes down to 1e-9 m) is regular (found with an
    absolute test D > 1e-13 trace(IA), which mixes kg and kg m^2; fixed in 4647702)."""
    m = model("pendulum_chain", N=3, link_length=1e-7)
    s = tmt.initial_state(m)
    q = s.q + np.array([0.1, -0.2, 0.3])
    ref = tmt.accelerations(m, q, s.qd, 0.0, np.zeros(0))
    dyn = REC.accelerations(m, q, s.qd, 0.0, np.zeros(0))
    scaled_close(dyn.qdd, ref.qdd, 1e-10, "qdd")


# ---------------------------------------------------------------------- 2. applied forces
@pytest.mark.parametrize("name", ["tree_zoo", "floating_subtree", "reversed_tree",
                                  "double_pendulum", "container_crane"])
def test_kernel_applied_forces_equal_the_python_elements(name):
    m = CASES[name]()
    k = tree_kernel(m)
    rng = np.random.default_rng(99)
    for _ in range(5):
        t, q, qd, u = random_state(m, rng)
        x, xd, _, _ = transform(m, q, qd)
        np.testing.assert_allclose(k.applied_forces(q, qd, u), applied_forces(m, x, xd, t, u),
                                   rtol=1e-13, atol=1e-13)


def test_applied_forces_follow_the_readme_conventions():
    """One free body (x = q), each element alone, against the README's conventions:
    TSDA s = k (l - l0) + c l' + h in tension pulls b towards a; RSDA theta = phi_b - phi_a,
    torque -s on b; force (value + h) along the direction (turning with a body frame) at a
    point; torque (value + h) counter-clockwise with the opposite torque on the reaction."""
    g = (0.4, -9.81)
    rng = np.random.default_rng(8)
    q = np.array([0.3, 1.1, 0.7, -0.5, 0.2, -0.4])      # two free bodies
    qd = rng.normal(size=6)
    h = rng.normal(size=4)
    mb = ModelBuilder("conv", gravity=g)
    mb.body("a", mass=2.0, inertia=0.3)
    mb.body("b", mass=0.5, inertia=0.1)
    k_, c_, l0, pa, pb = 30.0, 0.7, 0.2, np.array([0.1, -0.05]), np.array([0.3, 0.2])
    mb.tsda("spring", "ground", "b", a_point=tuple(pa), b_point=tuple(pb), stiffness=k_,
            free_length=l0, damping=c_)
    mb.rsda("twist", "a", "b", stiffness=4.0, free_angle=0.1, damping=0.3)
    mb.force("push", "b", point=(0.2, 0.1), direction=(0.6, 0.8), frame="body", value=1.5)
    mb.torque("motor", "b", reaction="a", value=0.25)
    m = mb.build()
    f = tree_kernel(m).applied_forces(q, qd, h)

    def A(phi, v):
        c, s = np.cos(phi), np.sin(phi)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    def perp(v):
        return np.array([-v[1], v[0]])

    def cross(a, b):
        return a[0] * b[1] - a[1] * b[0]

    rb, phb, vb, wb = q[3:5], q[5], qd[3:5], qd[5]
    expect = np.array([2.0 * g[0], 2.0 * g[1], 0.0, 0.5 * g[0], 0.5 * g[1], 0.0])
    # TSDA from the ground point pa to b's point pb
    d = rb + A(phb, pb) - pa
    length = np.hypot(*d)
    e = d / length
    ldot = e @ (vb + wb * perp(A(phb, pb)))
    s = k_ * (length - l0) + c_ * ldot + h[0]
    F = -s * e                                             # on b: towards a in tension
    expect[3:5] += F
    expect[5] += cross(A(phb, pb), F)
    # RSDA a -> b
    s = 4.0 * (q[5] - q[2] - 0.1) + 0.3 * (qd[5] - qd[2]) + h[1]
    expect[5] -= s
    expect[2] += s
    # body-frame force at a point of b
    F = (1.5 + h[2]) * A(phb, np.array([0.6, 0.8]))
    expect[3:5] += F
    expect[5] += cross(A(phb, np.array([0.2, 0.1])), F)
    # torque on b, reaction on a
    expect[5] += 0.25 + h[3]
    expect[2] -= 0.25 + h[3]
    np.testing.assert_allclose(f, expect, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------- 3. integration
def integration_gap(name, method, t_end=0.5, split=None, **kw):
    """Advance the case with recursive and with tmt (the Python path: scipy's steppers or
    fmu_mb's rk4) under identical Settings; returns the scaled disagreement "y" of (q, qd),
    the relative disagreement "h" of the step-size hints and both hints. `split`: advance in
    two calls (t0 -> split -> t_end).

    "h_noise" is how much tmt's own hint moves when the initial state is perturbed by 1e-15
    (relative): the last step is cut to end at t_end, its error estimate is far below the
    tolerance and made of cancelling stage values, so the hint carries round-off amplified
    by up to ~1e11 (measured 4e-4 on container_crane, 1e-8 on tree_zoo). Accelerations that
    agree to 1e-15 cannot give closer hints than that."""
    from dataclasses import replace

    m = CASES[name]()
    rng = np.random.default_rng(len(name))
    u = rng.normal(size=len(m.inputs))
    out = {}
    for f in ("recursive", "tmt", "tmt_perturbed"):
        st = Settings(method=method, formulation=f.split("_")[0], **kw)
        s = initial_state(m, st)
        if f == "tmt_perturbed":
            s = replace(s, q=s.q * (1 + 1e-15) + 1e-16, qd=s.qd * (1 - 1e-15))
        for t in ([split] if split else []) + [t_end]:
            s = advance(m, s, t, u, st)
        out[f] = s
    a, b = out["recursive"], out["tmt"]
    y, yr = np.concatenate([a.q, a.qd]), np.concatenate([b.q, b.qd])
    assert a.t == b.t == t_end and a.coords == b.coords
    return {"y": float(np.abs(y - yr).max() / max(1.0, np.abs(yr).max())),
            "h": float(abs(a.h - b.h) / b.h), "h_rec": a.h, "h_tmt": b.h,
            "h_noise": float(abs(out["tmt_perturbed"].h - b.h) / b.h)}


def hint_close(g):
    """The hints agree to round-off: within 50 times tmt's own sensitivity (or 1e-6)."""
    return g["h"] <= max(1e-6, 50 * g["h_noise"])


INTEGRATION = ["double_pendulum", "tree_zoo", "reversed_tree", "container_crane"]


@pytest.mark.parametrize("method", ["dop853", "dopri5"])
@pytest.mark.parametrize("name", INTEGRATION)
def test_adaptive_methods_agree_with_the_python_path(name, method):
    g = integration_gap(name, method, t_end=0.5 if method == "dop853" else 0.3)
    assert g["y"] < 1e-9, g
    assert hint_close(g), g            # the same step-size control: the same steps


@pytest.mark.parametrize("name", INTEGRATION)
def test_rk4_is_the_same_arithmetic_as_the_python_path(name):
    g = integration_gap(name, "rk4", t_end=0.3, step=2e-3)
    assert g["y"] < 1e-12, g
    assert g["h_rec"] == g["h_tmt"] == pytest.approx(2e-3)


@pytest.mark.parametrize("method", ["dop853", "dopri5", "rk4"])
def test_two_calls_equal_the_python_path_in_the_same_two_calls(method):
    g = integration_gap("tree_zoo", method, t_end=0.6, split=0.23, step=3e-3)
    assert g["y"] < (1e-12 if method == "rk4" else 1e-9), g
    assert hint_close(g), g


def test_step_size_hint_continues_the_step_sequence():
    """Advancing 0 -> 0.2 -> 0.5 with the hint carried in State equals the Python path in
    the same calls; restarting the second call without the hint (h = 0) takes another step
    sequence, so the hint is really used."""
    m = tree_zoo()
    st = Settings(method="dop853", formulation="recursive", rtol=1e-6, atol=1e-8)
    s1 = advance(m, initial_state(m, st), 0.2, None, st)
    with_hint = advance(m, s1, 0.5, None, st)
    without = advance(m, State(s1.t, s1.q.copy(), s1.qd.copy(), 0.0, s1.coords), 0.5, None, st)
    assert not np.array_equal(with_hint.q, without.q)
    ref_st = Settings(method="dop853", formulation="tmt", rtol=1e-6, atol=1e-8)
    r1 = advance(m, initial_state(m, ref_st), 0.2, None, ref_st)
    ref = advance(m, r1, 0.5, None, ref_st)
    scaled_close(with_hint.q, ref.q, 1e-9, "q")
    assert with_hint.h == pytest.approx(ref.h, rel=1e-5)


def test_max_step_is_honoured_like_the_python_path():
    g = integration_gap("double_pendulum", "dop853", t_end=0.3, max_step=0.01)
    assert g["y"] < 1e-9 and hint_close(g), g
    m = model("double_pendulum")
    s = tmt.initial_state(m)
    args = (0.0, 0.3, s.q, s.qd, 0.0, np.zeros(2), 1e-6, 1e-8)
    k = tree_kernel(m)
    free = k.advance("dop853", *args, np.inf, 1e-3)[3]
    capped = k.advance("dop853", *args, 0.01, 1e-3)[3]
    assert capped >= 30 * 12 > free                     # at least 30 steps of 12 stages


def test_tiny_rtol_is_clamped_like_scipy():
    """scipy raises rtol < 100 eps to 100 eps (with a warning); the kernel must run the same
    step-size control (unclamped, the hint came out 20 times smaller before 4647702). At
    these tolerances the hint is round-off dominated (tmt's own varies by ~3% under a 1e-15
    perturbation), so only its order of magnitude is compared."""
    with pytest.warns(UserWarning):
        g = integration_gap("double_pendulum", "dop853", t_end=0.05, rtol=1e-20, atol=1e-20)
    assert g["y"] < 1e-9, g
    assert 0.5 < g["h_rec"] / g["h_tmt"] < 2.0, g


def one_kernel_step(method):
    """(kernel, scipy's rk_step) after one step of h = 0.01 from the same state, with
    tolerances so loose that the kernel accepts the step at once; scipy's step uses the
    kernel's own right-hand side. Returns both y and the kernel's count of right-hand sides."""
    from scipy.integrate import DOP853, RK45
    from scipy.integrate._ivp.rk import rk_step

    m = model("double_pendulum")
    k = tree_kernel(m)
    u = np.zeros(2)

    def f(t, y):
        return np.concatenate([y[2:], k.accelerations(y[:2], y[2:], u)[0]])

    s = tmt.initial_state(m)
    y0 = np.concatenate([s.q, s.qd + 0.3])
    cls = {"dopri5": RK45, "dop853": DOP853}[method]
    K = np.zeros((cls.n_stages + 1, 4))
    y_ref, _ = rk_step(f, 0.0, y0, f(0.0, y0), 0.01, cls.A, cls.B, cls.C, K)
    q, qd, _, nfev = k.advance(method, 0.0, 0.01, y0[:2], y0[2:], 0.01, u, 1e6, 1e6, np.inf,
                               1e-3)
    return np.concatenate([q, qd]), y_ref, nfev, cls.n_stages


@pytest.mark.parametrize("method", ["dopri5", "dop853"])
def test_one_kernel_step_is_scipys_rk_step(method):
    """Catches a misread Butcher tableau (scipy's RK45.A is 6 x 5: read as 6 x 6 it gave a
    wrong dopri5 and an out-of-bounds read, fixed in e4bf8de)."""
    y, y_ref, nfev, stages = one_kernel_step(method)
    assert nfev == stages + 1
    np.testing.assert_allclose(y, y_ref, rtol=1e-13, atol=1e-15)


# ---------------------------------------------------------------------- 4. physics
def chain_energy(m, q, qd):
    x, xd, _, _ = transform(m, q, qd)                  # Python kinematics, not the kernel's
    return kinetic_energy(m, xd) + potential_energy(m, x)


def test_conservative_chain_keeps_its_energy():
    m = model("pendulum_chain", N=8, phi0=-1.0)
    st = Settings(method="dop853", formulation="recursive", rtol=1e-11, atol=1e-13)
    s = initial_state(m, st)
    E0 = chain_energy(m, s.q, s.qd)
    worst, moved = 0.0, 0.0
    for k in range(1, 21):
        s = advance(m, s, 0.1 * k, None, st)
        worst = max(worst, abs(chain_energy(m, s.q, s.qd) - E0))
        moved = max(moved, kinetic_energy(m, transform(m, s.q, s.qd)[1]))
    assert moved > 0.1                    # it really swings (several 0.1 J of kinetic energy)
    assert worst < 1e-8, worst


def momenta(m, q, qd):
    x, xd, _, _ = transform(m, q, qd)
    mass = m.compiled.mass_diag
    p = np.array([np.sum(mass[0::3] * xd[0::3]), np.sum(mass[1::3] * xd[1::3])])
    L = np.sum(mass[0::3] * (x[0::3] * xd[1::3] - x[1::3] * xd[0::3]) + mass[2::3] * xd[2::3])
    return p, L


def test_floating_subtrees_conserve_momentum_without_gravity():
    """No gravity, only internal elements (the body-frame force is external: its input is
    zero): linear and angular momentum about the origin stay constant (two free roots with
    children exercise the floating-root branch of the articulated-body algorithm)."""
    m = floating_subtree(gravity=(0.0, 0.0))
    st = Settings(method="dop853", formulation="recursive", rtol=1e-11, atol=1e-13)
    s = initial_state(m, st)
    u = np.zeros(len(m.inputs))
    u[m.input_names.index("link.h")] = 0.8
    u[m.input_names.index("tw.h")] = -0.3
    u[m.input_names.index("tq.h")] = 0.4
    p0, L0 = momenta(m, s.q, s.qd)
    for t in (0.4, 0.8, 1.2):
        s = advance(m, s, t, u, st)
        p, L = momenta(m, s.q, s.qd)
        np.testing.assert_allclose(p, p0, rtol=0, atol=1e-9)
        assert abs(L - L0) < 1e-9
    assert np.abs(s.q - initial_state(m, st).q).max() > 0.1


@pytest.mark.parametrize("method", ["dop853", "rk4"])
def test_free_body_follows_the_parabola_and_spins_evenly(method):
    """A free body under gravity, a constant global force at its centre of mass and a
    constant torque: r = r0 + v0 t + (g + F/m) t^2 / 2, phi = phi0 + w0 t + T/J t^2 / 2 (rk4
    and dop853 integrate these polynomials exactly up to round-off)."""
    g, mass, J = np.array([0.6, -9.81]), 1.7, 0.2
    r0, phi0, v0, w0 = np.array([0.3, 2.0]), 0.4, np.array([1.0, 3.5]), 2.5
    mb = ModelBuilder("free", gravity=tuple(g))
    mb.body("ball", mass=mass, inertia=J, position=tuple(r0), angle=phi0, velocity=tuple(v0),
            angular_velocity=w0)
    mb.force("thrust", "ball", direction=(0.3, 1.0), value=0.0)
    mb.torque("spin", "ball")
    m = mb.build()
    st = Settings(method=method, formulation="recursive", step=0.01)
    s = initial_state(m, st)
    u = np.array([2.0, -0.7])                                  # thrust.h, spin.h
    F = 2.0 * np.array([0.3, 1.0]) / np.hypot(0.3, 1.0)
    for t in (0.25, 0.8, 1.3):
        s = advance(m, s, t, u, st)
        a = g + F / mass
        np.testing.assert_allclose(s.q, [*(r0 + v0 * t + a * t * t / 2),
                                         phi0 + w0 * t - 0.7 / J * t * t / 2],
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(s.qd, [*(v0 + a * t), w0 - 0.7 / J * t], rtol=0, atol=1e-12)
    # gravity only: the parabola and a constant spin
    s = advance(m, initial_state(m, st), 0.9, None, st)
    np.testing.assert_allclose(s.q, [*(r0 + v0 * 0.9 + g * 0.81 / 2), phi0 + w0 * 0.9],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.qd, [*(v0 + g * 0.9), w0], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------- 5. bad input
@pytest.mark.parametrize("name, why", [("python_drive", "Python function")])
def test_unsupported_models_are_refused_with_a_way_out(name, why):
    m = python_drive()
    st = Settings(formulation="recursive")
    with pytest.raises(InputError, match=why) as exc:
        check_settings(m, st)
    assert "'recursive'" in str(exc.value) and "'tmt'" in str(exc.value)
    s = initial_state(m, Settings(formulation="tmt"))
    with pytest.raises(InputError) as exc:
        advance(m, s, s.t + 0.01, None, st)
    assert "'recursive'" in str(exc.value) and "'tmt'" in str(exc.value)
    with pytest.raises(InputError, match="'tmt'"):
        tree_kernel(m)


def degenerate_springs():
    """A free body with two TSDAs: 'first' is fine, 'second' ties the body's centre of mass
    to a ground point, so its length is zero when the body sits on that point."""
    mb = ModelBuilder("springs")
    mb.body("b", mass=1.0, inertia=0.1, position=(0.5, 0.0))
    mb.rsda("r", "ground", "b", stiffness=1.0)
    mb.tsda("first", "ground", "b", a_point=(0.0, 1.0), stiffness=5.0, free_length=0.5)
    mb.tsda("second", "ground", "b", a_point=(0.5, 0.0), stiffness=5.0, free_length=0.1)
    return mb.build()


@pytest.mark.parametrize("method", ["dop853", "dopri5", "rk4"])
def test_zero_length_spring_names_the_element_and_keeps_the_state(method):
    m = degenerate_springs()
    st = Settings(method=method, formulation="recursive")
    s = initial_state(m, st)
    q0, qd0 = s.q.copy(), s.qd.copy()
    with pytest.raises(IntegrationError, match="'second'") as exc:
        advance(m, s, 0.1, None, st)
    assert "zero length" in str(exc.value)
    assert np.array_equal(s.q, q0) and np.array_equal(s.qd, qd0) and s.t == 0.0
    with pytest.raises(IntegrationError, match="'second'"):
        REC.accelerations(m, s.q, s.qd, 0.0, np.zeros(len(m.inputs)))
    # away from the singular pose the same kernel works again (no sticky error)
    q = s.q + np.array([0.1, 0.05, 0.0])
    np.testing.assert_allclose(REC.accelerations(m, q, s.qd, 0.0, np.zeros(3)).qdd,
                               tmt.accelerations(m, q, s.qd, 0.0, np.zeros(3)).qdd, rtol=1e-12)


@pytest.mark.parametrize("method", ["dop853", "rk4"])
def test_blow_up_is_a_clean_integration_error(method):
    """Inputs so large that the right-hand side overflows: an IntegrationError naming the
    model, the input State untouched; non-finite inputs are refused before the kernel."""
    m = tree_zoo()
    st = Settings(method=method, formulation="recursive")
    s = initial_state(m, st)
    q0 = s.q.copy()
    u = np.zeros(len(m.inputs))
    u[m.input_names.index("s_ground.h")] = 1e308
    u[m.input_names.index("s_tree.h")] = -1e308
    with pytest.raises(IntegrationError, match="tree_zoo"):
        advance(m, s, 0.5, u, st)
    assert np.array_equal(s.q, q0)
    for bad in (np.nan, np.inf):
        u = np.zeros(len(m.inputs))
        u[0] = bad
        with pytest.raises(InputError, match="finite"):
            advance(m, s, 0.5, u, st)
    # a state that overflows after a few steps: a stiff spring slingshot
    mb = ModelBuilder("slingshot", gravity=(0.0, 0.0))
    mb.body("b", mass=1e-300, inertia=1e-300, position=(1.0, 0.0))
    mb.tsda("s", "ground", "b", stiffness=1e300, free_length=0.0)
    sm = mb.build()
    s = initial_state(sm, st)
    with pytest.raises(IntegrationError, match="slingshot"):
        advance(sm, s, 1.0, None, st)


def test_massless_subtree_is_a_singular_system():
    mb = ModelBuilder("massless_tip")
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
    tip = mb.body("tip", mass=0.0, inertia=0.0)
    mb.revolute("A", mb.ground, rod, child_point=(-0.5, 0.0))
    mb.revolute("B", rod, tip, parent_point=(0.5, 0.0), child_point=(-0.2, 0.0))
    m = mb.build()
    st = Settings(formulation="recursive")
    s = initial_state(m, st)
    with pytest.raises(SingularSystemError, match="singular") as exc:
        REC.accelerations(m, s.q, s.qd, 0.0, np.zeros(0))
    assert "'tmt'" in str(exc.value)
    for method in ("dop853", "rk4"):
        with pytest.raises(SingularSystemError):
            advance(m, s, 0.1, None, Settings(method=method, formulation="recursive"))
    # a massless free body (no coordinates can be solved for at all)
    mb = ModelBuilder("massless_free")
    mb.body("ghost", mass=0.0, inertia=0.0)
    gm = mb.build()
    with pytest.raises(SingularSystemError):
        REC.accelerations(gm, np.zeros(3), np.zeros(3), 0.0, np.zeros(0))


def test_wrong_inputs_are_refused_before_the_kernel():
    m = tree_zoo()
    st = Settings(formulation="recursive")
    s = initial_state(m, st)
    with pytest.raises(InputError, match="expected 7 input values"):
        advance(m, s, 0.1, [1.0, 2.0], st)
    with pytest.raises(InputError, match="unknown input"):
        advance(m, s, 0.1, {"nope.h": 1.0}, st)
    with pytest.raises(InputError, match="before the current time"):
        advance(m, s, -0.1, None, st)


WELDED = """
import json, numpy as np
from fmu_mb import ModelBuilder, Settings, advance, initial_state
mb = ModelBuilder("welded")
mb.body("b", mass=1.0, inertia=0.1)
mb.weld("W", mb.ground, "b", parent_point=(0.2, 0.0))
m = mb.build()
out = {}
for f in ("recursive", "tmt"):
    st = Settings(method=%r, formulation=f)
    s = advance(m, initial_state(m, st), 0.1, None, st)
    out[f] = [s.t, len(s.q), repr(s.h)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("method", ["rk4", "dop853", "dopri5"])
def test_model_without_coordinates_advances(method):
    """A body welded to the ground has no coordinates: advance only moves the time. (Before
    4647702 dopri5 spun forever in C: rms over 0 entries is NaN and a NaN step size never
    drops below min_step; dop853 returned a NaN hint.) Run in a fresh interpreter so that a
    regression fails instead of hanging the test run."""
    out = isolated(WELDED % method, timeout=60)
    assert out["recursive"][:2] == [0.1, 0] == out["tmt"][:2]
    assert out["recursive"][2] != "nan", out


# ---------------------------------------------------------------------- 6. compile cache
@pytest.fixture
def fresh_kernel_state():
    """Forget the loaded library before and after (the monkeypatches are undone first, so
    later tests load the normal library again)."""
    kernel.library.cache_clear()
    yield
    kernel.library.cache_clear()


def test_library_is_built_in_the_cache_named_by_the_source_hash(tmp_path, fresh_kernel_state):
    cache = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel, "_cache_dirs", lambda: [cache])
        lib = kernel.library()
        built = sorted(p.name for p in cache.iterdir())
        assert built == [kernel.library_name()]
        assert built[0].startswith("_kernel-") and built[0].endswith(".so")
        assert Path(lib._name) == cache / built[0]
        # the new library really computes: a fresh model gets a kernel from it
        m = model("double_pendulum")
        k = kernel.TreeKernel(m)
        assert k.lib is lib
        q, qd, u = np.array([0.3, -0.4]), np.array([1.0, 0.5]), np.array([0.2, -0.1])
        np.testing.assert_allclose(k.accelerations(q, qd, u)[0],
                                   tmt.accelerations(m, q, qd, 0.0, u).qdd, rtol=1e-12)
        # an edited source gets another name (and its own build): no stale library is loaded
        edited = tmp_path / "src" / "kernel.c"
        edited.parent.mkdir()
        edited.write_text(kernel.SOURCE.read_text() + "\n/* edited */\n")
        name_before = kernel.library_name()
        mp.setattr(kernel, "SOURCE", edited)
        assert kernel.library_name() != name_before
        path = kernel.build_library(cache)
        assert path.name == kernel.library_name() and path.is_file()
        assert sorted(p.name for p in cache.iterdir()) == sorted([name_before, path.name])
        assert not [p for p in cache.iterdir() if p.name.startswith(".kernel-")]  # no temp left
    kernel.library.cache_clear()
    assert Path(kernel.library()._name).parent != cache     # back to the normal location


def test_no_compiler_says_what_to_install(tmp_path, fresh_kernel_state):
    empty = tmp_path / "empty"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel, "_cache_dirs", lambda: [empty])
        mp.setattr(kernel, "compiler", lambda: None)
        with pytest.raises(KernelUnavailable) as exc:
            kernel.build_library(empty)
        msg = str(exc.value)
        assert "C compiler" in msg and "gcc" in msg and "'tmt'" in msg
        with pytest.raises(KernelUnavailable, match="'tmt'"):
            kernel.library()
        with pytest.raises(KernelUnavailable):
            kernel.TreeKernel(model("double_pendulum"))
        assert not empty.exists() or not list(empty.iterdir())
    kernel.library.cache_clear()
    m = model("double_pendulum")
    assert kernel.TreeKernel(m).accelerations(np.zeros(2), np.zeros(2), np.zeros(2))[0].shape \
        == (2,)


# ---------------------------------------------------------------------- 7. concurrency
def test_two_threads_on_one_model_get_the_sequential_answer():
    import threading

    m = model("pendulum_chain", N=30)
    st = Settings(method="rk4", formulation="recursive", step=1e-4)
    s = initial_state(m, st)
    ref = advance(m, s, 1.0, None, st)
    out = [None] * 2

    def run(i):
        try:
            out[i] = advance(m, s, 1.0, None, st).q
        except Exception as exc:                 # noqa: BLE001  (reported below)
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in out:
        assert not isinstance(o, Exception), repr(o)
        assert np.array_equal(o, ref.q)
