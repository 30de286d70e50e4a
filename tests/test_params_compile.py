"""The compiled parameter program (fmu_mb.engine.params, native/params.c): for every model of
models/ that the compiled engine runs, the program run in C over the default model data must
give the model data that build(**overrides) gives, at random parameter sets inside the
parameters' ranges; a branch build() took on a parameter is a guard that refuses, naming the
parameter; a malformed program is refused, never a crash."""
import ctypes
import math
import importlib.util
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import cardan            # (a global, as in a model file: _spun)
from fmu_mb.engine import params as P
from fmu_mb.errors import FmuMbError

from fmu_mb.engine.kernel import compiler

# one pytest-xdist worker runs the whole module (--dist loadgroup): compiled() (the parameter
# program of a model, seconds each) is computed once per model, not once per worker
pytestmark = [pytest.mark.skipif(compiler() is None, reason="no C compiler (cc, gcc, clang) "
                                 "for native/params.c and the engine"),
              pytest.mark.xdist_group("params_compile")]

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NATIVE = ROOT / "fmu_mb" / "engine" / "native"


# ---------------------------------------------------------------------- model data stand-in
def _doubles(addr, n):
    if n <= 0 or not addr:
        return np.zeros(0)
    return np.ctypeslib.as_array((ctypes.c_double * n).from_address(addr)).copy()


class _Recorder:
    """Stands for the planar kernel library while a TreeKernel is made: records the doubles
    it is handed (mbk_create, mbk_set_rows, mbk_set_gains, mbk_set_drives)."""

    def __init__(self, real):
        self.real, self.parts = real, []

    def mbk_create(self, nb, n, ji, jd, ne, ei, ed, mass, inertia, gx, gy):
        self.parts += [_doubles(jd, 8 * nb), _doubles(ed, 10 * ne), _doubles(mass, nb),
                       _doubles(inertia, nb), np.array([gx, gy])]
        return 1

    def mbk_set_rows(self, h, m, ri, rd):
        self.parts.append(_doubles(rd, 8 * m))
        return 0

    def mbk_set_gains(self, h, ng, ni, G):
        self.parts.append(_doubles(G, ng * ni))
        return 0

    def mbk_set_drives(self, h, nd, di, ndp, dp):
        self.parts.append(_doubles(dp, ndp))
        return 0

    def mbk_free(self, h):
        pass

    def mbk_set_eigensolver(self, h, f):
        pass                       # (a setting of the kernel, not model data)

    def __getattr__(self, name):
        if name.startswith("mbk_"):
            # the kernel's other calls take the handle: the real library would write through
            # the fake handle 1 (a loop model's mbk_set_eigensolver crashed the process)
            def refuse(*args):
                raise NotImplementedError(f"_Recorder: TreeKernel called {name}, which the "
                                          f"stand-in does not record (add it to _Recorder)")
            return refuse
        return getattr(self.real, name)


def engine_data(model):
    """The engine's model data (fmu_mb.engine.data) where it runs the model, else the
    stand-in below."""
    from fmu_mb.engine.data import model_data, supported
    if supported(model) is None:
        return model_data(model).doubles
    return standin_data(model)


def standin_data(model):
    """The doubles the compiled kernels are made from (kernel.py, spatial_kernel.py), the
    initial conditions and the bodies' initial values: a stand-in for the engine's model
    data, whose layout (like the real one's) is a function of the model's structure."""
    from fmu_mb.engine import kernel as K
    parts = []
    if len(model.gravity) == 3:
        from fmu_mb.engine.spatial_kernel import SpatialKernel
        k = SpatialKernel(model)
        parts += [k._rd, k._mass, k._J, k._ed, k._cd, k._rq, np.array(model.gravity)]
    else:
        rec = _Recorder(K.library())
        real = K.library
        K.library = lambda: rec
        try:
            K.TreeKernel(model)
        finally:
            K.library = real
        parts += rec.parts
    for ic in model.initial:
        parts.append([np.nan if v is None else v for v in (ic.value, ic.rate, ic.guess)])
    for b in model.bodies:
        parts.append([*b.position, b.angle, *b.velocity,
                      *np.ravel(b.angular_velocity), *b.orientation])
    out = np.concatenate([np.asarray(p, float).ravel() for p in parts])
    return np.where(np.isnan(out), -1.5e300, out)        # a marker for "not given"


