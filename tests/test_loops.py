"""Closed loops: the compiled route (recursive with cut-joint rows in the kernel) against tmt
and newton_euler, and every formulation that accepts a closed loop through the singular
poses of IFToMM A02 (the N-four-bar) on its branch."""
import math

import numpy as np
import pytest

from fmu_mb import (FORMULATIONS, ModelBuilder, Settings, advance, initial_state,
                    output_names, output_values, rod_inertia, simulate)
from fmu_mb.dynamics.formulations import get_formulation, newton_euler, tmt
from fmu_mb.dynamics.integrate import check_settings
from fmu_mb.engine.kernel import library, supported, tree_kernel
from fmu_mb.errors import InputError
from fmu_mb.mechanics.tree import tree_map

from conftest import model, python_drive
from test_formulations_agree import close, joint_accelerations, random_state
from test_integrate import n_four_bar_reference


# ------------------------------------------------------------------ loops of every cut kind
def distance_four_bar():
    """The four-bar of models/four_bar.py with a massless rocker: a cut distance joint."""
    mb = ModelBuilder("distance_four_bar", gravity=(0.0, -9.81))
    a, b = 0.1, 0.35
    crank = mb.body("crank", mass=0.2, inertia=rod_inertia(0.2, a))
    coupler = mb.body("coupler", mass=0.7, inertia=rod_inertia(0.7, b))
    mb.revolute("A0", mb.ground, crank, parent_point=(0, 0), child_point=(-a / 2, 0))
    mb.revolute("A", crank, coupler, parent_point=(a / 2, 0), child_point=(-b / 2, 0))
    mb.distance("rocker", coupler, mb.ground, length=0.3, parent_point=(b / 2, 0),
                child_point=(0.4, 0.0))
    mb.torque("drive", crank)
    mb.initial("A0", value=math.pi / 2, rate=5.0)
    mb.initial("A", guess=math.radians(-60))
    return mb.build()


def inverted_slider_crank():
    """Crank and a lever on ground pivots, a block turning on the crank's tip and sliding
    along the lever: the prismatic joint closes the loop (prismatic and angle rows)."""
    mb = ModelBuilder("inverted_slider_crank", gravity=(0.0, -9.81))
    r = 0.2
    crank = mb.body("crank", mass=0.5, inertia=rod_inertia(0.5, r))
    lever = mb.body("lever", mass=1.0, inertia=rod_inertia(1.0, 0.8))
    block = mb.body("block", mass=0.3, inertia=1e-3)
    mb.revolute("O", mb.ground, crank, parent_point=(0, 0), child_point=(-r / 2, 0))
    mb.revolute("L", mb.ground, lever, parent_point=(0.5, 0), child_point=(0, 0))
    mb.revolute("T", crank, block, parent_point=(r / 2, 0), child_point=(0, 0))
    mb.prismatic("slide", lever, block, axis=(1.0, 0.0), angle0=0.0)
    mb.tsda("spring", mb.ground, block, a_point=(0.0, 0.5), stiffness=30.0, free_length=0.2,
            damping=0.5)
    mb.initial("O", value=math.pi / 2, rate=3.0)
    mb.initial("L", guess=math.atan2(r, -0.5))
    return mb.build()


def hanging_bar():
    """A bar hung from the ground by two massless strings (distance joints): a floating body
    (three tree coordinates of its own) whose loops are closed by two cut rows."""
    mb = ModelBuilder("hanging_bar", gravity=(0.0, -9.81))
    bar = mb.body("bar", mass=2.0, inertia=rod_inertia(2.0, 1.0), position=(0.1, -0.8),
                  angle=0.05, velocity=(0.4, 0.0))
    mb.distance("left", mb.ground, bar, length=0.8, parent_point=(-0.5, 0.0),
                child_point=(-0.5, 0.0))
    mb.distance("right", mb.ground, bar, length=0.8, parent_point=(0.5, 0.0),
                child_point=(0.5, 0.0))
    mb.rsda("twist", mb.ground, bar, stiffness=2.0, damping=0.1)
    return mb.build()


LOOPS = {"slider_crank": lambda: model("slider_crank"),
         "four_bar": lambda: model("four_bar"),
         "n_four_bar": lambda: model("n_four_bar", N=3),
         "distance_four_bar": distance_four_bar,
         "inverted_slider_crank": inverted_slider_crank,
         "hanging_bar": hanging_bar}


