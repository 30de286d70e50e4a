"""The parameter compiler is sound: a parameter set that a native FMU's
compiled program does not reproduce exactly is refused (fmi2Error naming the parameter),
never run with wrong numbers. Each case is checked against the model built in Python with
the same values (build(**values)): the FMU's outputs equal the in-process engine's on that
model, or the FMU refuses the values. Also the default build's choice of FMU kind (the kind
that can start the model)."""
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fmpy_logger import restore_fmpy_logger
from fmu_mb.engine.kernel import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler for the engine")
fmpy = pytest.importorskip("fmpy")

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"

#: a wall on the side np.sign(side) and an initial rate of that sign (side = -1
#: once ran the default side, a reaction off by 13.9 N and a rate of the wrong sign)
SIGN_WALL = '''
    """A rod pendulum; the wall and the initial rate are placed by np.sign(side)."""
    import numpy as np

    from fmu_mb import ModelBuilder, rod_inertia


    def build(**overrides):
        mb = ModelBuilder("sign_wall", overrides, description=__doc__)
        side = mb.param("side", 1.0, "1", "which side the wall is on", min=-1.0, max=1.0)
        l = mb.param("l", 1.0, "m", "rod length", min=0.1)
        s = np.sign(side)
        rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, l))
        mb.revolute("O", mb.ground, rod, child_point=(-l / 2, 0.0), angle0=-np.pi / 2)
        mb.contact("wall", rod, (l / 2, 0.0), line_point=(s * 0.3, 0.0), normal=(-s, 0.0),
                   restitution=0.5)
        mb.initial("O", value=0.0, rate=2.0 * s)
        return mb.build()
'''

#: the restitution snapped to 1 near 1 by math.isclose (e = 0.99 once ran e = 0.5)
ISCLOSE_E = '''
    """A pendulum striking a wall with restitution 1.0 if math.isclose(e, 1.0) else e."""
    import math

    from fmu_mb import ModelBuilder, rod_inertia


    def build(**overrides):
        mb = ModelBuilder("isclose_e", overrides, description=__doc__)
        e = mb.param("e", 0.5, "1", "restitution", min=0.0, max=1.0)
        e_used = 1.0 if math.isclose(e, 1.0, abs_tol=0.02) else e
        rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
        mb.revolute("O", mb.ground, rod, child_point=(-0.5, 0.0), angle0=-math.pi / 2)
        mb.contact("wall", rod, (0.5, 0.0), normal=(1.0, 0.0), restitution=e_used)
        mb.initial("O", value=1.0, rate=0.0)
        return mb.build()
'''


def write(tmp_path, name, text):
    path = Path(tmp_path) / f"{name}.py"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    """native(path) -> path of the native FMU of a model file (built once)."""
    from fmu_mb.fmi.native_build import build_native_fmu
    out = tmp_path_factory.mktemp("sound")
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = build_native_fmu(path, out / Path(path).stem, platforms="linux64")
        return cache[path]
    return get


def reference(path, values, names, stop, h):
    """The in-process engine on the model built with `values` (build(**values)): the
    outputs `names` at every communication point, as the FMU steps."""
    from fmu_mb.dynamics.integrate import Settings
    from fmu_mb.dynamics.outputs import output_spec
    from fmu_mb.engine.engine import Engine
    from fmu_mb.mechanics.loader import call_build, load_module
    model = call_build(load_module(Path(path)), Path(path), **values)
    eng = Engine(model)
    eng.set_settings(Settings())
    eng.initialize(model.t0)
    spec = [o.name for o in output_spec(model)]
    cols = [spec.index(n) for n in names]
    rows = [eng.outputs()[cols]]
    for _ in range(int(round(stop / h))):
        eng.do_step(h)
        rows.append(eng.outputs()[cols])
    return np.array(rows)


