"""The in-process host of the engine library (native/engine.h): one shared library compiled from
native/engine.c with the two kernels (kernel.c, spatial_kernel.c) and, when present, the
parameter program's interpreter (params.c), compiled and cached as fmu_mb.engine.kernel does,
loaded with ctypes. The native FMU links the same C code behind the FMI 2.0 C API, so both
compute the same numbers on the same model data (fmu_mb.engine.data).

    eng = Engine(model)                  # the model data of model, parameters at their values
    eng.initialize()                     # the assembled initial state, in C
    eng.do_step(0.01, u)                 # one communication step with the inputs u held
    y = eng.outputs(u)                   # every output, fmu_mb.dynamics.outputs.output_spec order
"""
import ctypes
import math
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError, IntegrationError
from . import kernel as _kernel

NATIVE = Path(__file__).resolve().parent / "native"
SOURCE = NATIVE / "engine.c"
METHODS = {"dopri5": 0, "dop853": 1, "rk4": 2}
STABILIZATIONS = {"none": 0, "projection": 1, "baumgarte": 2}
OK, DISCARD, ERROR = 0, 1, 2
#: output groups (engine.h MBE_GROUP_*)
MOTION, REACTIONS, RESIDUALS, ALL = 1, 2, 4, 7


class MbeSettings(ctypes.Structure):
    """engine.h's MbeSettings."""

    _fields_ = [("method", ctypes.c_int), ("rtol", ctypes.c_double),
                ("atol", ctypes.c_double), ("step", ctypes.c_double),
                ("max_step", ctypes.c_double), ("max_steps", ctypes.c_double),
                ("stabilization", ctypes.c_int), ("alpha", ctypes.c_double),
                ("beta", ctypes.c_double), ("proj_tol", ctypes.c_double)]


def sources():
    """The C sources of the engine library, engine.c first."""
    extra = [NATIVE / "kernel.c", NATIVE / "spatial_kernel.c"]
    if (NATIVE / "params.c").is_file():
        extra.append(NATIVE / "params.c")
    return [SOURCE, *extra]


@lru_cache(maxsize=1)
def library():
    """The loaded engine library (ctypes.CDLL)."""
    src = sources()
    defines = ("MBE_HAVE_PARAMS",) if src[-1].name == "params.c" else ()
    lib = ctypes.CDLL(str(_kernel.library_path(src[0], tuple(src[1:]), defines)))
    P, I, D, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t
    S = ctypes.c_char_p
    lib.mbe_create.restype = P
    lib.mbe_create.argtypes = [P, Z, P, Z]
    lib.mbe_free.restype = None
    lib.mbe_free.argtypes = [P]
    for name in ("mbe_n_parameters", "mbe_n_inputs", "mbe_n_outputs", "mbe_n_q"):
        getattr(lib, name).restype = I
        getattr(lib, name).argtypes = [P]
    lib.mbe_set_parameters.argtypes = [P, P, P, Z]
    lib.mbe_set_settings.argtypes = [P, P, P, Z]
    lib.mbe_initialize.argtypes = [P, D, P, Z]
    lib.mbe_do_step.argtypes = [P, D, P, P, Z]
    lib.mbe_time.restype = D
    lib.mbe_time.argtypes = [P]
    lib.mbe_outputs.argtypes = [P, P, P, P, Z]
    lib.mbe_outputs_groups.argtypes = [P, P, I, P, P, Z]
    lib.mbe_output_group.restype = I
    lib.mbe_output_group.argtypes = [P, I]
    lib.mbe_state_size.restype = Z
    lib.mbe_state_size.argtypes = [P]
    lib.mbe_get_state.restype = None
    lib.mbe_get_state.argtypes = [P, P]
    lib.mbe_set_state.argtypes = [P, P, P, Z]
    del S
    return lib


def settings_struct(settings):
    """MbeSettings of an fmu_mb Settings (its explicit method and drift control)."""
    if settings.method not in METHODS:
        raise InputError(f"the compiled engine runs methods {list(METHODS)}; received "
                         f"'{settings.method}'")
    s = MbeSettings()
    s.method = METHODS[settings.method]
    s.rtol, s.atol, s.step = float(settings.rtol), float(settings.atol), float(settings.step)
    s.max_step = float(settings.max_step)
    s.max_steps = float(settings.max_steps)
    s.stabilization = STABILIZATIONS[settings.stabilization]
    s.alpha, s.beta = (float(v) for v in settings.baumgarte)
    s.proj_tol = float(settings.projection_tol)
    return s


