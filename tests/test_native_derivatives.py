"""Directional derivatives of the native FMU: fmi2GetDirectionalDerivative
computed in C by the engine (mbe_directional_derivative) and the states, der() variables and
dependencies declared in ModelStructure.

Checked against things that can disagree with it:
- fmu_mb.linearize (Python, the tmt formulation's minimal equations, Ridders) gives A, B, C, D
  of the double pendulum and of a slider-crank (a closed loop: coordinate partitioning);
  the FMU's Jacobian, taken column by column with fmpy's getDirectionalDerivative at the
  initial state and after a doStep, must agree to 1e-6 relative;
- the small-oscillation frequencies of two uniform rods (closed form, Lagrange's equations
  linearised by hand) from the eigenvalues of the FMU's A;
- central differences of doStep results over a short step for the input direction: the
  sensitivity of the state to a held input over h is (integral of e^{A s} B ds) to O(h^3)
  (the rates start at zero, so B does not change to first order over the step);
- fmpy validate on the modelDescription.xml (the Derivatives, derivative= and dependencies);
- the declared dependencies against the nonzero entries of the FMU's own Jacobian;
- refusals: unknown value references, a known that is neither a state nor an input, an
  unknown that is not an output or a derivative, a call before initialisation, a non-finite
  seed: fmi2Error with a logged message, and the state kept.
"""
import os
import shutil
import zipfile

import numpy as np
import pytest
from scipy import linalg as sla

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")
if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
    pytest.skip("building native FMUs needs a C compiler", allow_module_level=True)

from fmpy import extract, fmi2, read_model_description  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

import fmu_mb  # noqa: E402

from conftest import MODELS  # noqa: E402


class Fmu:
    def __init__(self, path, folder):
        self.path = path
        self.dir = extract(str(path), str(folder))
        self.md = read_model_description(str(path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.states = [d.variable.derivative.name for d in self.md.derivatives]
        self.ders = [d.variable.name for d in self.md.derivatives]
        self.inputs = [v.name for v in self.md.modelVariables if v.causality == "input"]
        self.messages = []

    def slave(self, params=None, start=True):
        def log(env, name, status, category, message):
            self.messages.append((status, message.decode("utf-8", "replace")))

        cb = fmi2.fmi2CallbackFunctions()
        cb.logger = fmi2.fmi2CallbackLoggerTYPE(log)
        cb.allocateMemory = fmi2.defaultCallbacks.allocateMemory
        cb.freeMemory = fmi2.defaultCallbacks.freeMemory
        s = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                      modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="d")
        s.instantiate(callbacks=cb, loggingOn=False)
        s._keep = (cb, log)
        if start:
            s.setupExperiment(startTime=0.0)
            s.enterInitializationMode()
            for k, v in (params or {}).items():
                s.setReal([self.vr[k]], [v])
            s.exitInitializationMode()
        return s

    def jacobian(self, s, unknowns, knowns):
        """d unknowns / d knowns, one getDirectionalDerivative per column."""
        uv, kv = [self.vr[n] for n in unknowns], [self.vr[n] for n in knowns]
        cols = [s.getDirectionalDerivative(uv, kv, list(e)) for e in np.eye(len(kv))]
        return np.array(cols).T.reshape(len(uv), len(kv))


@pytest.fixture(scope="module")
def native(tmp_path_factory, shared_fmu):
    """native(name) -> Fmu of models/<name>.py (built once per run: conftest's shared_fmu)."""
    out = tmp_path_factory.mktemp("native_derivatives")
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Fmu(shared_fmu(MODELS / f"{name}.py", "native"), out / f"{name}_x")
        return cache[name]
    return get


def _rods_closed_form(m1, m2, l1, l2, g):
    """Small-oscillation frequencies [Hz] of two uniform rods hanging from a pivot: Lagrange's
    equations in the absolute angles, linearised by hand."""
    M = np.array([[m1 * l1 ** 2 / 3 + m2 * l1 ** 2, m2 * l1 * l2 / 2],
                  [m2 * l1 * l2 / 2, m2 * l2 ** 2 / 3]])
    K = np.diag([(m1 / 2 + m2) * g * l1, m2 * g * l2 / 2])
    return np.sqrt(sla.eigh(K, M, eigvals_only=True)) / (2 * np.pi)


def _rel(a, b):
    return np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0))


