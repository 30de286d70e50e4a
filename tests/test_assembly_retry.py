"""The assembly's retry from the loops' least-squares closure, in Python
(fmu_mb.mechanics.assembly._closure_retry) and in the engine library's C assembly
(native/engine.c closure_retry): Levenberg-Marquardt on the loop rows from the same
deterministic starts (splitmix64), then Newton. Checked against:
- splitmix64's published reference outputs for the state 0;
- each other: cases where Newton from the tree placement fails (models/four_bar.py with its
  rocker lengthened to 0.7 m; a four-bar placed stretched out, where the tree placement is a
  stationary point of the loop's least squares and only a drawn start closes it; the suite's
  guessed four-bar of test_model_writing; a free body hung by two distance links) assemble in
  C to the state the Python assembly gives, to 1e-10, and the native FMU and the Python FMU
  in fmpy agree;
- the closed form of a loop that cannot close: a four-bar whose coupler is too long stays open
  by the distance the triangle inequality leaves, in both, and the state is kept.
"""
import math
import os
import shutil
import warnings

import numpy as np
import pytest

from fmu_mb import ModelBuilder
from fmu_mb.dynamics.integrate import Settings, initial_state
from fmu_mb.engine.engine import Engine
from fmu_mb.engine.params import program_for
from fmu_mb.errors import AssemblyError, InputError
from fmu_mb.mechanics import assembly
from fmu_mb.mechanics.loader import load_module

from conftest import MODELS

SETTINGS = Settings(formulation="recursive")

STRAIGHT = '''"""A four-bar placed stretched out along x (no guesses)."""
from fmu_mb import ModelBuilder, rod_inertia


def build(**overrides):
    mb = ModelBuilder("straight_four_bar", overrides, description=__doc__)
    a = mb.param("crank_length", 0.2, "m", "crank length", min=1e-9)
    b = mb.param("coupler_length", 0.5, "m", "coupler length", min=1e-9)
    c = mb.param("rocker_length", 0.4, "m", "rocker length", min=1e-9)
    d = mb.param("ground_length", 0.5, "m", "distance between the ground pivots", min=1e-9)
    theta0 = mb.param("theta0", 0.0, "rad", "initial crank angle")
    mb.gravity = (0.0, -9.81)
    crank = mb.body("crank", mass=0.4, inertia=rod_inertia(0.4, a))
    coupler = mb.body("coupler", mass=1.0, inertia=rod_inertia(1.0, b))
    rocker = mb.body("rocker", mass=0.8, inertia=rod_inertia(0.8, c))
    mb.revolute("A0", mb.ground, crank, parent_point=(0.0, 0.0), child_point=(-a / 2, 0.0))
    mb.revolute("A", crank, coupler, parent_point=(a / 2, 0.0), child_point=(-b / 2, 0.0))
    mb.revolute("B", coupler, rocker, parent_point=(b / 2, 0.0), child_point=(c / 2, 0.0))
    mb.revolute("B0", mb.ground, rocker, parent_point=(d, 0.0), child_point=(-c / 2, 0.0))
    mb.initial("A0", value=theta0)
    return mb.build()
'''


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    path = tmp_path_factory.mktemp("straight") / "straight_four_bar.py"
    path.write_text(STRAIGHT)
    return path


class Spy:
    """Counts the retries of the Python assembly, their successes and the starts tried."""

    def __init__(self, monkeypatch):
        self.retries, self.starts = [], 0
        retry, lm = assembly._closure_retry, assembly._closure_lm

        def spy_retry(*a, **k):
            out = retry(*a, **k)
            self.retries.append(out[0] is not None)
            return out

        def spy_lm(*a, **k):
            self.starts += 1
            return lm(*a, **k)

        monkeypatch.setattr(assembly, "_closure_retry", spy_retry)
        monkeypatch.setattr(assembly, "_closure_lm", spy_lm)


def _engine(module):
    data, prog = program_for(module, n_verify=1, n_wide=1)
    eng = Engine(blob=data.to_bytes(program=prog), name="retry")
    p0 = np.array([pp.value for pp in module.build().parameters], dtype=float)
    return eng, data.parameter_names, p0


def test_splitmix64_gives_the_reference_sequence():
    """The starts' generator: splitmix64 from state 0 (reference outputs of Vigna's C code)."""
    state, out = 0, []
    for _ in range(3):
        state, z = assembly._splitmix64(state)
        out.append(z)
    assert out == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


# (model, parameters, starts the Python retry tries: 1 = from the tree placement, 2 = the
# first drawn start too)
CLOSABLE = [("four_bar", {"rocker_length": 0.7}, 1),
            ("straight", {}, 2),
            ("straight", {"coupler_length": 0.45}, 2),
            ("straight", {"rocker_length": 0.3, "coupler_length": 0.45}, 2)]