@pytest.mark.parametrize("name", LOOPS)
def test_kernel_runs_the_loop_and_its_rows_are_the_cut_rows(name):
    m = LOOPS[name]()
    assert m.topology.cut_joints
    assert supported(m) is None
    assert tree_kernel(m).m == len(tree_map(m).cut_rows) > 0


@pytest.mark.parametrize("name", LOOPS)
def test_accelerations_multipliers_and_reactions_agree_at_random_states(name):
    """qdd and the cut multipliers lam (Mbar qdd + Dq' lam = fbar) of the kernel equal
    tmt's; xdd and every Newton-Euler multiplier equal newton_euler's."""
    m = LOOPS[name]()
    rec = get_formulation("recursive")
    for _ in range(4):
        t, q, qd, u = random_state(m)
        ref = tmt.accelerations(m, q, qd, t, u)
        dyn = rec.accelerations(m, q, qd, t, u)
        close(dyn.qdd, ref.qdd)
        close(dyn.lam_cut, ref.lam_cut, 1e-9)
        x, xd = tmt.absolute(m, q, qd)
        ne = newton_euler.accelerations(m, x, xd, t, u)
        close(dyn.xdd, ne.qdd)
        close(dyn.qdd, joint_accelerations(m, x, xd, ne.qdd))
        close(rec.lam(m, dyn), ne.lam, 1e-9)
        # Baumgarte terms act on the rows as in tmt
        close(rec.accelerations(m, q, qd, t, u, baumgarte=(3.0, 4.0)).qdd,
              tmt.accelerations(m, q, qd, t, u, baumgarte=(3.0, 4.0)).qdd)


@pytest.mark.parametrize("name", LOOPS)
def test_projection_equals_tmts(name):
    """Position and velocity projection: least kinetic-energy changes in both."""
    m = LOOPS[name]()
    rng = np.random.default_rng(7)
    t, q, qd, _ = random_state(m)
    y = np.concatenate([q + 1e-4 * rng.normal(size=q.size), qd + 1e-2 * rng.normal(size=q.size)])
    a = get_formulation("recursive").project(m, y, t, 1e-13)
    b = tmt.project(m, y, t, 1e-13)
    close(a, b, 1e-9)
    assert not np.allclose(a, y)


@pytest.mark.parametrize("name", ["distance_four_bar", "inverted_slider_crank",
                                  "hanging_bar"])
def test_trajectories_agree_with_tmt_and_newton_euler(name):
    """(slider_crank and four_bar: tests/test_formulations_agree.py)"""
    m = LOOPS[name]()
    runs = {f: simulate(m, 0.4, 0.1, formulation=f, rtol=1e-10, atol=1e-12)
            for f in ("recursive", "tmt", "newton_euler")}
    for f in ("tmt", "newton_euler"):
        for col in output_names(m):
            scale = max(1.0, np.abs(runs[f][col]).max())
            np.testing.assert_allclose(runs["recursive"][col], runs[f][col], rtol=0,
                                       atol=1e-7 * scale, err_msg=f"{f}: {col}")
    assert runs["recursive"]["constraint.residual"].max() < 1e-10


@pytest.mark.parametrize("method", ["rk4", "radau"])
def test_fixed_step_and_implicit_methods_agree_with_tmt(method):
    """rk4 runs in C with the projection after every step, radau calls the kernel's
    right-hand side and projection from scipy: the same equations as tmt's."""
    m = model("four_bar")
    kw = dict(method=method, inputs={"drive.h": 0.3}, rtol=1e-8, atol=1e-10)
    a = simulate(m, 0.2, 0.05, formulation="recursive", **kw)
    b = simulate(m, 0.2, 0.05, formulation="tmt", **kw)
    for col in output_names(m):
        scale = max(1.0, np.abs(b[col]).max())
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=1e-8 * scale, err_msg=col)


@pytest.mark.parametrize("stabilization", ["baumgarte", "none"])
def test_other_drift_controls_run_in_the_kernel(stabilization):
    m = model("four_bar")
    r = simulate(m, 0.5, 0.05, formulation="recursive", stabilization=stabilization)
    ref = simulate(m, 0.5, 0.05, formulation="tmt", stabilization=stabilization)
    np.testing.assert_allclose(r["crank.phi"], ref["crank.phi"], rtol=0, atol=1e-7)
    assert r["constraint.residual"].max() < 1e-6


