"""The compiled parameter program: model parameters -> the engine's model data, run in C.

A model file is Python: its build(**overrides) maps the parameters (lengths, masses,
stiffnesses, initial angles...) to the numbers of the model data that the engine runs on.
The native FMU has no Python, yet a master may set a parameter before initialisation and
must get the motion the Python FMU gets (which rebuilds the model). compile_parameters
turns that map into a small program (fmu_mb/engine/native/params.h, params.c: mbp_run):

1. trace: build() runs once at the build values with every real-valued parameter replaced
   by a Sym, a float that records the expression of every arithmetic result (operators,
   math's and numpy's scalar functions; in the model file, numpy arrays holding Syms become
   object arrays, so that their arithmetic traces too) on a tape. A comparison involving a
   parameter (an `if` of the model file, or the builder's own checks such as mass >= 0)
   records a guard: the branch build() took is checked at run time (mbp_run fails, naming
   the parameter and saying to rebuild with --set; a check of the builder, or a test of
   the model file guarding a raise, with that message). Every other way of reading a
   Sym's value is a guard too (np.sign, floor, int(), math.isclose, np.clip...: the
   section "reads of a value") or a read that fixes the parameters behind it (float() in
   the model file, %, math.fmod, str()...): nothing reads a parameter silently.
2. match: the model data `data_of(overrides)` (a black box) is computed at the build values
   and at random probe sets; a slot that changes depends on a parameter, and is matched
   with the tape expression (or its negative or reciprocal) whose values agree with the
   slot's at every probe set, so coincidences vanish.
3. verify: the emitted int code, interpreted exactly as mbp_run does (ParamProgram.run), is
   run over the default data at fresh random sets inside the parameters' ranges (near the
   build values and within +-50 %), at each parameter's range values (_range_values: the
   ends, zero, its negative, a log-spaced sweep) and at random sets over the whole ranges;
   it must reproduce data_of to VERIFY_RTOL in every slot (relative to the slot's rounding
   scale: rounding()) or refuse the set, and refuse every set that build() refuses.
   A parameter whose effect is not matched or not reproduced (the builder's own geometry,
   an untraced operation, a branch on a plain float) is declared fixed with the reason, and
   the whole is compiled again without it; the program then refuses any other value of it.
   A slot is never silently wrong: what is emitted has been checked against the real build.
   (Sampling cannot prove the absence of a branch taken on a value read in C, by struct
   or a C extension, which no hook sees; the range sets are what cover that.)

Two extensions: slots that the engine derives itself after the program (the projection
metric, EngineData.derived: a max and an eigenvalue) are left out of the matching and
checked by the verification through their Python twin; and a deep trace also recomputes
the spatial builder's own geometry (joint points from at=, frames; _SpatialGeometry) and
the model file's cardan()/from_matrix() on the traced numbers, so those are on the tape.

Why value matching rather than carrying expressions through the builder: the builder and
the data layer convert to floats and numpy arrays everywhere (validation, PairSets, tree
maps); matching against the black box keeps them untouched, works whatever data layout the
engine chooses, and the verification makes a wrong match impossible to ship.

Program layout (ints; doubles in `consts`):
    header   MAGIC, VERSION, np, ndata, ntemp, then strings (model file, the np parameter
             names, the np reasons why a parameter is fixed, "" for a compiled one), each as
             its length followed by its UTF-8 bytes
    code     BEGIN n p1..pn          the statement that follows depends on parameters p1..pn
                                     (named in a message when it fails)
             PARAM k | CONST i       push params[k] | consts[i]
             UNARY f | BINARY f      pop one | two, push f(...) (UNARY, BINARY: libm's)
             STORE slot              pop into data[slot]
             SET k | GET k           temps[k] = the top (kept on the stack) | push temps[k]:
                                     a tape node the program uses more than once is
                                     computed once (k < ntemp, the header's)
             GUARD cmp               pop b, pop a; the test `a cmp b` must hold
             CHECK cmp, a string     the same, for a check of the builder (mass >= 0, the
                                     inertia's triangle inequality...): its message when
                                     it fails is the string (what build() says)
             FIXED 0                 pop b, pop a; a == b (a fixed parameter keeps its value)
             END
Every result is checked finite; a malformed program (an index out of range, a GET before its
SET...) makes mbp_run return -1.
"""
import math
import operator
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import (AssemblyError, AssemblyWarning, DriftError, FmuMbError,
                      SingularSystemError)
from ..mechanics.assembly import _PROBE, probing

MAGIC = 0x3150424D           # "MBP1" little-endian
VERSION = 3                  # 2: temporaries (ntemp in the header, SET, GET); 3: CHECK
STACK = 64                   # mbp_run's stack depth (params.c MBP_STACK)
VERIFY_RTOL = 1e-14          # a slot must be reproduced to this (relative to its size)
WIDE = 0.5                   # relative spread of the wide verification sets
FAR = (10.0, 0.1, 100.0, 0.01, 1e3, 1e-3)   # the log-spaced sweep: the value times these
N_COMBO = 4                  # random sets of all parameters over their declared ranges
FAR_BUILDS = 400             # at most this many range builds per compilation (a count, not
                             # a time: the program must not depend on the machine's speed)
(OP_END, OP_BEGIN, OP_PARAM, OP_CONST, OP_UNARY, OP_BINARY, OP_STORE, OP_GUARD,
 OP_FIXED, OP_SET, OP_GET, OP_CHECK) = range(12)
UNARY = ("neg", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "exp", "log", "log10",
         "sinh", "cosh", "tanh", "fabs", "expm1", "log1p", "log2", "asinh", "acosh", "atanh",
         "cbrt")
BINARY = ("add", "sub", "mul", "div", "pow", "atan2", "hypot")
CMPS = ("lt", "le", "gt", "ge", "eq", "ne")
_CMP_TEXT = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_CMP_FN = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
           "eq": operator.eq, "ne": operator.ne}


def _pow(a, b):
    try:
        return a ** b if not (a < 0.0 and not float(b).is_integer()) else math.nan
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _div(a, b):
    if b == 0.0:
        return math.copysign(math.inf, a) if a != 0.0 else math.nan
    return a / b


def _safe(f):
    def g(*a):
        try:
            return f(*a)
        except (ValueError, OverflowError, ZeroDivisionError):
            return math.nan
    return g


def _libm_hypot():
    """libm's hypot, which params.c calls (CPython's math.hypot is its own algorithm and may
    differ from it in the last bit)."""
    import ctypes
    import ctypes.util
    try:
        f = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").hypot
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
        return f
    except (OSError, AttributeError, TypeError):           # pragma: no cover
        return math.hypot


_CBRT = getattr(math, "cbrt", None)
_FN = {"neg": operator.neg, "sqrt": _safe(math.sqrt), "sin": _safe(math.sin),
       "cos": _safe(math.cos), "tan": _safe(math.tan), "asin": _safe(math.asin),
       "acos": _safe(math.acos), "atan": math.atan, "exp": _safe(math.exp),
       "log": _safe(math.log), "log10": _safe(math.log10), "sinh": _safe(math.sinh),
       "cosh": _safe(math.cosh), "tanh": math.tanh, "fabs": math.fabs,
       "expm1": _safe(math.expm1), "log1p": _safe(math.log1p), "log2": _safe(math.log2),
       "asinh": math.asinh, "acosh": _safe(math.acosh), "atanh": _safe(math.atanh),
       "cbrt": _safe(_CBRT) if _CBRT else None,
       "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": _div,
       "pow": _pow, "atan2": math.atan2, "hypot": _libm_hypot()}


#: a build() that fails so at a verification set is not compared: the model data are not
#: made (an assembly that does not close); the engine's own assembly runs at initialisation
_NOT_COMPARED = (AssemblyError, SingularSystemError, DriftError)


class ParameterProgramError(FmuMbError):
    """A parameter set that the compiled program refuses (guard broken, non-finite data)."""


# ---------------------------------------------------------------------- tracing
class _Tape:
    """Hash-consed expression nodes: ("p", k), ("c", value), (fn, child ids...)."""

    def __init__(self, n_params):
        self.nodes, self.ids, self.guards = [], {}, []
        self.n_params = n_params
        self.reads = []         # (node, what): a value read by an operation not traced
        self.messages = {}      # guard -> the builder's message when it fails (a check)

    def ops(self):
        """_ops(self.nodes), extended as nodes are added."""
        got = self.__dict__.setdefault("_ops", [])
        if len(got) < len(self.nodes):
            got.extend(_ops(self.nodes, len(got)))
        return got

    def deps(self):
        """_deps(self.nodes), extended as nodes are added (a node's parameters do not change
        when nodes are added after it)."""
        got = self.__dict__.setdefault("_deps", [])
        if len(got) < len(self.nodes):
            _deps(self.nodes, got)
        return got

    def node(self, key):
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.nodes)
            self.nodes.append(key)
        return i

    def const(self, v):
        v = _val(v)
        key = ("c", v.hex())            # (-0.0 and 0.0 are different constants)
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.nodes)
            self.nodes.append(("c", v))
        return i


_tape = None     # the tape of the trace under way (set only inside _tracing)
_deep = False    # that trace follows Syms into numpy arrays (object arrays)


def _scalar(x):
    return isinstance(x, (float, int, np.floating, np.integer)) and not isinstance(x, bool)


class Sym(float):
    """A float that records the expression it was computed by on the active tape."""

    __slots__ = ("node", "tape")

    def __new__(cls, value, node):
        s = float.__new__(cls, value)
        s.node, s.tape = node, _tape
        return s

    __hash__ = float.__hash__

    def __reduce__(self):
        return float, (float.__float__(self),)

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


def _live(x):
    """x is a Sym of the trace under way (one kept from an earlier trace is a number)."""
    return isinstance(x, Sym) and _tape is not None and x.tape is _tape


def _nid(x):
    return x.node if _live(x) else _tape.const(x)


_PY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "div": operator.truediv, "pow": operator.pow, "neg": operator.neg,
       "fabs": math.fabs}


def _apply(fn, *args, py=None):
    """The Sym fn(args), its value computed as Python (or `py`, e.g. a numpy ufunc) computes
    it, raising what Python raises; NotImplemented for non-scalar arguments."""
    if not all(_scalar(a) for a in args):
        return NotImplemented
    vals = [_val(a) for a in args]
    f = py or _PY.get(fn) or getattr(math, fn)
    value = _val(f(*vals))
    if _tape is None:               # a Sym kept after its trace: plain arithmetic
        return value
    return Sym(value, _tape.node((fn, *[_nid(a) for a in args])))


def _binop(fn, swap=False):
    def op(self, other):
        if not _scalar(other):
            return NotImplemented
        return _apply(fn, other, self) if swap else _apply(fn, self, other)
    return op


def _cmp(name):
    base = getattr(float, f"__{name}__")

    def op(self, other):
        if _scalar(other):
            return _guard(name, self, other)
        return base(self, other)
    return op


for _n, _f in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
               ("pow", "pow")):
    setattr(Sym, f"__{_n}__", _binop(_f))
    setattr(Sym, f"__r{_n}__", _binop(_f, swap=True))
for _n in CMPS:
    setattr(Sym, f"__{_n}__", _cmp(_n))
Sym.__neg__ = lambda self: _apply("neg", self)
Sym.__pos__ = lambda self: self
Sym.__abs__ = lambda self: _apply("fabs", self)


def _bool(self):
    return _guard("ne", self, 0.0)


Sym.__bool__ = _bool
for _n, _f in (("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
               ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("exp", "exp"),
               ("log", "log"), ("log10", "log10"), ("sinh", "sinh"), ("cosh", "cosh"),
               ("tanh", "tanh"), ("expm1", "expm1"), ("log1p", "log1p"), ("log2", "log2"),
               ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    # numpy's object loops call these (np.sqrt(object array) -> element.sqrt())
    setattr(Sym, _n, (lambda f: lambda self: _apply(f, self))(_f))
Sym.arctan2 = lambda self, other: _apply("atan2", self, other)
Sym.hypot = lambda self, other: _apply("hypot", self, other)

_UFUNCS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
           np.power: "pow", np.arctan2: "atan2", np.hypot: "hypot", np.negative: "neg",
           np.sqrt: "sqrt", np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin",
           np.arccos: "acos", np.arctan: "atan", np.exp: "exp", np.log: "log",
           np.log10: "log10", np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh",
           np.absolute: "fabs", np.fabs: "fabs", np.expm1: "expm1", np.log1p: "log1p",
           np.log2: "log2", np.arcsinh: "asinh", np.arccosh: "acosh", np.arctanh: "atanh",
           np.cbrt: "cbrt"}
_UCMP = {np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
         np.equal: "eq", np.not_equal: "ne"}


def _obj(x):
    """x as an object array whose elements are Python floats or Syms (ops on it trace)."""
    if isinstance(x, Sym):
        a = np.empty((), dtype=object)
        a[()] = x
        return a
    return np.asarray(x).astype(object)


# ---------------------------------------------------------------------- reads of a value
# Every way in which code can read a Sym's value (rather than compute with it) either
# records a guard (a branch build() took, checked by mbp_run: comparisons, bool(), sign,
# floor, isclose, max...) or a read (tape.reads: the parameters behind the Sym become fixed,
# the reason naming the function and the line of the model file). Conversions to float by
# fmu_mb's own code (the builder storing numbers in arrays) are neither: their values flow
# into the model data unchanged, where the matching and the verification check them.
_HERE = __file__
_NUMPY_DIR = np.__file__.rsplit("/", 1)[0] if "/" in np.__file__ else np.__file__
_PACKAGE_DIR = __file__.rsplit("/", 2)[0] if "/" in __file__ else ""    # fmu_mb/


def _val(x):
    """The plain float value of x (no read recorded: the tracer's own use)."""
    return float.__float__(x) if isinstance(x, float) else float(x)


def _user_frame(depth=1):
    """(file, line, inside fmu_mb) of the first frame of the caller's stack that is neither
    numpy's nor the standard library's (nor this module's)."""
    import sys
    import sysconfig
    stdlib = _user_frame.stdlib
    if stdlib is None:
        stdlib = _user_frame.stdlib = sysconfig.get_paths()["stdlib"]
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_NUMPY_DIR) or fn == _HERE or fn.startswith(stdlib)
                or fn.startswith("<frozen")):
            return fn, f.f_lineno, bool(_PACKAGE_DIR) and fn.startswith(_PACKAGE_DIR)
        f = f.f_back
    return "?", 0, False