class Engine:
    """One engine instance (its own model data, kernel and state) of a Model or of a blob."""

    ERRLEN = 1024

    def __init__(self, model=None, blob=None, program=None, name=None):
        from .data import model_data

        if blob is None:
            self.data = model_data(model)
            blob = self.data.to_bytes(program)
        self.name = name or (model.name if model is not None else "model")
        lib = library()
        self._blob = ctypes.create_string_buffer(bytes(blob), len(blob))
        self._err = ctypes.create_string_buffer(self.ERRLEN)
        handle = lib.mbe_create(self._blob, len(blob), self._err, self.ERRLEN)
        if not handle:
            raise InputError(f"model '{self.name}': the engine refused the model data: "
                             f"{self._message()}")
        self.lib, self.handle = lib, handle
        self._finalizer = weakref.finalize(self, lib.mbe_free, handle)
        self.n = lib.mbe_n_q(handle)
        self.n_inputs = lib.mbe_n_inputs(handle)
        self.n_outputs = lib.mbe_n_outputs(handle)
        self.n_parameters = lib.mbe_n_parameters(handle)
        self._state_size = lib.mbe_state_size(handle)
        self._u = np.zeros(max(1, self.n_inputs))
        self._y = np.zeros(max(1, self.n_outputs))
        self._s = np.zeros(max(1, self._state_size))
        self._lock = threading.Lock()

    def _message(self):
        return self._err.value.decode("utf-8", "replace")

    def _check(self, rc, what):
        if rc == OK:
            return
        text = f"model '{self.name}': {what}: {self._message()}"
        raise (IntegrationError if rc == DISCARD else InputError)(text)

    def _inputs(self, u):
        if self.n_inputs:
            u = np.asarray(u if u is not None else np.zeros(self.n_inputs), dtype=float)
            if u.shape != (self.n_inputs,):
                raise InputError(f"model '{self.name}': expected {self.n_inputs} inputs, "
                                 f"received shape {u.shape}")
            self._u[:self.n_inputs] = u
        return self._u.ctypes.data

    def set_settings(self, settings):
        with self._lock:
            s = settings_struct(settings)
            self._check(self.lib.mbe_set_settings(self.handle, ctypes.byref(s), self._err,
                                                  self.ERRLEN), "the solver settings")

    def set_parameters(self, values):
        p = np.ascontiguousarray(values, dtype=float).reshape(-1)
        if p.shape != (self.n_parameters,):
            raise InputError(f"model '{self.name}': expected {self.n_parameters} parameter "
                             f"values, received {p.shape[0]}")
        with self._lock:
            self._check(self.lib.mbe_set_parameters(self.handle, p.ctypes.data, self._err,
                                                    self.ERRLEN), "the parameters")

    def initialize(self, t0=0.0):
        with self._lock:
            self._check(self.lib.mbe_initialize(self.handle, float(t0), self._err,
                                                self.ERRLEN), "the initial state")

    def do_step(self, h, u=None):
        with self._lock:
            pu = self._inputs(u)
            self._check(self.lib.mbe_do_step(self.handle, float(h), pu, self._err,
                                             self.ERRLEN), "the step")

    @property
    def time(self):
        return self.lib.mbe_time(self.handle)

    def outputs(self, u=None, groups=ALL):
        """Every output (output_spec order) at the current state with inputs u; only the
        groups in `groups` (MOTION | REACTIONS | RESIDUALS) are computed, the others are NaN."""
        with self._lock:
            pu = self._inputs(u)
            self._y[:] = np.nan
            self._check(self.lib.mbe_outputs_groups(self.handle, pu, int(groups),
                                                    self._y.ctypes.data, self._err,
                                                    self.ERRLEN), "the outputs")
            return self._y[:self.n_outputs].copy()

    def output_groups(self):
        """The group (MOTION, REACTIONS or RESIDUALS) of every output."""
        return np.array([self.lib.mbe_output_group(self.handle, i)
                         for i in range(self.n_outputs)], dtype=int)

    def get_state(self):
        """(t, q (n), qd (n), h) as one array."""
        with self._lock:
            self.lib.mbe_get_state(self.handle, self._s.ctypes.data)
            return self._s[:self._state_size].copy()

    def set_state(self, s):
        s = np.ascontiguousarray(s, dtype=float).reshape(-1)
        if s.shape != (self._state_size,):
            raise InputError(f"model '{self.name}': expected a state of {self._state_size} "
                             f"values, received {s.shape[0]}")
        with self._lock:
            self._check(self.lib.mbe_set_state(self.handle, s.ctypes.data, self._err,
                                               self.ERRLEN), "the state")

    @property
    def state(self):
        """(t, q, qd, h) of the current state."""
        s = self.get_state()
        n = self.n
        return float(s[0]), s[1:1 + n], s[1 + n:1 + 2 * n], float(s[1 + 2 * n])

    def load(self, state):
        """Set the state from an fmu_mb State (joint coordinates of the recursive
        formulation)."""
        h = float(state.h) if math.isfinite(state.h) else 0.0
        self.set_state(np.concatenate([[state.t], state.q, state.qd, [h]]))
