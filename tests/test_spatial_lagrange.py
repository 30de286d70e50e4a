"""Spatial lagrange (Lagrange's equations in the spatial tree coordinates,
fmu_mb.dynamics.formulations._spatial_lagrange): its mass-matrix derivatives against finite
differences of Mbar(q) and T(q, qd); accelerations and reactions against tmt and newton_euler
at random consistent states; trajectories of the heavy top, a spatial chain and the
suspensions against newton_euler; Bricard (IFToMM A04) at 10 s against the reference; energy
and angular momentum of a torque-free body."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, cardan, harmonic, load_model, simulate
from fmu_mb.dynamics.formulations import _spatial_lagrange as sl
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.errors import InputError
from fmu_mb.mechanics.spatial import rotations as rot
from fmu_mb.mechanics.spatial import tree as st
from fmu_mb.mechanics.spatial.elements import mass_matrix
from fmu_mb.tools.cli import main
from fmu_mb.tools.viz import read_csv

from conftest import MODELS
from test_bricard import ref_at
from test_spatial_tmt import every_kind, random_state


@pytest.fixture(scope="module")
def kinds():
    return every_kind()


@pytest.mark.parametrize("seed", [0, 1])
def test_mass_matrix_derivatives_against_finite_differences(kinds, seed):
    """Mbar = Tq' M Tq (newton_euler's M), d/dt Mbar and dT/dq against central differences
    of Mbar(q) along qd and of T(q) = 1/2 qd' Mbar(q) qd; g = Tq' qd against the tree's own
    analytic convective term."""
    rng = np.random.default_rng(seed)
    q0 = get_formulation("tmt").initial_state(kinds).q
    n = q0.shape[0]
    q, qd = q0 + 0.3 * rng.standard_normal(n), rng.standard_normal(n)
    Mbar, Mbar_t, dT_dq, x, xd, Tq, Tdot = sl.energy_terms(kinds, q, qd)
    x_ref, xd_ref, Tq_ref, g_ref = st.transform(kinds, q, qd)
    np.testing.assert_allclose(x, x_ref, atol=1e-14)
    np.testing.assert_allclose(xd, xd_ref, atol=1e-13)
    np.testing.assert_allclose(Tdot @ qd, g_ref, atol=1e-12 * (1 + np.abs(g_ref).max()))
    np.testing.assert_allclose(Mbar, Tq_ref.T @ mass_matrix(kinds, x_ref) @ Tq_ref, atol=1e-13)

    def mbar(qq):
        return sl.energy_terms(kinds, qq, qd)[0]

    h = 1e-5
    fd = (mbar(q + h * qd) - mbar(q - h * qd)) / (2 * h)
    np.testing.assert_allclose(Mbar_t, fd, atol=1e-8 * (1 + np.abs(fd).max()))
    T = [0.5 * qd @ mbar(q + s * h * e) @ qd for e in np.eye(n) for s in (1, -1)]
    fd = (np.array(T[0::2]) - np.array(T[1::2])) / (2 * h)
    np.testing.assert_allclose(dT_dq, fd, atol=1e-8 * (1 + np.abs(fd).max()))
    assert np.abs(Mbar_t).max() > 0.1 and np.abs(dT_dq).max() > 0.1     # real terms


def driven_pair():
    """A driven revolute joint carrying a body that hangs from it on a spherical joint."""
    mb = ModelBuilder("driven_pair", {}, gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(0.02, 0.03, 0.04), position=(0.2, 0.0, 0.0))
    b = mb.body("b", mass=0.5, inertia=(0.01, 0.012, 0.005), position=(0.4, 0.0, -0.2),
                orientation=cardan(0.2, 0.1, 0.0))
    mb.revolute("R", mb.ground, a, at=(0.0, 0.0, 0.0), axis=(0.0, 0.3, 1.0))
    mb.spherical("S", a, b, at=(0.4, 0.0, 0.0))
    mb.drive("spin", "R", harmonic(0.5, 0.7))
    return mb.build()


@pytest.mark.parametrize("make", [every_kind, driven_pair,
                                  lambda: load_model(MODELS / "heavy_top.py"),
                                  lambda: load_model(MODELS / "spatial_chain.py", N=5,
                                                     joint="spherical", link_radius=0.03)])
def test_accelerations_and_reactions_equal_tmt_and_newton_euler(make):
    model = make()
    lag, tmt, ne = (get_formulation(f) for f in ("lagrange", "tmt", "newton_euler"))
    u = model.input_vector(None)
    for seed in (3, 4):
        q, qd = random_state(model, seed)
        a = lag.accelerations(model, q, qd, 0.3, u)
        b = tmt.accelerations(model, q, qd, 0.3, u)
        scale = 1.0 + np.abs(b.qdd).max()
        np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-8 * scale)
        x, xd = tmt.absolute(model, q, qd)
        ref = ne.accelerations(model, x, xd, 0.3, u)
        np.testing.assert_allclose(a.xdd, ref.qdd, atol=1e-8 * (1 + np.abs(ref.qdd).max()))
        np.testing.assert_allclose(lag.lam(model, a), ref.lam,
                                   atol=1e-8 * (1 + np.abs(ref.lam).max()))


def test_heavy_top_nutating_with_spin_motor_agrees_with_newton_euler():
    model = load_model(MODELS / "heavy_top.py", precession_offset=0.8)
    kw = dict(inputs={"spin_motor.h": 0.02}, rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.6, 0.2, formulation="newton_euler", **kw)
    b = simulate(model, 0.6, 0.2, formulation="lagrange", **kw)
    for name in ("tip.x", "tip.y", "tip.z", "top.wx", "top.wz", "pivot.fz", "pivot.tx"):
        assert np.abs(a[name] - b[name]).max() < 1e-7 * (1 + np.abs(a[name]).max()), name
    assert np.ptp(b["tip.z"]) > 1e-3                    # it nutates


def test_spatial_chain_follows_tmt():
    model = load_model(MODELS / "spatial_chain.py", N=3, joint="spherical", link_radius=0.03)
    kw = dict(rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.3, 0.15, formulation="tmt", **kw)
    b = simulate(model, 0.3, 0.15, formulation="lagrange", **kw)
    cols = [c for c in a.dtype.names if c.endswith((".x", ".y", ".z", ".wx", ".fz"))]
    for c in cols:
        assert np.abs(a[c] - b[c]).max() < 1e-7 * (1 + np.abs(a[c]).max()), c
    assert max(np.ptp(a[c]) for c in cols if c.endswith(".z")) > 0.05    # it swings
    E = b["energy.total"]                              # no damping: conserved
    assert np.abs(E - E[0]).max() < 1e-8 * (1 + np.ptp(b["energy.kinetic"]))


def test_bricard_at_10s_agrees_with_the_reference(tmp_path):
    """`python -m fmu_mb simulate models/bricard.py --formulation lagrange --stop-time 10`:
    P3 within 1e-6 m of the reference at 5 s and 10 s."""
    out = tmp_path / "b.csv"
    assert main(["simulate", str(MODELS / "bricard.py"), "--formulation", "lagrange",
                 "--stop-time", "10", "--output-interval", "5", "--quiet", "-o",
                 str(out)]) == 0
    r = read_csv(out)
    for t in (5.0, 10.0):
        k = int(np.flatnonzero(np.isclose(r["time"], t))[0])
        p3 = np.array([r["P3.x"][k], r["P3.y"][k], r["P3.z"][k]])
        assert np.abs(p3 - ref_at(t)).max() < 1e-6, t


def torque_free_body():
    """One floating body with three different principal moments, no gravity, spinning near
    its intermediate axis (a tumbling motion, all of omega's components change)."""
    mb = ModelBuilder("free_body", {}, gravity=(0.0, 0.0, 0.0))
    mb.body("box", mass=2.0, inertia=(0.1, 0.2, 0.3), position=(0.1, 0.2, 0.3),
            orientation=cardan(0.3, -0.4, 0.2), velocity=(0.5, -0.2, 0.1),
            angular_velocity=(0.2, 5.0, 0.3))
    return mb.build()


def test_torque_free_body_keeps_energy_and_angular_momentum():
    model = torque_free_body()
    r = simulate(model, 3.0, 0.1, formulation="lagrange", rtol=1e-10, atol=1e-10)
    T = r["energy.kinetic"]
    assert np.abs(T - T[0]).max() < 1e-8 * T[0]
    J = np.diag([0.1, 0.2, 0.3])
    L = []
    for k in range(len(r["time"])):
        p = np.array([[r[f"box.e{i}"][k] for i in range(4)]])
        A = rot.matrix(p)[0]
        w = np.array([r["box.wx"][k], r["box.wy"][k], r["box.wz"][k]])
        L.append(A @ J @ A.T @ w)                     # global angular momentum
    L = np.array(L)
    assert np.abs(L - L[0]).max() < 1e-8 * np.linalg.norm(L[0])
    assert np.ptp(r["box.wx"]) > 1.0                  # it really tumbles
    np.testing.assert_allclose(r["box.x"], 0.1 + 0.5 * r["time"], atol=1e-9)


@pytest.mark.parametrize("name", ["double_wishbone", "five_point_suspension"])
def test_suspensions_over_a_road_step_agree_with_newton_euler(name):
    model = load_model(MODELS / f"{name}.py")
    kw = dict(inputs={"tyre.h": -4.0e5 * 0.02}, rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.05, 0.025, formulation="newton_euler", **kw)
    b = simulate(model, 0.05, 0.025, formulation="lagrange", **kw)
    for c in "xyz":
        col = f"wheel_centre.{c}"
        assert np.abs(a[col] - b[col]).max() < 1e-8
    assert a["wheel_centre.z"][-1] - a["wheel_centre.z"][0] > 1e-3   # the wheel moved
    forces = [f for f in a.dtype.names if f.endswith((".fx", ".fz", ".tx"))]
    for f in forces:
        assert np.abs(a[f] - b[f]).max() < 1e-5 * (1 + np.abs(a[f]).max()), f


@pytest.mark.parametrize("formulation", ["auto", "newton_euler", "tmt", "lagrange"])
def test_implicit_methods_refuse_a_spatial_model_with_a_message(formulation):
    """No spatial DAE terms yet: a clear InputError, not a failure inside the integrator."""
    with pytest.raises(InputError, match="spatial: method 'generalized_alpha'.*dop853"):
        simulate(load_model(MODELS / "heavy_top.py"), 0.01, formulation=formulation,
                 method="generalized_alpha", step=1e-3)