@pytest.mark.parametrize("name, params, starts", CLOSABLE)
def test_the_native_engine_assembles_what_python_assembles(name, params, starts, straight,
                                                           monkeypatch):
    """Newton from the tree placement fails (the Python assembly retries, and succeeds); the C
    assembly of the engine with these parameters set gives the same q and qd to 1e-10 (the
    same loop branch: the four-bar has two)."""
    module = load_module(straight if name == "straight" else MODELS / f"{name}.py")
    eng, names, p0 = _engine(module)
    spy = Spy(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = initial_state(module.build(**params), SETTINGS)
    assert spy.retries == [True] and spy.starts == starts
    p = p0.copy()
    for k, v in params.items():
        p[names.index(k)] = v
    eng.set_parameters(p)
    eng.initialize()
    np.testing.assert_allclose(eng.state[1], ref.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(eng.state[2], ref.qd, rtol=0, atol=1e-10)


def _guessed_four_bar(guess):
    """tests/test_model_writing.py's four-bar (crank 0.5 at 1 rad, coupler 1.0, rocker 0.8,
    ground pivots 1.0 apart) with a guess of the coupler's joint A."""
    mb = ModelBuilder("fb", {}, gravity=(0.0, 0.0))
    a = mb.body("crank", mass=1.0, inertia=0.1)
    b = mb.body("coupler", mass=1.0, inertia=0.1)
    c = mb.body("rocker", mass=1.0, inertia=0.1)
    mb.revolute("O", mb.ground, a, child_point=(-0.25, 0.0))
    mb.revolute("A", a, b, parent_point=(0.25, 0.0), child_point=(-0.5, 0.0))
    mb.revolute("B", b, c, parent_point=(0.5, 0.0), child_point=(-0.4, 0.0))
    mb.revolute("C", mb.ground, c, parent_point=(1.0, 0.0), child_point=(0.4, 0.0))
    mb.initial("O", value=1.0)
    mb.initial("A", guess=guess)
    return mb.build()


@pytest.mark.parametrize("guess", [-0.5, 1.2])
def test_a_guess_newton_does_not_close_from(guess, monkeypatch):
    """The suite's cases of the retry (test_model_writing: Newton from these guesses does not
    converge): the engine's C assembly of the same model gives the same state to 1e-10."""
    spy = Spy(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _guessed_four_bar(guess)
        ref = initial_state(m, SETTINGS)
    assert spy.retries == [True]
    eng = Engine(m)
    eng.initialize()
    np.testing.assert_allclose(eng.state[1], ref.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(eng.state[2], ref.qd, rtol=0, atol=1e-10)


def _hung_bob(left, right):
    """A free body hung from two ground points 1 m apart by distance links, declared on the
    line between them: the links' rows are parallel there (Newton's steps and the least
    squares' gradient have no vertical part); a drawn start of its x, y, phi closes them."""
    mb = ModelBuilder("hung", {}, gravity=(0.0, -9.81))
    b = mb.body("bob", mass=1.0, inertia=0.01, position=(0.5, 0.0))
    mb.distance("left", mb.ground, b, length=left, parent_point=(0.0, 0.0),
                child_point=(0.0, 0.0))
    mb.distance("right", mb.ground, b, length=right, parent_point=(1.0, 0.0),
                child_point=(0.0, 0.0))
    return mb.build()


@pytest.mark.parametrize("left, right", [(0.8, 0.8), (0.6, 0.9)])
def test_a_free_body_in_a_loop_closes_on_the_same_side(left, right, monkeypatch):
    """A floating body's coordinates drawn as the tree's (C: the kernel's q of a free body):
    the same side of the line in both, the position the triangle gives (closed form), its
    declared angle kept (the links hold its centre: the drawn angle goes back)."""
    spy = Spy(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _hung_bob(left, right)
        ref = initial_state(m, SETTINGS)
    assert spy.retries == [True] and spy.starts == 2
    x = (left ** 2 - right ** 2 + 1.0) / 2.0
    np.testing.assert_allclose(np.abs(m.x0[:2]), [x, math.sqrt(left ** 2 - x ** 2)],
                               rtol=0, atol=1e-12)
    assert m.x0[2] == 0.0               # its declared angle: the loop does not involve it
    eng = Engine(m)
    eng.initialize()
    np.testing.assert_allclose(eng.state[1], ref.q, rtol=0, atol=1e-10)


def test_the_branch_follows_the_drawn_starts(straight, monkeypatch):
    """The stretched-out four-bar closes only from a drawn start; its two branches are mirror
    images (the coupler's angle changes sign): another start sequence may pick the other one,
    so agreeing on q is a check of the shared sequence, not of a unique answer."""
    module = load_module(straight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = initial_state(module.build(), SETTINGS).q
        mirror = []
        for seed_shift in range(1, 6):
            real = assembly._splitmix64

            def shifted(state, _s=seed_shift, _real=real):
                return _real((state + _s * 0x1234567) & assembly._MASK64)

            monkeypatch.setattr(assembly, "_splitmix64", shifted)
            mirror.append(initial_state(module.build(), SETTINGS).q)
            monkeypatch.setattr(assembly, "_splitmix64", real)
    assert any(np.abs(m - q).max() > 0.1 for m in mirror)
    for m in mirror:
        assert np.abs(np.abs(m) - np.abs(q)).max() < 1e-9      # the same two branches


def test_probing_does_not_draw_starts(straight):
    """probing() keeps the retry to the tree placement: the stretched-out four-bar, which only
    a drawn start closes, fails cheaply."""
    module = load_module(straight)
    with assembly.probing(), pytest.raises(AssemblyError, match="not diagnosed"):
        module.build()


# (model, parameters, gap: the distance the loop stays open at its best, closed form)
def _gap_coupler_too_long():
    # four_bar: the crank (0.1 m) at theta0 = 90 deg holds A at (0, 0.1), B0 is at (0.4, 0):
    # the coupler (0.72 m) and the rocker (0.3 m) cannot bring B nearer to both than
    # b - c - |A B0|
    return 0.72 - 0.3 - math.hypot(0.4, 0.1)


UNCLOSABLE = [("four_bar", {"coupler_length": 0.72}, _gap_coupler_too_long()),
              ("straight", {"ground_length": 1.2}, 1.2 - (0.2 + 0.5 + 0.4))]


@pytest.mark.parametrize("name, params, gap", UNCLOSABLE)
def test_a_loop_no_start_closes_fails_in_both(name, params, gap, straight):
    """Both refuse, naming the cut joint of the loop and the gap it keeps at its best closure
    (the closed form); the engine keeps its state."""
    module = load_module(straight if name == "straight" else MODELS / f"{name}.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssemblyError, match=rf"joint 'B' residual {gap:.3g}"):
            module.build(**params)
    eng, names, p0 = _engine(module)
    eng.initialize()
    before = eng.get_state()
    p = p0.copy()
    for k, v in params.items():
        p[names.index(k)] = v
    eng.set_parameters(p)
    with pytest.raises(InputError, match=rf"joint 'B' stays open by {gap:.3g} m even at its best"):
        eng.initialize()
    np.testing.assert_array_equal(eng.get_state(), before)


# ------------------------------------------------------------------ the two FMUs in fmpy
@pytest.mark.fmu
def test_the_native_fmu_assembles_what_the_python_fmu_assembles(tmp_path):
    """four_bar, both FMUs in fmpy: a coupler too long is refused by both (fmi2Error at
    fmi2ExitInitializationMode, still in initialisation mode); then a rocker of 0.7 m (Newton
    from the tree placement fails, the retry closes the loop) gives the same outputs at t0."""
    fmpy = pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
        pytest.skip("building native FMUs needs a C compiler")
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Slave

    from fmu_mb.fmi.build import build_fmu
    from fmu_mb.fmi.native_build import build_native_fmu

    outputs = {}
    for kind, build in (("native", build_native_fmu), ("python", build_fmu)):
        path = (build(MODELS / "four_bar.py", tmp_path / kind, platforms="linux64")
                if kind == "native" else build(MODELS / "four_bar.py", tmp_path / kind))
        md = fmpy.read_model_description(str(path))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        out = [v.name for v in md.modelVariables if v.causality == "output"
               and v.name.split(".")[-1] in ("x", "y", "phi", "angle", "vx", "vy", "omega",
                                             "rate")]
        f = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path), str(tmp_path / (
            kind + "_x"))), modelIdentifier=md.coSimulation.modelIdentifier,
            instanceName=kind)
        f.instantiate()
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        f.setReal([vr["coupler_length"]], [0.72])
        with pytest.raises(FMICallException) as exc:
            f.exitInitializationMode()
        assert exc.value.status == 3, kind                       # fmi2Error, not fatal
        f.setReal([vr["coupler_length"], vr["rocker_length"]], [0.35, 0.7])
        f.exitInitializationMode()
        outputs[kind] = dict(zip(out, f.getReal([vr[n] for n in out])))
        f.terminate()
        f.freeInstance()
    assert outputs["native"].keys() == outputs["python"].keys() and outputs["native"]
    for n, v in outputs["python"].items():
        assert abs(outputs["native"][n] - v) <= 1e-10, (n, outputs["native"][n], v)