# ---------------------------------------------------------------------- the declaration
@pytest.mark.parametrize("name", ["double_pendulum", "slider_crank", "heavy_top",
                                  "double_wishbone"])
def test_model_structure_declared(native, name):
    fmu = native(name)
    assert validate_fmu(str(fmu.path)) == []
    assert fmu.md.coSimulation.providesDirectionalDerivative
    lin = fmu_mb.linearize(fmu_mb.load_model(MODELS / f"{name}.py"))
    assert tuple(fmu.states) == lin.x_names
    from fmu_mb.fmi.native_build import _derivative_name       # der(<x>) or der(<x>,2)
    assert fmu.ders == [_derivative_name(n) for n in lin.x_names]
    for d in fmu.md.derivatives:
        assert d.variable.causality == "local" and d.variable.variability == "continuous"
        assert d.variable.derivative.variability == "continuous"
    assert {u.variable.name for u in fmu.md.initialUnknowns} >= set(fmu.ders)


@pytest.mark.parametrize("name", ["double_pendulum", "slider_crank", "heavy_top",
                                  "double_wishbone"])
def test_declared_dependencies_cover_the_jacobian(native, name):
    """Every nonzero entry of the FMU's Jacobian (at the initial state and after a step) is a
    declared dependency, and every output's declared dependency is a state or an input."""
    fmu = native(name)
    knowns = fmu.states + fmu.inputs
    outs = [u for u in fmu.md.outputs if u.dependencies is not None
            and u.variable.type == "Real"]
    rows = [(d.variable.name, d.dependencies) for d in fmu.md.derivatives] + \
        [(u.variable.name, u.dependencies) for u in outs]
    s = fmu.slave()
    try:
        for step in (False, True):
            if step:
                s.doStep(0.0, 0.05)
            J = fmu.jacobian(s, [r[0] for r in rows], knowns)
            for (name_, deps), row in zip(rows, J):
                declared = {v.name for v in deps}
                assert declared <= set(knowns), name_
                big = 1e-8 * (1.0 + np.abs(row).max())
                used = {k for k, v in zip(knowns, row) if abs(v) > big}
                assert used <= declared, (name_, used - declared)
    finally:
        s.terminate()
        s.freeInstance()


# ---------------------------------------------------------------------- against linearize
@pytest.mark.parametrize("name", ["double_pendulum", "slider_crank", "heavy_top",
                                  "double_wishbone"])
def test_directional_derivatives_reproduce_linearize(native, name):
    fmu = native(name)
    model = fmu_mb.load_model(MODELS / f"{name}.py")
    s = fmu.slave()
    try:
        for step in (0.0, 0.05):
            if step:
                s.doStep(0.0, step)
                x = s.getReal([fmu.vr[n] for n in fmu.states])
                lin = fmu_mb.linearize(model, dict(zip(fmu.states, x)), None,
                                       independent=fmu_mb.linearize(model).independent)
                assert lin.x0 == pytest.approx(x, abs=1e-12)
            else:
                lin = fmu_mb.linearize(model)
            f2 = len(fmu.states)
            J = fmu.jacobian(s, fmu.ders + list(lin.y_names), fmu.states + fmu.inputs)
            A, B = J[:f2, :f2], J[:f2, f2:]
            C, D = J[f2:, :f2], J[f2:, f2:]
            assert _rel(A, lin.A) < 1e-6
            assert _rel(B, lin.B) < 1e-6
            assert _rel(C, lin.C) < 1e-6
            assert _rel(D, lin.D) < 1e-6
            # the state derivatives' values: der(q_i) = qd_i, der(qd_i) = linearize's xdot
            xdot = s.getReal([fmu.vr[n] for n in fmu.ders])
            np.testing.assert_allclose(xdot, lin.xdot0, rtol=1e-9, atol=1e-9)
    finally:
        s.terminate()
        s.freeInstance()


def test_spatial_states_are_three_euler_parameters_and_the_rates():
    """A spatial model's states (native_build._linear_structure): of a spherical joint's four
    Euler parameters three are states and the fourth follows from the normalisation; a
    floating body held by five links (seven coordinates r, p, one degree of freedom) has one
    coordinate and its rate."""
    ms = fmu_mb.model_structure(fmu_mb.load_model(MODELS / "heavy_top.py"))
    assert len(ms["states"]) == 6
    assert sum(s.startswith("pivot.e") for s in ms["states"]) == 3
    ms = fmu_mb.model_structure(fmu_mb.load_model(MODELS / "five_point_suspension.py"))
    assert len(ms["states"]) == 2 and ms["states"][0].startswith("carrier.")