def test_supports_says_which_models_the_compiled_route_runs():
    rec = get_formulation("recursive")
    for name in ("slider_crank", "four_bar", "n_four_bar", "bouncing_ball", "double_pendulum"):
        assert rec.supports(model(name)) is True, name
    assert rec.supports(model("container_crane_driven")) is True     # a harmonic drive
    assert rec.supports(python_drive()) is False                      # a Python function
    assert get_formulation("tmt").supports is None


def test_drives_of_python_functions_are_still_refused_with_a_way_out():
    """Drives whose law the kernel evaluates run in C (tests/test_kernel_drives.py); a drive
    of arbitrary Python functions is refused with a way out."""
    m = python_drive()
    with pytest.raises(InputError, match="'recursive'.*Python function.*'tmt'"):
        check_settings(m, Settings(formulation="recursive"))


# ------------------------------------------------------------------ contacts
@pytest.mark.parametrize("name, t_end", [("bouncing_ball", 2.0), ("pendulum_wall", 1.0),
                                         ("newtons_cradle", 0.6), ("slider_crank_stop", 0.6)])
@pytest.mark.parametrize("method", ["dop853", "dopri5"])
def test_contacts_step_in_the_kernel_and_agree_with_tmt(name, t_end, method):
    """Between events the kernel steps (C steps, scipy's dense output from the C stages,
    C projection); event location and impacts stay in Python: the same impacts at the same
    times and the same outputs as tmt's all-Python route."""
    m = model(name)
    u = {"drive.h": 0.2} if "drive.h" in m.input_names else None
    a = simulate(m, t_end, 0.05, formulation="recursive", method=method, inputs=u)
    b = simulate(m, t_end, 0.05, formulation="tmt", method=method, inputs=u)
    for col in output_names(m):
        scale = max(1.0, np.abs(b[col]).max())
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=1e-8 * scale, err_msg=col)
    assert sum(b[f"{c.name}.impacts"][-1] for c in m.contacts) > 0


def test_contact_model_uses_the_compiled_event_loop(monkeypatch):
    """recursive runs a planar contact model's event loop in C (kernel.ContactEvents), and
    the Python loop's compiled stepper when the C loop is switched off."""
    from fmu_mb.dynamics.formulations import recursive
    from fmu_mb.engine import kernel

    made = []
    for cls in (recursive.NativeStepper, kernel.ContactEvents):
        orig = cls.__init__

        def spy(self, *a, _orig=orig, _cls=cls, **k):
            made.append(_cls.__name__)
            _orig(self, *a, **k)
        monkeypatch.setattr(cls, "__init__", spy)
    simulate(model("bouncing_ball"), 0.5, 0.1, formulation="recursive")
    assert "ContactEvents" in made and "NativeStepper" not in made
    made.clear()
    monkeypatch.setattr(recursive, "NATIVE_EVENTS", False)
    simulate(model("bouncing_ball"), 0.5, 0.1, formulation="recursive")
    assert "NativeStepper" in made and "ContactEvents" not in made


# ------------------------------------------------------------------ singular poses
def collinear_state(N):
    """The N-four-bar with every crank along +x (a singular pose: the loops' rows lose rank)
    moving on its parallelogram branch at 1 rad/s."""
    m = model("n_four_bar", N=N)
    names = tmt.coordinates(m)
    q = np.zeros(len(names))                 # cranks at 0, couplers at -q_crank = 0
    qd = np.array([1.0 if n.startswith("O") else -1.0 if n.startswith("L") else 0.0
                   for n in names])
    return m, q, qd


@pytest.mark.parametrize("lapack", [True, False])
def test_rank_deficient_schur_solve_at_the_collinear_pose(lapack):
    """At the collinear pose S = Dq Mbar^-1 Dq' is singular: the kernel's truncated
    eigen-decomposition (LAPACK's dsyev, or its own Jacobi) gives tmt's accelerations and
    minimum-norm multipliers (Gauss's least constraint; at the bifurcation itself the rows
    do not fix the branch, the projection and the motion's continuity do)."""
    m, q, qd = collinear_state(3)
    ref = tmt.accelerations(m, q, qd, 0.0, np.zeros(0))
    from fmu_mb.engine.kernel import _eigensolver, tree_kernel
    k = tree_kernel(m)
    if not lapack:
        library().mbk_set_eigensolver(k.handle, None)      # per kernel (no global state)
    try:
        dyn = get_formulation("recursive").accelerations(m, q, qd, 0.0, np.zeros(0))
    finally:
        library().mbk_set_eigensolver(k.handle, _eigensolver())
    close(dyn.qdd, ref.qdd, 1e-9)
    close(dyn.lam_cut, ref.lam_cut, 1e-8)


