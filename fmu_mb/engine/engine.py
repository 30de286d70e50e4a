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
import re
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError, IntegrationError
from . import kernel as _kernel

NATIVE = Path(__file__).resolve().parent / "native"
SOURCE = NATIVE / "engine.c"
METHODS = {"dopri5": 0, "dop853": 1, "rk4": 2, "auto": 3}   # (auto: engine.c do_step)
STABILIZATIONS = {"none": 0, "projection": 1, "baumgarte": 2}
OK, DISCARD, ERROR = 0, 1, 2
#: a contact's record in the engine state (engine.h mbe_get_state; events.c's order)
RECORD = ("impacts", "last_time", "last_impulse", "energy_loss", "active")
#: output groups (engine.h MBE_GROUP_*)
BODIES, REACTIONS, RESIDUALS, COORDS, ELEMENTS, MARKERS, ENERGY, CONTACTS = (1, 2, 4, 8, 16, 32,
                                                                           64, 128)
MOTION, ALL = 249, 255
#: the engine's groups each group of fmu_mb.dynamics.outputs needs
GROUP_OF = {"motion": BODIES, "markers": MARKERS, "coords": COORDS, "elements": ELEMENTS,
            "dynamics": REACTIONS, "energy": ENERGY | RESIDUALS, "contacts": CONTACTS}


class MbeSettings(ctypes.Structure):
    """engine.h's MbeSettings."""

    _fields_ = [("method", ctypes.c_int), ("rtol", ctypes.c_double),
                ("atol", ctypes.c_double), ("step", ctypes.c_double),
                ("max_step", ctypes.c_double), ("max_steps", ctypes.c_double),
                ("stabilization", ctypes.c_int), ("alpha", ctypes.c_double),
                ("beta", ctypes.c_double), ("proj_tol", ctypes.c_double),
                ("contact_tol", ctypes.c_double), ("contact_velocity", ctypes.c_double),
                ("event_tol", ctypes.c_double)]


def sources():
    """The C sources of the engine library, engine.c first."""
    extra = [NATIVE / "kernel.c", NATIVE / "spatial_kernel.c"]
    if (NATIVE / "params.c").is_file():
        extra.append(NATIVE / "params.c")
    return [SOURCE, *extra]