def test_double_wishbone_modes_from_the_fmu(native):
    """The double wishbone's modes (wheel hop and the carrier's wind-up against the rack)
    from the eigenvalues of the native FMU's A equal linearize()'s: frequency and damping to
    1e-6 relative."""
    fmu = native("double_wishbone")
    model = fmu_mb.load_model(MODELS / "double_wishbone.py")
    lin = fmu_mb.linearize(model)
    s = fmu.slave()
    try:
        A = fmu.jacobian(s, fmu.ders, fmu.states)
    finally:
        s.terminate()
        s.freeInstance()
    mine = np.linalg.eigvals(A)
    mine = mine[mine.imag > 1e-3]
    ref = np.array([m.eigenvalue for m in lin.modes() if m.eigenvalue.imag > 1e-3])
    assert len(mine) == len(ref) >= 2
    mine, ref = mine[np.argsort(np.abs(mine))], ref[np.argsort(np.abs(ref))]
    np.testing.assert_allclose(np.abs(mine), np.abs(ref), rtol=1e-6)      # frequencies
    np.testing.assert_allclose(-mine.real / np.abs(mine), -ref.real / np.abs(ref),
                               rtol=1e-6, atol=1e-9)                        # damping ratios


def test_double_pendulum_frequencies_from_the_fmu(native):
    """The eigenvalues of the FMU's A at the hanging pose (phi1 = phi2 = 0, set as
    parameters) are +-i 2 pi f of the two-rod closed form."""
    fmu = native("double_pendulum")
    s = fmu.slave({"phi1": 0.0, "phi2": 0.0, "m1": 2.0, "l2": 0.8})
    try:
        A = fmu.jacobian(s, fmu.ders, fmu.states)
    finally:
        s.terminate()
        s.freeInstance()
    lam = np.linalg.eigvals(A)
    assert np.abs(lam.real).max() < 1e-6 * np.abs(lam).max()
    freq = np.sort(np.abs(lam.imag[lam.imag > 0])) / (2 * np.pi)
    ref = _rods_closed_form(2.0, 1.0, 0.55, 0.8, 9.81)
    np.testing.assert_allclose(freq, ref, rtol=1e-6)


@pytest.mark.parametrize("name", ["double_pendulum", "slider_crank"])
def test_input_direction_against_central_differences_of_do_step(native, name):
    """d x(h) / d u over one step of h with the inputs held, by central differences of two
    doStep runs, against the FMU's A and B: the sensitivity S' = A S + B, S(0) = 0, gives
    S(h) = h/2 (e^{A h} B(0) + B(h)) + O(h^3) (the trapezoidal rule of its variation of
    constants, with B(h) the FMU's B after the step)."""
    fmu = native(name)
    h, du = 5e-5, 1e-2               # truncation O(h^2) relative: 3e-7 for the slider-crank
    xs = []
    for sign in (1.0, -1.0):
        s = fmu.slave({"solver.rtol": 1e-12, "solver.atol": 1e-12})
        try:
            if sign > 0:
                J0 = fmu.jacobian(s, fmu.ders, fmu.states + fmu.inputs)
            u_vr = [fmu.vr[n] for n in fmu.inputs]
            s.setReal(u_vr, [sign * du] * len(u_vr))
            s.doStep(0.0, h)
            xs.append(np.array(s.getReal([fmu.vr[n] for n in fmu.states])))
            if sign > 0:
                J1 = fmu.jacobian(s, fmu.ders, fmu.states + fmu.inputs)
        finally:
            s.terminate()
            s.freeInstance()
    f2 = len(fmu.states)
    A0 = J0[:, :f2]
    B0, B1 = J0[:, f2:].sum(axis=1), J1[:, f2:].sum(axis=1)      # all inputs moved together
    fd = (xs[0] - xs[1]) / (2 * du)
    expected = h / 2 * (sla.expm(A0 * h) @ B0 + B1)
    assert np.abs(expected).max() > 1e-7
    assert np.abs(fd - expected).max() < 1e-6 * np.abs(expected).max()


