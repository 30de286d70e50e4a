"""The compiled articulated-body kernel (formulation 'recursive'): the same accelerations as
tmt and newton_euler at random states, the same element forces as elements.py, the C
integrators against the Python (scipy) path, conservation laws and closed forms, and clear
errors for what it cannot run."""
import math

import numpy as np
import pytest

from fmu_mb import (InputError, IntegrationError, ModelBuilder, Settings, State, advance,
                    initial_state, rod_inertia, simulate)
from fmu_mb.mechanics.elements import applied_forces
from fmu_mb.dynamics.formulations import get_formulation, newton_euler, tmt
from fmu_mb.dynamics.integrate import check_settings
from fmu_mb.engine.kernel import supported, tree_kernel
from fmu_mb.mechanics.tree import transform

from conftest import model, python_drive
from test_tmt import reversed_tree

RNG = np.random.default_rng(7)


def tree_zoo():
    """Every ingredient the kernel runs: revolute with angle0, prismatic (skewed axis, both
    declared parent->child and child->parent), weld, a point mass mid-tree, a floating body
    held by springs, RSDA (bodies and ground), forces in both frames, torque with reaction,
    inputs on several elements, gravity with two components."""
    mb = ModelBuilder("tree_zoo", gravity=(1.3, -9.81))
    a = mb.body("a", mass=2.0, inertia=rod_inertia(2.0, 1.0))
    b = mb.body("b", mass=1.0, inertia=0.05)
    c = mb.body("c", mass=0.5, inertia=0.0)                       # point mass
    d = mb.body("d", mass=0.7, inertia=0.02)
    e = mb.body("e", mass=0.3, inertia=0.01)
    f = mb.body("f", mass=0.4, inertia=0.03, position=(1.5, -0.5), angle=0.2)   # floating
    mb.revolute("R", mb.ground, a, parent_point=(0.1, 0.2), child_point=(-0.5, 0.05),
                angle0=0.3)
    mb.prismatic("P", a, b, axis=(0.8, 0.6), parent_point=(0.2, 0.0),
                 child_point=(-0.1, 0.03), angle0=0.3)
    mb.weld("W", b, c, parent_point=(0.15, 0.0), child_point=(-0.05, 0.02), angle0=-0.4)
    mb.prismatic("Q", d, c, axis=(0.6, -0.8), parent_point=(0.1, 0.05),
                 child_point=(0.0, 0.0), angle0=0.5)                # placed side = child
    mb.revolute("S", d, e, parent_point=(-0.2, 0.0), child_point=(0.1, 0.0))
    mb.tsda("s1", a, f, a_point=(0.4, 0.0), b_point=(0.05, 0.0), stiffness=40.0,
            free_length=0.6, damping=0.5)
    mb.tsda("s2", mb.ground, f, a_point=(2.0, 0.0), b_point=(-0.05, 0.02), stiffness=25.0,
            free_length=0.4, damping=0.3)
    mb.rsda("t1", a, e, stiffness=3.0, free_angle=0.2, damping=0.1)
    mb.rsda("t2", mb.ground, d, stiffness=1.5, damping=0.05)
    mb.force("push", e, point=(0.02, 0.01), direction=(0.0, 1.0), frame="body", value=1.5)
    mb.force("wind", b, point=(0.03, -0.02), direction=(1.0, 1.0), value=0.5)
    mb.torque("motor", d, reaction=a, value=0.25)
    mb.initial("P", value=0.25, rate=0.1)
    mb.initial("Q", value=0.1, rate=-0.2)
    mb.initial("S", value=0.4)
    return mb.build()


CASES = {"double_pendulum": lambda: model("double_pendulum"),
         "chain5": lambda: model("pendulum_chain", N=5, phi0=-0.7),
         "hinged_body_spring": lambda: model("hinged_body_spring"),
         "container_crane": lambda: model("container_crane"),
         "reversed_tree": reversed_tree, "tree_zoo": tree_zoo}


