"""Drives in the compiled kernel (formulation recursive): a drive on a tree joint prescribes
its coordinate q_j = s(t) with the law evaluated in C (constant_rate, harmonic, polynomial),
the articulated-body algorithm runs in its hybrid form, and the drive's multiplier (effort
-lam) comes from an inverse-dynamics pass. Checked against tmt (the drive as a constraint
row with a multiplier), newton_euler (absolute coordinates) and inverse_dynamics."""
import numpy as np
import pytest

from fmu_mb import (ModelBuilder, Settings, advance, constant_rate, harmonic, initial_state,
                    polynomial, simulate)
from fmu_mb.dynamics.formulations import auto_choice, get_formulation
from fmu_mb.dynamics.inverse import inverse_dynamics, kinematic_analysis
from fmu_mb.engine.kernel import supported
from fmu_mb.mechanics.tree import tree_map

from conftest import model, zoo
from test_inverse_dynamics import MOTION_A, MOTION_B, driven_double_pendulum

REC, TMT, NE = (get_formulation(n) for n in ("recursive", "tmt", "newton_euler"))


def reversed_slider():
    """A prismatic joint declared from the moving body to the ground (the tree places it
    from the child side), driven by constant_rate, with a pendulum on the slider."""
    mb = ModelBuilder("reversed_slider", gravity=(0.0, -9.81))
    s = mb.body("slider", mass=0.5, inertia=0.01)
    p = mb.body("bob", mass=1.2, inertia=0.03, position=(0.0, -0.8))
    mb.prismatic("P", s, mb.ground, axis=(0.6, 0.8), parent_point=(0.1, 0.0))
    mb.revolute("R", s, p, child_point=(0.0, 0.8))
    mb.drive("push", "P", constant_rate(0.4, 0.1))
    mb.initial("R", value=0.3, rate=-0.5)
    return mb.build()


MODELS = {"container_crane_driven": lambda: model("container_crane_driven"),
          "zoo": zoo,                               # drive + distance loop + every element
          "reversed_slider": reversed_slider,
          "driven_double_pendulum": lambda: driven_double_pendulum()[0]}


@pytest.mark.parametrize("name", list(MODELS))
def test_accelerations_and_multipliers_equal_tmt_and_newton_euler(name):
    """At states on the constraints (random, projected at each t) qdd, the cut and drive
    multipliers equal tmt's and every Newton-Euler multiplier newton_euler's, to ~1e-10."""
    m = MODELS[name]()
    assert supported(m) is None
    rng = np.random.default_rng(7)
    s = TMT.initial_state(m)
    n = len(s.q)
    u = rng.normal(size=len(m.inputs))
    for t in (0.0, 0.37, 1.9):
        y = np.concatenate([s.q + 0.1 * rng.normal(size=n), rng.normal(size=n)])
        y = TMT.project(m, y, t, 1e-14)
        q, qd = y[:n], y[n:]
        a = REC.accelerations(m, q, qd, t, u)
        b = TMT.accelerations(m, q, qd, t, u)
        scale = 1.0 + np.abs(b.qdd).max()
        np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-10 * scale)
        lscale = 1.0 + np.abs(b.lam_cut).max()
        np.testing.assert_allclose(a.lam_cut, b.lam_cut, rtol=0, atol=1e-10 * lscale)
        x, xd = TMT.absolute(m, q, qd)
        c = NE.accelerations(m, x, xd, t, u)
        np.testing.assert_allclose(a.xdd, c.qdd, rtol=0, atol=1e-10 * scale)
        lam = REC.lam(m, a)
        np.testing.assert_allclose(lam, c.lam, rtol=0, atol=1e-10 * (1 + np.abs(c.lam).max()))


def test_fully_driven_efforts_equal_inverse_dynamics():
    """Both joints of the double pendulum driven by polynomials: the kernel's drive
    multipliers give the efforts of inverse_dynamics (seed 001) at the kinematic solution,
    whatever rates the state carries (the prescribed ones are s'(t))."""
    m, _ = driven_double_pendulum()
    cut = list(tree_map(m).cut_rows)
    pos = [cut.index(row) for row, *_ in m.compiled.drives]
    for t in (0.0, 0.6, 1.4):
        ks = kinematic_analysis(m, t)
        inv = inverse_dynamics(m, t, ks.x, ks.xd, ks.xdd, np.zeros(0))
        q = np.array([np.polyval(MOTION_A[::-1], t), np.polyval(MOTION_B[::-1], t)])
        a = REC.accelerations(m, q, np.full(2, 99.0), t, np.zeros(0))
        np.testing.assert_allclose(-a.lam_cut[pos], inv.efforts, rtol=1e-11, atol=1e-10)
        np.testing.assert_allclose(a.xdd, ks.xdd, rtol=0, atol=1e-11)