_user_frame.stdlib = None


def _read(x, what):
    """Record that `what` read the value of x (a Sym depending on parameters) outside
    fmu_mb's own code: those parameters become fixed. Returns x's plain value."""
    if _live(x):
        fn, line, inside = _user_frame(1)
        if not inside:
            _tape.reads.append((x.node, f"{what} at {fn.rsplit('/', 1)[-1]}:{line}"))
    return _val(x)


def _read_all(args, what):
    for a in args:
        if isinstance(a, Sym):
            _read(a, what)
        elif isinstance(a, (list, tuple)) or (isinstance(a, np.ndarray) and a.dtype == object):
            _read_all(list(np.asarray(a, dtype=object).ravel()) if isinstance(a, np.ndarray)
                      else a, what)


def _guard(cmp, a, b, message=""):
    """The test `a cmp b` (Syms or numbers), recorded as a guard when a or b is a Sym; a
    test of the model file's that guards a `raise` carries the raise's message."""
    r = _CMP_FN[cmp](_val(a), _val(b))
    if _live(a) or _live(b):
        g = (cmp, _nid(a), _nid(b), bool(r))
        _tape.guards.append(g)
        if not message:
            fn, line, inside = _user_frame(1)
            if not inside:
                message = _raise_messages(fn).get(line, "")
        if message:
            _tape.messages.setdefault(g, message)
    return r


_RAISES = {}


def _raise_messages(filename):
    """line -> the message of the `raise SomeError("...")` (or `assert test, "..."`) that
    the test on that line of a model file guards: an f-string's fields written as their
    source, {theta0}; {} when the file cannot be read."""
    got = _RAISES.get(filename)
    if got is not None:
        return got
    import ast
    out = {}
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        tree = None

    def text(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else
                           "{" + ast.unparse(v.value) + "}" for v in node.values)
        return ""

    def raised(body):
        for st in body:
            if isinstance(st, ast.Raise) and isinstance(st.exc, ast.Call) and st.exc.args:
                return text(st.exc.args[0])
        return ""
    for node in ast.walk(tree) if tree is not None else ():
        msg = ""
        if isinstance(node, ast.If):
            msg = raised(node.body) or raised(node.orelse)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            msg = text(node.msg)
        if msg:
            for line in range(node.test.lineno, (node.test.end_lineno or node.test.lineno) + 1):
                out.setdefault(line, msg)
    _RAISES[filename] = out
    return out


def _float(self):
    """float(sym): a conversion by fmu_mb's own code stays silent (checked by the matching);
    anywhere else (the model file, a library) the value is read."""
    if _live(self):
        fn, line, inside = _user_frame(1)
        if not inside:
            _tape.reads.append((self.node, f"float() at {fn.rsplit('/', 1)[-1]}:{line}"))
    return float.__float__(self)


def _to_int(self, k, lo_strict, hi_strict, lo, hi):
    """An integer k that the value decided: guards lo (<, <=) x (<, <=) hi."""
    _guard("gt" if lo_strict else "ge", self, float(lo))
    _guard("lt" if hi_strict else "le", self, float(hi))
    return k


def _floor(self):
    k = math.floor(_val(self))
    return _to_int(self, k, False, True, k, k + 1)


def _ceil(self):
    k = math.ceil(_val(self))
    return _to_int(self, k, True, False, k - 1, k)


def _trunc(self):
    k = math.trunc(_val(self))
    if k > 0:
        return _to_int(self, k, False, True, k, k + 1)
    if k < 0:
        return _to_int(self, k, True, False, k - 1, k)
    return _to_int(self, k, True, True, -1, 1)


def _round(self, ndigits=None):
    if ndigits is not None:
        _read(self, f"round(x, {ndigits})")
        return round(_val(self), ndigits)
    k = round(_val(self))
    even = k % 2 == 0                       # halves go to the even integer
    return _to_int(self, k, not even, not even, k - 0.5, k + 0.5)


def _reader(what, f):
    def read(self, *args):
        _read(self, what)
        _read_all(args, what)
        return f(_val(self), *[_val(a) if isinstance(a, float) else a for a in args])
    return read


def _text(name):
    base = getattr(float, name)

    def text(self, *args):
        """str(), repr(), format() of a Sym: its value as text, a read outside fmu_mb (a
        number parsed back from it would carry no trace)."""
        if _live(self):
            fn, line, inside = _user_frame(1)
            if not inside:
                _tape.reads.append((self.node, f"{name.strip('_')}() (the value as text) at "
                                               f"{fn.rsplit('/', 1)[-1]}:{line}"))
        return base(float.__float__(self), *args)
    return text


Sym.__float__ = _float
Sym.__str__ = _text("__str__")
Sym.__repr__ = _text("__repr__")
Sym.__format__ = _text("__format__")
Sym.__int__ = _trunc
Sym.__trunc__ = _trunc
Sym.__floor__ = _floor
Sym.__ceil__ = _ceil
Sym.__round__ = _round
for _n in ("mod", "rmod", "floordiv", "rfloordiv", "divmod", "rdivmod"):
    setattr(Sym, f"__{_n}__", _reader(f"the operator {_n}", getattr(float, f"__{_n}__")))
Sym.is_integer = _reader("is_integer()", float.is_integer)
Sym.as_integer_ratio = _reader("as_integer_ratio()", float.as_integer_ratio)
Sym.hex = _reader("hex()", float.hex)
Sym.real = property(lambda self: self)
Sym.imag = property(lambda self: 0.0)
Sym.conjugate = lambda self: self


def _sign(x):
    if _guard("gt", x, 0.0):
        return 1.0
    if _guard("lt", x, 0.0):
        return -1.0
    if _guard("eq", x, 0.0):
        return 0.0
    return _val(x)                           # NaN (not reached: parameters are finite)


def _maximum(a, b):
    """numpy's maximum/fmax of finite numbers: a when a >= b, else b."""
    return a if _guard("ge", a, b) else b


def _minimum(a, b):
    return a if _guard("le", a, b) else b


def _copysign(a, b):
    neg = _guard("lt", b, 0.0) or (_guard("eq", b, 0.0) and math.copysign(1.0, _val(b)) < 0)
    m = abs(a) if isinstance(a, Sym) else math.fabs(a)
    return -m if neg else m


def _signbit(x):
    return bool(_guard("lt", x, 0.0) or (_guard("eq", x, 0.0)
                                         and math.copysign(1.0, _val(x)) < 0))


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose of scalars: |a - b| <= atol + rtol |b| or a == b (b finite: mbp_run
    checks every number finite)."""
    if not (_scalar(a) and _scalar(b) and _scalar(rtol) and _scalar(atol)):
        return NotImplemented
    if _guard("le", abs(a - b), atol + rtol * abs(b)):
        return np.True_
    return np.bool_(_guard("eq", a, b))


def _math_isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):
    """math.isclose as CPython computes it: a == b, or |b - a| <= |rel_tol b|, or
    <= |rel_tol a|, or <= abs_tol (the guard: the widest clause that holds, or all of them
    failing)."""
    d = abs(b - a)
    bounds = [abs(rel_tol * b), abs(rel_tol * a), abs_tol]
    held = [x for x in bounds if _val(d) <= _val(x)]
    if held:        # one clause that holds suffices: the widest (the largest bound)
        _guard("le", d, max(held, key=_val))
        return True
    for x in bounds:
        _guard("le", d, x)
    return _guard("eq", a, b)


def _finite(x):
    """isfinite(x) of a finite number: True, and x is computed by the program (the guard
    x == x), where mbp_run refuses a result that is not finite."""
    _guard("eq", x, x)
    return True


_UDISCRETE = {np.sign: _sign, np.maximum: _maximum, np.fmax: _maximum, np.minimum: _minimum,
              np.fmin: _minimum, np.floor: lambda x: float(_floor(x)),
              np.ceil: lambda x: float(_ceil(x)), np.trunc: lambda x: float(_trunc(x)),
              np.rint: lambda x: float(_round(x)), np.copysign: _copysign,
              np.signbit: _signbit, np.square: lambda x: x * x,
              np.reciprocal: lambda x: 1.0 / x, np.positive: lambda x: x,
              np.deg2rad: lambda x: x * (math.pi / 180.0),
              np.radians: lambda x: x * (math.pi / 180.0),
              np.rad2deg: lambda x: x * (180.0 / math.pi),
              np.degrees: lambda x: x * (180.0 / math.pi),
              np.isfinite: lambda x: np.bool_(_finite(x)),
              np.isnan: lambda x: np.bool_(not _finite(x)),
              np.isinf: lambda x: np.bool_(not _finite(x))}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    scalar = all(_scalar(a) for a in inputs)
    if method == "__call__" and not kwargs and scalar:
        if ufunc in _UFUNCS and _FN.get(_UFUNCS[ufunc]) is not None:
            r = _apply(_UFUNCS[ufunc], *inputs, py=ufunc)
            if r is not NotImplemented:
                return r
        if ufunc in _UCMP and len(inputs) == 2:
            return np.bool_(_guard(_UCMP[ufunc], *inputs))
        f = _UDISCRETE.get(ufunc)
        if f is not None:
            r = f(*inputs)
            return np.float64(r) if type(r) is float else r
    if (_deep and method == "__call__" and not kwargs
            and all(_scalar(a) or isinstance(a, (np.ndarray, list, tuple)) for a in inputs)):
        # a Sym with arrays: object arrays, whose elements' operators, comparisons and
        # methods (__floor__...) trace or record
        r = ufunc(*[_obj(a) for a in inputs])
        return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r
    _read_all(inputs, f"numpy.{ufunc.__name__}")
    plain = [np.asarray(_val(a)) if isinstance(a, Sym) else a for a in inputs]
    return getattr(ufunc, method)(*plain, **kwargs)


def _np_clip(a, a_min=None, a_max=None, *args, **kwargs):
    if args or kwargs or not all(x is None or _scalar(x) for x in (a, a_min, a_max)):
        return NotImplemented
    if a_min is not None:
        a = _maximum(a, a_min)
    if a_max is not None:
        a = _minimum(a, a_max)
    return a


def _np_where(cond, *xy):
    if len(xy) != 2 or not all(_scalar(v) or isinstance(v, (bool, np.bool_))
                               for v in (cond, *xy)):
        return NotImplemented
    return xy[0] if bool(cond) else xy[1]


def _np_around(a, decimals=0, out=None):
    if decimals != 0 or out is not None or not _scalar(a):
        return NotImplemented
    return float(_round(a))


def _np_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not (_scalar(a) and _scalar(b)):
        return NotImplemented
    return bool(_np_isclose(a, b, rtol, atol))


_AFUNCS = {np.isclose: _np_isclose, np.allclose: _np_allclose, np.clip: _np_clip,
           np.where: _np_where, np.around: _np_around, np.round: _np_around}


def _has_sym_arg(args):
    return any(isinstance(a, Sym) or (isinstance(a, (list, tuple)) and _has_sym_arg(a))
               for a in args)


def _array_function(self, func, types, args, kwargs):
    f = _AFUNCS.get(func)
    if f is not None:
        r = f(*args, **kwargs)
        if r is not NotImplemented:
            return r
    impl = getattr(func, "_implementation", None)
    if _deep and impl is not None:
        # the Syms as 0-d object arrays: numpy's code then works on their operators
        def conv(v):
            return _obj(v) if isinstance(v, Sym) else v
        r = impl(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
        return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 and r.dtype == object \
            else r
    what = f"numpy.{getattr(func, '__name__', 'function')}"
    _read_all(list(args) + list(kwargs.values()), what)

    def plain(v):
        return _val(v) if isinstance(v, Sym) else v
    return (impl or func)(*[plain(a) for a in args],
                          **{k: plain(v) for k, v in kwargs.items()})


Sym.__array_ufunc__ = _array_ufunc
Sym.__array_function__ = _array_function


class _TracedMath:
    """Stands for the math module in a traced model file: its functions record Syms."""

    _MAP = {"sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin",
            "acos": "acos", "atan": "atan", "exp": "exp", "log10": "log10", "sinh": "sinh",
            "cosh": "cosh", "tanh": "tanh", "fabs": "fabs", "expm1": "expm1",
            "log1p": "log1p", "log2": "log2", "asinh": "asinh", "acosh": "acosh",
            "atanh": "atanh", "cbrt": "cbrt", "atan2": "atan2"}

    def __getattr__(self, name):
        fn = self._MAP.get(name)
        orig = _MATH_ORIG.get(name) or getattr(math, name)
        if fn is None:
            if name == "log":
                return self._log
            if name == "hypot":
                return self._hypot
            if name in ("radians", "degrees"):
                k = math.pi / 180.0 if name == "radians" else 180.0 / math.pi
                return lambda x: (x * k if isinstance(x, Sym) else orig(x))
            if name == "pow":
                return lambda a, b: (_pow_traced(a, b) if isinstance(a, Sym) or
                                     isinstance(b, Sym) else orig(a, b))
            return getattr(math, name)      # (while tracing: a guard or a read)

        def traced(*args):
            if any(isinstance(a, Sym) for a in args):
                r = _apply(fn, *args)
                if r is not NotImplemented:
                    return r
            return orig(*args)
        return traced

    @staticmethod
    def _log(x, base=None):
        if base is None:
            return _apply("log", x) if isinstance(x, Sym) else _MATH_ORIG["log"](x)
        if isinstance(x, Sym) or isinstance(base, Sym):
            return _apply("div", _TracedMath._log(x), _TracedMath._log(base))
        return _MATH_ORIG["log"](x, base)

    @staticmethod
    def _hypot(*args):
        if len(args) == 2 and any(isinstance(a, Sym) for a in args):
            return _apply("hypot", *args)
        _read_all(args, "math.hypot")
        return _MATH_ORIG["hypot"](*[_val(a) for a in args])


def _pow_traced(a, b):
    return _apply("pow", a, b, py=math.pow)


_MATH_GUARDED = {"isclose": _math_isclose, "copysign": _copysign, "isfinite": _finite,
                 "isnan": lambda x: not _finite(x), "isinf": lambda x: not _finite(x)}
_MATH_OWN = ("floor", "ceil", "trunc", "prod")   # Sym's __floor__...; products: __mul__


def _math_function(name, orig, tid):
    """math.<name> while a trace runs (in every module): traced (sqrt, sin...), a guard
    (isclose, copysign...) or a read (fsum, fmod, erf...) when a Sym is among the arguments
    in the tracing thread; orig itself otherwise."""
    def f(*args, **kwargs):
        if (_tape is None or threading.get_ident() != tid
                or not _has_sym_arg(list(args) + list(kwargs.values()))):
            return orig(*args, **kwargs)
        if name in _TracedMath._MAP or name in ("log", "hypot", "radians", "degrees",
                                                "pow"):
            return getattr(_TracedMath(), name)(*args, **kwargs)
        g = _MATH_GUARDED.get(name)
        if g is not None:
            return g(*args, **kwargs)
        if name in _MATH_OWN:
            return orig(*args, **kwargs)
        _read_all(list(args) + list(kwargs.values()), f"math.{name}")
        return orig(*[_val(a) if isinstance(a, Sym) else a for a in args],
                    **{k: _val(v) if isinstance(v, Sym) else v for k, v in kwargs.items()})
    f.orig = orig
    return f


_MATH_ORIG = {n: getattr(math, n) for n in dir(math)
              if not n.startswith("_") and callable(getattr(math, n))}


def _has_sym(x, depth=0):
    if isinstance(x, Sym):
        return True
    if depth > 4:
        return False
    if isinstance(x, (list, tuple)):
        return any(_has_sym(v, depth + 1) for v in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return any(_has_sym(v, depth + 1) for v in x.ravel()[:10000])
    return False


class _TracedNumpy:
    """Stands for numpy in a model file traced in deep mode: array constructors given Syms
    make object arrays (their arithmetic then traces element by element). Only in the
    tracing thread: another thread running the same model file meanwhile gets numpy's own."""

    def __init__(self):
        self._tid = threading.get_ident()

    def __getattr__(self, name):
        orig = getattr(np, name)
        if threading.get_ident() != self._tid:
            return orig
        if name in ("array", "asarray", "asanyarray"):
            def make(obj, dtype=None, *args, **kwargs):
                if _has_sym(obj) and dtype in (None, float, np.float64, object):
                    return orig(obj, *args, dtype=object, **kwargs)
                return orig(obj, dtype, *args, **kwargs)
            return make
        if name in ("zeros", "ones", "eye", "identity"):
            def filled(*args, dtype=None, **kwargs):      # (object: J += m * ... traces)
                a = orig(*args, dtype=dtype, **kwargs)
                return a.astype(object) if dtype in (None, float, np.float64) else a
            return filled
        return orig