def loop_formulations(m):
    """Every formulation that accepts the closed-loop model m."""
    out = []
    for f in FORMULATIONS:
        try:
            check_settings(m, Settings(formulation=f))
        except InputError:
            continue
        out.append(f)
    return out


def b0_error(m, st, form):
    names = output_names(m)
    v = output_values(m, st, m.input_vector(None), form)
    ref = n_four_bar_reference(int(m.parameter_values["N"]), st.t)
    return max(abs(v[names.index("B0.x")] - ref[0]), abs(v[names.index("B0.y")] - ref[1]))


def run_a02(m, t_end, settings, interval=0.01):
    st = initial_state(m, settings)
    for k in range(1, int(round(t_end / interval)) + 1):
        st = advance(m, st, k * interval, None, settings)
    return st


@pytest.mark.parametrize("form", [
    f if f == "recursive" else pytest.param(f, marks=pytest.mark.slow)
    for f in FORMULATIONS if f in loop_formulations(model("n_four_bar", N=2))
    and f != "minimal"])     # minimal stops at singular poses by design (tests/test_minimal.py)
def test_a02_n2_passes_the_collinear_poses_in_every_formulation(form):
    """IFToMM A02, N = 2, 10 s at default settings (0.01 s communication steps, as an FMU
    steps): B0 within 1e-6 m of the exact 1-DOF solution, every crank parallel. (slow: 10 to
    40 s each in the Python formulations, 0.1 s in the compiled one.)"""
    m = model("n_four_bar", N=2)
    st = run_a02(m, 10.0, Settings(formulation=form))
    assert b0_error(m, st, form) < 1e-6
    x, _ = get_formulation(form).absolute(m, st.q, st.qd)
    phis = [x[3 * b.index + 2] for b in m.bodies if b.name.startswith("crank")]
    assert np.ptp(phis) < 1e-6


def test_every_formulation_that_takes_a_loop_is_listed():
    assert set(loop_formulations(model("n_four_bar", N=2))) == set(FORMULATIONS)


BENCH_TOLS = [10.0 ** (-k / 2) for k in range(6, 28)]    # bench/run.py ADAPTIVE_TOLS


def test_a02_n2_on_its_branch_at_every_bench_tolerance():
    """The bench's tolerance ladder (rtol 1e-3 ... 3e-14, atol = rtol / 100, one advance()
    over 10 s as bench/run.py calls it) in the compiled route: every run gets through the
    collinear poses on the parallelogram branch (cranks parallel); from the tolerance the
    bench settles on for 1e-6 m (3e-9) down, B0 is within 1e-6 m."""
    m = model("n_four_bar", N=2)
    crank = [i for i, n in enumerate(tmt.coordinates(m)) if n.startswith("O")]
    for tol in BENCH_TOLS:
        s = Settings(formulation="recursive", rtol=tol, atol=tol * 1e-2)
        st = advance(m, initial_state(m, s), 10.0, None, s)
        assert np.ptp(st.q[crank]) < 1e-6, tol
        if tol <= 3.2e-9:
            assert b0_error(m, st, "recursive") < 1e-6, tol


def test_a02_n40_over_20s_in_the_compiled_route():
    """IFToMM A02 with N = 40 over 20 s (compiled route, default settings, 0.01 s steps): B0
    within 1e-6 m of the exact 1-DOF solution after 28 passes through the collinear pose
    (about 5 s of CPU: the smooth cut-off of the multipliers lets each pass take a few
    steps)."""
    m = model("n_four_bar", N=40)
    st = run_a02(m, 20.0, Settings(formulation="recursive"))
    assert b0_error(m, st, "recursive") < 1e-6