def test_prescribed_coordinates_follow_the_law_exactly():
    """After every step of the C integrators the driven coordinate and rate are s(t), s'(t)
    (the laws evaluated in C: Horner for polynomials, sin/cos for harmonics)."""
    mb = ModelBuilder("laws", gravity=(0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=0.1)
    b = mb.body("b", mass=0.5, inertia=0.02)
    mb.revolute("A", mb.ground, a, child_point=(-0.5, 0.0))
    mb.revolute("B", a, b, parent_point=(0.5, 0.0), child_point=(-0.3, 0.0))
    law = harmonic(0.4, 0.7, phase=0.2, offset=-0.1)
    mb.drive("dA", "A", law)
    m = mb.build()
    for method in ("dop853", "dopri5", "rk4"):
        st = Settings(method=method, formulation="recursive", step=1e-3)
        s = initial_state(m, st)
        for t in (0.3, 0.71, 1.5):
            s = advance(m, s, t, None, st)
            assert s.q[0] == pytest.approx(law.value(t), abs=1e-15)
            assert s.qd[0] == pytest.approx(law.rate(t), abs=1e-15)
    p = polynomial(0.2, -0.3, 0.5, 0.1)
    mb2 = ModelBuilder("poly", gravity=(0.0, -9.81))
    c = mb2.body("c", mass=1.0, inertia=0.1)
    mb2.revolute("A", mb2.ground, c, child_point=(-0.5, 0.0))
    mb2.drive("dA", "A", p)
    m2 = mb2.build()
    st = Settings(formulation="recursive")
    s = advance(m2, initial_state(m2, st), 1.3, None, st)
    assert s.q[0] == pytest.approx(p.value(1.3), rel=1e-15)
    assert s.qd[0] == pytest.approx(p.rate(1.3), rel=1e-15)


@pytest.mark.parametrize("name", ["container_crane_driven", "zoo", "reversed_slider"])
def test_trajectories_and_efforts_agree_with_tmt(name):
    """simulate() at rtol 1e-10 in recursive (C) and tmt (Python): coordinates, reactions and
    the drive efforts agree to the integration tolerance."""
    m = MODELS[name]()
    kw = dict(rtol=1e-10, atol=1e-12)
    a = simulate(m, 1.0, 0.05, formulation="recursive", **kw)
    b = simulate(m, 1.0, 0.05, formulation="tmt", **kw)
    for col in b.dtype.names:
        scale = 1.0 + np.abs(b[col]).max()
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=2e-7 * scale, err_msg=col)


def test_hydraulic_cylinders_in_the_kernel_equal_tmt():
    """The excavator's cylinders (F = h + p_head A_piston - p_rod A_rod - c l', end stops as
    contacts) in C: accelerations with random forces and pressures equal tmt's, and a
    simulation with its stops hit agrees with tmt (impact counts included)."""
    m = model("excavator")
    assert supported(m) is None and auto_choice(m) == ("recursive", {})
    rng = np.random.default_rng(5)
    s = TMT.initial_state(m)
    for t in (0.0, 0.4):
        u = rng.normal(size=len(m.inputs)) * np.array(
            [1e5 if n.endswith(".h") else 1e7 for n in m.input_names])
        qd = rng.normal(size=len(s.q))
        a, b = REC.accelerations(m, s.q, qd, t, u), TMT.accelerations(m, s.q, qd, t, u)
        np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-10 * np.abs(b.qdd).max())
    kw = dict(rtol=1e-10, atol=1e-12)
    a = simulate(m, 1.5, 0.05, formulation="recursive", **kw)
    b = simulate(m, 1.5, 0.05, formulation="tmt", **kw)
    assert a["boom_cyl_lower.impacts"][-1] >= 1
    for col in b.dtype.names:
        scale = 1.0 + np.abs(b[col]).max()
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=1e-7 * scale, err_msg=col)


def test_auto_runs_the_driven_crane_in_the_kernel():
    """The seed's driven crane (massless cart on a prescribed prismatic joint) goes to
    recursive; its cart force agrees with newton_euler."""
    m = model("container_crane_driven")
    assert auto_choice(m) == ("recursive", {})
    a = simulate(m, 2.0, 0.1)
    b = simulate(m, 2.0, 0.1, formulation="newton_euler", rtol=1e-11, atol=1e-13)
    scale = np.abs(b["cart_motion.effort"]).max()
    np.testing.assert_allclose(a["cart_motion.effort"], b["cart_motion.effort"], rtol=0,
                               atol=1e-6 * scale)
    np.testing.assert_allclose(a["phi.angle"], b["phi.angle"], rtol=0, atol=1e-7)
