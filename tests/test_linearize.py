"""Linearization (fmu_mb.linearize, fmu_mb.equilibrium, directional_derivative, fmu-mb
linearize) against independent results: closed forms (two uniform rods, the cart-pole's
textbook equations, a spring-mass-damper), bench/suspension_statics.py's motion ratio, and
finite differences of simulate() (the integrator, not the linearization's equations)."""
import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from scipy import linalg as sla

import fmu_mb
from fmu_mb import InputError, ModelBuilder, rod_inertia
from fmu_mb.dynamics.linearize import operating_state

ROOT = Path(__file__).resolve().parents[1]
G = 9.81


def _rods_closed_form(m1, m2, l1, l2, g):
    """Small-oscillation frequencies [Hz] of two uniform rods hanging from a pivot: Lagrange's
    equations in the absolute angles, linearised by hand."""
    M = np.array([[m1 * l1 ** 2 / 3 + m2 * l1 ** 2, m2 * l1 * l2 / 2],
                  [m2 * l1 * l2 / 2, m2 * l2 ** 2 / 3]])
    K = np.diag([(m1 / 2 + m2) * g * l1, m2 * g * l2 / 2])
    return np.sqrt(sla.eigh(K, M, eigvals_only=True)) / (2 * np.pi)


@pytest.mark.parametrize("params", [{}, {"m1": 2.0, "l2": 0.8, "g": 3.7}])
def test_double_pendulum_frequencies_closed_form(params):
    model = fmu_mb.load_model(ROOT / "models/double_pendulum.py", phi1=0.0, phi2=0.0,
                              **params)
    lin = fmu_mb.linearize(model)
    p = {"m1": 1.0, "m2": 1.0, "l1": 0.55, "l2": 0.55, "g": G, **params}
    ref = _rods_closed_form(p["m1"], p["m2"], p["l1"], p["l2"], p["g"])
    modes = lin.modes()
    assert len(modes) == 2
    freq = np.array([m.frequency for m in modes])
    np.testing.assert_allclose(freq, ref, rtol=1e-9)
    assert all(abs(m.damping) < 1e-9 for m in modes)
    assert lin.x_names == ("A.angle", "B.angle", "A.rate", "B.rate")
    assert lin.error < 1e-9
    # the first mode moves both rods the same way, the second in opposition (B relative)
    assert modes[0].shape[1].real > 0 and modes[1].shape[1].real / modes[1].shape[0].real < -1


def test_cli_prints_the_closed_form_frequencies(tmp_path):
    from fmu_mb.tools.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["linearize", str(ROOT / "models/double_pendulum.py"), "--set", "phi1=0",
                   "--set", "phi2=0", "-o", str(tmp_path / "lin.npz"), "-o",
                   str(tmp_path / "lin.mat")])
    assert rc == 0
    ref = _rods_closed_form(1.0, 1.0, 0.55, 0.55, G)
    lines = [ln.split() for ln in out.getvalue().splitlines()
             if ln.strip()[:1].isdigit() and "A.angle" in ln]
    printed = np.array([float(ln[1]) for ln in lines])
    np.testing.assert_allclose(printed, ref, rtol=1e-6)
    d = np.load(tmp_path / "lin.npz")
    assert list(d["x_names"]) == ["A.angle", "B.angle", "A.rate", "B.rate"]
    assert list(d["u_names"]) == ["actuator_A.h", "actuator_B.h"]
    assert d["C"].shape == (len(d["y_names"]), 4)
    from scipy.io import loadmat

    mat = loadmat(tmp_path / "lin.mat")
    np.testing.assert_array_equal(mat["A"], d["A"])
    assert [str(v[0]) for v in mat["x_names"].ravel()] == list(d["x_names"])


def test_cli_bad_arguments(tmp_path, capsys):
    from fmu_mb.tools.cli import main

    model = str(ROOT / "models/double_pendulum.py")
    assert main(["linearize", model, "--input", "actuator_A.h=abc"]) == 2
    assert main(["linearize", model, "-o", str(tmp_path / "lin.txt")]) == 2
    assert main(["linearize", model, "--free", "actuator_A.h"]) == 2
    assert main(["linearize", model, "--state", "A.angl=1"]) == 1
    err = capsys.readouterr().err
    assert "unknown coordinate 'A.angl'" in err and ".npz or .mat" in err