def test_a_loop_that_cannot_close_raises_drift_error_and_keeps_the_state():
    """With the crank of `unreachable_loop` turned half round the loop cannot close: the C
    projection stalls, the kernel raises DriftError and the caller's arrays are unchanged."""
    from fmu_mb.errors import DriftError
    m = unreachable_loop()
    s = get_formulation("recursive").initial_state(m)
    y = np.concatenate([s.q, s.qd])
    y[0] += math.pi
    y_before = y.copy()
    with pytest.raises(DriftError, match="cannot restore the constraints"):
        get_formulation("recursive").project(m, y, 0.0, 1e-13)
    assert np.array_equal(y, y_before)
    with pytest.raises(DriftError):                      # and tmt agrees that it cannot
        tmt.project(m, y, 0.0, 1e-13)


def unreachable_loop():
    """A four-bar whose crank (0.3 m) can turn only part way: coupler 0.2 m, rocker 0.2 m,
    ground 0.5 m (at crank angle pi the tip is 0.8 m from the rocker's pivot > 0.4 m)."""
    mb = ModelBuilder("unreachable", gravity=(0.0, -9.81))
    a, b, c = 0.3, 0.2, 0.2
    crank = mb.body("crank", mass=0.3, inertia=rod_inertia(0.3, a))
    coupler = mb.body("coupler", mass=0.2, inertia=rod_inertia(0.2, b))
    rocker = mb.body("rocker", mass=0.2, inertia=rod_inertia(0.2, c))
    mb.revolute("A0", mb.ground, crank, parent_point=(0, 0), child_point=(-a / 2, 0))
    mb.revolute("A", crank, coupler, parent_point=(a / 2, 0), child_point=(-b / 2, 0))
    mb.revolute("B", coupler, rocker, parent_point=(b / 2, 0), child_point=(c / 2, 0))
    mb.revolute("B0", mb.ground, rocker, parent_point=(0.5, 0), child_point=(-c / 2, 0))
    mb.initial("A0", value=math.radians(30), rate=0.0)
    mb.initial("A", guess=math.radians(-60))
    mb.initial("B0", guess=math.radians(120))
    return mb.build()


@pytest.mark.parametrize("name", LOOPS)
def test_joint_coordinate_outputs_of_a_loop_are_read_without_the_general_path(name):
    """A loop model in tree coordinates: its tree joints' coordinates and rates are q and qd
    (read directly, as an FMU's getReal does), its cut revolute joints' are phi_c - phi_p -
    angle0 from the kernel's kinematics, bit for bit what constraints.joint_coordinates
    gives from the absolute coordinates (the general path, still used for a cut prismatic
    joint)."""
    from fmu_mb.dynamics.outputs import Outputs, _direct_coordinates, output_groups
    from fmu_mb.mechanics import constraints

    m = LOOPS[name]()
    t, q, qd, u = random_state(m)
    st = initial_state(m, Settings(formulation="recursive"))
    st = type(st)(t, q, qd, 0.0, st.coords, dict(st.extra))
    out = Outputs(m, st, u, "recursive")
    ix = output_groups(m).get("coords", ())
    if not len(ix):                     # distance joints only: no joint coordinates
        assert _direct_coordinates(m) == {}
        return
    got = np.array([out.value(int(i)) for i in ix]).reshape(-1, 2)
    py = Outputs(m, st, u, "recursive", compiled=False)      # the Python groups
    got_py = np.array([py.value(int(i)) for i in ix]).reshape(-1, 2)
    x, xd = get_formulation("recursive").absolute(m, q, qd)
    qj, qdj, _, _ = constraints.joint_coordinates(m, x, xd)
    tm = tree_map(m)
    tree = [k in tm.joints for k in m.compiled.coord_joints]
    cut = ~np.array(tree)
    np.testing.assert_array_equal(got_py[cut, 0], qj[cut])
    np.testing.assert_array_equal(got_py[cut, 1], qdj[cut])
    close(got[:, 0], qj, 1e-12)          # the engine library's (the default): to round-off
    close(got[:, 1], qdj, 1e-12)
    direct = _direct_coordinates(m)
    has_prismatic_cut = any(m.joints[k].kind == "prismatic" and not t_
                            for k, t_ in zip(m.compiled.coord_joints, tree))
    expect = set() if has_prismatic_cut else \
        {int(i) for k, i in enumerate(ix) if tree[k // 2]}
    assert set(direct) == expect
    for i, (rate, p) in direct.items():
        assert out.value(i) == (qd if rate else q)[p]