# ---------------------------------------------------------------------- refusals
def _refused(fmu, s, unknowns, knowns, seed, text):
    fmu.messages.clear()
    with pytest.raises(FMICallException):
        s.getDirectionalDerivative(unknowns, knowns, seed)
    errors = [m for st, m in fmu.messages if st == 3]
    assert errors and text in errors[-1], fmu.messages


def test_refusals(native):
    fmu = native("double_pendulum")
    der, st = fmu.vr[fmu.ders[2]], fmu.vr[fmu.states[0]]
    s = fmu.slave(start=False)
    try:
        _refused(fmu, s, [der], [st], [1.0], "not allowed in state")
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        before = s.getReal([fmu.vr[n] for n in fmu.states + fmu.ders])
        n_vars = len(fmu.md.modelVariables)
        _refused(fmu, s, [n_vars + 5], [st], [1.0], "does not exist")
        _refused(fmu, s, [der], [n_vars + 5], [1.0], "does not exist")
        _refused(fmu, s, [der], [fmu.vr["m1"]], [1.0], "neither a state nor an input")
        _refused(fmu, s, [der], [fmu.vr["rod1.x"]], [1.0], "neither a state nor an input")
        _refused(fmu, s, [fmu.vr["m1"]], [st], [1.0], "neither a Real output nor a state "
                 "derivative")
        _refused(fmu, s, [der], [st], [float("nan")], "expected a finite value")
        assert s.getReal([fmu.vr[n] for n in fmu.states + fmu.ders]) == before
        # the FMU goes on: a valid call and a step after the refusals
        assert np.isfinite(s.getDirectionalDerivative([der], [st], [1.0])).all()
        s.doStep(0.0, 0.01)
    finally:
        s.terminate()
        s.freeInstance()


def test_fmi3_directional_derivatives(tmp_path):
    """The native FMI 3.0 FMU shares fmi2_native.c's directional derivatives: the
    slider-crank's A and B in fmpy's FMU3Slave against linearize; ContinuousStateDerivative
    declared; the independent variable refused as a known with a logged message."""
    from fmpy.fmi3 import FMU3Slave

    from fmu_mb.fmi.native_fmi3 import build_native_fmu3

    path = build_native_fmu3(MODELS / "slider_crank.py", tmp_path, platforms="linux64")
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    with zipfile.ZipFile(path) as z:
        xml = z.read("modelDescription.xml").decode()
    assert 'providesDirectionalDerivatives="true"' in xml
    vr = {v.name: v.valueReference for v in md.modelVariables}
    ders = [d.variable.name for d in md.derivatives]
    states = [d.variable.derivative.name for d in md.derivatives]
    inputs = [v.name for v in md.modelVariables if v.causality == "input"]
    lin = fmu_mb.linearize(fmu_mb.load_model(MODELS / "slider_crank.py"))
    assert tuple(states) == lin.x_names
    messages = []

    def log(env, status, category, message):
        messages.append((status, message.decode("utf-8", "replace")))

    s = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(path), str(tmp_path / "x")),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="d3")
    s.instantiate(logMessage=log)
    try:
        s.enterInitializationMode(startTime=0.0)
        s.exitInitializationMode()
        kv = [vr[n] for n in states + inputs]
        J = np.array([s.getDirectionalDerivative([vr[n] for n in ders], kv, list(e))
                      for e in np.eye(len(kv))]).T
        f2 = len(states)
        assert _rel(J[:, :f2], lin.A) < 1e-6
        assert _rel(J[:, f2:], lin.B) < 1e-6
        with pytest.raises(Exception):
            s.getDirectionalDerivative([vr[ders[0]]], [vr["time"]], [1.0])
        assert "independent variable time" in messages[-1][1]
    finally:
        s.terminate()
        s.freeInstance()