def refused_or_equal(fmu, path, values, stop=0.3, h=0.01):
    """'refused' (with the log's error lines) or 'equal': the native FMU at `values` either
    refuses them at initialisation or gives the outputs of build(**values) to 1e-12."""
    md = fmpy.read_model_description(str(fmu))
    names = [v.name for v in md.modelVariables if v.causality == "output"]
    log = []

    def logger(component, instance, status, category, message):
        log.append((status, message.decode("utf-8", "replace")))
    try:
        r = fmpy.simulate_fmu(str(fmu), stop_time=stop, output_interval=h, step_size=h,
                              start_values=values, output=names, logger=logger)
    except Exception:       # noqa: BLE001 - fmpy's FMICallException: an error status
        return "refused", [m for s, m in log if s >= 3]
    finally:
        restore_fmpy_logger()     # (fmpy's proxy would call this test's logger after)
    got = np.array([r[n] for n in names]).T
    ref = reference(path, values, names, stop, h)
    assert got.shape == ref.shape
    scale = np.maximum(1.0, np.abs(ref))
    assert np.all(np.abs(got - ref) <= 1e-12 * scale), \
        f"{values}: the FMU ran with OK status and differs from build(**values) by " \
        f"{np.max(np.abs(got - ref) / scale):.3g}"
    return "equal", []


def test_np_sign_of_a_parameter_is_a_guard(tmp_path, native):
    path = write(tmp_path, "sign_wall", SIGN_WALL)
    fmu = native(path)
    assert refused_or_equal(fmu, path, {"side": 0.5})[0] == "equal"
    got, errors = refused_or_equal(fmu, path, {"side": -1.0})
    assert got == "refused" and any("side=-1" in m and "--set side=-1" in m
                                    for m in errors), errors


def test_math_isclose_of_a_parameter_is_a_guard(tmp_path, native):
    path = write(tmp_path, "isclose_e", ISCLOSE_E)
    fmu = native(path)
    assert refused_or_equal(fmu, path, {"e": 0.7})[0] == "equal"
    got, errors = refused_or_equal(fmu, path, {"e": 0.99})
    assert got == "refused" and any("e=0.99" in m for m in errors), errors


def test_heavy_top_inertia_check_is_a_guard_with_builds_message(native):
    """heavy_top with C = 0.01 > 2 A (and A = 6e-9): build() raises ModelError (the inertia
    breaks the triangle inequality); the native FMU refuses with that message at
    fmi2ExitInitializationMode (fmi2Error), and the instance keeps its state: the same
    instance then runs the default values."""
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Slave
    from fmu_mb import ModelError
    from fmu_mb.mechanics.loader import call_build, load_module
    path = MODELS / "heavy_top.py"
    module = load_module(path)
    with pytest.raises(ModelError) as info:
        call_build(module, path, C=0.01)
    expected = "body 'top': " + str(info.value).split("body 'top': ")[1].split(", received")[0]
    assert "triangle inequality" in expected
    fmu = native(path)
    for values in ({"C": 0.01}, {"A": 6e-9}):
        got, errors = refused_or_equal(fmu, path, values, stop=0.05)
        assert got == "refused" and any(expected in m for m in errors), errors
    # the model file's own check (raise ModelError under `if disc < 0:`): its message
    with pytest.raises(ModelError, match="no steady precession"):
        call_build(module, path, omega3=1.0)
    got, errors = refused_or_equal(fmu, path, {"omega3": 1.0}, stop=0.05)
    assert got == "refused" and any("no steady precession" in m and "omega3=1" in m
                                    for m in errors), errors
    # one instance: refused, then the defaults back, then a step (state intact)
    md = fmpy.read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    d = fmpy.extract(str(fmu))
    s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="top")
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.setReal([vr["C"]], [0.01])
    with pytest.raises(FMICallException, match="status 3"):
        s.exitInitializationMode()
    s.setReal([vr["C"]], [0.006])
    s.exitInitializationMode()
    s.doStep(0.0, 0.01)
    assert np.all(np.isfinite(s.getReal([vr[v.name] for v in md.modelVariables
                                         if v.causality == "output"])))
    s.terminate()
    s.freeInstance()