def rel(a, b):
    return np.abs(np.asarray(a) - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0))


@pytest.mark.parametrize("name", CASES)
def test_accelerations_equal_tmt_and_newton_euler(name):
    m = CASES[name]()
    assert supported(m) is None
    rec = get_formulation("recursive")
    s0 = tmt.initial_state(m)
    for _ in range(5):
        q = s0.q + RNG.normal(scale=0.4, size=s0.q.size)
        qd = RNG.normal(size=s0.q.size)
        u = RNG.normal(size=len(m.inputs))
        t = tmt.accelerations(m, q, qd, 0.0, u)
        r = rec.accelerations(m, q, qd, 0.0, u)
        ne = newton_euler.accelerations(m, t.x, t.xd, 0.0, u)
        assert rel(r.x, t.x) < 1e-13 and rel(r.xd, t.xd) < 1e-13
        assert rel(r.qdd, t.qdd) < 1e-10
        assert rel(r.xdd, ne.qdd) < 1e-10                 # absolute accelerations, NE route
        assert rel(rec.lam(m, r), ne.lam) < 1e-9           # joint reactions


def test_kernel_forces_equal_elements_py():
    m = tree_zoo()
    s0 = tmt.initial_state(m)
    k = tree_kernel(m)
    for _ in range(5):
        q = s0.q + RNG.normal(scale=0.3, size=s0.q.size)
        qd = RNG.normal(size=s0.q.size)
        u = RNG.normal(size=len(m.inputs))
        x, xd, _, _ = transform(m, q, qd)
        assert rel(k.applied_forces(q, qd, u), applied_forces(m, x, xd, 0.0, u)) < 1e-13


@pytest.mark.parametrize("method", ["dop853", "dopri5", "rk4"])
@pytest.mark.parametrize("name", ["double_pendulum", "tree_zoo"])
def test_c_integrators_equal_the_python_path(name, method):
    """Same method, tableau and step control in C as scipy's with tmt: two calls each."""
    m = CASES[name]()
    out = {}
    for f in ("tmt", "recursive"):
        s = Settings(formulation=f, method=method, rtol=1e-8, atol=1e-10, step=2e-3)
        st = initial_state(m, s)
        st = advance(m, st, 0.21, np.full(len(m.inputs), 0.3), s)
        st = advance(m, st, 0.5, None, s)
        out[f] = st
    a, b = out["recursive"], out["tmt"]
    tol = 1e-11 if method == "rk4" else 1e-8
    assert rel(a.q, b.q) < tol and rel(a.qd, b.qd) < tol
    # the step-size hint comes from an error estimate (differences of stages): roundoff in
    # the stages moves it by ~1e-5 relative, so it is compared loosely
    assert a.h == pytest.approx(b.h, rel=1e-3)


def test_chain_conserves_energy():
    m = model("pendulum_chain", N=8, phi0=-1.0)
    r = simulate(m, 2.0, 0.1, formulation="recursive", rtol=1e-11, atol=1e-13)
    E = r["energy.total"]
    assert np.ptp(E) < 1e-8 * max(1.0, np.abs(r["energy.kinetic"]).max())
    assert r["energy.kinetic"].max() > 0.1                   # it did move