@pytest.mark.parametrize("name", ["four_bar", "container_crane_driven", "n_four_bar"])
def test_engine_call_in_process_against_linearize(name):
    """mbe_directional_derivative through ctypes (fmu_mb.engine.engine.Engine): a four-bar, a
    crane whose trolley is driven (its coordinate dependent through the drive's row) and
    the redundant N-four-bar, against linearize's [A B; C D]; the engine's state unchanged."""
    from fmu_mb.dynamics.formulations import tmt
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.engine.engine import Engine

    model = fmu_mb.load_model(MODELS / f"{name}.py")
    e = Engine(model)
    e.initialize(0.0)
    lin = fmu_mb.linearize(model)
    coords = list(tmt.coordinates(model))
    ind = [coords.index(k) for k in lin.independent]
    f, nu = len(ind), e.n_inputs
    outs = list(output_names(model))
    unknown = list(range(2 * f)) + [2 * f + outs.index(y) for y in lin.y_names]
    before = e.get_state()
    J = np.column_stack([e.directional_derivative(ind, [j], [1.0], unknown)
                         for j in range(2 * f + nu)])
    np.testing.assert_array_equal(e.get_state(), before)
    assert _rel(J[:2 * f, :2 * f], lin.A) < 1e-6
    assert _rel(J[:2 * f, 2 * f:], lin.B) < 1e-6
    assert _rel(J[2 * f:, :2 * f], lin.C) < 1e-6
    assert _rel(J[2 * f:, 2 * f:], lin.D) < 1e-6
    np.testing.assert_allclose(e.state_derivatives(ind), lin.xdot0, rtol=1e-9, atol=1e-9)
    # a seed along two knowns at once is the sum of the two columns
    both = e.directional_derivative(ind, [0, 2 * f - 1], [2.0, -0.5], unknown)
    assert _rel(both, 2.0 * J[:, 0] - 0.5 * J[:, 2 * f - 1]) < 1e-6


def test_engine_call_refusals():
    from fmu_mb.engine.engine import Engine
    from fmu_mb.errors import InputError

    e = Engine(fmu_mb.load_model(MODELS / "double_pendulum.py"))
    with pytest.raises(InputError, match="not initialized"):
        e.directional_derivative([0, 1], [0], [1.0], [2])
    e.initialize(0.0)
    with pytest.raises(InputError, match="known 0 is 9"):
        e.directional_derivative([0, 1], [9], [1.0], [2])
    with pytest.raises(InputError, match="unknown 0 is -1"):
        e.directional_derivative([0, 1], [0], [1.0], [-1])
    with pytest.raises(InputError, match="repeated"):
        e.directional_derivative([0, 0], [0], [1.0], [2])
    spatial = Engine(fmu_mb.load_model(MODELS / "heavy_top.py"))
    spatial.initialize(0.0)
    before = spatial.get_state()
    # e0 independent and e1..e3 dependent at p = (1, 0, 0, 0): the normalisation's Jacobian
    # over e1..e3 vanishes there, so the closure is singular and the call is refused
    with pytest.raises(InputError, match="cannot be closed"):
        spatial.directional_derivative([0], [0], [1.0], [0])
    with pytest.raises(InputError, match="out of range"):
        spatial.directional_derivative([1, 2, 7], [0], [1.0], [0])
    np.testing.assert_array_equal(spatial.get_state(), before)


@pytest.mark.parametrize("name", ["five_point_suspension", "bricard"])
def test_engine_spatial_derivatives_equal_linearize(name):
    """The engine's directional derivatives in process (no FMU) on the other spatial
    models: a floating body held by five links (its 7 coordinates r, p: one degree of
    freedom, the rest from the closure, the normalisation among the rows) and Bricard's
    overconstrained loop; A, B, C, D against linearize to 1e-6 relative."""
    from fmu_mb.dynamics.formulations import tmt
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.engine.engine import Engine

    model = fmu_mb.load_model(MODELS / f"{name}.py")
    lin = fmu_mb.linearize(model)
    coords = list(tmt.coordinates(model))
    ind = [coords.index(k) for k in lin.independent]
    f = len(ind)
    eng = Engine(model)
    eng.initialize()
    names = output_names(model)
    unknown = list(range(2 * f)) + [2 * f + names.index(y) for y in lin.y_names]
    nz = 2 * f + len(lin.u0)
    J = np.array([eng.directional_derivative(ind, [j], [1.0], unknown, lin.u0)
                  for j in range(nz)]).T
    assert _rel(J[:2 * f, :2 * f], lin.A) < 1e-6
    assert _rel(J[:2 * f, 2 * f:], lin.B) < 1e-6
    assert _rel(J[2 * f:, :2 * f], lin.C) < 1e-6
    assert _rel(J[2 * f:, 2 * f:], lin.D) < 1e-6
    xdot = eng.state_derivatives(ind, lin.u0)
    np.testing.assert_allclose(xdot, lin.xdot0, rtol=1e-9, atol=1e-9)