@lru_cache(maxsize=1)
def library():
    """The loaded engine library (ctypes.CDLL)."""
    lib = ctypes.CDLL(str(library_file()))
    P, I, D, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t
    lib.mbe_create.restype = P
    lib.mbe_create.argtypes = [P, Z, P, Z]
    lib.mbe_free.restype = None
    lib.mbe_free.argtypes = [P]
    for name in ("mbe_n_parameters", "mbe_n_inputs", "mbe_n_outputs", "mbe_n_q",
                 "mbe_n_contacts"):
        getattr(lib, name).restype = I
        getattr(lib, name).argtypes = [P]
    lib.mbe_set_parameters.argtypes = [P, P, P, Z]
    lib.mbe_set_settings.argtypes = [P, P, P, Z]
    lib.mbe_initialize.argtypes = [P, D, P, Z]
    lib.mbe_warning.restype = ctypes.c_char_p
    lib.mbe_warning.argtypes = [P]
    lib.mbe_workspace_bytes.restype = Z
    lib.mbe_workspace_bytes.argtypes = [P, I]
    lib.mbe_do_step.argtypes = [P, D, P, P, Z]
    lib.mbe_model_doubles.restype = ctypes.POINTER(D)
    lib.mbe_model_doubles.argtypes = [P, ctypes.POINTER(I)]
    lib.mbe_do_step_to_event.argtypes = [P, D, P, P, P, Z]
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
    lib.mbe_state_derivatives.argtypes = [P, P, I, P, P, P, Z]
    lib.mbe_directional_derivative.argtypes = [P, P, I, P, I, P, P, I, P, P, P, Z]
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
    # the contact event loop's settings; a settings object without them (0): the model data's
    s.contact_tol = float(getattr(settings, "contact_tol", 0.0))
    s.contact_velocity = float(getattr(settings, "contact_velocity", 0.0))
    s.event_tol = float(getattr(settings, "event_tol", 0.0))
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
        self.n_contacts = lib.mbe_n_contacts(handle)
        self.contact_names = ([c.name for c in model.contacts] if model is not None
                              else [f"contact{i}" for i in range(self.n_contacts)])
        self._state_size = lib.mbe_state_size(handle)
        self._u = np.zeros(max(1, self.n_inputs))
        self._y = np.zeros(max(1, self.n_outputs))
        self._s = np.zeros(max(1, self._state_size))
        self._ps = self._s.ctypes.data
        self._lock = threading.Lock()

    def _message(self):
        return self._err.value.decode("utf-8", "replace")

    def _check(self, rc, what):
        if rc == OK:
            return
        message = re.sub(r"\bcontact (\d+): ", self._contact_name, self._message())
        text = f"model '{self.name}': {what}: {message}"
        raise (IntegrationError if rc == DISCARD else InputError)(text)

    def _contact_name(self, match):
        """'contact <i>: ' of the engine's messages with the contact's name."""
        i = int(match.group(1))
        names = getattr(self, "contact_names", ())
        return f"contact '{names[i]}': " if i < len(names) else match.group(0)

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

    @property
    def warning(self):
        """The last initialize's warning ("" when none: engine.h mbe_warning)."""
        with self._lock:
            return self.lib.mbe_warning(self.handle).decode("utf-8", "replace")

    def workspace_bytes(self, which=-1):
        """The bytes of the workspaces allocated on first use (mbe_workspace_bytes): which
        "D", "A", "S", "V" or -1 (their sum)."""
        code = {"D": 0, "A": 1, "S": 2, "V": 3, -1: -1}.get(which)
        if code is None:
            raise InputError(f"workspace {which!r}: expected 'D', 'A', 'S', 'V' or -1")
        with self._lock:
            return self.lib.mbe_workspace_bytes(self.handle, code)

    def do_step(self, h, u=None):
        with self._lock:
            pu = self._inputs(u)
            self._check(self.lib.mbe_do_step(self.handle, float(h), pu, self._err,
                                             self.ERRLEN), "the step")

    def model_doubles(self):
        """A copy of the model data the engine runs on (the parameters applied)."""
        n = ctypes.c_int(0)
        ptr = self.lib.mbe_model_doubles(self.handle, ctypes.byref(n))
        return np.ctypeslib.as_array(ptr, shape=(n.value,)).copy() if n.value else np.zeros(0)

    def do_step_to_event(self, h, u=None):
        """do_step that stops at the first impact inside the step (FMI 3.0's early return):
        True when it did (the time is then the impact's, the state that after it)."""
        hit = ctypes.c_int(0)
        with self._lock:
            pu = self._inputs(u)
            self._check(self.lib.mbe_do_step_to_event(self.handle, float(h), pu,
                                                      ctypes.byref(hit), self._err,
                                                      self.ERRLEN), "the step")
        return bool(hit.value)

    @property
    def time(self):
        return self.lib.mbe_time(self.handle)

    def outputs(self, u=None, groups=ALL):
        """Every output (output_spec order) at the current state with inputs u; only the
        groups in `groups` (an OR of BODIES, COORDS, ELEMENTS, MARKERS, ENERGY, REACTIONS,
        RESIDUALS; MOTION: all but the reactions and residuals) are computed, the others are
        NaN."""
        with self._lock:
            pu = self._inputs(u)
            self._y[:] = np.nan
            self._check(self.lib.mbe_outputs_groups(self.handle, pu, int(groups),
                                                    self._y.ctypes.data, self._err,
                                                    self.ERRLEN), "the outputs")
            return self._y[:self.n_outputs].copy()

    def output_groups(self):
        """The group (one of BODIES ... RESIDUALS) of every output."""
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

    @property
    def records(self):
        """The contact records (n_contacts, 5): per contact impacts, time of the last
        impact [s], impulse of the last impact, energy lost in its impacts [J], active."""
        s = self.get_state()
        return s[2 + 2 * self.n:].reshape(self.n_contacts, -1)

    def _records_of(self, state):
        """The contact records of an fmu_mb State (its extra['contacts']), flat; then those
        of the frictional joints (extra['joint_friction']: stick, sdir, loss, 3 each)."""
        saved = (state.extra or {}).get("contacts", {})
        if self._state_size - 2 - 2 * self.n == len(RECORD) * self.n_contacts:
            return [float(saved.get(name, {}).get(f, 0.0)) for name in self.contact_names
                    for f in RECORD]
        # friction: + stick, the slip direction (2), sliding loss; an engine made from a blob
        # knows no contact names: the records in model.contacts order (State.extra's)
        recs = [saved.get(name, {}) for name in self.contact_names]
        if not any(name in saved for name in self.contact_names) and \
                len(saved) == self.n_contacts:
            recs = list(saved.values())
        out = []
        for d in recs:
            sdir = (list(d.get("sdir", ())) + [0.0, 0.0])[:2]
            out += [float(d.get(f, 0.0)) for f in RECORD] + [float(d.get("stick", False))] \
                + [float(v) for v in sdir] + [float(d.get("slide_loss", 0.0))]
        joints = list((state.extra or {}).get("joint_friction", {}).values())
        nj = (self._state_size - 2 - 2 * self.n - len(out)) // 3
        joints = (joints + [{}] * nj)[:nj]        # (model order; none saved: the defaults)
        for d in joints:
            out += [float(d.get("stick", False)), float(d.get("sdir", 1.0)),
                    float(d.get("loss", 0.0))]
        return out

    def outputs_at(self, state, u=None, groups=ALL, out=None):
        """The outputs of `groups` at an fmu_mb State (joint coordinates of the recursive
        formulation; the contact records from its extra) with inputs u: set_state then
        outputs under one lock (InputError for a state the engine refuses). out: an array of
        n_outputs to write them into (the other entries untouched; returned); None: a new
        array, the other entries NaN."""
        h = float(state.h) if math.isfinite(state.h) else 0.0
        n = self.n
        if out is None:
            out = np.full(self.n_outputs, np.nan)
        rec = self._records_of(state) if self._state_size > 2 + 2 * n else None
        with self._lock:
            s = self._s
            s[0] = state.t
            s[1:1 + n] = state.q
            s[1 + n:1 + 2 * n] = state.qd
            s[1 + 2 * n] = h
            if rec is not None:
                s[2 + 2 * n:self._state_size] = rec
            self._check(self.lib.mbe_set_state(self.handle, self._ps, self._err,
                                               self.ERRLEN), "the state")
            self._check(self.lib.mbe_outputs_groups(self.handle, self._inputs(u), int(groups),
                                                    out.ctypes.data, self._err,
                                                    self.ERRLEN), "the outputs")
        return out

    def load(self, state):
        """Set the state from an fmu_mb State (joint coordinates of the recursive
        formulation; the contact records from its extra['contacts'])."""
        h = float(state.h) if math.isfinite(state.h) else 0.0
        self.set_state(np.concatenate([[state.t], state.q, state.qd, [h],
                                       self._records_of(state)]))

    # ------------------------------------------------------------ the Python FMU's step
    def stepper(self):
        """step(h, u) -> s: mbe_do_step by h with the inputs u (a finite float array of
        n_inputs, validated by the caller) held, then the new state (t, q (n), qd (n), h) as a
        new read-only array, under one lock (the Python FMU's doStep: fmu_mb.fmi.slave).
        IntegrationError (the engine's MBE_DISCARD) or InputError: the state is that from
        before the call."""
        lib, handle, lock = self.lib, self.handle, self._lock
        do_step, get_state = lib.mbe_do_step, lib.mbe_get_state
        ubuf, ni, size = self._u, self.n_inputs, self._state_size
        pu, perr, errlen = self._u.ctypes.data, ctypes.addressof(self._err), self.ERRLEN
        empty = np.empty

        def step(h, u):
            with lock:
                if ni:
                    ubuf[:ni] = u
                rc = do_step(handle, h, pu, perr, errlen)
                if rc:
                    self._check(rc, "the step")
                s = empty(size)
                get_state(handle, s.ctypes.data)
            s.flags.writeable = False
            return s
        return step

    def outputs_into(self, u, groups, out):
        """The outputs of `groups` (an OR of BODIES ... RESIDUALS) at the current state with
        inputs u into their entries of `out` (an array of n_outputs; the other entries are
        left as they are)."""
        with self._lock:
            self._check(self.lib.mbe_outputs_groups(self.handle, self._inputs(u), int(groups),
                                                    out.ctypes.data, self._err,
                                                    self.ERRLEN), "the outputs")
        return out


    # ------------------------------------------------------------ linearization
    def state_derivatives(self, independent, u=None):
        """x' = (qd_i, qdd_i) at the current state for the independent tree coordinates
        (indices into q): mbe_state_derivatives."""
        ind = np.ascontiguousarray(independent, dtype=np.intc).reshape(-1)
        out = np.zeros(max(1, 2 * len(ind)))
        with self._lock:
            pu = self._inputs(u)
            self._check(self.lib.mbe_state_derivatives(self.handle, pu, len(ind),
                                                       ind.ctypes.data, out.ctypes.data,
                                                       self._err, self.ERRLEN),
                        "the state derivatives")
        return out[:2 * len(ind)]

    def directional_derivative(self, independent, known, seed, unknown, u=None):
        """d unknown / d known . seed at the current state (mbe_directional_derivative):
        known indices 0..2f-1 are the states x = (q_i, qd_i), 2f.. the inputs; unknown
        indices 0..2f-1 are x', 2f.. the outputs (output_spec order)."""
        ind = np.ascontiguousarray(independent, dtype=np.intc).reshape(-1)
        kn = np.ascontiguousarray(known, dtype=np.intc).reshape(-1)
        sd = np.ascontiguousarray(seed, dtype=float).reshape(-1)
        un = np.ascontiguousarray(unknown, dtype=np.intc).reshape(-1)
        if sd.shape != kn.shape:
            raise InputError(f"model '{self.name}': {len(kn)} knowns but {len(sd)} seed values")
        out = np.zeros(max(1, len(un)))
        with self._lock:
            pu = self._inputs(u)
            self._check(self.lib.mbe_directional_derivative(
                self.handle, pu, len(ind), ind.ctypes.data, len(kn), kn.ctypes.data,
                sd.ctypes.data, len(un), un.ctypes.data, out.ctypes.data, self._err,
                self.ERRLEN), "the directional derivative")
        return out[:len(un)]


def library_file():
    """The path of the compiled engine library (compiled on first use; KernelUnavailable
    without a C compiler), e.g. to bundle it in a Python FMU beside its sources."""
    src = sources()
    defines = ("MBE_HAVE_PARAMS",) if src[-1].name == "params.c" else ()
    return _kernel.library_path(src[0], tuple(src[1:]), defines)