def test_floating_body_flies_a_parabola_and_spins_uniformly():
    mb = ModelBuilder("throw", gravity=(0.0, -9.81))
    b = mb.body("b", mass=0.3, inertia=0.01, position=(0.1, 0.2), angle=0.4,
                velocity=(1.5, 4.0), angular_velocity=-3.0)
    mb.point("tip", b, (0.2, 0.0))
    m = mb.build()
    r = simulate(m, 0.8, 0.1, formulation="recursive")
    t = r["time"]
    np.testing.assert_allclose(r["b.x"], 0.1 + 1.5 * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r["b.y"], 0.2 + 4.0 * t - 0.5 * 9.81 * t ** 2, rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(r["b.phi"], 0.4 - 3.0 * t, rtol=0, atol=1e-12)


def test_rod_pendulum_closed_form():
    """A uniform rod of length l hinged at one end: J_O phi'' = -m g (l/2) cos(phi)."""
    mb = ModelBuilder("rod", gravity=(0.0, -9.81))
    m_, l = 1.7, 0.9
    rod = mb.body("rod", mass=m_, inertia=rod_inertia(m_, l))
    mb.revolute("O", mb.ground, rod, parent_point=(0, 0), child_point=(-l / 2, 0))
    m = mb.build()
    for phi in (-1.0, 0.3, 2.0):
        qdd = get_formulation("recursive").accelerations(m, np.array([phi]), np.array([1.1]),
                                                         0.0, np.zeros(0)).qdd[0]
        assert qdd == pytest.approx(-m_ * 9.81 * l / 2 * math.cos(phi) / (m_ * l ** 2 / 3),
                                    rel=1e-13)


@pytest.mark.parametrize("name,what", [("python_drive", "Python function")])
def test_models_it_cannot_run_are_refused_with_a_message(name, what):
    m = python_drive() if name == "python_drive" else model(name)
    with pytest.raises(InputError, match=f"'recursive'.*{what}.*'tmt'"):
        check_settings(m, Settings(formulation="recursive"))
    with pytest.raises(InputError, match="recursive"):
        simulate(m, 0.1, formulation="recursive")


def test_zero_length_spring_fails_cleanly_and_keeps_the_state():
    mb = ModelBuilder("collapse", gravity=(0.0, 0.0))
    a = mb.body("a", mass=1.0, inertia=0.1)
    mb.revolute("O", mb.ground, a, parent_point=(0, 0), child_point=(-0.5, 0))
    mb.tsda("s", mb.ground, a, a_point=(1.0, 0.0), b_point=(0.5, 0.0), stiffness=10.0)
    mb.initial("O", value=0.0)
    m = mb.build()
    s = Settings(formulation="recursive")
    st = initial_state(m, s)
    q0, qd0 = st.q.copy(), st.qd.copy()
    with pytest.raises(IntegrationError, match="element 's'"):
        advance(m, st, 0.1, None, s)
    assert np.array_equal(st.q, q0) and np.array_equal(st.qd, qd0) and st.t == 0.0


def test_blow_up_raises_instead_of_returning_nan():
    m = model("double_pendulum")
    s = Settings(formulation="recursive", method="rk4", step=0.5)
    st = initial_state(m, s)
    with pytest.raises((IntegrationError,)):
        advance(m, st, 200.0, np.array([1e300, -1e300]), s)
    bad = State(0.0, st.q * np.nan, st.qd, 0.0, st.coords)
    with pytest.raises(InputError, match="non-finite"):
        advance(m, bad, 0.1, None, s)


def test_kernel_is_built_in_the_cache_and_a_missing_compiler_is_reported(tmp_path,
                                                                           monkeypatch):
    from fmu_mb.engine import kernel

    monkeypatch.setattr(kernel, "_cache_dirs", lambda: [tmp_path / "cache"])
    path = kernel.library_path()
    assert path.parent == tmp_path / "cache" and kernel._tag() in path.name
    monkeypatch.setattr(kernel, "_cache_dirs", lambda: [tmp_path / "empty"])
    monkeypatch.setattr(kernel, "compiler", lambda: None)
    with pytest.raises(kernel.KernelUnavailable, match="C compiler.*'tmt'"):
        kernel.library_path()


def test_the_kernels_constants_are_linalgs():
    """native/dense.h holds the rank cut-off and the projection's acceptance level of both
    kernels; they must be fmu_mb.linalg's, or the compiled and Python routes would decide
    singular poses differently."""
    import re
    from pathlib import Path

    from fmu_mb import linalg
    from fmu_mb.engine import kernel as kmod

    text = (Path(kmod.__file__).parent / "native" / "dense.h").read_text()
    for name in ("RANK_RTOL", "PROJECTION_RTOL", "PROJECTION_ACCEPT", "FILTER_WIDTH"):
        found = re.findall(rf"static const double {name} = ([0-9.eE+-]+);", text)
        assert len(found) == 1, name
        assert float(found[0]) == getattr(linalg, name), name


def slotted_lever():
    """A quick-return (slotted-lever) mechanism: the crank O (0.2 m, turning at 2 rad/s), the
    lever A pivoted 0.5 m below O, a block sliding along the lever (prismatic, its parent the
    rotating lever) pinned to the crank's tip; the tree cuts the pin (declared last), so the
    kernel has loop rows and the prismatic joint's parent moves (the tree grows from the
    ground breadth-first in declaration order: A before O puts the block on the lever)."""
    mb = ModelBuilder("slotted_lever", gravity=(0.0, -9.81))
    th = math.atan2(0.5, 0.2)
    crank = mb.body("crank", mass=0.5, inertia=rod_inertia(0.5, 0.2), position=(0.1, 0.0))
    lever = mb.body("lever", mass=1.0, inertia=rod_inertia(1.0, 0.8),
                    position=(0.4 * math.cos(th), -0.5 + 0.4 * math.sin(th)), angle=th)
    block = mb.body("block", mass=0.3, inertia=1e-3, position=(0.2, 0.0), angle=th)
    mb.revolute("A", mb.ground, lever, parent_point=(0.0, -0.5), child_point=(-0.4, 0.0))
    mb.revolute("O", mb.ground, crank, child_point=(-0.1, 0.0))
    mb.prismatic("slide", lever, block, axis=(1.0, 0.0))
    mb.revolute("pin", crank, block, parent_point=(0.1, 0.0))
    mb.initial("O", rate=2.0)
    return mb.build()


def test_prismatic_joint_on_a_moving_parent_at_kept_positions():
    """The kernel's velocity pass at the positions of its last loop-rows pass (kernel.c
    kin_rates, what the model exchange Jacobians reach: mbk_loop_rows, then the accelerations
    at the same q) on a prismatic joint whose parent turns: bit for bit the full kinematics
    pass, the body velocities the central differences of the positions along qd, the body
    accelerations those of the velocities along the motion (q + t qd + t^2 qdd / 2, qd + t
    qdd), and the joint accelerations tmt's (Python)."""
    import ctypes

    m = slotted_lever()
    assert m.topology.cut_joints == ("pin",)
    k = tree_kernel(m)
    assert k.m == 2
    s0 = tmt.initial_state(m)
    P = ctypes.c_void_p
    phi, Dq, h = np.empty(k.m), np.empty(k.m * k.n), 1e-6

    def X(q, qd):                  # the Python reference's body positions and velocities
        return transform(m, q, qd)[:2]
    for _ in range(4):
        q = s0.q + RNG.normal(scale=0.3, size=s0.q.size)
        qd = 2.0 * RNG.normal(size=s0.q.size)
        with k._lock:
            assert k.lib.mbk_loop_rows(P(k.handle), P(q.ctypes.data), P(phi.ctypes.data),
                                       P(Dq.ctypes.data)) == 0
            kept = k._accelerations_unlocked(q, qd, None)        # kin_rates
            full = k._accelerations_unlocked(q, qd, None)        # kinematics
        for a, b in zip(kept, full):
            assert np.array_equal(a, b)
        qdd, x, xd, xdd = kept
        assert qd[m.compiled.coord_joints.index(2)] != 0.0          # the slide moves
        assert rel(qdd, tmt.accelerations(m, q, qd, 0.0, None).qdd) < 1e-10
        assert rel(xd, (X(q + h * qd, qd)[0] - X(q - h * qd, qd)[0]) / (2 * h)) < 1e-8
        ahead = X(q + h * qd + 0.5 * h * h * qdd, qd + h * qdd)[1]
        back = X(q - h * qd + 0.5 * h * h * qdd, qd - h * qdd)[1]
        assert rel(xdd, (ahead - back) / (2 * h)) < 1e-8