def test_engine_heavy_top_derivatives_along_its_spin_equal_linearize():
    """The heavy top spins at 60 rad/s, so its relative Euler parameters sweep the unit
    sphere while its states stay e1, e2, e3 (e0 from the normalisation): along 0.1 s the
    engine's A equals linearize's (same partition pinned, the same first steps per known)
    wherever |e0| > 0.3; closer to e0 = 0 the partition is ill-conditioned for both
    (README, Linearization)."""
    from fmu_mb.dynamics.state import State
    from fmu_mb.engine.engine import Engine

    model = fmu_mb.load_model(MODELS / "heavy_top.py")
    eng = Engine(model)
    eng.initialize()
    u = np.zeros(len(model.inputs))
    ind, names = [1, 2, 3], ("pivot.e1", "pivot.e2", "pivot.e3")
    checked = 0
    for _ in range(20):
        eng.do_step(0.005, u)
        t, q, qd, _ = eng.state
        if abs(q[0]) <= 0.3:
            continue
        A = np.array([eng.directional_derivative(ind, [j], [1.0], list(range(6)), u)
                      for j in range(6)]).T
        lin = fmu_mb.linearize(model, State(t, q, qd, 0.0, "joint"), u, independent=names)
        assert _rel(A, lin.A) < 1e-6, t
        checked += 1
    assert checked >= 8


def test_engine_partly_driven_spatial_arm_derivatives_equal_linearize():
    """models/driven_arm.py with its elbow on a torsion spring instead of a drive: the
    waist's and the shoulder's drive rows (time-varying, phi_t = -s'(t)) are among the rows
    that fix the dependent coordinates, and the elbow is the state; A and C against
    linearize at t0 and at 0.3 s, to 1e-6 relative."""
    from fmu_mb import ModelBuilder, constant_rate, harmonic
    from fmu_mb.dynamics.formulations import tmt
    from fmu_mb.dynamics.outputs import output_names
    from fmu_mb.dynamics.state import State
    from fmu_mb.engine.engine import Engine

    mb = ModelBuilder("arm2", gravity=(0.0, 0.0, -9.81))
    base = mb.body("base", mass=30.0, inertia=(0.4, 0.4, 0.6), position=(0.0, 0.0, 0.25))
    upper = mb.body("upper", mass=20.0, inertia=(0.05, 1.35, 1.35), position=(0.45, 0.0, 0.5))
    fore = mb.body("fore", mass=12.0, inertia=(0.03, 0.64, 0.64), position=(1.3, 0.0, 0.5))
    mb.revolute("waist", mb.ground, base, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.revolute("shoulder", base, upper, at=(0.0, 0.0, 0.5), axis=(0.0, -1.0, 0.0))
    mb.revolute("elbow", upper, fore, at=(0.9, 0.0, 0.5), axis=(0.0, -1.0, 0.0))
    mb.rsda("elbow_spring", joint="elbow", stiffness=400.0, damping=5.0)
    mb.drive("waist_drive", "waist", constant_rate(0.6))
    mb.drive("shoulder_drive", "shoulder", harmonic(0.5, 0.3))
    model = mb.build()
    lin = fmu_mb.linearize(model)
    assert lin.independent == ("elbow.angle",)
    coords = list(tmt.coordinates(model))
    ind = [coords.index(k) for k in lin.independent]
    names = output_names(model)
    unknown = [0, 1] + [2 + names.index(y) for y in lin.y_names]
    eng = Engine(model)
    eng.initialize()
    for k in range(2):
        if k:
            for _ in range(3):
                eng.do_step(0.1)
            t, q, qd, _ = eng.state
            lin = fmu_mb.linearize(model, State(t, q, qd, 0.0, "joint"),
                                   independent=lin.independent)
        J = np.array([eng.directional_derivative(ind, [j], [1.0], unknown)
                      for j in range(2)]).T
        assert _rel(J[:2], lin.A) < 1e-6
        assert _rel(J[2:], lin.C) < 1e-6