def test_cart_pole_textbook():
    """Inverted pendulum on a cart, upright: M q'' + K q = [F, 0] with q = (x, theta),
    M = [[mc + m, -m l], [-m l, I + m l^2]], K = diag(0, -m g l), l = L / 2, I = m L^2 / 12
    (theta counter-clockwise from upright, the pole's centre at x - l sin theta)."""
    mc, m, L = 1.3, 0.25, 0.8
    model = fmu_mb.load_model(ROOT / "examples/models/cart_pole.py", mc=mc, m=m, L=L, phi0=0.0)
    lin = fmu_mb.linearize(model, outputs=["rail.position", "pivot.angle", "pole.x"])
    assert lin.x_names == ("rail.position", "pivot.angle", "rail.rate", "pivot.rate")
    l, I = L / 2, m * L ** 2 / 12
    M = np.array([[mc + m, -m * l], [-m * l, I + m * l * l]])
    K = np.diag([0.0, -m * G * l])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), np.zeros((2, 2))]])
    B = np.concatenate([np.zeros(2), np.linalg.solve(M, [1.0, 0.0])])[:, None]
    np.testing.assert_allclose(lin.A, A, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(lin.B, B, rtol=1e-9, atol=1e-12)
    C = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, -l, 0, 0]], float)
    np.testing.assert_allclose(lin.C, C, atol=1e-9)
    np.testing.assert_allclose(lin.D, 0.0, atol=1e-12)


def _spring_mass_damper(k, c, mass, gravity=-G):
    mb = ModelBuilder("smd", {}, gravity=(gravity, 0.0))
    body = mb.body("mass", mass=mass, inertia=0.1, position=(1.0, 0.0))
    mb.prismatic("slide", mb.ground, body, axis=(1.0, 0.0))
    mb.tsda("spring", mb.ground, body, stiffness=k, free_length=0.5, damping=c)
    mb.initial("slide", value=1.0, rate=0.0)
    return mb.build()


def test_spring_mass_damper():
    k, c, mass = 400.0, 3.0, 2.5
    model = _spring_mass_damper(k, c, mass)
    eq = fmu_mb.equilibrium(model)
    # k (x - 0.5) = -m g along x, gravity -9.81 along x
    assert eq.coordinates["slide.position"] == pytest.approx(0.5 - mass * G / k, abs=1e-12)
    assert eq.residual < 1e-9 and eq.static_residual < 1e-9
    lin = fmu_mb.linearize(model, eq, outputs=["spring.force"])
    np.testing.assert_allclose(lin.A, [[0, 1], [-k / mass, -c / mass]], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lin.B, [[0], [-1 / mass]], rtol=1e-12)   # tension pulls back
    np.testing.assert_allclose(lin.C, [[k, c]], rtol=1e-10)
    np.testing.assert_allclose(lin.D, [[1.0]], rtol=1e-12)
    mode, = lin.modes()
    assert mode.frequency == pytest.approx(np.sqrt(k / mass) / (2 * np.pi), rel=1e-10)
    assert mode.damping == pytest.approx(c / (2 * np.sqrt(k * mass)), rel=1e-9)
    assert lin.dc_gain()[0, 0] == pytest.approx(0.0, abs=1e-9)   # h replaces spring force