# ---------------------------------------------------------------------- the kind
DISTANCE_PENDULUM = '''
    """Pendulum A01 whose rod is a massless distance link to the bob (the bob alone has no
    rotational inertia: the compiled engine's articulated inertia is singular)."""
    from fmu_mb import ModelBuilder


    def build(**overrides):
        mb = ModelBuilder("distance_pendulum", overrides, description=__doc__)
        l = mb.param("l", 1.0, "m", "rod length", min=1e-6)
        bob = mb.body("bob", mass=1.0, inertia=0.0, position=(l * 0.6, -l * 0.8))
        mb.distance("rod", mb.ground, bob, length=l)
        return mb.build()
'''


@pytest.mark.parametrize("case", ["singular_pendulum_classical", "distance_pendulum"])
def test_default_build_chooses_the_kind_that_starts(tmp_path, case):
    """The default build tries the native initialisation at build time: a model the compiled
    engine refuses at initialisation ("articulated inertia is singular") becomes a Python
    FMU, with the reason in one line; the native FMU of it indeed refuses to start."""
    pytest.importorskip("pythonfmu")
    from fmu_mb.fmi.native_build import build_model_fmu, build_native_fmu
    if case == "distance_pendulum":
        path, overrides = write(tmp_path, case, DISTANCE_PENDULUM), {}
    else:
        path, overrides = MODELS / "singular_pendulum.py", {"method": "classical"}
    fmu, kind, why = build_model_fmu(path, tmp_path / "default", overrides)
    assert kind == "python" and "articulated inertia is singular" in why, why
    assert "\n" not in why
    native_fmu = build_native_fmu(path, tmp_path / "native", overrides, platforms="linux64")
    with pytest.raises(Exception, match="status 3"):
        fmpy.simulate_fmu(str(native_fmu), stop_time=0.01)
    r = fmpy.simulate_fmu(str(fmu), stop_time=0.01, output_interval=0.005)
    assert r["time"][-1] == pytest.approx(0.01)


def test_default_build_stays_native_for_a_model_that_starts(tmp_path):
    from fmu_mb.fmi.native_build import build_model_fmu
    fmu, kind, why = build_model_fmu(MODELS / "double_pendulum.py", tmp_path)
    assert kind == "native", why


# ---------------------------------------------------------------------- every read path
#: ways in which a model file reads a parameter's value x (default 0.7, range [-2, 2]):
#: (expression, "guard" when it becomes a guard, "fixed" when x becomes fixed)
READS = [
    ("float(x)", "fixed"), ("np.float64(x)", "fixed"), ("round(x, 1)", "fixed"),
    ("math.fmod(x, 0.5)", "fixed"), ("x % 0.5", "fixed"), ("x // 0.5", "fixed"),
    ("float(f'{x:.2f}')", "fixed"), ("float(str(x))", "fixed"), ("math.fsum([x, 0.1])", "fixed"),
    ("math.erf(x)", "fixed"), ("np.heaviside(x, 0.5)", "fixed"), ("x.is_integer()", "fixed"),
    ("math.hypot(x, 1.0, 2.0)", "fixed"),
    ("np.round(x, 1)", "fixed"),
    ("np.sign(x)", "guard"), ("int(x)", "guard"), ("math.floor(x)", "guard"),
    ("math.ceil(x)", "guard"), ("round(x)", "guard"), ("np.floor(x)", "guard"),
    ("np.rint(x)", "guard"), ("np.clip(x, 0.0, 1.0)", "guard"), ("max(x, 0.5)", "guard"),
    ("np.maximum(x, 0.5)", "guard"), ("np.minimum(x, 0.5)", "guard"),
    ("1.0 if math.isclose(x, 0.7, abs_tol=0.1) else x", "guard"),
    ("1.0 if np.isclose(x, 0.7, atol=0.1) else x", "guard"),
    ("np.where(x > 0.5, x, 2.0)", "guard"), ("math.copysign(1.0, x)", "guard"),
    ("np.copysign(2.0, x)", "guard"), ("sorted([x, 0.5])[0]", "guard"),
    ("abs(x) if x else 1.0", "guard"), ("np.sign(np.array([x, 1.0]))[0]", "guard"),
    ("math.trunc(x)", "guard"), ("isclose(x, 0.7, abs_tol=0.1) * 1.0", "guard"),
    ("1.0 if math.isfinite(np.exp(400.0 * x)) else 2.0", "guard"),
    ("1.0 if not np.isinf(np.exp(400.0 * x)) else 2.0", "guard"),
    # traced: numpy arrays of a model file hold the Syms (object arrays)
    ("np.asarray([x, 1.0], dtype=float)[0]", "traced"), ("np.hypot(x, 1.0)", "traced"),
]