def _sfn(fn, x):
    return _apply(fn, x) if isinstance(x, Sym) else getattr(math, fn)(x)


def _traced_cardan(alpha, beta, gamma):
    """rotations.cardan on scalars (Syms record): the product of the three elementary
    quaternions, normalised, e0 >= 0 (a guard when it depends on a parameter)."""
    qx = (_sfn("cos", alpha / 2), _sfn("sin", alpha / 2), 0.0, 0.0)
    qy = (_sfn("cos", beta / 2), 0.0, _sfn("sin", beta / 2), 0.0)
    qz = (_sfn("cos", gamma / 2), 0.0, 0.0, _sfn("sin", gamma / 2))
    q = _qprod(_qprod(qx, qy), qz)
    n = _sfn("sqrt", q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    q = [v / n for v in q]
    return tuple(q) if q[0] >= 0 else tuple(-v for v in q)


def _traced_from_matrix(R):
    """rotations.from_matrix on scalars (Shepperd's method; its choice of the largest of
    1 + tr R and 1 - tr R + 2 R_ii is a guard when it depends on a parameter)."""
    R = [[R[i][j] for j in range(3)] for i in range(3)]
    tr = R[0][0] + R[1][1] + R[2][2]
    vals = (R[0][0], R[1][1], R[2][2], tr)
    i = 0
    for k in (1, 2, 3):
        if vals[k] > vals[i]:
            i = k
    q = [0.0] * 4
    if i == 3:
        q = [1.0 + tr, R[2][1] - R[1][2], R[0][2] - R[2][0], R[1][0] - R[0][1]]
    else:
        j, k = (i + 1) % 3, (i + 2) % 3
        q[1 + i] = 1.0 - tr + 2.0 * R[i][i]
        q[1 + j] = R[j][i] + R[i][j]
        q[1 + k] = R[k][i] + R[i][k]
        q[0] = R[k][j] - R[j][k]
    n = _sfn("sqrt", q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    q = [v / n for v in q]
    return tuple(q) if q[0] >= 0 else tuple(-v for v in q)


def _mm(A, B):
    return [[(A[i][0] * B[0][j] + A[i][1] * B[1][j]) + A[i][2] * B[2][j] for j in range(3)]
            for i in range(3)]


def _tr(A):
    return [[A[j][i] for j in range(3)] for i in range(3)]


def _frame_from_axis(z):
    """rotations.frame_from_axis on scalars (the helper axis chosen by |z_i|: guards)."""
    n = _sfn("sqrt", z[0] * z[0] + z[1] * z[1] + z[2] * z[2])
    z = [v / n for v in z]
    a = [abs(v) for v in z]
    i = 0
    for k in (1, 2):
        if a[k] < a[i]:
            i = k
    h = [1.0 if k == i else 0.0 for k in range(3)]
    hz = (h[0] * z[0] + h[1] * z[1]) + h[2] * z[2]
    x = [h[k] - z[k] * hz for k in range(3)]
    nx = _sfn("sqrt", x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    x = [v / nx for v in x]
    y = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]]
    return [[x[r], y[r], z[r]] for r in range(3)]


def _qprod(p, q):
    p0, p1, p2, p3 = p
    q0, q1, q2, q3 = q
    return (p0 * q0 - (p1 * q1 + p2 * q2 + p3 * q3),
            p0 * q1 + q0 * p1 + (p2 * q3 - p3 * q2),
            p0 * q2 + q0 * p2 + (p3 * q1 - p1 * q3),
            p0 * q3 + q0 * p3 + (p1 * q2 - p2 * q1))


def _rotation(q):
    """A(p) (rows) of the quaternion q normalised, on scalars: (e0^2 - e.e) I + 2 e e' +
    2 e0 e~ (rotations.matrix)."""
    n = _sfn("sqrt", q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    e0, e1, e2, e3 = [v / n for v in q]
    e = (e1, e2, e3)
    c = e0 * e0 - (e1 * e1 + e2 * e2 + e3 * e3)
    til = ((0.0, -e3, e2), (e3, 0.0, -e1), (-e2, e1, 0.0))
    return [[(c if i == j else 0.0) + 2.0 * e[i] * e[j] + 2.0 * e0 * til[i][j]
             for j in range(3)] for i in range(3)]


class _SpatialGeometry:
    """While a deep trace runs: the spatial builder's own geometry (a joint's body-frame
    points A(p)' (at - r) and, for spherical joints, frames A(p)' from the global point at=
    and the bodies' declared poses) recomputed on the scalars the model file passed, so that
    its numbers are on the tape (the builder itself converts to float arrays). Only adds
    expressions: the builder's results are unchanged; matching and verification decide."""

    def __init__(self, tid=None):
        from ..mechanics.spatial import builder as sb
        self.cls = sb.SpatialItems
        self.poses = {}
        self.tid = threading.get_ident() if tid is None else tid   # the tracing thread

    def __enter__(self):
        cls, poses = self.cls, self.poses
        self.orig = {k: cls.__dict__[k] for k in ("_body3", "_joint3")}
        ob, oj = self.orig["_body3"], self.orig["_joint3"]
        tid = self.tid

        def body3(mb, name, mass, inertia, position, orientation, *args, **kwargs):
            if threading.get_ident() == tid:
                poses[id(mb), name] = (position, orientation)
            return ob(mb, name, mass, inertia, position, orientation, *args, **kwargs)

        def joint3(mb, name, kind, parent, child, *args, at=None, **kwargs):
            if threading.get_ident() != tid:             # another thread: untouched
                return oj(mb, name, kind, parent, child, *args, at=at, **kwargs)
            try:
                _SpatialGeometry._trace_joint(mb, poses, kind, parent, child, at,
                                              kwargs.get("axis"))
            except Exception:     # noqa: BLE001 - tracing must not change the build
                pass
            return oj(mb, name, kind, parent, child, *args, at=at, **kwargs)
        cls._body3, cls._joint3 = body3, joint3
        return self

    @staticmethod
    def _trace_joint(mb, poses, kind, parent, child, at, axis):
        rots = {}
        for body in (parent, child):
            if (id(mb), body) not in poses:
                rots[body] = None             # the ground: the point is at itself
                continue
            r, q = poses[id(mb), body]
            r = [v for v in r]
            q = (1.0, 0.0, 0.0, 0.0) if q is None else [v for v in q]
            if len(q) != 4 or len(r) != 3:
                return
            A = _rotation(q) if _has_sym(list(q)) else None
            rots[body] = A
            if at is None or len(at) != 3 or not (_has_sym(list(at)) or _has_sym(r) or A):
                continue
            A = A or _rotation(q)
            d = [at[i] - r[i] for i in range(3)]
            [(A[0][i] * d[0] + A[1][i] * d[1]) + A[2][i] * d[2] for i in range(3)]
        if kind in ("spherical", "distance", "universal") or axis is None:
            return                            # (spherical frames: the entries of A above)
        z = [v for v in axis]
        Ap, Ac = rots[parent], rots[child]
        if len(z) != 3 or not (_has_sym(z) or Ap or Ac):
            return
        eye = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
        Ap, Ac = Ap or eye, Ac or eye
        Fp = _mm(_tr(Ap), _frame_from_axis(z))
        _mm(_mm(_tr(Ac), Ap), Fp)

    def __exit__(self, *exc):
        for k, f in self.orig.items():
            setattr(self.cls, k, f)
        return False


class _tracing:
    """Context: a tape, ModelBuilder.param returning Syms for the traced parameters, and
    the model file's (and fmu_mb.units') math replaced by _TracedMath."""

    def __init__(self, build, traced, deep=False):
        self.build, self.traced, self.deep = build, traced, deep   # traced: name -> index

    def __enter__(self):
        global _tape, _deep
        from ..mechanics import builder as _builder
        from ..mechanics.spatial import builder as _sbuilder
        from .. import units as _units
        _LOCK.acquire()
        self.tape = _tape = _Tape(len(self.traced))
        self.cls = _builder.ModelBuilder
        self.orig = self.cls.__dict__["param"]
        traced, tape, orig = self.traced, self.tape, self.orig
        tid = threading.get_ident()

        def param(mb, name, default, *args, **kwargs):
            value = orig(mb, name, default, *args, **kwargs)
            if name in traced and isinstance(value, float) and threading.get_ident() == tid:
                return Sym(value, tape.node(("p", traced[name])))
            return value
        self.cls.param = param
        # the builder's own checks (mass >= 0, length > 0...) become guards on a parameter
        self.numbers = [(vars(mod), key, wrap) for mod, key, wrap in (
            (_builder, "_number", _traced_number), (_sbuilder, "number", _traced_number),
            (_builder, "_restitution", _traced_restitution),
            (_sbuilder, "_restitution", _traced_restitution),
            (_sbuilder, "inertia_tensor", _traced_inertia)) if callable(vars(mod).get(key))]
        for g, key, wrap in self.numbers:
            g[key] = wrap(g[key])
        # the builder's checks between two numbers (min_length < max_length...)
        self.methods = [(k, self.cls.__dict__[k]) for k in ("cylinder", "joint_limit")
                        if k in self.cls.__dict__]
        for k, f in self.methods:
            setattr(self.cls, k, {"cylinder": _traced_cylinder,
                                  "joint_limit": _traced_joint_limit}[k](f, tid))
        self.globs = [g for g in (getattr(self.build, "__globals__", None), vars(_units))
                      if g is not None and g.get("math") is math]
        for g in self.globs:
            g["math"] = _TracedMath()
        # math's functions in every module (and those the model file imported by name):
        # traced, a guard or a read when given a Sym (in this thread only)
        self.maths = {n: _math_function(n, f, tid) for n, f in _MATH_ORIG.items()}
        for n, f in self.maths.items():
            setattr(math, n, f)
        by_id = {id(f): n for n, f in _MATH_ORIG.items()}
        self.named = [(g, k, v) for g in _user_globals(self.build) for k, v in list(g.items())
                      if id(v) in by_id and _MATH_ORIG[by_id[id(v)]] is v]
        for g, k, v in self.named:
            g[k] = self.maths[by_id[id(v)]]
        _deep = self.deep
        self.nps, self.cardans, self.geometry = [], [], None
        if self.deep:
            from ..mechanics.spatial import rotations as _rot
            g = getattr(self.build, "__globals__", None) or {}
            self.nps = [(g, k) for k, v in g.items() if v is np]
            for g, k in self.nps:
                g[k] = _TracedNumpy()
            traced_rot = ((_rot.cardan, _traced_cardan), (_rot.from_matrix, _traced_from_matrix))
            self.cardans = [(g, k, v, t) for k, v in g.items() for f, t in traced_rot
                            if v is f]
            for g, k, v, t in self.cardans:
                g[k] = _in_thread(tid, _on_syms(t, v), v)
            self.geometry = _SpatialGeometry(tid).__enter__()
        return self.tape

    def __exit__(self, *exc):
        global _tape, _deep
        self.cls.param = self.orig
        for g, key, _ in self.numbers:
            g[key] = g[key].orig
        for k, f in self.methods:
            setattr(self.cls, k, f)
        for g in self.globs:
            g["math"] = math
        for n, f in _MATH_ORIG.items():
            setattr(math, n, f)
        for g, k, v in self.named:
            g[k] = v
        for g, k in self.nps:
            g[k] = np
        for g, k, v, t in self.cardans:
            g[k] = v
        if self.geometry is not None:
            self.geometry.__exit__()
        _tape, _deep = None, False
        _LOCK.release()
        return False


_LOCK = threading.RLock()      # one trace at a time (they patch shared modules)


def _user_globals(build):
    """The namespaces of the model file and of the user's modules it may call (every loaded
    module outside the standard library, site-packages, numpy and fmu_mb): where math's
    functions imported by name (from math import isclose) are replaced while tracing."""
    import sys
    import sysconfig
    paths = sysconfig.get_paths()
    skip = tuple(p for p in {paths.get("stdlib"), paths.get("platstdlib"), paths.get("purelib"),
                             paths.get("platlib"), _NUMPY_DIR, _PACKAGE_DIR} if p)
    out = []
    g = getattr(build, "__globals__", None)
    if g is not None:
        out.append(g)
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f or f.startswith(skip) or "site-packages" in f or "dist-packages" in f:
            continue
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict) and all(d is not x for x in out):
            out.append(d)
    return out


def _on_syms(traced, orig):
    """`traced` when an argument holds a Sym, its result an object ndarray (so that the
    model file's numpy arithmetic on it traces too, as the ndarray orig returns would);
    `orig` itself on plain numbers."""
    def f(*args):
        if not _has_sym(list(args)):
            return orig(*args)
        return np.array(traced(*args), dtype=object)
    return f


def _in_thread(tid, traced, orig):
    """`traced` in the tracing thread `tid`, `orig` in any other (which may be building the
    same model file meanwhile: it must get the untraced function, e.g. cardan's ndarray)."""
    def f(*args, **kwargs):
        return (traced if threading.get_ident() == tid else orig)(*args, **kwargs)
    return f


def _traced_number(orig):
    """validation.number whose checks on a Sym are guards carrying the builder's message."""
    def number(where, arg, value, positive=False, nonneg=False):
        if isinstance(value, Sym) and math.isfinite(_val(value)):
            if positive:
                _guard("gt", value, 0.0, f"{where}: {arg} must be > 0")
            if nonneg:
                _guard("ge", value, 0.0, f"{where}: {arg} must be >= 0")
        return orig(where, arg, value, positive=positive, nonneg=nonneg)
    number.orig = orig
    return number


def _traced_restitution(orig):
    def restitution(where, value):
        if isinstance(value, Sym):
            message = f"{where}: restitution must be in [0, 1]"
            _guard("ge", value, 0.0, message)
            _guard("le", value, 1.0, message)
        return orig(where, value)
    restitution.orig = orig
    return restitution


def _traced_inertia(orig):
    """spatial inertia_tensor: for principal moments (Ixx, Iyy, Izz) holding a Sym, its
    checks (each >= -tol, each sum of two >= the third - tol, tol = 1e-12 max(1, max))
    recorded as guards with its message (a full matrix: its eigenvalues are not traced; the
    verification's sets stand for them)."""
    def inertia_tensor(where, inertia):
        w = list(inertia) if isinstance(inertia, (list, tuple, np.ndarray)) else None
        if (w is not None and len(w) == 3 and all(_scalar(v) for v in w)
                and any(isinstance(v, Sym) for v in w)
                and all(math.isfinite(_val(v)) for v in w)):
            message = (f"{where}: the inertia matrix must be positive semi-definite and "
                       f"satisfy the triangle inequality of principal moments")
            top = _maximum(_maximum(_maximum(1.0, w[0]), w[1]), w[2])
            tol = 1e-12 * top
            for v in w:
                _guard("ge", v, -tol, message)
            for i, j, k in ((0, 1, 2), (1, 2, 0), (0, 2, 1)):
                _guard("ge", w[i] + w[j], w[k] - tol, message)
        return orig(where, inertia)
    inertia_tensor.orig = orig
    return inertia_tensor


def _pair_checks(where, pairs):
    """Guards `a < b` with the builder's message for each (a, b, message) holding a Sym."""
    for a, b, text in pairs:
        if a is not None and b is not None and _scalar(a) and _scalar(b) and \
                (isinstance(a, Sym) or isinstance(b, Sym)):
            _guard("lt", a, b, f"{where}: {text}")


def _traced_cylinder(orig, tid):
    def cylinder(mb, name, a, b, *args, min_length=None, max_length=None, piston_area=None,
                 rod_area=None, **kwargs):
        if threading.get_ident() == tid:
            _pair_checks(f"cylinder '{name}'", (
                (min_length, max_length, "expected min_length < max_length"),
                (rod_area, piston_area, "rod_area (the annulus, piston area minus rod "
                                        "cross-section) must be < piston_area")))
        return orig(mb, name, a, b, *args, min_length=min_length, max_length=max_length,
                    piston_area=piston_area, rod_area=rod_area, **kwargs)
    cylinder.orig = orig
    return cylinder


def _traced_joint_limit(orig, tid):
    def joint_limit(mb, name, joint, *args, lower=None, upper=None, **kwargs):
        if threading.get_ident() == tid:
            _pair_checks(f"joint_limit '{name}'", ((lower, upper, "expected lower < upper"),))
        return orig(mb, name, joint, *args, lower=lower, upper=upper, **kwargs)
    joint_limit.orig = orig
    return joint_limit


# ---------------------------------------------------------------------- evaluation
_PARAM = object()       # the function slot of a parameter node in _ops


def _ops(nodes, start=0):
    """nodes[start:] as (f, a, b) for _run: (_FN[fn], child, child) of a binary node,
    (_FN[fn], child, None) of a unary one, (_PARAM, k, None) of parameter k, (None, value,
    None) of a constant."""
    out = []
    for nd in nodes[start:]:
        op = nd[0]
        if op == "p":
            out.append((_PARAM, nd[1], None))
        elif op == "c":
            out.append((None, float(nd[1]), None))
        elif _FN[op] is None:
            raise TypeError(f"tape node {nd!r}: this Python has no {op}")
        elif len(nd) == 3:
            out.append((_FN[op], nd[1], nd[2]))
        elif len(nd) == 2:
            out.append((_FN[op], nd[1], None))
        else:
            raise ValueError(f"tape node {nd!r}: expected one or two operands")
    return out


def _run(ops, params):
    """The values (a list of floats) of the nodes compiled by _ops at the parameter values
    `params`: each node's function (_FN) applied to its operands' values, node after node,
    on the same floats as one evaluation of every node of the tape."""
    pf = [float(v) for v in params]
    out = []
    put = out.append
    for f, a, b in ops:
        if b is not None:
            put(f(out[a], out[b]))
        elif f is None:
            put(a)
        elif f is _PARAM:
            put(pf[a])
        else:
            put(f(out[a]))
    return out


def _eval_nodes(nodes, params, ops=None):
    """Every node's value at the parameter values `params` (nodes in creation order: the
    children of a node come before it), each function on the floats of its children. ops:
    _ops(nodes) when the caller keeps it (a tape's, _Tape.ops)."""
    ops = _ops(nodes) if ops is None else ops
    return np.array(_run(ops[:len(nodes)], params), dtype=float).reshape(len(nodes))


def _cone_ops(ops, roots):
    """(ops of the nodes that `roots` are computed from, in order, renumbered; the position
    of each root in them): what evaluating those roots alone takes."""
    need = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in need:
            continue
        need.add(i)
        f, a, b = ops[i]
        if f is not None and f is not _PARAM:
            stack.append(a)
            if b is not None:
                stack.append(b)
    keep = sorted(need)
    pos = {i: k for k, i in enumerate(keep)}
    sub = []
    for i in keep:
        f, a, b = ops[i]
        if f is None or f is _PARAM:
            sub.append((f, a, b))
        else:
            sub.append((f, pos[a], None if b is None else pos[b]))
    return sub, pos


def _magnitudes(nodes, ev, ops=None):
    """Each node's largest |value| among itself and the nodes it is computed from (values
    ev): the size of what its rounding errors are relative to. ops: _ops(nodes) or a longer
    list that starts with them."""
    ops = _ops(nodes) if ops is None else ops
    out = np.abs(np.asarray(ev, float)).tolist()
    for i in range(len(nodes)):
        f, a, b = ops[i]
        if b is not None:
            out[i] = max(out[i], out[a], out[b])
        elif f is not None and f is not _PARAM:
            out[i] = max(out[i], out[a])
    return np.array(out, dtype=float).reshape(len(nodes))


def _deps(nodes, deps=None):
    """Per node, the frozenset of the parameters it depends on; with `deps` (those of the
    first nodes), the list completed in place."""
    deps = [] if deps is None else deps
    for nd in nodes[len(deps):]:
        if nd[0] == "p":
            deps.append(frozenset((nd[1],)))
        elif nd[0] == "c":
            deps.append(frozenset())
        else:
            deps.append(frozenset().union(*[deps[c] for c in nd[1:]]))
    return deps


def _close(a, b, rtol=VERIFY_RTOL, scale=None):
    """Elementwise: a and b agree to rtol relative to the larger magnitude (equal values,
    zeros, equal infinities and two NaNs included). scale: also relative to |scale| (the
    slot's value at the build values: a far value where the slot's expression cancels, e.g.
    a marker's offset l2 - xc from a centre of mass that a heavy payload moves to the tip,
    carries the rounding of its O(scale) operands, not a branch)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ref = np.maximum(np.abs(a), np.abs(b))
    if scale is not None:
        ref = np.maximum(ref, np.abs(np.asarray(scale, float)))
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == b) | (np.abs(a - b) <= rtol * ref)
    return same | (np.isnan(a) & np.isnan(b))


def _differs(a, b):
    """Elementwise a != b, two NaNs being the same."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return (a != b) & ~(np.isnan(a) & np.isnan(b))


# ---------------------------------------------------------------------- the program
@dataclass
class ParamProgram:
    """The compiled map parameters -> model data (see the module docstring).

    names: every parameter in the table's order (the params vector of mbp_run);
    compiled: those the program applies; fixed: name -> reason for the others (they become
    constants of the native FMU, the reason in their description); slots: the data slots the
    program writes; guards: the build-time branches it checks, as text."""

    code: np.ndarray
    consts: np.ndarray
    names: tuple
    ndata: int
    compiled: tuple = ()
    fixed: dict = field(default_factory=dict)
    slots: tuple = ()
    guards: tuple = ()
    derive: object = None      # the engine's own derivation after the program (or None)
    scale: object = field(default=None, repr=False, compare=False)   # per slot: what its
    # rounding is relative to at the build values (the slot, or the largest number its
    # expression is computed from): compare data with _close(a, b, scale=prog.scale)
    plain: object = field(default=None, repr=False, compare=False)   # () -> this program
    # with every shared subexpression written out (no temporaries), to compare with

    def to_arrays(self):
        """(code as int32, consts as float64), contiguous: what mbp_run takes."""
        return (np.ascontiguousarray(self.code, dtype=np.int32),
                np.ascontiguousarray(self.consts if len(self.consts) else [0.0],
                                     dtype=np.float64))

    def engine_data(self, params, data):
        """The data the engine runs on at `params` (mbe_set_parameters): the program applied
        (run), then the slots the engine derives itself (derive_metric)."""
        out = self.run(params, data)
        return self.derive(out) if self.derive is not None else out

    def run(self, params, data):
        """data with the program applied at parameter values `params` (all np of them, the
        table's order): the Python twin of mbp_run, same operations in the same order.
        Raises ParameterProgramError (rc, message) like mbp_run's failures."""
        rc, out, msg = run_program(self.code, self.consts, params, data)
        if rc != 0:
            raise ParameterProgramError(msg)
        return out


def _read_str(code, pc):
    n = int(code[pc])
    raw = bytes(int(c) if 0 < c < 256 else 63 for c in code[pc + 1:pc + 1 + n])   # ('?')
    return raw.decode("utf-8", "replace"), pc + 1 + n


def _skip_str(code, pc):
    """Position after the string at code[pc] (params.c skip_string), or -1."""
    if pc < 0 or pc >= len(code):
        return -1
    n = code[pc]
    if n < 0 or n > len(code) - pc - 1:
        return -1
    return pc + 1 + n


def _header(code):
    """(np, ndata, ntemp, model file, names, reasons, position of the first instruction)."""
    if len(code) < 6 or code[0] != MAGIC or code[1] != VERSION:
        raise ValueError("not a parameter program of this version")
    npar, ndata, ntemp = int(code[2]), int(code[3]), int(code[4])
    model, pc = _read_str(code, 5)
    names, reasons = [], []
    for _ in range(npar):
        s, pc = _read_str(code, pc)
        names.append(s)
    for _ in range(npar):
        s, pc = _read_str(code, pc)
        reasons.append(s)
    return npar, ndata, ntemp, model, names, reasons, pc


def _fmt(x):
    return repr(float(x))


def _string(text):
    """A string in the code: its length, then its UTF-8 bytes."""
    b = text.encode("utf-8")
    return [len(b)] + list(b)


def _who(names, blame, params):
    return ", ".join(f"{names[k]}={_fmt(params[k])}" for k in blame)


def _rebuild(model, names, blame, params):
    sets = " ".join(f"--set {names[k]}={_fmt(params[k])}" for k in blame)
    return f"rebuild with fmu-mb build {model} {sets}"


class _Malformed(Exception):
    pass


def _bad(what, pc):
    """mbp_run's message for a malformed program (params.c fail)."""
    return _Malformed(f"malformed parameter program: {what} at code[{pc}]; expected the "
                      f"program fmu_mb.engine.params made for this model data")


def run_program(code, consts, params, data):
    """(rc, data', message) as mbp_run: rc 0, k + 1 (parameter k), or -1 (malformed), checked
    in the same order as params.c, with its messages for a malformed program."""
    code = [int(c) for c in code]
    data = np.array(data, dtype=float)
    npar, ndata = len(params), len(data)
    try:
        if len(code) < 6:
            raise _bad("no code", 0)
        if code[0] != MAGIC or code[1] != VERSION:
            raise _bad("wrong magic number or version", 0)
        if code[2] != npar or code[3] != ndata:
            return -1, data, (f"parameter program for {code[2]} parameters and {code[3]} "
                              f"data, received {npar} and {ndata}")
        ntemp = code[4]
        if ntemp < 0 or ntemp > len(code) // 2:
            raise _bad("number of temporaries out of range", 4)
        pc = _skip_str(code, 5)
        for _ in range(2 * npar):
            if pc < 0:
                break
            pc = _skip_str(code, pc)
        if pc < 0:
            raise _bad("strings run past the end", 5)
        _, _, _, model, names, reasons, pc = _header(code)
        return _interpret(code, consts, params, data, model, names, reasons, pc, ntemp)
    except _Malformed as exc:
        return -1, data, str(exc)


def _interpret(code, consts, params, data, model, names, reasons, pc, ntemp):
    """params.c run(): every index checked before use (a malformed program: _Malformed)."""
    stack, blame = [], []
    temps = [math.nan] * ntemp
    ncode, nconst, npar, ndata = len(code), len(consts), len(params), len(data)
    while True:
        if pc >= ncode:
            raise _bad("no END", pc)
        op = code[pc]
        if op == OP_END:
            if stack:
                raise _bad("values left on the stack", pc)
            return 0, data, ""
        if op == OP_BEGIN:
            if pc + 1 >= ncode or code[pc + 1] < 0 or code[pc + 1] > ncode - pc - 2:
                raise _bad("BEGIN past the end", pc)
            n = code[pc + 1]
            blame = code[pc + 2:pc + 2 + n]
            if any(k < 0 or k >= npar for k in blame):
                raise _bad("parameter index out of range", pc)
            if stack:
                raise _bad("values left on the stack", pc)
            pc += 2 + n
            continue
        if pc + 1 >= ncode:
            raise _bad("operand past the end", pc)
        arg = code[pc + 1]
        if op == OP_PARAM:
            if arg < 0 or arg >= npar:
                raise _bad("parameter index out of range", pc)
            if len(stack) >= STACK:
                raise _bad("stack overflow", pc)
            stack.append(float(params[arg]))
        elif op == OP_CONST:
            if arg < 0 or arg >= nconst:
                raise _bad("constant index out of range", pc)
            if len(stack) >= STACK:
                raise _bad("stack overflow", pc)
            stack.append(float(consts[arg]))
        elif op == OP_UNARY:
            if arg < 0 or arg >= len(UNARY):
                raise _bad("unknown function", pc)
            if not stack:
                raise _bad("stack underflow", pc)
            stack.append(_FN[UNARY[arg]](stack.pop()))
        elif op == OP_BINARY:
            if arg < 0 or arg >= len(BINARY):
                raise _bad("unknown function", pc)
            if len(stack) < 2:
                raise _bad("stack underflow", pc)
            b, a = stack.pop(), stack.pop()
            stack.append(_FN[BINARY[arg]](a, b))
        elif op == OP_SET:
            if arg < 0 or arg >= ntemp:
                raise _bad("temporary index out of range", pc)
            if not stack:
                raise _bad("stack underflow", pc)
            temps[arg] = stack[-1]
            pc += 2
            continue
        elif op == OP_GET:
            if arg < 0 or arg >= ntemp:
                raise _bad("temporary index out of range", pc)
            if math.isnan(temps[arg]):
                raise _bad("temporary read before it is written", pc)
            if len(stack) >= STACK:
                raise _bad("stack overflow", pc)
            stack.append(temps[arg])
        elif op == OP_STORE:
            if arg < 0 or arg >= ndata:
                raise _bad("data index out of range", pc)
            if not stack:
                raise _bad("stack underflow", pc)
            data[arg] = stack.pop()
            pc += 2
            continue
        elif op == OP_GUARD:
            if len(stack) < 2:
                raise _bad("stack underflow", pc)
            b, a = stack.pop(), stack.pop()
            if arg < 0 or arg >= len(CMPS):
                raise _bad("unknown comparison", pc)
            cmp = CMPS[arg]
            if not _CMP_FN[cmp](a, b):
                k = blame[0] if blame else 0
                return k + 1, data, (
                    f"parameter(s) {_who(names, blame, params)}: model file {model} took a "
                    f"branch at build time on a number derived from them "
                    f"({_fmt(a)} {_CMP_TEXT[cmp]} {_fmt(b)} no longer holds), which the "
                    f"compiled model cannot follow; {_rebuild(model, names, blame, params)}")
            pc += 2
            continue
        elif op == OP_CHECK:
            end = _skip_str(code, pc + 2)
            if end < 0:
                raise _bad("CHECK's message runs past the end", pc)
            if len(stack) < 2:
                raise _bad("stack underflow", pc)
            b, a = stack.pop(), stack.pop()
            if arg < 0 or arg >= len(CMPS):
                raise _bad("unknown comparison", pc)
            cmp = CMPS[arg]
            if not _CMP_FN[cmp](a, b):
                k = blame[0] if blame else 0
                text, _ = _read_str(code, pc + 2)
                return k + 1, data, (
                    f"{text} (parameter(s) {_who(names, blame, params)}: {_fmt(a)} "
                    f"{_CMP_TEXT[cmp]} {_fmt(b)} does not hold); model file {model} refuses "
                    f"these values")
            pc = end
            continue
        elif op == OP_FIXED:
            if len(stack) < 2:
                raise _bad("stack underflow", pc)
            if not blame:
                raise _bad("FIXED without its parameter", pc)
            b, a = stack.pop(), stack.pop()
            if a != b:
                k = blame[0]
                return k + 1, data, (
                    f"parameter '{names[k]}' = {_fmt(a)} cannot change from its built value "
                    f"{_fmt(b)} in the compiled model: {reasons[k]}; rebuild with fmu-mb "
                    f"build {model} --set {names[k]}={_fmt(a)}")
            pc += 2
            continue
        else:
            raise _bad("unknown instruction", pc)
        if not math.isfinite(stack[-1]):
            k = blame[0] if blame else 0
            return k + 1, data, (
                f"parameter(s) {_who(names, blame, params)}: a number of the model derived "
                f"from them is not finite (NaN or infinity); expected values for which "
                f"model file {model}'s formulas are defined")
        pc += 2


class _Emitter:
    """The postfix code of tape nodes, statement by statement. With `roots` (the node(s) of
    every statement to come, in order, once per statement): a node referenced more than once
    in the program (by two parents, two statements, or both) is computed where it is first
    needed, kept in a temporary (SET k: it stays on the stack) and pushed from there after
    (GET k); a temporary is reused once its node's last reference has been emitted. The same
    operations on the same operands in the same order as without: the data are bitwise the
    same. Without `roots`, every reference is written out in full (the code before
    temporaries, ntemp 0)."""

    def __init__(self, nodes, deps, model_file, names, roots=None):
        self.nodes, self.deps = nodes, deps
        self.consts, self.cidx = [], {}
        self.temp, self.free, self.ntemp = {}, [], 0
        self.left = None if roots is None else self._references(roots)

    def _references(self, roots):
        """node -> how many times the program references it (each statement's root once,
        each child once per parent: a parent is computed once)."""
        refs = {}
        todo = []
        for r in roots:
            refs[r] = refs.get(r, 0) + 1
            if refs[r] == 1:
                todo.append(r)
        while todo:
            nd = self.nodes[todo.pop()]
            if nd[0] in ("p", "c"):
                continue
            for c in nd[1:]:
                refs[c] = refs.get(c, 0) + 1
                if refs[c] == 1:
                    todo.append(c)
        return refs

    def const(self, v):
        key = float(v).hex()
        if key not in self.cidx:
            self.cidx[key] = len(self.consts)
            self.consts.append(float(v))
        return self.cidx[key]

    def expr(self, i, out):
        """Postfix code of node i appended to out; returns the stack depth it needs."""
        nd = self.nodes[i]
        if nd[0] == "p":
            out += [OP_PARAM, nd[1]]
            return 1
        if nd[0] == "c":
            out += [OP_CONST, self.const(nd[1])]
            return 1
        if self.left is not None:
            self.left[i] -= 1
            k = self.temp.get(i)
            if k is not None:
                out += [OP_GET, k]
                if self.left[i] == 0:           # its last use: the temporary is free
                    del self.temp[i]
                    self.free.append(k)
                return 1
        need = 0
        for j, c in enumerate(nd[1:]):
            need = max(need, j + self.expr(c, out))
        out += ([OP_UNARY, UNARY.index(nd[0])] if len(nd) == 2
                else [OP_BINARY, BINARY.index(nd[0])])
        if self.left is not None and self.left[i] > 0:      # needed again later
            if self.free:
                k = self.free.pop()
            else:
                k, self.ntemp = self.ntemp, self.ntemp + 1
            self.temp[i] = k
            out += [OP_SET, k]
        return need

    def statement(self, i, tail, extra=()):
        """BEGIN deps, the postfix of node(s), then `tail`; None if too deep for mbp_run
        (then this emitter's temporaries are spoilt: the program is not finished)."""
        out, need = [], 0
        for j, n in enumerate((i, *extra)):
            need = max(need, j + self.expr(n, out))
        if need > STACK:
            return None
        dep = sorted(self.deps[i].union(*[self.deps[n] for n in extra]))
        return [OP_BEGIN, len(dep), *dep] + out + tail


# ---------------------------------------------------------------------- compiling
def _build_fn(module_or_build):
    return getattr(module_or_build, "build", module_or_build)


def _model_file(module_or_build, build):
    import os
    f = getattr(module_or_build, "__file__", None) or build.__code__.co_filename
    return os.path.basename(f) if f else "MODEL.py"


def _ranges(p, rng, scale):
    """A random value of parameter p near its default, inside [min, max]."""
    d = float(p.default)
    half = scale * (abs(d) if d != 0.0 else 1.0)
    lo, hi = d - half, d + half
    if p.min is not None:
        lo = max(lo, float(p.min))
    if p.max is not None:
        hi = min(hi, float(p.max))
    if lo > hi:
        return d
    return float(rng.uniform(lo, hi))


def compile_parameters(module_or_build, overrides=None, data_of=None, *, names=None,
                       model_file=None, n_probe=3, n_verify=3, n_wide=2,
                       far=FAR, far_builds=FAR_BUILDS, n_combo=N_COMBO, seed=0, scale=0.1,
                       derived=None):
    """Compile the map parameters -> model data of a model file.

    module_or_build: a model file's module (its build) or the build function itself;
    overrides: the parameter values the model is built with (the FMU's defaults: the
        program's defaults; a parameter fixed at an overridden value stays there);
    data_of(overrides) -> 1-D float array, or an object with `.doubles` and `.ints` (an
        EngineData; then a set that changes the ints is treated as one that does not
        build): the model data for parameter values (a black box; its layout must not
        depend on the values of non-structural parameters);
    names: the parameter table's order (default: the model's declared parameters; the
        program does not read a string or structural parameter's entry);
    model_file: how messages name the model file (default: the module's file name);
    derived: (slots, derive) or None: data slots that the engine derives itself after the
        program has run (EngineData.derived: the projection metric, from the masses and
        inertias by a max and an eigenvalue the program cannot express) and derive(data) ->
        data, the Python twin of that derivation. The program leaves those slots alone; the
        verification compares derive(program's data) with data_of in every slot, so a
        derived slot that does not come out as build() makes it is caught like any other.
    Probe and n_verify verification sets are drawn within +-scale (relative) of the build
    values, n_wide more within +-WIDE, all inside each parameter's [min, max] (a set that
    does not build, or takes another branch, is drawn again closer); then each parameter
    alone over its declared range (_range_values: the ends, zero, -v, v times each of
    `far`; in rounds, the parameters in table order, at most far_builds builds: the same
    checks, hence the same program, on any machine) and n_combo sets of all of them drawn
    over their ranges: the program must give build()'s data or refuse, and refuse where
    build() does. Returns a ParamProgram."""
    build = _build_fn(module_or_build)
    base = dict(overrides or {})
    model = build(**base)
    plist = list(model.parameters)
    if names is None:
        names = tuple(p.name for p in plist)
    names = tuple(names)
    index = {n: k for k, n in enumerate(names)}
    fixed = _Fixed()
    pmap = {}
    for p in plist:
        if p.name not in index:
            continue
        if p.structural:
            fixed[p.name] = "structural (it changes the model's shape)"
        elif isinstance(p.default, str):
            fixed[p.name] = "a choice among strings (the compiled program takes numbers)"
        elif isinstance(p.default, int):
            fixed[p.name] = "an integer (the compiled program takes real numbers)"
        else:
            pmap[p.name] = p
    for n in names:
        if n not in pmap and n not in fixed:
            fixed[n] = "not a parameter of the model"
    bvals = {p.name: float(p.value) for p in plist if p.name in pmap}
    # the numbers a fixed parameter must keep (structural and string parameters: the
    # engine's own parameter table refuses changes of those)
    fixvals = {p.name: float(p.value) for p in plist if p.name in index and not p.structural
               and isinstance(p.value, (int, float)) and not isinstance(p.value, bool)}
    mfile = model_file or _model_file(module_or_build, build)
    rng = np.random.default_rng(seed)
    first = data_of(base)
    D0 = np.asarray(getattr(first, "doubles", first), dtype=float).ravel()
    data_of = _remembered(_doubles_only(data_of, getattr(first, "ints", None)))
    fixed.describe = _engine_describer(model, D0)
    fixed.floor = _array_scales(model, D0)

    while True:
        live = [n for n in names if n in pmap and n not in fixed]
        # the probe sets' builds warn about poses the user did not ask for: silenced (under
        # the tracing lock: catch_warnings swaps the process-wide filters)
        with _LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore", AssemblyWarning)
            prog = _compile_once(build, base, data_of, names, index, live, pmap, bvals, D0,
                                 fixed, fixvals, mfile, rng, n_probe, n_verify, n_wide, far,
                                 far_builds, scale, derived, n_combo)
        if prog is not None:
            prog.derive = derived[1] if derived is not None else None
            return prog
        if not any(n in fixed for n in live):      # each round fixes one more, or fails
            raise RuntimeError(f"compile_parameters: no progress with {live}")


class StructureChanged(FmuMbError):
    """The integer part of the model data (its structure) differs from the build's."""


def _doubles_only(data_of, ints0):
    """data_of returning the doubles; when it returns an object with .doubles and .ints (an
    EngineData), a set whose ints differ from ints0 raises StructureChanged (the program
    patches doubles only: such a set is treated as one that does not build)."""
    if ints0 is None:
        def plain(o):
            d = data_of(o)
            return np.asarray(getattr(d, "doubles", d), float)
        return plain
    ints0 = np.asarray(ints0)

    def doubles(o):
        d = data_of(o)
        ints = np.asarray(d.ints)
        if ints.shape != ints0.shape or np.any(ints != ints0):
            raise StructureChanged("the integers of the model data (its structure: tree, "
                                   "kinds, indices) change")
        return np.asarray(d.doubles, float)
    return doubles


def _remembered(data_of):
    """data_of that builds each set of values once per compilation: a set asked for again
    (the range sweeps of the parameters left live, repeated by each compilation round) gets
    the data, or the exception, of its first build. Keyed by the values (repr: -0.0 and 0.0
    differ) and by whether the build is a probe (fmu_mb.mechanics.assembly.probing: a probe
    fails where a full build might retry)."""
    seen = {}

    def remembered(values):
        key = (bool(getattr(_PROBE, "on", False)),
               tuple(sorted((str(k), repr(v)) for k, v in values.items())))
        got = seen.get(key)
        if got is None:
            try:
                got = (True, np.array(data_of(values), dtype=float))
            except Exception as exc:   # noqa: BLE001 - the same set fails the same way
                got = (False, exc)
            seen[key] = got
        if got[0]:
            return got[1].copy()
        raise got[1]
    return remembered


def _pvector(names, index, bvals, plist_defaults, values):
    v = np.zeros(len(names))
    for n in names:
        v[index[n]] = values.get(n, bvals.get(n, plist_defaults.get(n, 0.0)))
    return v


def _draw(live, pmap, bvals, rng, scale, build, base, data_of, check, hits=None,
          refused=None):
    """A random set of the live parameters (dict) whose data has D0's layout and passes
    `check` (-> "ok", "guard": another branch that a guard refuses, or "layout": the data's
    layout changed); scale shrinks on failure. A set whose build changes the structure of
    the data (StructureChanged, or another layout while the guards hold) is appended to
    `hits`: the compiled program could not follow it. None when nothing works.
    refused(vals): True when `check` refuses vals whatever their data (a guard broken);
    without `hits` to record, such a set is not built (its build could only fail or be
    refused: the same draws follow)."""
    s = scale
    for attempt in range(12):
        vals = {n: _ranges(pmap[n], rng, s) if n in live else bvals[n] for n in bvals}
        if hits is None and refused is not None and refused(vals):
            s *= 0.5
            continue
        try:
            with probing():        # (only whether it builds matters: a cheap failure)
                D = np.asarray(data_of({**base, **{n: vals[n] for n in live}}),
                               float).ravel()
        except StructureChanged:
            if hits is not None:
                hits.append({n: vals[n] for n in live})
            s *= 0.5
            continue
        except Exception:          # noqa: BLE001 - a set that does not build: another
            s *= 0.5
            continue
        verdict = check(vals, D)
        if verdict == "ok":
            return vals, D
        if verdict == "layout" and hits is not None:
            hits.append({n: vals[n] for n in live})
        s *= 0.5
    return None


def _bounds(p):
    return (-math.inf if p.min is None else float(p.min),
            math.inf if p.max is None else float(p.max))


def _range_values(p, v, far=FAR):
    """The values at which parameter p (build value v) is checked alone, most telling
    first: the ends of its declared range (when finite), zero and -v (a sign change, when
    the range holds them), then v times each of `far` (a log-spaced sweep) and -v times
    its first two, inside the range (none at all when far is empty)."""
    if not far:
        return []
    lo, hi = _bounds(p)
    out = []

    def add(y):
        y = float(y)
        if math.isfinite(y) and lo <= y <= hi and y != v and y not in out:
            out.append(y)
    add(lo)
    add(hi)
    add(0.0)
    add(-v)
    m = v if v != 0.0 else 1.0
    if v == 0.0:
        add(-1.0)
        add(1.0)
    for f in far:
        add(m * f)
    for f in far[:2]:
        add(-m * f)
    return out


def _range_draw(p, v, rng):
    """A random value of parameter p over its declared range: uniform on a bounded range
    (log-uniform when it spans more than two decades above 0), else |v| times 10^U(-2, 2),
    negative at random when the range allows."""
    lo, hi = _bounds(p)
    if math.isfinite(lo) and math.isfinite(hi):
        if lo > 0.0 and hi / lo > 100.0:
            return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        return float(rng.uniform(lo, hi))
    m = abs(v) if v != 0.0 else 1.0
    x = m * 10.0 ** rng.uniform(-2.0, 2.0)
    if lo < 0.0 and (hi <= 0.0 or rng.uniform() < 0.3):
        x = -x
    return float(min(max(x, lo), hi))


def _fix_structure(hits, live, base, data_of, D0, fixed):
    """Fix the parameters that, moved alone to a value of a set in `hits`, change the
    structure of the data; every one moved in such a set when none does alone."""
    found = set()
    for vals in hits:
        for n in live:
            try:
                D = np.asarray(data_of({**base, n: vals[n]}), float).ravel()
            except StructureChanged:
                found.add((n, vals[n]))
                continue
            except Exception:      # noqa: BLE001 - does not build: not this one's doing
                continue
            if D.shape != D0.shape:
                found.add((n, vals[n]))
    if not found:
        found = {(n, hits[0][n]) for n in live}
    for n, v in sorted(found):
        fixed.setdefault(n, f"the structure of the model data changes with it (at {n}={v!r}: "
                            f"other elements, joints or counts), which the compiled program "
                            f"cannot follow")
    return None


def _match(tape, deps, P, Dm, slots):
    """slot -> node id (created on the tape when a negative or reciprocal) of a tape
    expression whose values at the parameter vectors P (rows) agree with the data Dm[:, slot]
    in every row; slots without one are left out. Each slot looks only at the candidates an
    index on their values puts near it (sorted values, searched by bisection), so the cost
    grows with the number of slots plus the number of nodes, not with their product."""
    nodes = tape.nodes
    ops = tape.ops()
    E = np.array([_eval_nodes(nodes, p, ops) for p in P])      # (rows, nnodes)
    cand = [i for i in range(len(nodes)) if deps[i]]
    found = {}
    if not cand:
        return {}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kinds = [("id", E[:, cand]), ("neg", -E[:, cand]), ("inv", 1.0 / E[:, cand])]
    for kind, V in kinds:
        order = np.argsort(V[0], kind="stable")
        v0 = V[0][order]
        for s in slots:
            if s in found:
                continue
            d = Dm[:, s]
            tol = VERIFY_RTOL * abs(d[0])
            lo = np.searchsorted(v0, d[0] - tol, "left")
            hi = np.searchsorted(v0, d[0] + tol, "right")
            if hi <= lo:
                continue
            # the first candidate (in sorted order) that agrees in every row, or the first
            # that agrees exactly when one does
            js = order[lo:hi]
            W = V[:, js]
            ok = np.all(_close(W, d[:, None]), axis=0)
            if not ok.any():
                continue
            exact = ok & np.all(W == d[:, None], axis=0)
            k = int(np.argmax(exact)) if exact.any() else int(np.argmax(ok))
            found[s] = (kind, cand[js[k]])
    out = {}
    for s, (kind, i) in found.items():
        if kind == "neg":
            out[s] = tape.node(("neg", i))
        elif kind == "inv":
            out[s] = tape.node(("div", tape.const(1.0), i))
        else:
            out[s] = i
    V = E[:, cand]
    near_affine = _affine_index(V)
    for s in slots:                 # a constant plus or minus an expression
        if s not in out:
            got = _affine(tape, V, cand, Dm[:, s], near_affine)
            if got is not None:
                out[s] = got
    left = [s for s in slots if s not in out]
    if left:                        # rounding residues (a zero computed as 1e-18)
        with np.errstate(all="ignore"):
            M = np.array([_magnitudes(nodes[:len(e)], e, ops) for e in E])[:, cand]
        near_residue = _residue_index(V, M)
        for s in left:
            got = _residue(V, M, Dm[:, s], near_residue)
            if got is not None:
                kind, j = got
                out[s] = tape.node(("neg", cand[j])) if kind == "neg" else cand[j]
    return out


def _window(keys, order, lo, hi):
    """The columns (in `order`, sorted by `keys`) whose key lies in [lo, hi]."""
    a = np.searchsorted(keys, lo, "left")
    b = np.searchsorted(keys, hi, "right")
    return order[a:b]


def _residue_index(V, M):
    """near(d) -> the columns of V (ascending) that can pass _residue's test for the data d:
    every column whose first row is within VERIFY_RTOL * max(M, |d|) of +-d[0], found by
    bisection in groups of columns of like magnitude M (binary exponent), plus every column
    with a non-finite value or magnitude in its first row (always looked at)."""
    v0, m0 = V[0], M[0]
    finite = np.isfinite(v0) & np.isfinite(m0)
    odd = np.flatnonzero(~finite)
    groups = []
    exps = np.frexp(np.where(finite, m0, 0.0))[1]
    for e in np.unique(exps[finite]):
        cols = np.flatnonzero(finite & (exps == e))
        o = cols[np.argsort(v0[cols], kind="stable")]
        groups.append((math.ldexp(1.0, int(e)), v0[o], o))    # M < 2^e in this group

    def near(d):
        d0 = float(d[0])
        if not math.isfinite(d0):
            return None
        parts = [odd]
        for mb, keys, o in groups:
            t = 2.0 * VERIFY_RTOL * max(mb, abs(d0)) + 1e-300
            parts.append(_window(keys, o, d0 - t, d0 + t))
            parts.append(_window(keys, o, -d0 - t, -d0 + t))
        return np.unique(np.concatenate(parts))
    return near


def _residue(V, M, d, near=None):
    """("id" or "neg", column) of the expression that gives d in every row to VERIFY_RTOL
    relative to the largest number it is computed from (M): a slot that is a difference of
    nearly equal numbers (an offset that vanishes, computed by the builder in another order
    as 1e-18) agrees with the expression to the rounding of those numbers. The closest in
    the worst row (the first of equals: the same on any machine); None when none agrees.
    near (_residue_index): the columns that can agree, the others are not looked at."""
    cols = near(d) if near is not None else None
    if cols is not None:
        if not len(cols):
            return None
        got = _residue(V[:, cols], M[:, cols], d)
        return None if got is None else (got[0], int(cols[got[1]]))
    best = None
    with np.errstate(all="ignore"):
        for kind, W in (("id", V), ("neg", -V)):
            err = np.abs(W - d[:, None])
            ok = np.all(err <= VERIFY_RTOL * np.maximum(M, np.abs(d)[:, None]), axis=0)
            ok &= np.any(M > 0.0, axis=0)
            if not ok.any():
                continue
            worst = np.where(ok, np.max(err, axis=0), np.inf)
            j = int(np.argmin(worst))
            if best is None or worst[j] < best[0]:
                best = (worst[j], kind, j)
    return None if best is None else best[1:]


def _affine_index(V):
    """near(d) -> the columns of V (ascending) that can pass _affine's test for the data d:
    d - sign e is the same constant in every row, hence e's change from the first row to
    the second is sign times d's (to the rounding of the numbers involved), found by
    bisection on that change, plus every column with a non-finite value in those rows;
    None (look at every column) when there are fewer than two rows or d is not finite."""
    if V.shape[0] < 2:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        dv = V[1] - V[0]
    finite = np.isfinite(V[0]) & np.isfinite(V[1]) & np.isfinite(dv)
    odd = np.flatnonzero(~finite)
    cols = np.flatnonzero(finite)
    o = cols[np.argsort(dv[cols], kind="stable")]
    keys = dv[o]
    big = float(np.max(np.abs(V[0][cols]) + np.abs(V[1][cols]))) if len(cols) else 0.0

    def near(d):
        d0, d1 = float(d[0]), float(d[1])
        if not (math.isfinite(d0) and math.isfinite(d1)):
            return None
        dd = d1 - d0
        t = 4e-15 * (abs(d0) + abs(d1) + big) + 1e-300
        parts = [odd, _window(keys, o, dd - t, dd + t), _window(keys, o, -dd - t, -dd + t)]
        return np.unique(np.concatenate(parts))
    return near


def _affine(tape, V, cand, d, near=None):
    """The node of k + e or k - e (k a constant, e a tape expression, columns of V; e - k is
    (-k) + e exactly in IEEE arithmetic) that gives the values d exactly in every row (the
    builder's own arithmetic on a traced number: a point relative to a traced centre of
    mass...), or None. near (_affine_index): the columns that can give d, the others are not
    looked at."""
    cols = near(d) if near is not None else None
    if cols is not None:
        if not len(cols):
            return None
        return _affine(tape, V[:, cols], [cand[j] for j in cols], d)
    with np.errstate(invalid="ignore", over="ignore"):
        for sign in (1.0, -1.0):                  # d = k + sign e
            K = d[:, None] - sign * V
            scale = np.maximum(np.abs(K), np.maximum(np.abs(V), np.abs(d)[:, None]))
            near = np.all(np.abs(K - K[0]) <= 8e-16 * scale + 1e-300, axis=0)
            near &= np.any(V != V[0], axis=0)      # e moves
            for j in np.flatnonzero(near)[:20]:
                col = [float(x) for x in V[:, j]]
                for k0 in dict.fromkeys(float(x) for x in K[:, j]):
                    for k in (k0, math.nextafter(k0, math.inf), math.nextafter(k0, -math.inf)):
                        if all((k + e if sign > 0 else k - e) == float(di)
                               for e, di in zip(col, d)):
                            c, i = tape.const(k), cand[j]
                            return tape.node(("add", c, i) if sign > 0 else ("sub", c, i))
    return None


def _compile_once(build, base, data_of, names, index, live, pmap, bvals, D0, fixed, fixvals,
                  mfile,
                  rng, n_probe, n_verify, n_wide, far, far_builds, scale, derived=None,
                  n_combo=N_COMBO):
    """One compilation with parameters `live` traced. Returns the ParamProgram, or None after
    declaring one or more of them fixed (in `fixed`), to be compiled again."""
    defaults = {n: bvals.get(n, fixvals.get(n, 0.0)) for n in names}
    bvec = _pvector(names, index, bvals, defaults, {})
    if not live:
        return _finish([], D0, names, mfile, [], [], {}, fixed, fixvals)
    traced = {n: index[n] for n in live}
    tape = None
    for deep in (True, False):     # deep: into numpy arrays; if that fails, without
        try:
            with _tracing(build, traced, deep) as tape:
                build(**base)
            break
        except Exception as exc:   # noqa: BLE001 - any failure of the trace
            tape, error = None, exc
    if tape is None:
        for n in live:
            fixed[n] = (f"build() could not be traced with symbolic parameters "
                        f"({type(error).__name__}: {error})")
        return None
    nodes, deps = tape.nodes, tape.deps()
    read = {}
    for node, what in tape.reads:         # values read by operations the tape cannot hold
        for k in sorted(deps[node]):
            if names[k] in traced:
                read.setdefault(names[k], what)
    if read:
        for n, what in read.items():
            fixed[n] = (f"its value is read by {what}, which the parameter compiler cannot "
                        f"follow (a branch or a number made there would go unchecked)")
        return None
    guards = list(dict.fromkeys(g for g in tape.guards if deps[g[1]] | deps[g[2]]))
    messages = tape.messages

    # the guards' nodes alone are evaluated (the nodes they are computed from)
    guard_ops, guard_pos = _cone_ops(tape.ops(), {i for g in guards for i in g[1:3]})
    guard_tests = [(_CMP_FN[c], guard_pos[a], guard_pos[b], r) for c, a, b, r in guards]

    def guards_hold(vals):
        pv = _pvector(names, index, bvals, defaults, vals)
        ev = _run(guard_ops, pv)
        return all(f(ev[a], ev[b]) == r for f, a, b, r in guard_tests)

    def broken(vals):
        return not guards_hold(vals)

    def same_layout(vals, D):
        if not guards_hold(vals):
            return "guard"
        return "ok" if D.shape == D0.shape else "layout"

    # probes: every live parameter moved at once
    probes, hits = [], []
    for _ in range(n_probe):
        got = _draw(live, pmap, bvals, rng, scale, build, base, data_of, same_layout, hits)
        if got is None:
            break
        probes.append(got)
    if hits:
        return _fix_structure(hits, live, base, data_of, D0, fixed)
    if len(probes) < n_probe:
        return _fix_by_layout(live, pmap, bvals, rng, scale, build, base, data_of, D0,
                              fixed, guards_hold)
    P = np.array([bvec] + [_pvector(names, index, bvals, defaults, v) for v, _ in probes])
    Dm = np.array([D0] + [D for _, D in probes])          # (1 + K, ndata)
    floor = getattr(fixed, "floor", None)
    floor = np.abs(D0) if floor is None else floor
    # the slots that move (beyond the rounding of their data array: a residue that is 1e-18
    # at one set and 3e-18 at another is a zero, not a dependence)
    dependent = np.flatnonzero(np.any(_differs(Dm, D0) & ~_close(Dm, D0, scale=floor),
                                      axis=0))
    if derived is not None:          # the engine derives these itself (verified below)
        dependent = np.setdiff1d(dependent, np.asarray(derived[0], dtype=int))

    match = _match(tape, deps, P, Dm, dependent)
    deps = tape.deps()
    nodes = tape.nodes

    def alone(n, slots):
        """Are `slots` matched by the tape when parameter n alone moves? (Then n is not
        what spoils them.)"""
        rows_p, rows_d = [bvec], [D0]
        for _ in range(2):
            got = _draw([n], pmap, bvals, rng, scale, build, base, data_of, same_layout,
                        refused=broken)
            if got is None:
                return False
            rows_p.append(_pvector(names, index, bvals, defaults, got[0]))
            rows_d.append(got[1])
        Dn = np.array(rows_d)
        moved = [s for s in slots if np.any(_differs(Dn[:, s], D0[s]))]
        found = _match(tape, tape.deps(), np.array(rows_p), Dn, moved)
        return len(found) == len(moved)

    def without(n, slots):
        """Are `slots` matched by the tape when every live parameter but n moves? (Then n
        alone spoils them.)"""
        others = [m for m in live if m != n]
        if not others:
            return False
        rows_p, rows_d = [bvec], [D0]
        for _ in range(n_probe):
            got = _draw(others, pmap, bvals, rng, scale, build, base, data_of, same_layout,
                        refused=broken)
            if got is None:
                return False
            rows_p.append(_pvector(names, index, bvals, defaults, got[0]))
            rows_d.append(got[1])
        Dn = np.array(rows_d)
        moved = [s for s in slots if np.any(_differs(Dn[:, s], D0[s]))]
        found = _match(tape, tape.deps(), np.array(rows_p), Dn, moved)
        return len(found) == len(moved)

    unmatched = [s for s in dependent if s not in match]
    if unmatched:
        return _fix_culprits(unmatched, live, pmap, bvals, rng, scale, build, base, data_of,
                             D0, fixed, (alone, without), "goes through a computation the "
                             "parameter compiler cannot follow (numpy arithmetic, the "
                             "builder's own geometry such as at= points, or a branch)")
    slots = sorted(match)
    match = {s: ("node", i) for s, i in match.items()}

    def emission(cse=True):
        """(emitter, body, stored, the first too deep guard or None, the too deep slots):
        the guards, then the slots; with cse, shared subexpressions in temporaries."""
        roots = [n for g in guards for n in g[1:3]] + [match[s][1] for s in slots]
        emit = _Emitter(nodes, deps, mfile, names, roots=roots if cse else None)
        body, stored, too_deep = [], [], []
        for g in guards:
            cmp = CMPS.index(g[0] if g[3] else _NEG_CMP[g[0]])
            text = messages.get(g, "")
            tail = ([OP_CHECK, cmp] + _string(text)) if text else [OP_GUARD, cmp]
            st = emit.statement(g[1], tail, extra=(g[2],))
            if st is None:
                return emit, body, stored, g, too_deep
            body += st
        for s in slots:
            st = emit.statement(match[s][1], [OP_STORE, int(s)])
            if st is None:
                too_deep.append(s)
                continue
            body += st
            stored.append(s)
        return emit, body, stored, None, too_deep

    emit, body, stored, deep_guard, too_deep = emission()
    if deep_guard is not None:
        g = deep_guard
        return _fix_params(sorted(deps[g[1]] | deps[g[2]]), names, fixed,
                           "a branch of build() on it is too deep an expression")
    if too_deep:
        return _fix_culprits(too_deep, live, pmap, bvals, rng, scale, build, base, data_of,
                             D0, fixed, None, "is an expression too deep for the program's stack")
    prog = _finish(emit, D0, names, mfile, body, stored, guards, fixed, fixvals,
                   live=live, nodes=nodes)

    def plain():
        """The same program with every shared subexpression written out again (no
        temporaries: the emission before version 2), to compare with bit for bit."""
        e, b, st, dg, td = emission(cse=False)
        assert dg is None and not td and st == stored
        return _finish(e, D0, names, mfile, b, st, guards, fixed, fixvals, live=live,
                       nodes=nodes)
    prog.plain = plain

    def engine_data(pv):
        """(rc, data the engine runs on, message) at the parameter vector pv: the program,
        then the slots the engine derives itself (their Python twin)."""
        rc, out, msg = run_program(prog.code, prog.consts, pv, D0)
        if rc == 0 and derived is not None:
            out = derived[1](out)
        return rc, out, msg

    store_nodes = np.array([match[s][1] for s in stored], dtype=int)

    def expressions(pv):
        """The data of the compiled expressions at pv, from the tape's nodes (numpy over the
        whole tape; the program itself runs only on a mismatch), then the derived slots; a
        non-finite node value is left for the program to judge."""
        with np.errstate(all="ignore"):
            ev = _eval_nodes(nodes, pv, tape.ops())
        out = D0.copy()
        out[stored] = ev[store_nodes]
        return derived[1](out) if derived is not None else out

    def rounding(pv):
        """Per slot, what its rounding errors are relative to: the slot's size at the build
        values, or the largest number its expression computes from at pv (a marker l1 + l2
        - xc at l1 = 900 m: the difference of numbers near 900 carries their rounding)."""
        with np.errstate(all="ignore"):
            ops = tape.ops()
            mag = _magnitudes(nodes, _eval_nodes(nodes, pv, ops), ops)
        out = np.maximum(np.abs(D0), floor)
        out[stored] = np.maximum(out[stored], mag[store_nodes])
        return out

    prog.scale = rounding(bvec)
    # the build values themselves: every guard holds, every slot is reproduced
    rc, out, msg = engine_data(bvec)
    if rc != 0 or not np.all(_close(out, D0, scale=rounding(bvec))):
        blame = {names[rc - 1]} if rc > 0 else set(live)
        if rc == 0:
            return _fix_culprits(np.flatnonzero(~_close(out, D0, scale=rounding(bvec))),
                                 live, pmap, bvals, rng,
                                 scale, build, base, data_of, D0, fixed, None,
                                 "is not reproduced at the build values")
        for n in blame:
            fixed[n] = f"the compiled program refuses its build value ({msg})"
        return None
    # verification at fresh random sets, running the emitted code itself
    # (n_verify near the build values, n_wide within +-WIDE: a branch that build() takes
    # on plain floats, which no guard records, shows there as a mismatch)
    bad, refused = set(), set()
    for sc in [scale] * n_verify + [max(scale, WIDE)] * n_wide:
        got = _draw(live, pmap, bvals, rng, sc, build, base, data_of, same_layout, hits)
        if hits:
            return _fix_structure(hits, live, base, data_of, D0, fixed)
        if got is None:
            continue
        vals, D = got
        pv = _pvector(names, index, bvals, defaults, vals)
        rc, out, msg = engine_data(pv)
        if rc != 0:    # a non-finite number where build() computed a finite one
            refused |= {names[rc - 1]} if rc > 0 else set(live)
            continue
        bad |= set(np.flatnonzero(~_close(out, D, scale=rounding(pv))).tolist())
    if refused:
        for n in refused:
            fixed[n] = ("the compiled program refuses values that build() accepts")
        return None
    # the declared ranges: each parameter alone at the ends of its range, zero, its
    # negative, a log-spaced sweep (in rounds over the parameters, at most far_builds
    # builds), then n_combo sets of all of them drawn over their ranges. At each set the
    # program must give build()'s data, or refuse (a guard, a non-finite number); where
    # build() refuses (ModelError...), the program must refuse too. The builds are probes
    # (fmu_mb.mechanics.assembly.probing: a loop that cannot close fails without random
    # restarts); a set whose assembly fails is not compared (the engine's own assembly
    # runs at initialisation). A count, not a time: the same checks, hence the same
    # program, on any machine.
    far_bad, holes, builds = {}, {}, 0

    def check(vals):
        """None when the program gives build()'s data at vals or refuses them; else
        ("hole", message): build() refuses and the program does not; ("bad", slots): the
        data differ; ("structure", None): the data's structure changes."""
        pv = _pvector(names, index, bvals, defaults, vals)
        try:
            with probing():      # (the parameters moved: by name)
                D = np.asarray(data_of({**base, **{n: vals[n] for n in live
                                                   if vals[n] != bvals[n]}}), float).ravel()
        except StructureChanged:
            return "structure", None
        except _NOT_COMPARED:
            return None
        except Exception as exc:   # noqa: BLE001 - build() refuses these values
            if guards_hold(vals):
                rc, _, _ = engine_data(pv)
                if rc == 0:
                    return "hole", f"{type(exc).__name__}: {exc}"
            return None
        verdict = same_layout(vals, D)
        if verdict == "layout":
            return "structure", None
        if verdict != "ok":
            return None            # a guard refuses these values
        if np.all(_close(expressions(pv), D, scale=D0)):
            return None            # (the emitted code computes these nodes, op for op)
        rc, out, msg = engine_data(pv)
        if rc != 0:
            return None            # refused (a non-finite number)
        wrong = np.flatnonzero(~_close(out, D, scale=rounding(pv)))
        return ("bad", wrong) if len(wrong) else None

    sweeps = {n: _range_values(pmap[n], bvals[n], far) for n in live}
    for r in range(max((len(v) for v in sweeps.values()), default=0)):
        for n in live:
            if r >= len(sweeps[n]) or n in far_bad or n in holes or builds >= far_builds:
                continue
            builds += 1
            v = sweeps[n][r]
            vals = {**bvals, n: v}
            got = check(vals)
            if got is None:
                continue
            kind, what = got
            if kind == "structure":
                return _fix_structure([{**{m: bvals[m] for m in live}, n: v}], live,
                                      base, data_of, D0, fixed)
            if kind == "hole":
                holes[n] = (v, what)
            else:
                far_bad[n] = (v, _describe(fixed, int(what[0])))
    if not far_bad and not holes and far:
        for _ in range(n_combo):
            vals = {**bvals, **{n: _range_draw(pmap[n], bvals[n], rng) for n in live}}
            got = check(vals)
            if got is None:
                continue
            kind, what = got
            if kind == "structure":
                return _fix_structure([{m: vals[m] for m in live}], live, base, data_of,
                                      D0, fixed)
            if kind == "bad":
                bad |= set(int(x) for x in what)
                continue
            # build() refuses the set and the program does not: whoever does so alone
            alone = [n for n in live if vals[n] != bvals[n]
                     and check({**bvals, n: vals[n]}) not in (None,)]
            for n in alone or [n for n in live if vals[n] != bvals[n]]:
                holes[n] = (vals[n], what if alone else f"jointly with the others: {what}")
    if far_bad or holes:
        for n, (v, where) in far_bad.items():
            fixed[n] = (f"at {n}={v!r} the model data ({where}) differ from the compiled "
                        f"expression: build() takes a branch on it that the parameter "
                        f"compiler does not see")
        for n, (v, what) in holes.items():
            fixed.setdefault(n, f"build() refuses {n}={v!r} ({what}) by a check that the "
                                f"parameter compiler does not see")
        return None
    if bad:
        return _fix_culprits(sorted(bad), live, pmap, bvals, rng, scale, build, base,
                             data_of, D0, fixed, None, "differs from the compiled "
                             f"expression by more than {VERIFY_RTOL:g} at a verification set "
                             "(build() takes a branch on it that the parameter compiler "
                             "does not see)")
    return prog


_NEG_CMP = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def _finish(emit, D0, names, mfile, body, stored, guards, fixed, fixvals, live=(),
            nodes=()):
    """The ParamProgram: header (strings: model file, names, the fixed parameters'
    reasons), a check that each fixed number keeps its built value, then `body`."""
    if not isinstance(emit, _Emitter):
        emit = _Emitter([], [], mfile, names)
    head = [MAGIC, VERSION, len(names), len(D0), emit.ntemp]
    for s in [mfile] + list(names) + [fixed.get(n, "") for n in names]:
        b = s.encode("utf-8")
        head += [len(b)] + list(b)
    checks = []
    for k, n in enumerate(names):
        if n in fixed and n in fixvals:
            checks += [OP_BEGIN, 1, k, OP_PARAM, k, OP_CONST, emit.const(fixvals[n]),
                       OP_FIXED, 0]
    code = np.array(head + checks + body + [OP_END], dtype=np.int32)
    consts = np.array(emit.consts, dtype=float)
    text = tuple(f"{_expr_text(nodes, names, a)} {_CMP_TEXT[c if r else _NEG_CMP[c]]} "
                 f"{_expr_text(nodes, names, b)}" for c, a, b, r in guards)
    return ParamProgram(code, consts, tuple(names), len(D0), tuple(live),
                        {n: fixed[n] for n in names if n in fixed}, tuple(int(s) for s in
                                                                         stored), text)


def _expr_text(nodes, names, i):
    nd = nodes[i]
    if nd[0] == "p":
        return names[nd[1]]
    if nd[0] == "c":
        return repr(nd[1])
    sym = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
    if nd[0] in sym:
        return (f"({_expr_text(nodes, names, nd[1])} {sym[nd[0]]} "
                f"{_expr_text(nodes, names, nd[2])})")
    return f"{nd[0]}({', '.join(_expr_text(nodes, names, c) for c in nd[1:])})"


class _Fixed(dict):
    """name -> why the parameter is fixed, `describe(slot)`: words for a data slot, and
    `floor`: per slot, the size its rounding residues are relative to (_array_scales)."""

    describe = None
    floor = None


_WORDS = {"DGRAV": "gravity", "DPARAM": "parameter table", "DJD": "tree joint geometry",
          "DED": "force element data", "DMASS": "masses", "DINERTIA": "inertias",
          "DRD": "loop constraint rows", "DDP": "drive laws", "DGAIN": "cylinder gains",
          "DROWS": "constraint rows", "DJOINT": "joint data", "DELEM": "element data",
          "DMARK": "marker points", "DBODY0": "initial body poses",
          "DINIT": "initial joint values", "DMINV": "projection metric (inverse masses)",
          "DSRD": "spatial tree geometry", "DSMASS": "masses", "DSJ": "inertia tensors",
          "DSED": "force element data", "DSCD": "cut joint data", "DSRQ": "joint poses",
          "DSARM": "armature"}


def _engine_describer(model, D0):
    """describe(slot) naming the engine data array of a slot ("DMINV[3] (projection
    metric (inverse masses))") when D0 is the engine's data of model; else "slot k"."""
    names = None
    try:
        from .data import model_data
        data = model_data(model)
        if data.doubles.shape == D0.shape and np.array_equal(data.doubles, D0):
            names = sorted((off, cnt, name) for name, (off, cnt) in data.slots.items()
                           if name[0] == "D" and cnt)
    except Exception:           # noqa: BLE001 - not an engine model: plain slot numbers
        names = None

    def describe(slot):
        for off, cnt, name in names or ():
            if off <= slot < off + cnt:
                w = _WORDS.get(name)
                return f"{name}[{slot - off}]" + (f" ({w})" if w else "")
        return f"slot {slot}"
    return describe


def _array_scales(model, D0):
    """Per slot, the largest finite |number| of the engine data array it belongs to (the
    joint data, the marker points...), where D0 is the engine's data of model: a residue far
    below it (a zero computed as 1e-18 from numbers near 1) is rounding, whatever order of
    operations made it; |D0| elsewhere (the parameter table's bounds, other data)."""
    out = np.abs(np.where(np.isfinite(D0), D0, 0.0))
    try:
        from .data import model_data
        data = model_data(model)
        if data.doubles.shape != D0.shape or not np.array_equal(data.doubles, D0):
            return out
        for name, (off, cnt) in data.slots.items():
            if name[0] != "D" or not cnt or name == "DPARAM":
                continue
            block = out[off:off + cnt]
            out[off:off + cnt] = np.max(block) if len(block) else 0.0
    except Exception:           # noqa: BLE001 - not an engine model: each slot its own size
        pass
    return out


def _describe(fixed, slot):
    d = getattr(fixed, "describe", None)
    return d(slot) if d else f"slot {slot}"


def _fix_params(ks, names, fixed, reason):
    for k in ks:
        fixed.setdefault(names[k], reason)
    return None


def _sensitivity(live, pmap, bvals, rng, scale, base, data_of, D0):
    """(name -> the data slots that change when that parameter alone moves, None when
    moving it fails the build or changes the data's layout; name -> why for those)."""
    out, why = {}, {}
    for n in live:
        p = pmap[n]
        got, error = None, None
        s = scale
        for _ in range(8):
            v = _ranges(p, rng, s)
            if v == bvals[n]:
                s *= 0.5
                continue
            try:
                D = np.asarray(data_of({**base, n: v}), float).ravel()
            except Exception as exc:   # noqa: BLE001 - a set that does not build: another
                error = f"{n}={v!r}: {exc}"
                s *= 0.5
                continue
            got = D
            break
        if got is None or got.shape != D0.shape:
            out[n] = None
            why[n] = (f"the build fails near its default ({error})" if got is None
                           else "the layout of the model data changes with it")
        else:
            out[n] = set(np.flatnonzero(_differs(got, D0)).tolist())
    return out, why


def _fix_culprits(slots, live, pmap, bvals, rng, scale, build, base, data_of, D0, fixed,
                  tests, why):
    """Fix the live parameters that spoil `slots`: those that move them and (with `tests`
    = (alone, without)) whose moves alone are not matched by the tape, or else the first
    without which the others' moves are matched; all that move them when that singles out
    none."""
    sens, why_not = _sensitivity(live, pmap, bvals, rng, scale, base, data_of, D0)
    slots = set(int(s) for s in slots)
    found = False
    touching = [n for n in live if sens[n] is not None and sens[n] & slots]
    innocent = set()
    if tests is not None:
        alone, without = tests
        innocent = {n for n in touching if alone(n, sorted(sens[n] & slots))}
        if len(innocent) == len(touching):      # each alone is fine: who spoils them jointly?
            guilty = next((n for n in touching if without(n, sorted(slots))), None)
            innocent = set(touching) - {guilty} if guilty is not None else set()
    for n in live:
        hit = sens[n]
        if hit is None:
            fixed[n] = why_not[n]
            found = True
        elif hit & slots and n not in innocent:
            s = min(hit & slots)
            more = len(hit & slots) - 1
            fixed[n] = (f"its effect on the model data ({_describe(fixed, s)}"
                        f"{f' and {more} more' if more else ''}) {why}")
            found = True
    if not found:      # no single parameter moves them: fix every live one (never wrong)
        for n in live:
            fixed[n] = (f"its effect on the model data ({_describe(fixed, min(slots))}), "
                        f"jointly with other parameters, {why}")
    return None


def _fix_by_layout(live, pmap, bvals, rng, scale, build, base, data_of, D0, fixed,
                   guards_hold):
    sens, why_not = _sensitivity(live, pmap, bvals, rng, scale, base, data_of, D0)
    found = False
    for n in live:
        if sens[n] is None:
            fixed[n] = why_not[n]
            found = True
    if not found:
        for n in live:
            fixed[n] = ("no probe set near the defaults builds with the same data layout "
                        "and the same build-time branches")
    return None


# ---------------------------------------------------------------------- the engine's blob
def program_for(module_or_build, overrides=None, **kwargs):
    """(EngineData of build(**overrides), its ParamProgram): the program compiled against the
    engine's model data (fmu_mb.engine.data.model_data), the parameter table's order; put
    both in a blob with `data.to_bytes(program=prog)`. kwargs go to compile_parameters."""
    from .data import model_data

    build = _build_fn(module_or_build)
    base = dict(overrides or {})
    data = model_data(build(**base))
    kwargs.setdefault("derived", data.derived())
    prog = compile_parameters(module_or_build, base, lambda o: model_data(build(**o)),
                              names=data.parameter_names, **kwargs)
    return data, prog