def test_double_wishbone_wheel_rate_against_suspension_statics():
    """Without preloads (g = 0, no wheel load) and with the rack held (a very stiff rack
    spring), the wheel rate is k_s MR^2 with bench/suspension_statics.py's motion ratio; the
    static compliance at the wheel centre comes from the linear model's dc gain of the tyre
    force input, in series with the tyre spring."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import suspension_statics
    finally:
        sys.path.remove(str(ROOT / "bench"))
    from fmu_mb.mechanics.loader import load_module

    bench = suspension_statics.double_wishbone()
    dw = load_module(ROOT / "models/double_wishbone.py")
    model = fmu_mb.load_model(ROOT / "models/double_wishbone.py", g=0.0, wheel_load=0.0,
                              steering_stiffness=1e12)
    lin = fmu_mb.linearize(model, outputs=["wheel_centre.z", "coil_over.length"])
    gain = lin.dc_gain()
    tyre = lin.u_names.index("tyre.h")
    dz = gain[0, tyre]                    # wheel centre per unit tyre tension (pulls down)
    wheel_rate = -1.0 / dz - dw.TYRE_STIFFNESS
    mr = bench["motion_ratio"]
    assert wheel_rate == pytest.approx(dw.SPRING_STIFFNESS * mr ** 2, rel=1e-6)
    assert gain[1, tyre] / dz == pytest.approx(mr, rel=1e-7)


def test_double_wishbone_ride_modes_against_simulate():
    """The design pose is the static equilibrium; the linear model's response to a 1 mm road
    step (tyre.h = -k_t z_r) matches the nonlinear simulate() to the nonlinearity's order."""
    from fmu_mb.mechanics.loader import load_module

    dw = load_module(ROOT / "models/double_wishbone.py")
    model = fmu_mb.load_model(ROOT / "models/double_wishbone.py")
    eq = fmu_mb.equilibrium(model)
    assert eq.residual < 1e-8 and eq.static_residual < 1e-8
    lin = fmu_mb.linearize(model, eq, outputs=["wheel_centre.z"])
    modes = [m for m in lin.modes() if m.damped_frequency > 1.0]
    assert len(modes) == 2                # wheel hop and carrier wind-up (rack compliance)
    assert all(0.05 < m.damping < 0.5 for m in modes)
    h = np.zeros(len(lin.u_names))
    h[lin.u_names.index("tyre.h")] = -dw.TYRE_STIFFNESS * 1e-3
    dt, n = 2e-3, 200
    r = fmu_mb.simulate(model, n * dt, dt, inputs=dict(zip(lin.u_names, h)), rtol=1e-10,
                        atol=1e-12)
    z_sim = r["wheel_centre.z"] - lin.y0[0]
    Ad = sla.expm(np.block([[lin.A, lin.B @ h[:, None]], [np.zeros((1, lin.A.shape[0] + 1))]])
                  * dt)
    x = np.zeros(lin.A.shape[0] + 1)
    x[-1] = 1.0
    z_lin = [0.0]
    for _ in range(n):
        x = Ad @ x
        z_lin.append(float(lin.C[0] @ x[:-1] + lin.D[0] @ h))
    z_lin = np.array(z_lin)
    assert np.abs(z_sim).max() > 5e-4
    assert np.abs(z_sim - z_lin).max() < 1e-2 * np.abs(z_sim).max()


def _flow_fd(model, state, u, dt, eps):
    """State-transition and input matrices of simulate() over dt by central differences of
    the independent coordinates and rates and of the inputs."""
    lin = fmu_mb.linearize(model, state, u, outputs=[])
    x0, names = lin.x0, lin.x_names
    opts = dict(rtol=1e-12, atol=1e-14, formulation="tmt")

    def run(x, uu):
        st = operating_state(model, dict(zip(names, x)))
        r = fmu_mb.simulate(model, st.t + dt, dt, inputs=dict(zip(lin.u_names, uu)),
                            state=st, **opts)
        return np.array([r[k][-1] for k in names])

    Phi = np.column_stack([(run(x0 + eps * e, u) - run(x0 - eps * e, u)) / (2 * eps)
                           for e in np.eye(len(x0))])
    Gam = np.column_stack([(run(x0, u + 1e-3 * e) - run(x0, u - 1e-3 * e)) / 2e-3
                           for e in np.eye(len(u))])
    return lin, Phi, Gam


@pytest.mark.parametrize("name", ["slider_crank", "four_bar"])
def test_closed_loop_against_finite_differences_of_simulate(name):
    model = fmu_mb.load_model(ROOT / f"models/{name}.py",
                              **({"theta0": -1.0} if name == "slider_crank" else {}))
    eq = fmu_mb.equilibrium(model)
    assert eq.residual < 1e-9 and eq.static_residual < 1e-9
    u = eq.u
    dt = 0.02
    lin, Phi, Gam = _flow_fd(model, eq.state, u, dt, 1e-5)
    assert lin.dependent                     # a closed loop: coordinate partitioning
    E = sla.expm(np.block([[lin.A, lin.B], [np.zeros((lin.B.shape[1], lin.A.shape[0]
                                                       + lin.B.shape[1]))]]) * dt)
    n = lin.A.shape[0]
    np.testing.assert_allclose(E[:n, :n], Phi, rtol=0, atol=1e-7 * np.abs(Phi).max())
    np.testing.assert_allclose(E[:n, n:], Gam, rtol=0, atol=1e-7 * np.abs(Gam).max())