def _reading(expr):
    text = f'''
        import math
        from math import isclose

        import numpy as np

        from fmu_mb import ModelBuilder, rod_inertia


        def build(**overrides):
            mb = ModelBuilder("reads", overrides)
            x = mb.param("x", 0.7, "1", "a parameter", min=-2.0, max=2.0)
            v = {expr}
            rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
            mb.revolute("O", mb.ground, rod, child_point=(-0.5, 0.0))
            mb.rsda("s", joint="O", stiffness=1.0 + v * v + 0.1 * x * x)
            mb.initial("O", value=0.1, rate=0.0)
            return mb.build()
    '''
    return textwrap.dedent(text).lstrip()


@pytest.mark.parametrize("expr,kind", READS)
def test_every_read_of_a_value_is_a_guard_or_fixes_the_parameter(tmp_path, expr, kind):
    """Each way of reading a parameter's value in a model file: the compiled program then
    refuses or reproduces build() at 41 values over the whole range (the engine in process:
    mbe_set_parameters, the native FMU's code); a read fixes x with a reason naming it, a
    guard keeps x compiled and refuses the other side of the branch."""
    from fmu_mb.engine.data import model_data
    from fmu_mb.engine.engine import Engine
    from fmu_mb.engine.params import program_for
    from fmu_mb.errors import FmuMbError
    from fmu_mb.mechanics.loader import load_module
    module = load_module(write(tmp_path, "reads", _reading(expr)))
    data, prog = program_for(module)
    if kind == "fixed":
        assert "x" in prog.fixed, (expr, prog.guards)
    elif kind == "guard":
        assert "x" in prog.compiled and len(prog.guards) > 1, (expr, prog.fixed)
    else:
        assert "x" in prog.compiled, (expr, prog.fixed)
    blob = data.to_bytes(program=prog)
    outcomes = set()
    for x in [0.7] + list(np.linspace(-2.0, 2.0, 41)):
        ref = model_data(module.build(x=float(x))).doubles
        eng = Engine(blob=blob)
        try:
            eng.set_parameters([x])
        except FmuMbError as exc:
            assert "x=" in str(exc)
            outcomes.add("refused")
            continue
        got = eng.model_doubles()
        assert np.array_equal(got, ref) or np.allclose(got, ref, rtol=1e-13, atol=1e-15), \
            (expr, x)
        outcomes.add("equal")
    assert outcomes == ({"equal"} if kind == "traced" else {"equal", "refused"}), outcomes


HIDDEN_CHECK = '''
    """A check that build() makes on a number read in C (struct): the tracer cannot see it."""
    import struct

    from fmu_mb import ModelBuilder, rod_inertia


    def build(**overrides):
        mb = ModelBuilder("hidden_check", overrides)
        x = mb.param("x", 0.5, "1", "a parameter", min=-2.0, max=2.0)
        if struct.unpack("d", struct.pack("d", x))[0] > 1.5:
            raise ValueError("x above 1.5 is not supported")
        rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
        mb.revolute("O", mb.ground, rod, child_point=(-0.5, 0.0))
        mb.rsda("s", joint="O", stiffness=1.0 + x * x)
        mb.initial("O", value=0.1, rate=0.0)
        return mb.build()
'''


def test_a_value_build_refuses_unseen_fixes_the_parameter(tmp_path):
    """build() refuses x = 2 (the end of x's range) by a check the tracer cannot see: the
    range checks find that the program would accept it, and x becomes fixed with build()'s
    error as the reason (def1338 compiled x and accepted x = 2)."""
    from fmu_mb.engine.params import program_for
    from fmu_mb.mechanics.loader import load_module
    module = load_module(write(tmp_path, "hidden_check", HIDDEN_CHECK))
    data, prog = program_for(module)
    assert "x" in prog.fixed and "x above 1.5 is not supported" in prog.fixed["x"], prog.fixed