def load(name):
    spec = importlib.util.spec_from_file_location(f"fmu_mb_model_params_{name}",
                                                  MODELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def engine_runs(model):
    from fmu_mb.engine import kernel as K
    from fmu_mb.engine.data import supported
    if getattr(model, "contacts", None):
        return supported(model)   # planar contacts run (events.c); the Reduction Method not
    if len(model.gravity) == 3:
        from fmu_mb.engine import spatial_kernel as S
        return S.supported(model)
    return K.supported(model)


def _models():
    out = []
    for path in sorted(MODELS.glob("*.py")):
        if path.name.startswith("_"):
            continue
        out.append(path.stem)
    return out


@lru_cache(maxsize=None)
def compiled(name):
    mod = load(name)
    model = mod.build()
    why = engine_runs(model)
    if why:
        return mod, None, why
    from fmu_mb.engine.data import supported
    if supported(model) is None:
        # the engine's data (ints checked), the projection metric (DMINV) derived by the
        # engine itself after the program (program_for passes EngineData.derived)
        return mod, P.program_for(mod)[1], None
    prog = P.compile_parameters(mod, {}, lambda o: standin_data(mod.build(**o)))
    return mod, prog, None


# ---------------------------------------------------------------------- mbp_run in C
class _Prog(ctypes.Structure):
    _fields_ = [("ncode", ctypes.c_int), ("code", ctypes.POINTER(ctypes.c_int)),
                ("nconst", ctypes.c_int), ("consts", ctypes.POINTER(ctypes.c_double))]


@pytest.fixture(scope="module")
def mbp(tmp_path_factory):
    """mbp_run(code, consts, params, data) -> (rc, data, message), params.c compiled with the
    system's C compiler and the kernel's flags."""
    from fmu_mb.engine import kernel as K
    cc = K.compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc, clang) to compile native/params.c")
    lib_path = tmp_path_factory.mktemp("mbp") / "libmbp.so"
    r = subprocess.run([cc, "-std=c99", "-pedantic", "-Wextra", "-Werror", *K.CFLAGS,
                        "-I", str(NATIVE), "-o", str(lib_path), str(NATIVE / "params.c"),
                        "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(lib_path))
    lib.mbp_run.restype = ctypes.c_int
    lib.mbp_run.argtypes = [ctypes.POINTER(_Prog), ctypes.c_void_p, ctypes.c_int,
                            ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]

    def run(code, consts, params, data, errlen=2000):
        code = np.ascontiguousarray(code, dtype=np.intc)
        nconst = len(consts)
        consts = np.ascontiguousarray(consts if nconst else [0.0], dtype=float)
        params = np.ascontiguousarray(params, dtype=float)
        data = np.array(data, dtype=float)
        prog = _Prog(len(code), code.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                     nconst, consts.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        err = ctypes.create_string_buffer(max(errlen, 1))
        rc = lib.mbp_run(ctypes.byref(prog), params.ctypes.data, len(params),
                         data.ctypes.data, len(data), err, errlen)
        return rc, data, err.value.decode("utf-8", "replace")
    return run


def _random_set(prog, mod, rng, scale=0.1):
    """Values of the compiled parameters near their defaults, inside their ranges."""
    model = mod.build()
    out = {}
    for p in model.parameters:
        if p.name in prog.compiled:
            out[p.name] = P._ranges(p, rng, scale)
    return out


def _pvec(prog, mod, values):
    model = mod.build()
    return np.array([0.0 if isinstance(p.value, str)          # (as the engine's table)
                     else float(values.get(p.name, p.value)) for p in model.parameters])


RUNNABLE = [n for n in _models()]


@pytest.mark.parametrize("name", RUNNABLE)
def test_c_program_reproduces_the_model_data(name, mbp):
    """At random sets within +-10 % of the defaults (inside min/max), the C program run over
    the default data gives build(**set)'s data to 1e-14 relative in every slot; its Python
    twin gives bitwise the same numbers."""
    mod, prog, why = compiled(name)
    if prog is None:
        pytest.skip(f"{name}: the compiled engine does not run it: {why}")
    D0 = engine_data(mod.build())
    rng = np.random.default_rng(12345)
    code, consts = prog.to_arrays()
    checked = 0
    for _ in range(4):
        vals = _random_set(prog, mod, rng)
        try:
            ref = engine_data(mod.build(**vals))
        except FmuMbError:
            continue                           # e.g. a loop that does not close there
        p = _pvec(prog, mod, vals)
        rc, out, msg = mbp(code, consts, p, D0)
        if rc != 0:
            assert rc > 0 and msg, msg        # a guard: the set takes another branch
            continue
        assert np.array_equal(out, prog.run(p, D0))
        if prog.derive is not None:            # what the engine derives after the program
            out = prog.derive(out)
        # (relative to the slot, or to the numbers it is computed from: a zero computed as
        # a difference of numbers near 0.1 is 1e-18 in one order of operations, 7e-18 in
        # another)
        bad = np.flatnonzero(~P._close(out, ref, scale=prog.scale))
        assert not len(bad), (f"{name}: slots {bad.tolist()} differ at {vals}: "
                              f"{out[bad]} vs {ref[bad]}")
        checked += 1
    assert checked >= 2 or not prog.compiled


def test_double_pendulum_compiles_every_parameter():
    mod, prog, _ = compiled("double_pendulum")
    for n in ("l1", "m1", "phi1", "g", "l2", "m2", "phi2"):
        assert n in prog.compiled and n not in prog.fixed
    assert len(prog.slots) >= 8


def test_double_pendulum_changes_what_it_should(mbp):
    """Independent of the matching: l1 = 0.8 must give the rod inertia m1 l1^2 / 12 and the
    joint points +-l1/2 somewhere in the data, and phi1 the initial joint values."""
    mod, prog, _ = compiled("double_pendulum")
    D0 = engine_data(mod.build())
    code, consts = prog.to_arrays()
    rc, out, msg = mbp(code, consts, _pvec(prog, mod, {"l1": 0.8, "l2": 0.3, "phi1": 0.1}),
                       D0)
    assert rc == 0, msg
    assert np.any(out == 1.0 * 0.8 ** 2 / 12.0) and np.any(out == 0.4)
    assert np.any(out == -0.4) and np.any(out == 0.1)
    assert np.any(out == P._FN["sub"](P._FN["mul"](60.0, math.pi / 180.0), 0.1))
    assert np.any(out == 0.15) and not np.any(out == 0.55 / 2)


def _guarded(**overrides):
    from fmu_mb import ModelBuilder, rod_inertia
    mb = ModelBuilder("guarded", overrides)
    L = mb.param("L", 1.0, "m", "rod length", min=1e-6)
    k = mb.param("k", 10.0, "N/m", "spring stiffness")
    rod = mb.body("rod", mass=2.0, inertia=rod_inertia(2.0, L))
    mb.revolute("O", mb.ground, rod, child_point=(-L / 2, 0.0))
    if L > 0.5:           # a branch on a parameter: a guard
        mb.rsda("spring", joint="O", stiffness=k * L)
    else:
        mb.rsda("spring", joint="O", stiffness=k)
    mb.initial("O", value=math.log(2.0 - L), rate=0.0)
    return mb.build()


def test_guard_names_the_parameter(mbp):
    prog = P.compile_parameters(_guarded, {}, lambda o: engine_data(_guarded(**o)),
                                model_file="guarded.py")
    assert set(prog.compiled) == {"L", "k"} and "L > 0.5" in prog.guards
    D0 = engine_data(_guarded())
    code, consts = prog.to_arrays()
    rc, out, msg = mbp(code, consts, [0.9, 12.0], D0)
    assert rc == 0, msg
    assert np.array_equal(out, engine_data(_guarded(L=0.9, k=12.0)))
    rc, _, msg = mbp(code, consts, [0.4, 10.0], D0)
    assert rc == 1
    assert "L=0.4" in msg and "--set L=0.4" in msg and "guarded" in msg, msg
    with pytest.raises(P.ParameterProgramError, match="--set L=0.4"):
        prog.run([0.4, 10.0], D0)
    # the builder's own check (a stiffness k L >= 0) is a guard too, with its message
    rc, _, msg = mbp(code, consts, [0.9, -5.0], D0)
    assert rc > 0 and "k=-5" in msg and "stiffness must be >= 0" in msg, msg
    with pytest.raises(FmuMbError, match="stiffness must be >= 0"):
        _guarded(L=0.9, k=-5.0)
    # a derived number that is not finite: log(2 - L) with L = 3
    rc, _, msg = mbp(code, consts, [3.0, 10.0], D0)
    assert rc == 1 and "not finite" in msg and "L=3" in msg, msg


def test_untraceable_parameter_is_fixed_with_a_reason(mbp):
    """A parameter that reaches the data through an operation the tracer does not follow
    (here %) is declared fixed, never compiled wrong; one that goes through numpy arrays in
    the model file is traced (object arrays); the others still compile."""
    def build(**o):
        from fmu_mb import ModelBuilder
        mb = ModelBuilder("np_model", o)
        a = mb.param("a", 0.3, "m", "offset")
        b = mb.param("b", 0.7, "m", "offset")
        m = mb.param("m", 2.0, "kg", "mass", min=1e-9)
        p = np.array([np.cos(0.2), 1.0]) * np.array([b, b]) + np.array([0.0, a % 10.0])
        body = mb.body("body", mass=m, inertia=0.1)
        mb.revolute("O", mb.ground, body, child_point=(p[0], p[1]))
        mb.initial("O", value=0.1, rate=0.0)
        return mb.build()
    prog = P.compile_parameters(build, {}, lambda o: engine_data(build(**o)))
    assert prog.compiled == ("b", "m")
    assert "a" in prog.fixed and "operator mod" in prog.fixed["a"], prog.fixed   # a read
    code, consts = prog.to_arrays()
    D0 = engine_data(build())
    rc, out, msg = mbp(code, consts, [0.3, 0.9, 3.0], D0)
    assert rc == 0 and np.array_equal(out, engine_data(build(b=0.9, m=3.0))), msg
    # the fixed one keeps its built value: another is refused with the reason
    rc, _, msg = mbp(code, consts, [0.5, 0.9, 3.0], D0)
    assert rc == 1 and "'a' = 0.5 cannot change from its built value 0.3" in msg, msg
    assert prog.fixed["a"] in msg and "--set a=0.5" in msg, msg


def _functions(**o):
    """A model whose numbers go through many functions: operators, math, numpy scalars."""
    from fmu_mb import ModelBuilder, deg
    mb = ModelBuilder("functions", o)
    a = mb.param("a", 0.7, "m", "a length", min=0.1, max=2.0)
    b = mb.param("b", 0.3, "rad", "an angle", min=-1.0, max=1.0)
    c = mb.param("c", 2.5, "kg", "a mass", min=0.5)
    w = math.hypot(a, b) * math.cos(b) + math.atan2(b, a) - math.sqrt(a) / 3.0
    v = np.sin(b) * np.exp(-a) + math.log(c) ** 2 + abs(-b) + math.pow(a, 1.5) + 2 ** b
    r = np.array([a, b]) * math.tanh(a) - np.array([0.1, np.arctan2(a, 1.0 + b)])
    t = deg(30.0) * math.radians(b * 10.0) + math.log(a, 2.0) + np.cbrt(c)
    body = mb.body("body", mass=c * math.asin(b / 2.0) ** 2 + 1.0, inertia=v)
    mb.revolute("O", mb.ground, body, child_point=(w, r[1]))
    mb.rsda("s", joint="O", stiffness=np.cosh(a) * c, free_angle=t, damping=r[0] ** 2)
    mb.initial("O", value=-b / a, rate=math.expm1(b))
    return mb.build()


def test_functions_compile_bit_for_bit(mbp):
    """Operators, math's and numpy's scalar functions and numpy arrays in a model file: every
    parameter compiles; C gives build()'s numbers to 1e-14 (numpy's own arctan2, sin... may
    differ from libm's in the last bit) and its Python twin's bit for bit."""
    prog = P.compile_parameters(_functions, {}, lambda o: engine_data(_functions(**o)))
    assert prog.compiled == ("a", "b", "c"), prog.fixed
    code, consts = prog.to_arrays()
    D0 = engine_data(_functions())
    rng = np.random.default_rng(3)
    for _ in range(5):
        p = [rng.uniform(0.2, 1.5), rng.uniform(-0.9, 0.9), rng.uniform(0.6, 5.0)]
        ref = engine_data(_functions(a=p[0], b=p[1], c=p[2]))
        rc, out, msg = mbp(code, consts, p, D0)
        assert rc == 0, msg
        assert np.all(P._close(out, ref)), np.flatnonzero(~P._close(out, ref))
        assert np.count_nonzero(out != D0) >= 8          # it did change the data
        np.testing.assert_array_equal(out, prog.run(p, D0))


def test_integer_parameter_is_fixed_and_checked(mbp):
    def build(**o):
        from fmu_mb import ModelBuilder
        mb = ModelBuilder("turns", o)
        n = mb.param("n", 3, "1", "number of turns of the spring")
        k = mb.param("k", 2.0, "N.m/rad", "stiffness per turn", min=0.0)
        b = mb.body("b", mass=1.0, inertia=0.1)
        mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
        mb.rsda("s", joint="O", stiffness=k / n)
        mb.initial("O", value=0.1, rate=0.0)
        return mb.build()
    prog = P.compile_parameters(build, {}, lambda o: engine_data(build(**o)))
    assert prog.compiled == ("k",) and "integer" in prog.fixed["n"]
    code, consts = prog.to_arrays()
    D0 = engine_data(build())
    rc, out, msg = mbp(code, consts, [3.0, 5.0], D0)
    assert rc == 0 and np.array_equal(out, engine_data(build(k=5.0))), msg
    rc, _, msg = mbp(code, consts, [4.0, 5.0], D0)
    assert rc == 1 and "'n' = 4 cannot change from its built value 3" in msg, msg


def test_a_parameter_that_changes_the_structure_is_fixed():
    """The program patches doubles only: a parameter whose value changes the integer data
    (here which joint is the tree's, via an untraced branch) is fixed, named."""
    from fmu_mb.engine.data import model_data

    def build(**o):
        from fmu_mb import ModelBuilder
        mb = ModelBuilder("switch", o)
        s = mb.param("s", 1.0, "1", "a switch", min=0.0, max=2.0)
        k = mb.param("k", 3.0, "N.m/rad", "stiffness", min=0.0)
        b = mb.body("b", mass=1.0, inertia=0.1)
        mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
        if float(np.float64(s)) > 1.02:             # untraced: the force element changes
            mb.force("f", b, direction=(1.0, 0.0), value=k)
        else:
            mb.torque("f", b, value=k)
        mb.initial("O", value=0.1, rate=0.0)
        return mb.build()
    prog = P.compile_parameters(build, {}, lambda o: model_data(build(**o)))
    assert prog.compiled == ("k",) and "s" in prog.fixed, prog.fixed


def test_hidden_branch_is_not_compiled():
    """A branch build() takes on a plain float (no Sym, so no guard) must not give a program
    that is wrong on the other side: the verification sets find the mismatch and fix k."""
    def build(**o):
        from fmu_mb import ModelBuilder
        mb = ModelBuilder("hidden", o)
        k = mb.param("k", 10.0, "N.m/rad", "stiffness", min=0.0)
        c = mb.param("c", 0.5, "N.m.s/rad", "damping", min=0.0)
        b = mb.body("b", mass=1.0, inertia=0.1)
        mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
        plain = float(np.float64(k))                  # untraced: the branch is hidden
        mb.rsda("s", joint="O", stiffness=k if plain < 11.5 else 2.0 * k, damping=c)
        mb.initial("O", value=0.1, rate=0.0)
        return mb.build()
    prog = P.compile_parameters(build, {}, lambda o: engine_data(build(**o)), n_wide=8)
    assert prog.compiled == ("c",) and "k" in prog.fixed, prog.fixed


def _far(**o):
    """m enters the inertia through a maximum on a plain float: a branch at m = 4 (the value
    read by struct in C, which no hook of the tracer sees)."""
    from fmu_mb import ModelBuilder
    mb = ModelBuilder("far", o)
    m = mb.param("m", 1.0, "kg", "mass", min=1e-9)
    c = mb.param("c", 0.5, "N.m.s/rad", "damping", min=0.0)
    b = mb.body("b", mass=m, inertia=max(struct.unpack("d", struct.pack("d", m))[0], 4.0)
                * 0.1)
    mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
    mb.rsda("s", joint="O", damping=c)
    mb.initial("O", value=0.1, rate=0.0)
    return mb.build()


def test_far_branch_is_found():
    """A branch on a plain float far from the default (as the projection metric's maximum
    over the masses) is outside every random set; the far checks (x10, x0.1, ...) find it."""
    build = _far
    prog = P.compile_parameters(build, {}, lambda o: engine_data(build(**o)))
    assert prog.compiled == ("c",) and "at m=10.0" in prog.fixed["m"], prog.fixed
    blind = P.compile_parameters(build, {}, lambda o: engine_data(build(**o)), far=())
    assert blind.compiled == ("m", "c")                # what the far checks prevent


def _slow_clocks(monkeypatch):
    """Every clock of the process jumps 100 s at each reading: a machine so slow that any
    time budget is spent before its first step."""
    import time
    for name in ("perf_counter", "monotonic", "process_time"):
        real = getattr(time, name)
        calls = [0]

        def slow(real=real, calls=calls):
            calls[0] += 1
            return real() + 100.0 * calls[0]
        monkeypatch.setattr(time, name, slow)


def _same_program(a, b):
    assert a.compiled == b.compiled and a.fixed == b.fixed and a.guards == b.guards
    np.testing.assert_array_equal(a.code, b.code)
    np.testing.assert_array_equal(a.consts, b.consts)


def test_far_checks_do_not_depend_on_the_machines_speed(monkeypatch):
    """The far checks are a count of builds in a fixed order, not a time budget: on a
    machine whose clocks run 100 s per reading the same model compiles to the same program
    (the far branch of _far is still found), and the four-bar's far checks reach every one
    of its parameters (with a 3 s budget they reached 2 or 3 of 8, by the machine's speed)."""
    from fmu_mb.engine.data import model_data
    fast = P.compile_parameters(_far, {}, lambda o: engine_data(_far(**o)))
    mod = load("four_bar")
    data = model_data(mod.build())
    tried = []

    def data_of(o):
        if len(o) == 1:                       # a far build: one parameter moved alone
            tried.append(next(iter(o)))
        return model_data(mod.build(**o))
    four = P.compile_parameters(mod, {}, data_of, names=data.parameter_names,
                                derived=data.derived())
    assert set(tried) == set(four.compiled) and len(four.compiled) == 8, (tried, four.fixed)
    _slow_clocks(monkeypatch)
    slow = P.compile_parameters(_far, {}, lambda o: engine_data(_far(**o)))
    _same_program(slow, fast)
    assert "at m=10.0" in slow.fixed["m"], slow.fixed
    _same_program(P.compile_parameters(mod, {}, lambda o: model_data(mod.build(**o)),
                                       names=data.parameter_names, derived=data.derived()),
                  four)


def test_a_probe_build_fails_cheaply(monkeypatch):
    """While probing (the far checks), a loop that cannot close fails without the random
    restarts of the least-squares closure and without a diagnosis: one least-squares run
    (the retry's Levenberg-Marquardt from the tree placement); the same build outside probing
    gives the full diagnosis."""
    import scipy.optimize
    from fmu_mb.errors import AssemblyError
    from fmu_mb.mechanics import assembly
    mod = load("four_bar")
    runs = []
    real, real_lm = scipy.optimize.least_squares, assembly._closure_lm

    def counted(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    def counted_lm(*args, **kwargs):
        runs.append(1)
        return real_lm(*args, **kwargs)
    monkeypatch.setattr(scipy.optimize, "least_squares", counted)
    monkeypatch.setattr(assembly, "_closure_lm", counted_lm)
    with assembly.probing(), pytest.raises(AssemblyError, match="probe build"):
        mod.build(coupler_length=3.5)
    assert len(runs) == 1
    with pytest.raises(AssemblyError, match="even at the best pose of the loop"):
        mod.build(coupler_length=3.5)
    assert len(runs) > 1 + assembly.STARTS


def _metric(**o):
    """b has no inertia: its rotation's weight in the projection metric (DMINV, derived by
    the engine) is 1e-6 x the largest mass, 4 kg until m passes it (m = 10 at the far check)."""
    from fmu_mb import ModelBuilder
    mb = ModelBuilder("metric", o)
    m = mb.param("m", 1.0, "kg", "mass of the first link", min=1e-3)
    a = mb.body("a", mass=m, inertia=0.1)
    b = mb.body("b", mass=4.0, inertia=0.0)
    mb.revolute("O", mb.ground, a, child_point=(-0.5, 0.0))
    mb.revolute("A", a, b, parent_point=(0.5, 0.0), child_point=(-0.5, 0.0))
    mb.initial("O", value=0.1, rate=0.0)
    mb.initial("A", value=0.2, rate=0.0)
    return mb.build()


def test_far_checks_verify_derived_slots_through_their_twin():
    """The far checks compare the data the engine runs on: the program's, then the derived
    slots by their twin. With the true twin the metric's switch at m = 10 is followed (m
    compiles); a twin blind to that switch is caught there, and only there."""
    from fmu_mb.engine.data import model_data
    data = model_data(_metric())
    slots, twin = data.derived()
    D0, at10 = data.doubles, model_data(_metric(m=10.0)).doubles
    assert not np.array_equal(D0[slots], at10[slots])      # the metric does switch

    def of(o):
        return model_data(_metric(**o))
    prog = P.compile_parameters(_metric, {}, of, derived=(slots, twin))
    assert prog.compiled == ("m",), prog.fixed
    np.testing.assert_array_equal(prog.engine_data([10.0], D0), at10)

    def frozen(d):                   # the 1e-6 x largest-mass weights kept at the build's
        out = twin(d)
        out[slots] = np.where(D0[slots] > 1e3, D0[slots], out[slots])
        return out
    prog = P.compile_parameters(_metric, {}, of, derived=(slots, frozen))
    assert prog.compiled == () and "at m=10.0" in prog.fixed["m"], prog.fixed
    assert "DMINV" in prog.fixed["m"]
    blind = P.compile_parameters(_metric, {}, of, derived=(slots, frozen), far=())
    assert blind.compiled == ("m",)



def test_malformed_programs_are_refused(mbp):
    """Truncations, out-of-range indices, unknown instructions and random garbage return -1
    with a message; never a crash or a write out of bounds."""
    mod, prog, _ = compiled("double_pendulum")
    D0 = engine_data(mod.build())
    code, consts = prog.to_arrays()
    p = _pvec(prog, mod, {})
    rc, out, msg = mbp(code, consts, p, D0)
    assert rc == 0 and np.array_equal(out, D0), msg
    assert mbp(code, consts, p[:-1], D0)[0] == -1
    assert mbp(code, consts, p, D0[:-1])[0] == -1
    for n in (0, 1, 4, 10, len(code) // 2, len(code) - 1):
        rc, _, msg = mbp(code[:n], consts, p, D0)
        assert rc == -1 and "malformed" in msg or "program for" in msg, (n, msg)
    assert mbp(code, consts[:0], p, D0)[0] == -1
    rng = np.random.default_rng(7)
    body = P._header(code)[-1]
    for trial in range(300):
        bad = code.copy()
        k = int(rng.integers(body if trial % 3 else 0, len(bad)))
        bad[k] = int(rng.choice([-1, 2**31 - 1, int(rng.integers(-3, 100))]))
        rc, out, msg = mbp(bad, consts, p, D0, errlen=int(rng.integers(0, 50)))
        assert rc in (-1, 0) or rc >= 1
    for trial in range(100):
        junk = rng.integers(-5, 300, size=int(rng.integers(0, 200))).astype(np.intc)
        junk = np.concatenate([code[:body], junk]) if trial % 2 else junk
        assert mbp(junk, consts, p, D0)[0] in (-1, 0, *range(1, len(p) + 1))


def _ops(code, at=False):
    """The instructions of a program (op, operand) after its header (BEGIN: its count);
    with at, (op, position)."""
    pc, out = P._header(code)[-1], []
    while code[pc] != P.OP_END:
        out.append((int(code[pc]), pc if at else int(code[pc + 1])))
        pc += 2 + (int(code[pc + 1]) if code[pc] == P.OP_BEGIN else
                   1 + int(code[pc + 2]) if code[pc] == P.OP_CHECK else 0)
    return out


def _twin_agrees(mbp, code, consts, p, D0, errlen=2000):
    """mbp_run and its Python twin give the same rc and data, and the same message for a
    malformed program; returns rc."""
    rc, out, msg = mbp(code, consts, p, D0, errlen=errlen)
    rc2, out2, msg2 = P.run_program(code, consts, p, D0)
    assert rc == rc2, (rc, msg, rc2, msg2)
    np.testing.assert_array_equal(out, out2)
    if rc == -1 and errlen > len(msg2):
        assert msg == msg2
    return rc


def test_malformed_programs_are_refused_alike_by_the_twin(mbp):
    """Mutations of a program with temporaries (its SET/GET operands, the header's ntemp, a
    GET moved before its SET, random ints anywhere): mbp_run and its Python twin refuse the
    same programs with the same message, or run them to the same data."""
    mod, prog, _ = compiled("four_bar")
    D0 = engine_data(mod.build())
    code, consts = prog.to_arrays()
    p = _pvec(prog, mod, {})
    ntemp = int(code[4])
    assert ntemp > 0 and {P.OP_SET, P.OP_GET} <= {op for op, _ in _ops(code)}
    assert _twin_agrees(mbp, code, consts, p, D0) == 0
    body = P._header(code)[-1]
    where = {op: [k for o, k in _ops(code, at=True) if o == op] for op in (P.OP_SET, P.OP_GET)}
    rng = np.random.default_rng(11)
    seen = set()
    for v in (-1, ntemp, ntemp + 1, 2**31 - 1, len(code) // 2 + 1):   # the header's ntemp
        bad = code.copy()
        bad[4] = v
        rc = _twin_agrees(mbp, bad, consts, p, D0)
        assert rc == (0 if ntemp <= v <= len(code) // 2 else -1), (v, rc)
    for op in (P.OP_SET, P.OP_GET):
        for k in where[op][:20]:
            for v in (-1, ntemp, 2**31 - 1, int(rng.integers(0, ntemp))):
                bad = code.copy()
                bad[k + 1] = v
                rc, _, msg = mbp(bad, consts, p, D0)
                seen.add(msg.split(" at code")[0])
                assert _twin_agrees(mbp, bad, consts, p, D0) in (-1, 0, *range(1, len(p) + 1))
                if v < 0 or v >= ntemp:
                    assert rc == -1 and "temporary index out of range" in msg, msg
    first_get = where[P.OP_GET][0]                  # a GET of a temporary not yet written
    bad = code.copy()
    bad[first_get + 1] = ntemp
    bad[4] = ntemp + 1
    rc, _, msg = mbp(bad, consts, p, D0)
    assert rc == -1 and "temporary read before it is written" in msg, msg
    assert _twin_agrees(mbp, bad, consts, p, D0) == -1
    for trial in range(300):
        bad = code.copy()
        k = int(rng.integers(0 if trial % 4 == 0 else body, len(bad)))
        bad[k] = int(rng.choice([-1, 2**31 - 1, int(rng.integers(-3, 100)),
                                 P.OP_SET, P.OP_GET]))
        _twin_agrees(mbp, bad, consts, p, D0, errlen=int(rng.integers(0, 50)) if trial % 5
                     else 2000)
    for trial in range(100):
        junk = rng.integers(-3, 40, size=int(rng.integers(0, 200))).astype(np.intc)
        junk = np.concatenate([code[:body], junk]) if trial % 2 else junk
        _twin_agrees(mbp, junk, consts, p, D0)
    assert "malformed parameter program: temporary read before it is written" in seen or \
        "malformed parameter program: temporary index out of range" in seen, seen


def test_emitter_temporaries_bit_for_bit(mbp):
    """The emitter alone, on random tapes (shared subexpressions everywhere, roots used by
    several statements): the program with temporaries and the one written out in full give
    bitwise the same data in C and in the twin, and refuse the same sets alike (a guard
    broken, a number not finite); the temporaries are fewer than the shared nodes."""
    rng = np.random.default_rng(2)
    ops = ["add", "sub", "mul", "div", "atan2", "hypot", "sin", "cos", "atan", "tanh",
           "fabs", "neg"]
    rcs = []
    for trial in range(12):
        npar, ndata = 3, 40
        tape = P._Tape(npar)
        ids = [tape.node(("p", k)) for k in range(npar)] + [tape.const(0.5), tape.const(-2.0)]
        for _ in range(int(rng.integers(20, 60))):
            f = ops[int(rng.integers(len(ops)))]
            near = ids[-8:] if rng.random() < 0.7 else ids
            kids = [near[int(rng.integers(len(near)))]
                    for _ in range(2 if f in P.BINARY else 1)]
            ids.append(tape.node((f, *kids)))
        big = tape.const(1e300)
        deps = P._deps(tape.nodes)
        inner = [i for i in ids if deps[i] and tape.nodes[i][0] not in ("p", "c")]
        stores = [(int(rng.integers(ndata)), inner[int(rng.integers(len(inner)))])
                  for _ in range(15)]
        g = inner[int(rng.integers(len(inner)))]
        guards = [("eq", g, g, True), ("lt", ids[-1], big, True)]
        names = ("a", "b", "c")
        D0 = rng.normal(size=ndata)
        progs = []
        for cse in (True, False):
            roots = [g[1] for g in guards] + [g[2] for g in guards] + [r for _, r in stores]
            emit = P._Emitter(tape.nodes, deps, "random.py", names,
                              roots=roots if cse else None)
            body = []
            for c, a, b, _ in guards:
                body += emit.statement(a, [P.OP_GUARD, P.CMPS.index(c)], extra=(b,))
            for slot, r in stores:
                body += emit.statement(r, [P.OP_STORE, slot])
            progs.append(P._finish(emit, D0, names, "random.py", body,
                                   [s for s, _ in stores], guards, {}, {},
                                   nodes=tape.nodes))
        cse, plain = progs
        shared = sum(1 for k, v in P._Emitter(tape.nodes, deps, "", names,
                                              roots=roots).left.items()
                     if v > 1 and tape.nodes[k][0] not in ("p", "c"))
        assert 0 < cse.code[4] <= shared and plain.code[4] == 0
        assert len(cse.code) < len(plain.code)
        for _ in range(6):
            p = rng.uniform(-2.0, 2.0, npar) if _ % 3 else rng.uniform(-1e200, 1e200, npar)
            r1 = mbp(*cse.to_arrays(), p, D0)
            r2 = mbp(*plain.to_arrays(), p, D0)
            assert (r1[0], r1[2]) == (r2[0], r2[2])
            assert r1[1].tobytes() == r2[1].tobytes()
            t1 = P.run_program(cse.code, cse.consts, p, D0)
            assert t1[0] == r1[0] and t1[1].tobytes() == r1[1].tobytes()
            rcs.append(r1[0])
    assert rcs.count(0) >= len(rcs) // 2, rcs


MBP_FUZZ_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "params.h"
/* mbp_run on mutated programs (one to three ints changed after the header's magic and
 * version, or the code cut short): under AddressSanitizer and UBSan */
static void *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    void *b;
    if (!f) exit(2);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc(*n + 8);
    if (fread(b, 1, *n, f) != (size_t)*n) exit(2);
    fclose(f);
    return b;
}
int main(int argc, char **argv)
{
    long nc, nk, np, nd;
    int *code = slurp(argv[2], &nc), *bad;
    double *consts = slurp(argv[3], &nk), *params = slurp(argv[4], &np);
    double *data = slurp(argv[5], &nd), *out = malloc(nd + 8);
    int tries = atoi(argv[1]), ncode = (int)(nc / 4), counts[3] = {0, 0, 0};
    char err[300];
    const int pick[] = {-1, 0, 1, 2, 9, 10, 2147483647, -2147483647 - 1};
    bad = malloc(nc + 8);
    srand(1);
    for (int t = 0; t < tries; t++) {
        int n = ncode, rc;
        memcpy(bad, code, nc);
        for (int r = 0; r < 1 + t % 3; r++) {
            int k = 2 + rand() % (ncode - 2);
            bad[k] = rand() % 2 ? pick[rand() % 8] : rand() % 64 - 2;
        }
        if (t % 7 == 0)
            n = rand() % ncode;
        memcpy(out, data, nd);
        {
            MbpProgram prog = {n, bad, (int)(nk / 8), consts};
            rc = mbp_run(&prog, params, (int)(np / 8), out, (int)(nd / 8), err,
                         (size_t)(t % 5 ? sizeof err : (size_t)(rand() % 20)));
        }
        counts[rc < 0 ? 0 : rc == 0 ? 1 : 2]++;
    }
    printf("refused %d ran %d failed %d\n", counts[0], counts[1], counts[2]);
    free(bad); free(out); free(code); free(consts); free(params); free(data);
    return 0;
}
"""


def test_mutated_programs_never_crash_mbp_run_under_sanitizers(tmp_path):
    """mbp_run on 20000 mutations of a program with temporaries (its SET/GET operands, the
    header's ntemp, instructions, the code cut short), compiled with AddressSanitizer and
    UBSan: never a read or write out of bounds, a leak of its temporaries or undefined
    behaviour; the mutations are refused (-1), run, or fail naming a parameter."""
    import os
    from fmu_mb.engine import kernel as K
    cc = K.compiler()
    mod, prog, _ = compiled("four_bar")
    code, consts = prog.to_arrays()
    assert code[4] > 0
    src = tmp_path / "host.c"
    src.write_text(MBP_FUZZ_HOST)
    exe = tmp_path / "host"
    r = subprocess.run([cc, "-std=c99", "-g", "-O1", "-fsanitize=address,undefined",
                        "-fno-sanitize-recover=undefined", "-I", str(NATIVE), "-o", str(exe),
                        str(src), str(NATIVE / "params.c"), "-lm"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"the compiler cannot build with the sanitizers: {r.stderr[-300:]}")
    files = []
    for name, arr in (("code", code), ("consts", consts), ("params", _pvec(prog, mod, {})),
                      ("data", engine_data(mod.build()))):
        files.append(tmp_path / name)
        files[-1].write_bytes(np.ascontiguousarray(arr).tobytes())
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    run = subprocess.run([str(exe), "20000", *map(str, files)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ERROR" not in run.stderr and "runtime error" not in run.stderr, run.stderr[-3000:]
    refused, ran, failed = [int(w) for w in run.stdout.split()[1::2]]
    assert refused > 1000 and ran > 100, run.stdout


def test_report_fixed_parameters(capsys):
    """Which parameters stay fixed in a native FMU, and why (printed with -s)."""
    rows = []
    for name in RUNNABLE:
        mod, prog, why = compiled(name)
        if prog is None:
            rows.append(f"{name:24s} (not run by the compiled engine: {why})")
            continue
        rows.append(f"{name:24s} compiled {len(prog.compiled)}: {', '.join(prog.compiled)}"
                    + (f"; guards: {'; '.join(prog.guards)}" if prog.guards else ""))
        for n, reason in prog.fixed.items():
            rows.append(f"{'':24s}   fixed {n}: {reason}")
    print("\n".join(rows))
    mod, prog, _ = compiled("double_pendulum")
    assert not prog.fixed


# ---------------------------------------------------------------------- the engine
def _engine_models():
    from fmu_mb.engine.data import supported
    return [n for n in _models() if supported(load(n).build()) is None]


@pytest.mark.parametrize("name", _engine_models())
def test_temporaries_change_no_bit(name, mbp):
    """The program with temporaries and the same program with every shared subexpression
    written out again (the emission before them) give bitwise the same data, in C, at the
    build values, at random sets and at each compiled parameter alone x10 and x0.1 (where
    both may refuse: with the same code and message)."""
    mod, prog, _ = compiled(name)
    plain = prog.plain() if prog.compiled else prog
    assert plain.code[4] == 0 and not {P.OP_SET, P.OP_GET} & {op for op, _ in _ops(plain.code)}
    assert len(prog.code) <= len(plain.code)
    D0 = engine_data(mod.build())
    rng = np.random.default_rng(5)
    sets = [{}] + [_random_set(prog, mod, rng) for _ in range(3)]
    defaults = {p.name: p.value for p in mod.build().parameters}
    sets += [{n: defaults[n] * f} for n in prog.compiled for f in (10.0, 0.1)]
    a, b = prog.to_arrays(), plain.to_arrays()
    ok = 0
    for vals in sets:
        pv = _pvec(prog, mod, vals)
        rc, out, msg = mbp(*a, pv, D0)
        rc2, out2, msg2 = mbp(*b, pv, D0)
        assert (rc, msg) == (rc2, msg2)
        if rc == 0:
            ok += 1
            assert out.tobytes() == out2.tobytes(), (name, vals)
    assert ok >= 1


def _program(name):
    """(module, EngineData at the defaults, the program): compiled() once per model."""
    from fmu_mb.engine.data import model_data
    mod, prog, _ = compiled(name)
    return mod, model_data(mod.build()), prog


def _check_engine(name, vals):
    """mbe_set_parameters at `vals` gives the data, the initial state (assembled in C) and
    the steps of the model built with those values in Python (fmu_mb.dynamics:
    initial_state, the recursive stepper)."""
    from fmu_mb.dynamics.integrate import Settings, initial_state, stepper
    from fmu_mb.engine.data import model_data
    from fmu_mb.engine.engine import Engine
    mod, data, prog = _program(name)
    assert prog.names == data.parameter_names
    m = mod.build(**vals)
    settings = Settings(formulation="recursive")
    eng = Engine(blob=data.to_bytes(program=prog), name=name)
    eng.set_parameters(_pvec(prog, mod, vals))
    eng.set_settings(settings)
    eng.initialize(m.t0)
    direct = Engine(m)                              # the data of build(**vals), no program
    direct.set_settings(settings)
    direct.initialize(m.t0)
    built = model_data(m).doubles
    same_data = np.array_equal(prog.engine_data(_pvec(prog, mod, vals), data.doubles), built)
    # the data in the engine (the program's slots, then the metric it derives in C) are
    # build()'s to the program's tolerance, and bitwise when the program's twin is
    mine = eng.model_doubles()
    same = P._close(mine, built, scale=prog.scale)     # (rounding residues: see above)
    assert np.all(same), np.flatnonzero(~same)
    # the metric C derived is bitwise its Python twin's over the same masses and inertias
    np.testing.assert_array_equal(prog.derive(mine), mine)
    if same_data:
        np.testing.assert_array_equal(mine, built)
    ref = initial_state(m, settings)
    t, q, qd, h = eng.state
    assert t == ref.t
    np.testing.assert_allclose(q, ref.q, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(qd, ref.qd, rtol=1e-10, atol=1e-10)
    if same_data:
        np.testing.assert_array_equal(eng.get_state(), direct.get_state())
    eng.load(ref)
    step, st = stepper(m, settings), ref
    for k in range(3):
        eng.do_step(0.01, np.zeros(len(m.inputs)))
        st = step(st, st.t + 0.01, np.zeros(len(m.inputs)))
        t, q, qd, h = eng.state
        if same_data:
            np.testing.assert_array_equal(q, st.q)       # the same kernel on the same data
            np.testing.assert_array_equal(qd, st.qd)
        else:
            np.testing.assert_allclose(q, st.q, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(qd, st.qd, rtol=1e-12, atol=1e-12)
    return same_data


@pytest.mark.parametrize("name", _engine_models())
def test_engine_with_parameters_set_equals_the_model_built_with_them(name):
    """Every compiled parameter moved at once (a random set within +-10 %)."""
    mod, data, prog = _program(name)
    rng = np.random.default_rng(99)
    for attempt in range(5):
        vals = _random_set(prog, mod, rng)
        try:
            mod.build(**vals)
            break
        except FmuMbError:
            continue
    _check_engine(name, vals)


# the parameters each model keeps fixed in a native FMU (besides structural and string
# ones); what is left and why: the spatial chain's rods are posed by rotations.from_matrix
# (Shepperd's branches on numpy arrays) from q0, which the tracer does not follow (its
# link_length compiles since rounding residues match)
FIXED = {
    "bricard": set(),
    "container_crane": set(),
    "container_crane_driven": set(),
    "double_pendulum": set(),
    "double_wishbone": set(),
    "driven_arm": set(),          # spatial drives (engine data version 3)
    "five_point_suspension": set(),
    "four_bar": set(),
    "heavy_top": set(),
    "hinged_body_spring": set(),
    "n_four_bar": set(),
    "simple_pendulum": set(),
    "andrews_squeezer": set(),
    "pendulum_chain": set(),
    "slider_crank": set(),
    "spatial_chain": {"q0"},
    # the planar contact models (in the engine since its contact event loop)
    "bouncing_ball": set(),
    "excavator": set(),
    "falling_rod": set(),
    "newtons_cradle": set(),
    "pendulum_wall": set(),
    "slider_crank_stop": set(),
    # the spatial contact model (in the engine since its spatial event loop): the corners,
    # the restitution, the initial pose and spin all compiled
    "tumbling_box": {"mu"},       # mu = 0 (the default) is the frictionless layout
    # friction and shapes: a frictional contact's layout (records, outputs) is not that of a
    # frictionless one, so mu must stay on one side of 0; the incline's tangent basis takes a
    # branch at alpha = 0 that the tracer does not see; the wheel's rim radius at width -> 0
    "incline_block": {"alpha"},
    "rolling_ball": set(),
    "wheel": {"width", "mu"},
    "gripper": set(),
    "planar_incline": set(),
    "table_ball": {"mu"},         # mu = 0 is the frictionless layout
    "rolling_discs": set(),       # planar shape pairs with friction (DPAIR)
}

# compiled since the engine derives the projection metric (DMINV) itself, the assembly
# handles massless coordinates and the tracer follows the spatial builder's joint points
# from at= and Cardan angles: (model, parameter, value)
NEWLY_COMPILED = [
    ("double_wishbone", "tie_rod_mass", 1.3), ("double_wishbone", "rack_mass", 2.5),
    ("double_wishbone", "upright_mass", 17.0), ("double_wishbone", "spindle_mass", 16.0),
    ("double_wishbone", "wheel_mass", 14.0), ("double_wishbone", "tyre_mass", 35.0),
    ("heavy_top", "C", 6.5e-3), ("heavy_top", "l", 0.11), ("heavy_top", "theta0", 0.45),
    ("bricard", "m", 1.7), ("spatial_chain", "link_mass", 0.13),
    ("container_crane", "m", 800.0), ("container_crane", "mc", 150.0),
    ("container_crane", "xd0", 0.4), ("container_crane", "phid0", -0.3),
    ("container_crane_driven", "m", 1200.0), ("container_crane_driven", "mc", 20.0),
    ("container_crane_driven", "x0", 0.7), ("container_crane_driven", "phid0", 0.2),
    # the spatial drives' laws (engine data version 3): constant rate, harmonic
    ("driven_arm", "waist_rate", 0.8), ("driven_arm", "swing_frequency", 0.45),
    ("driven_arm", "elbow_amplitude", 0.4), ("driven_arm", "payload", 4.0),
]


def test_fixed_parameters_table():
    """The parameters a native FMU keeps fixed, per model (the table may only shrink)."""
    from fmu_mb.engine.data import supported
    for name in _engine_models():
        mod, data, prog = _program(name)
        structural = {p.name for p in mod.build().parameters
                      if p.structural or isinstance(p.default, str)}
        assert set(prog.fixed) - structural == FIXED[name], (name, prog.fixed)
        assert supported(mod.build()) is None


@pytest.mark.parametrize("name,param,value", NEWLY_COMPILED)
def test_newly_compiled_parameter_alone(name, param, value):
    """Each parameter that the projection metric's derivation, the massless assembly and
    the traced spatial geometry made compilable, moved alone: the engine's data, initial
    state and steps are build()'s with it (the data to 1e-14, the derived metric bitwise)."""
    mod, data, prog = _program(name)
    assert param in prog.compiled, prog.fixed.get(param)
    default = {p.name: p.value for p in mod.build().parameters}[param]
    assert value != default
    _check_engine(name, {param: value})


def test_engine_refuses_a_guard_or_a_fixed_parameter_and_keeps_its_state():
    from fmu_mb.engine.data import model_data
    from fmu_mb.engine.engine import Engine
    prog = P.compile_parameters(_guarded, {}, lambda o: model_data(_guarded(**o)).doubles,
                                model_file="guarded.py")
    eng = Engine(blob=model_data(_guarded()).to_bytes(program=prog), name="guarded")
    eng.set_parameters([0.9, 12.0])
    eng.initialize()
    before = eng.get_state()
    with pytest.raises(FmuMbError, match=r"L=0.4.*--set L=0.4"):
        eng.set_parameters([0.4, 12.0])
    eng.initialize()                              # still the parameters set before
    np.testing.assert_array_equal(eng.get_state(), before)
    ref = Engine(_guarded(L=0.9, k=12.0))
    ref.initialize()
    np.testing.assert_array_equal(ref.get_state(), before)


def test_metric_eigenvalue_is_numpys_and_exact_for_diagonal_inertias():
    """The scalar Jacobi max |eigenvalue| the spatial metric uses (so that C derives the same
    bits) agrees with numpy.linalg.eigvalsh to a few units in the last place, and gives
    max |J_ii| exactly for a diagonal inertia (the builder's numbers there are unchanged)."""
    from fmu_mb.mechanics.spatial.inertia import max_abs_eigenvalue
    rng = np.random.default_rng(3)
    for k in range(2000):
        A = rng.normal(size=(3, 3)) * 10.0 ** rng.uniform(-6, 3, size=(3, 3))
        J = A @ A.T
        ref = np.abs(np.linalg.eigvalsh(J)).max()
        assert abs(max_abs_eigenvalue(J) - ref) <= 1e-14 * ref
        D = np.diag(np.diag(J))
        assert max_abs_eigenvalue(D) == np.abs(np.diag(J)).max()
    assert max_abs_eigenvalue(np.zeros((3, 3))) == 0.0


def test_probe_builds_do_not_warn():
    """The far checks build the model at poses nobody asked for (slider_crank_stop's guide
    beyond its end stop...): their AssemblyWarnings are not the user's, and stay silent; the
    warning filters are as before."""
    import warnings
    from fmu_mb.errors import AssemblyWarning
    mod = load("slider_crank_stop")
    mod.build()
    filters = list(warnings.filters)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        P.program_for(mod)
    assert not [w for w in caught if issubclass(w.category, AssemblyWarning)], caught[0]
    assert warnings.filters == filters


def test_a_loop_that_cannot_close_fails_without_repeating_its_closure(monkeypatch):
    """The far checks build the four-bar at lengths x10, where its loop cannot close: the
    assembly's diagnosis reuses the least-squares closure its retry computed (the same,
    deterministic, numbers) instead of computing it again, and says the same."""
    from fmu_mb.errors import AssemblyError
    from fmu_mb.mechanics import assembly
    mod = load("four_bar")
    calls, lm = [], []
    real, real_lm = assembly._best_closure, assembly._closure_lm

    def counted(model, tree, keep_values, **kwargs):
        calls.append(keep_values)
        return real(model, tree, keep_values, **kwargs)

    def counted_lm(*args, **kwargs):
        lm.append(1)
        return real_lm(*args, **kwargs)
    monkeypatch.setattr(assembly, "_best_closure", counted)
    monkeypatch.setattr(assembly, "_closure_lm", counted_lm)
    with pytest.raises(AssemblyError, match="even at the best pose of the loop"):
        mod.build(coupler_length=3.5)
    assert len(lm) == 1 + assembly.STARTS  # the retry's closure (every start: none closes)
    assert calls == [False]                # only the one without the values


def _spun(**o):
    """A spatial model file's build that does numpy arithmetic on cardan()'s quaternion."""
    from fmu_mb import ModelBuilder
    mb = ModelBuilder("spun", o, gravity=(0.0, 0.0, -9.81))
    t = mb.param("theta0", 0.5, "rad", "initial tilt")
    q = cardan(t, 0.0, 0.0) * 1.0                    # an ndarray's arithmetic
    top = mb.body("top", mass=1.0, inertia=(4e-3, 4e-3, 6e-3), position=(0.0, 0.0, 0.1),
                  orientation=tuple(q))
    mb.spherical("pivot", mb.ground, top, at=(0.0, 0.0, 0.0))
    return mb.build()


@pytest.mark.parametrize("name", ["heavy_top", "double_wishbone", "spun"])
def test_a_trace_leaves_other_threads_builds_alone(name):
    """While a deep trace patches shared modules (the model file's numpy and cardan(), the
    spatial builder's geometry), another thread building the same model file gets the
    untraced functions: its data are bitwise those of a build without a trace."""
    import threading
    from fmu_mb.engine.data import model_data
    build = _spun if name == "spun" else load(name).build
    ref = model_data(build()).doubles
    names = [p.name for p in build().parameters]
    got = []

    def other():
        try:
            got.append(model_data(build()).doubles)
        except Exception as exc:       # noqa: BLE001 - reported below
            got.append(exc)
    thread = threading.Thread(target=other)
    with P._tracing(build, {n: k for k, n in enumerate(names)}, deep=True):
        thread.start()
        thread.join()
    assert isinstance(got[0], np.ndarray), got[0]
    np.testing.assert_array_equal(got[0], ref)


def test_numpy_arithmetic_on_a_traced_cardan_compiles():
    """cardan() of a traced angle is an object ndarray in the trace (numpy arithmetic on it
    traces, as on the ndarray cardan returns): _spun's theta0 compiles, and the program
    gives build()'s data at other angles."""
    from fmu_mb.engine.data import model_data
    data, prog = P.program_for(_spun, far=(10.0,))
    assert prog.compiled == ("theta0",), prog.fixed
    for v in (0.3, 0.55, 1.2):
        ref = model_data(_spun(theta0=v)).doubles
        out = prog.engine_data(np.array([v]), data.doubles)
        assert np.all(P._close(out, ref)), np.flatnonzero(~P._close(out, ref))
        assert not np.array_equal(out, data.doubles)


def test_spatial_cylinder_parameters_compile():
    """A spatial hydraulic cylinder's parameters (its pins, stroke limits and friction) and a
    boom's are compiled, none fixed, and the program's data at other values are build()'s
    (the cylinder's element row, its min length for the stroke output). Its end stops are
    spatial contacts the engine's event loop does not take yet: the model minus them."""
    import dataclasses

    from fmu_mb import ModelBuilder
    from fmu_mb.engine.data import model_data

    def build(**o):
        mb = ModelBuilder("boom3p", o, gravity=(0.0, 0.0, -9.81))
        m = mb.param("boom_mass", 40.0, "kg", "boom mass", min=1e-3)
        px = mb.param("pin_x", 0.8, "m", "barrel pin x on the ground")
        lo = mb.param("min_length", 0.2, "m", "fully retracted length", min=0.01)
        c = mb.param("friction", 50.0, "N.s/m", "cylinder friction", min=0.0)
        boom = mb.body("boom", mass=m, inertia=(0.5, 6.0, 6.0), position=(1.0, 0.0, 0.5))
        mb.revolute("pivot", mb.ground, boom, at=(0.0, 0.0, 0.5), axis=(0.0, -1.0, 0.0))
        mb.cylinder("lift", mb.ground, boom, a_point=(px, 0.1, 0.0), b_point=(0.0, 0.0, -0.2),
                    min_length=lo, max_length=1.2, friction=c)
        model = mb.build()
        return dataclasses.replace(model, contacts=(),
                                   compiled=dataclasses.replace(model.compiled, contacts=None))

    def data_of(o):
        return model_data(build(**o)).doubles

    base = model_data(build())
    prog = P.compile_parameters(build, {}, data_of, derived=base.derived())
    assert not prog.fixed, prog.fixed
    assert set(prog.compiled) == {"boom_mass", "pin_x", "min_length", "friction"}
    vals = {"boom_mass": 55.0, "pin_x": 0.7, "min_length": 0.22, "friction": 80.0}
    got = prog.engine_data([vals[n] for n in prog.names], base.doubles)
    want = data_of(vals)
    assert np.allclose(got, want, rtol=1e-14, atol=1e-14)
    assert not np.allclose(want, base.doubles)


def test_the_planar_stand_in_records_a_loop_model_without_calling_the_kernel():
    """standin_data on a planar model with closed loops (four_bar): the TreeKernel made on the
    _Recorder asks for an eigensolver and sets its loop rows on the fake handle; the recorder
    takes both (the loop rows are in the data) and never hands the fake handle to the real
    library (which wrote through it: a segfault). In a subprocess, so that a crash fails
    this test, not the session."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; "
            "import test_params_compile as T; from fmu_mb.engine import kernel as K; "
            "m = T.load('four_bar').build(); d = T.standin_data(m); "
            "rd = np.asarray(K.loop_rows(m)[1], float); "
            "print(len(rd), bool(np.all(np.isin(rd, d))), bool(np.all(np.isfinite(d))))")
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code,
                        str(Path(__file__).resolve().parent)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, f"status {r.returncode}:\n{r.stdout}{r.stderr[-3000:]}"
    n, found, finite = r.stdout.split()
    assert int(n) > 0 and found == "True" and finite == "True", r.stdout