@pytest.mark.parametrize("name,kw,rates", [
    ("four_bar", {}, {"A.rate": 2.0}), ("double_wishbone", {}, {}),
    ("double_pendulum", {"phi1": 0.4, "phi2": 1.1}, {"A.rate": 0.7, "B.rate": -1.2})])
def test_ridders_against_central_differences(name, kw, rates):
    """The two derivative routes agree, away from an equilibrium too (velocity terms)."""
    model = fmu_mb.load_model(ROOT / f"models/{name}.py", **kw)
    st = operating_state(model, rates or None)
    a = fmu_mb.linearize(model, st)
    b = fmu_mb.linearize(model, st, method="central")
    for X, Y in ((a.A, b.A), (a.B, b.B), (a.C, b.C), (a.D, b.D)):
        np.testing.assert_allclose(X, Y, rtol=0, atol=1e-6 * max(1.0, np.abs(X).max()))
    assert np.isnan(b.error) and a.error < 1e-5 * max(1.0, np.abs(a.A).max())


def test_directional_derivative_reproduces_the_matrices():
    model = fmu_mb.load_model(ROOT / "models/double_pendulum.py", phi1=0.4, phi2=1.1)
    u = {"actuator_A.h": 0.3}
    lin = fmu_mb.linearize(model, inputs=u, outputs=["tip.x", "B.fy"])
    rng = np.random.default_rng(1)
    seed = rng.normal(size=len(lin.x_names) + len(lin.u_names))
    knowns = list(lin.x_names) + list(lin.u_names)
    unknowns = [f"der({n})" for n in lin.x_names] + ["tip.x", "B.fy"]
    for method in ("ridders", "central"):
        d = fmu_mb.directional_derivative(model, None, u, unknowns, knowns, seed, method)
        full = np.block([[lin.A, lin.B], [lin.C, lin.D]]) @ seed
        np.testing.assert_allclose(d, full, rtol=1e-6, atol=1e-6)
    with pytest.raises(InputError, match="unknown known 'A.angl'"):
        fmu_mb.directional_derivative(model, None, u, unknowns, ["A.angl"], [1.0])


def test_equilibrium_trim_holds_the_pose_in_simulate():
    """Double pendulum with rod B held at 30 deg relative by actuator_B.h: the trim found,
    simulate() from it stays put (independent: the integrator)."""
    model = fmu_mb.load_model(ROOT / "models/double_pendulum.py")
    eq = fmu_mb.equilibrium(model, free=["B.angle"])
    assert eq.coordinates["B.angle"] == pytest.approx(np.deg2rad(30.0), abs=1e-14)
    assert eq.residual < 1e-10 and eq.static_residual < 1e-10
    assert eq.inputs["actuator_A.h"] == 0.0 and eq.inputs["actuator_B.h"] != 0.0
    eq2 = fmu_mb.equilibrium(model, free="actuator_B.h")    # the same, named by its input
    assert eq2.inputs["actuator_B.h"] == pytest.approx(eq.inputs["actuator_B.h"], rel=1e-10)
    r = fmu_mb.simulate(model, 1.0, 0.1, inputs=eq.inputs, state=eq.state, rtol=1e-11,
                        atol=1e-13)
    assert np.abs(r["A.angle"] - eq.coordinates["A.angle"]).max() < 1e-8
    assert np.abs(r["B.angle"] - eq.coordinates["B.angle"]).max() < 1e-8
    # the equilibrium of the free pendulum (no inputs): hanging along +x
    eq0 = fmu_mb.equilibrium(model)
    assert abs(eq0.coordinates["A.angle"]) < 1e-9 and abs(eq0.coordinates["B.angle"]) < 1e-9


def test_bad_arguments():
    model = fmu_mb.load_model(ROOT / "models/double_pendulum.py")
    with pytest.raises(InputError, match="unknown output 'tip.q'"):
        fmu_mb.linearize(model, outputs=["tip.q"])
    with pytest.raises(InputError, match="method must be"):
        fmu_mb.linearize(model, method="complex")
    with pytest.raises(InputError, match="finite number"):
        fmu_mb.linearize(model, {"A.angle": float("nan")})
    with pytest.raises(InputError, match="unknown input"):
        fmu_mb.linearize(model, inputs={"actuator_C.h": 1.0})
    with pytest.raises(InputError, match="neither an input"):
        fmu_mb.equilibrium(model, free=["nothing"])
    with pytest.raises(InputError, match="state must be"):
        fmu_mb.linearize(model, state=3.0)


@pytest.mark.fmu
def test_lqr_example_measured_decay_rate_agrees_with_the_design(tmp_path):
    """examples/lqr_cart_pole.py: the LQR designed on linearize()'s A, B balances the cart-pole
    FMU in fmpy; the poles measured from the run (least-squares transition matrix of the
    recorded states) agree with the design: the slow pair (the decay rate) to 0.1 % of the
    sampled loop's prediction and 1 % of the continuous design (the zero-order hold over
    h = 5 ms moves it 0.17 %), the fast pair to 2 % (the 0.1 rad start is not quite linear)."""
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import lqr_cart_pole
    finally:
        sys.path.remove(str(ROOT / "examples"))
    res = lqr_cart_pole.main(tmp_path)
    rate = res["rate"]
    assert rate["design"] < -1.0                      # a stable design, and the run is too
    assert rate["measured"] == pytest.approx(rate["sampled"], rel=1e-3)
    assert rate["measured"] == pytest.approx(rate["design"], rel=1e-2)
    np.testing.assert_allclose(res["measured"], res["sampled"], rtol=2e-2)
    X = res["X"]
    assert np.abs(X[:, 1]).max() <= 0.1 + 1e-12 and abs(X[-1, 1]) < 1e-3
    # without the controller the pole falls: the loop really does the balancing
    lin = res["lin"]
    assert max(np.linalg.eigvals(lin.A).real) > 3.0


def test_equilibrium_from_dead_centre():
    """The slider-crank starts at dead centre (crank and rod in line), where Newton on the
    minimal equations stalls; the crank hanging straight down is the equilibrium (there the
    heights of the crank's and the rod's centres are stationary in the crank angle)."""
    model = fmu_mb.load_model(ROOT / "models/slider_crank.py")
    eq = fmu_mb.equilibrium(model)
    assert eq.state.q[0] == pytest.approx(-np.pi / 2, abs=1e-9)      # O.angle
    assert eq.static_residual < 1e-9
    lin = fmu_mb.linearize(model, eq, outputs=[])
    assert max(np.linalg.eigvals(lin.A).real) < 1e-6      # hanging: stable, undamped


def test_model_structure_for_the_fmu():
    """ModelStructure's dependencies: geometry depends on the coordinates only, der(q) on the
    rate only, accelerations and reactions on the inputs; a closed loop keeps its declared
    states."""
    from fmu_mb.dynamics.linearize import model_structure

    model = fmu_mb.load_model(ROOT / "models/double_pendulum.py")
    s = model_structure(model)
    assert s["states"] == ["A.angle", "B.angle", "A.rate", "B.rate"]
    dd, od = s["derivative_dependencies"], s["output_dependencies"]
    assert dd["der(A.angle)"] == ["A.rate"]
    assert set(dd["der(B.rate)"]) == set(s["states"]) | {"actuator_A.h", "actuator_B.h"}
    assert od["rod1.x"] == ["A.angle"] and od["rod2.omega"] == ["A.rate", "B.rate"]
    assert "actuator_B.h" in od["B.fx"] and not any(k.endswith(".h") for k in od["tip.vx"])
    four = fmu_mb.load_model(ROOT / "models/four_bar.py")
    st = model_structure(four)
    assert st["states"] == ["A.angle", "A.rate"]
    d = fmu_mb.directional_derivative(four, None, None, ["der(A.rate)"], ["A.angle"], [1.0],
                                      independent=st["independent"])
    lin = fmu_mb.linearize(four, outputs=[])
    assert d[0] == pytest.approx(lin.A[1, 0], rel=1e-7)
    with pytest.raises(fmu_mb.SingularSystemError, match="not a set of independent"):
        fmu_mb.directional_derivative(four, None, None, ["der(A.rate)"], ["A.angle"], [1.0],
                                      independent=["A0.angle", "B0.angle"])
