"""GuardedSlave: FMI 2.0 statuses for pythonfmu 0.7.0 slaves (state-machine guard, error funnel).

pythonfmu 0.7.0 turns every Python exception into fmi2Fatal and releases the Python object
(the next call crashes the host); it has no way to return fmi2Error. fmu_mb's FMI front
(native/front.c, the FMU's binary) fills that gap: it returns the worst status the adapter
*logged* during a call. So the adapters (MultibodySlave, ControllerSlave) derive from
GuardedSlave, which wraps every entry point pythonfmu calls:

- no exception leaves an entry point: it is logged with status fmi2Error (fmi2Discard in
  doStep) and the call returns normally, with placeholder values for a getter;
- a call on a value reference that does not exist or has another type, a set on an output,
  on a fixed parameter after initialisation or on a variable in the wrong state, a value a
  subclass refuses (`_refuse_value`) is refused with fmi2Error before anything is changed;
- an FMU state holds a tag naming the FMU (`state_tag`) and the time of its last successful
  step; serialized, it gets a header with the format version (STATE_FORMAT), its length and a
  SHA-256 checksum over the header and the JSON, so that any damaged byte is found. Bytes
  that are not an intact state of this FMU (corrupt, truncated, foreign, another format)
  deserialise to a marker that the front frees while returning fmi2Error; a state whose keys
  or value kinds differ from this instance's own states (`_shape_mismatch`) is refused by
  fmi2SetFMUstate; the values themselves are the subclass's `_set_fmu_state` to check; a set
  state that fails is undone;
- fmi2SetupExperiment's tolerance, when defined, must be finite and > 0; value references
  are printed as the unsigned numbers the host passed (pythonfmu hands them over as C ints);
  a long message is shortened in the middle (`shorten`);
- the front reads the time of the last successful step through value reference TIME_VR
  (fmi2GetRealStatus(fmi2LastSuccessfulTime)) and through TERMINATED_VR whether the last
  doStep failed because the model could not be advanced (fmi2Terminated: true then, and the
  step's status fmi2Error (`_fail_in_model`), so that a master such as fmpy's simulate_fmu
  stops with an error; false after a discard for a wrong step size or communication point,
  which the master can correct, after a successful step and after a restored state), once a
  GUARD_CATEGORY message (logged by
  fmi2ExitInitializationMode) told it that the slave is a GuardedSlave;
- pythonfmu re-executes the FMU's script at every fmi2Instantiate: an identical class
  statement gives the class made before (`_SameClass`) and the repeated sys.path entry is
  dropped, so that nothing grows per instance;
- the mode (instantiated, initialization, stepping, terminated) follows the FMI 2.0 state
  machine, for the per-variable rules (the front checks the per-function rules).

Messages go through pythonfmu's log queue (one queue per class, so that the class methods
that (de)serialise states can log too; every call empties it before returning). The front
passes each message whose status is not fmi2OK to the host's logger even when logging is off.
Without the front (a plain pythonfmu binary) the same adapter still never raises, but
pythonfmu then reports fmi2OK for a refused call.
"""
import functools
import hashlib
import json
import math
import re
import sys
import types
import weakref

from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Status, Fmi2Variability
from pythonfmu.logmsg import LogMsg
from pythonfmu.variables import Boolean, Integer, Real, String

INSTANTIATED, INITIALIZATION, STEPPING, TERMINATED = (
    "instantiated", "initialization mode", "stepping", "terminated")

_TYPES = {"real": (Real, float, 0.0), "integer": (Integer, int, 0),
          "boolean": (Boolean, bool, False), "string": (String, str, "")}

#: key of the marker dict a corrupt or foreign serialized state is turned into
INVALID = "fmu_mb_invalid_state"

#: format version of serialized FMU states (see GuardedSlave._fmu_state_to_bytes)
STATE_FORMAT = 2
_STATE_HEADER = re.compile(rb"fmu_mb-state ([0-9]{1,9}) ([0-9]{1,12}) ([0-9a-f]{64})\n")
_STATE_KEYS = {"fmu_mb_state", "time", "data"}

#: value reference through which the FMI front (native/front.c) reads the slave's current time
#: for fmi2GetRealStatus(fmi2LastSuccessfulTime); pythonfmu passes it as a C int (-2)
TIME_VR = 2 ** 32 - 2

#: value reference through which the front reads fmi2Terminated while stepping: 1.0 when the
#: last doStep was discarded because the step could not be computed, else 0.0
TERMINATED_VR = 2 ** 32 - 3
#: the FMU's time range |t| <= TIME_BOUND [s]; a doStep ending beyond it is a call the master
#: can correct: fmi2Discard with fmi2Terminated false
TIME_BOUND = 1e10

#: category of the message that tells the FMI front this slave is a GuardedSlave (the front
#: does not pass it on; pythonfmu alone shows it when debug logging is on)
GUARD_CATEGORY = "fmu_mb:guard"

#: longest message logged; a longer one (a huge value echoed) keeps its head and its tail
MESSAGE_CAP = 1500


def shorten(message, cap=MESSAGE_CAP):
    """`message` cut in the middle to about `cap` characters, saying how much was left out."""
    if len(message) <= cap:
        return message
    head, tail = cap * 3 // 4, cap // 4
    return (f"{message[:head]} [... {len(message) - head - tail} characters left out ...] "
            f"{message[-tail:]}")


def _vr(vr):
    """A value reference as the host wrote it (pythonfmu passes them as signed C ints)."""
    return vr % 2 ** 32 if isinstance(vr, int) else vr


def _is_hex_float(text):
    """True when `text` is a float as float.hex writes it (the only way states write floats;
    float.fromhex alone would also read "0.01" or "abc", as other numbers)."""
    try:
        return float.fromhex(text).hex() == text
    except (TypeError, ValueError):
        return False


def _unique_keys(pairs):
    """json object hook: a key written twice is damage, not a choice between two values."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {shorten(repr(k), 80)} appears twice")
        out[k] = v
    return out


def _wrapper_mismatch(blob, tag):
    """Why `blob` is not a state of the FMU tagged `tag` (the keys GuardedSlave writes around
    the subclass's data), or None."""
    if not isinstance(blob, dict):
        return f"the state is a {type(blob).__name__}, expected an object"
    if blob.get("fmu_mb_state") != tag:
        return (f"the state belongs to another FMU (tagged "
                f"{shorten(repr(blob.get('fmu_mb_state')), 120)}; this FMU's states are "
                f"tagged {tag!r})")
    if set(blob) != _STATE_KEYS:
        return f"the state has the keys {shorten(repr(sorted(blob)), 200)}, expected " \
               f"{sorted(_STATE_KEYS)}"
    if not (isinstance(blob["time"], str) and _is_hex_float(blob["time"])):
        return (f"the state's time {shorten(repr(blob['time']), 80)} is not a float as "
                f"float.hex writes it")
    if blob["time"] != "nan" and not math.isfinite(float.fromhex(blob["time"])):
        return f"the state's time {blob['time']!r} is not finite"
    return None


def _shape_mismatch(got, ref, where):
    """Why `got` (a deserialised state's data) is not shaped like `ref` (this instance's own
    state data), or None: the same dict keys, lists where lists are, hexadecimal floats where
    floats are written as such, the same kinds of values. The free-form `extra` entries, list
    lengths and the values themselves are left to the subclass's _set_fmu_state."""
    if isinstance(ref, dict):
        if not isinstance(got, dict):
            return f"{where} is a {type(got).__name__}, expected an object"
        if where.endswith("['extra']"):
            return None
        if set(got) != set(ref):
            extra, missing = sorted(set(got) - set(ref)), sorted(set(ref) - set(got))
            return (f"{where} has " + ", ".join(
                ([f"unknown keys {extra}"] if extra else []) +
                ([f"no keys {missing}"] if missing else [])))
        for k in ref:
            why = _shape_mismatch(got[k], ref[k], f"{where}[{k!r}]")
            if why:
                return why
        return None
    if isinstance(ref, list):
        if not isinstance(got, list):
            return f"{where} is a {type(got).__name__}, expected a list"
        for i, item in enumerate(got):
            why = _shape_mismatch(item, ref[0], f"{where}[{i}]") if ref else None
            if why:
                return why
        return None
    if isinstance(ref, str):
        if not isinstance(got, str):
            return f"{where} is a {type(got).__name__}, expected a string"
        if _is_hex_float(ref) and not _is_hex_float(got):
            return f"{where} = {shorten(repr(got), 80)} is not a float as float.hex writes it"
        return None
    if isinstance(ref, bool) or isinstance(got, bool):
        return None if type(got) is type(ref) else \
            f"{where} is a {type(got).__name__}, expected a {type(ref).__name__}"
    numeric = (int, float, type(None))
    if isinstance(ref, numeric) and isinstance(got, numeric):
        if isinstance(ref, int) and not isinstance(got, int) and ref is not None:
            return f"{where} is a {type(got).__name__}, expected an integer"
        return None
    return f"{where} is a {type(got).__name__}, expected a {type(ref).__name__}"


def _type_name(var):
    return type(var).__name__


class _SameClass(type(Fmi2Slave)):
    """Metaclass of GuardedSlave: a class statement that repeats one already executed (same
    module, name, bases and class attributes, no functions) gives the class made then.

    pythonfmu 0.7.0 re-executes the FMU's script at every fmi2Instantiate (findClass) and
    never releases its list of each new class's MRO, so every instantiation leaked a class
    object (about 4 KB with its ABC caches). The generated wrappers' class bodies hold only
    data (model source, overrides, tags), so the class made at the import is reused; when the
    script re-imports fmu_mb (another FMU's copy was loaded in between) the bases differ and
    a new class is made as before."""

    _made = weakref.WeakValueDictionary()

    def __new__(mcls, name, bases, namespace, **kwargs):
        key = (namespace.get("__module__"), namespace.get("__qualname__", name))
        old = mcls._made.get(key)
        if old is not None and old.__bases__ == bases and _same_body(old, namespace):
            return old
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        mcls._made[key] = cls
        return cls


def _same_body(cls, namespace):
    for k, v in namespace.items():
        if k in ("__module__", "__qualname__", "__doc__"):
            continue
        if isinstance(v, (types.FunctionType, classmethod, staticmethod, property)) or \
                k not in cls.__dict__:
            return False
        old = cls.__dict__[k]
        if type(old) is not type(v) or old != v:
            return False
    return True


def _drop_repeated_path(path):
    """pythonfmu 0.7.0 puts the FMU's resources folder first on sys.path at every
    fmi2Instantiate: keep the first entry, drop the copies further down (sys.path grew by one
    entry per instance and imports looked through all of them)."""
    if not isinstance(path, str) or not sys.path or sys.path[0] != path:
        return
    sys.path[1:] = [p for p in sys.path[1:] if p != path]


class GuardedSlave(Fmi2Slave, metaclass=_SameClass):
    """pythonfmu slave base: FMI 2.0 statuses through the error funnel (see module doc).

    Subclasses implement pythonfmu's hooks as usual (do_step, exit_initialization_mode,
    _get_fmu_state, _set_fmu_state, ...); they may raise, and GuardedSlave turns that into a
    logged fmi2Error (fmi2Discard for do_step). `state_tag` names the FMU's states.
    """

    state_tag = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._queue = []                       # shared by the instances of this class
        for name, guard in _GUARDS.items():
            impl = cls.__dict__.get(name)
            if impl is not None and not getattr(impl, "_fmu_mb_guarded", False):
                setattr(cls, name, guard(impl))

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        _drop_repeated_path(kwargs.get("resources"))
        self.log_queue = type(self).__dict__.get("_queue", self.log_queue)
        self._mode = INSTANTIATED
        #: end of the last successful step (fmi2LastSuccessfulTime); the start time before
        self._time = None
        #: the last doStep was discarded because the model could not be advanced from its
        #: state with its inputs (not for a wrong step size or communication point): the
        #: front's fmi2Terminated, until a step succeeds or a state is restored
        self._stuck = False
        self._stop = None             # fmi2SetupExperiment's stop time (None: undefined)

    # ------------------------------------------------------------------ error funnel
    def _refuse(self, message, status=Fmi2Status.error):
        """Log `message` with `status`; the front returns that status for the call."""
        self.log(shorten(message), status)

    @classmethod
    def _class_refuse(cls, message):
        cls.__dict__.get("_queue", []).append(
            LogMsg(Fmi2Status.error, "logStatusError", shorten(message)))

    def _where(self):
        return f"{self.modelName} ({self.instance_name})"

    # ------------------------------------------------------------------ per-variable rules
    def _check_refs(self, vrs, kind, setting, values=None):
        """None when every reference may be read (or set to its value) now; else the reason."""
        cls = _TYPES[kind][0]
        for k, vr in enumerate(vrs):
            var = self.vars.get(vr) if isinstance(vr, int) else None
            if var is None:
                return (f"value reference {_vr(vr)} does not exist (this FMU has 0 to "
                        f"{len(self.vars) - 1})")
            if not isinstance(var, cls):
                return (f"value reference {_vr(vr)} ('{var.name}') is a {_type_name(var)}, not "
                        f"a {cls.__name__}")
            if not setting:
                continue
            causality = var.causality
            if causality == Fmi2Causality.parameter:
                if var.variability != Fmi2Variability.tunable and \
                        self._mode not in (INSTANTIATED, INITIALIZATION):
                    return (f"'{var.name}' is a fixed parameter: it can be set only before "
                            f"fmi2ExitInitializationMode (now: {self._mode}); nothing was set")
            elif causality == Fmi2Causality.input:
                if self._mode == TERMINATED:
                    return f"'{var.name}' cannot be set after fmi2Terminate; nothing was set"
            else:
                return (f"'{var.name}' has causality {causality.name}: it cannot be set "
                        f"(only parameters and inputs can); nothing was set")
            if var.setter is None:
                return f"'{var.name}' cannot be set; nothing was set"
            why = self._refuse_value(var, values[k])
            if why:
                return f"{why}; nothing was set"
        return None

    def _refuse_value(self, var, value):
        """Reason why `value` cannot be set on `var` now, or None (subclass hook)."""
        return None

    # ------------------------------------------------------------------ state bytes
    @classmethod
    def _fmu_state_to_bytes(cls, state):
        """Serialized state: a header line `fmu_mb-state FORMAT LENGTH SHA256` and the state as
        JSON (LENGTH bytes; the state names the FMU by its tag); SHA256 is the hex digest of
        the header up to it and the JSON, so that any changed byte is found."""
        payload = json.dumps(state, allow_nan=True).encode("utf-8")
        head = f"fmu_mb-state {STATE_FORMAT} {len(payload)} ".encode("ascii")
        return head + hashlib.sha256(head + payload).hexdigest().encode("ascii") + b"\n" + payload

    @classmethod
    def _fmu_state_from_bytes(cls, data):
        what = f"{cls.__name__}: fmi2DeSerializeFMUstate"
        data = bytes(data)
        nothing = "; nothing was changed"
        end = data.find(b"\n", 0, 120)
        match = _STATE_HEADER.fullmatch(data[:end + 1]) if end > 0 else None
        if match is None:
            return cls._invalid(f"{what}: the {len(data)} bytes are not a serialized state of "
                                f"an fmu_mb FMU (expected the header 'fmu_mb-state FORMAT "
                                f"LENGTH SHA256'){nothing}")
        version, length, digest = match.groups()
        if version != str(STATE_FORMAT).encode():
            return cls._invalid(f"{what}: the state has format {version.decode()}; this FMU "
                                f"reads format {STATE_FORMAT}{nothing}")
        payload = data[end + 1:]
        if length != str(len(payload)).encode():
            return cls._invalid(f"{what}: the header announces {length.decode()} bytes of "
                                f"state, {len(payload)} follow (truncated or extended){nothing}")
        if hashlib.sha256(data[:match.start(3)] + payload).hexdigest().encode() != digest:
            return cls._invalid(f"{what}: the state's checksum (SHA-256) does not match its "
                                f"bytes: the state was damaged{nothing}")
        try:
            blob = json.loads(payload.decode("utf-8"), object_pairs_hook=_unique_keys)
        except (UnicodeDecodeError, ValueError) as exc:
            return cls._invalid(f"{what}: the state is not valid JSON ({type(exc).__name__}: "
                                f"{exc}){nothing}")
        why = _wrapper_mismatch(blob, cls.state_tag)
        if why:
            return cls._invalid(f"{what}: {why}{nothing}")
        return blob

    @classmethod
    def _invalid(cls, message):
        cls._class_refuse(message)
        return {INVALID: message}


# ---------------------------------------------------------------------- the guards
def _guard_mode(name, allowed, after=None):
    """Run the hook only in `allowed` modes; move to `after` when it succeeds."""
    def wrap(impl):
        @functools.wraps(impl)
        def call(self, *args):
            if self._mode not in allowed:
                self._refuse(f"{self._where()}: {name} is not allowed in {self._mode}; "
                             f"nothing was changed")
                return None
            try:
                impl(self, *args)
            except Exception as exc:    # an invalid parameter, for instance
                self._refuse(f"{self._where()}: {name} failed: {exc}")
                return None
            if after is not None:
                self._mode = after
            if after == STEPPING:
                if self._time is None:                     # no fmi2SetupExperiment
                    start = getattr(getattr(self, "default_experiment", None), "start_time",
                                    None)
                    self._time = float(start) if isinstance(start, (int, float)) else 0.0
                # for the front, before the status queries it allows from now on; logged in a
                # call (pythonfmu passes queued messages on at the end of each call, and would
                # crash passing on one still queued when an instance is freed)
                self.log_queue.append(LogMsg(Fmi2Status.ok, GUARD_CATEGORY, "fmu_mb adapter: "
                                             "FMI 2.0 statuses through the error funnel"))
            return None
        call._fmu_mb_guarded = True
        return call
    return wrap


def _guard_setup(impl):
    @functools.wraps(impl)
    def call(self, start_time, stop_time, tolerance):
        if self._mode != INSTANTIATED:
            self._refuse(f"{self._where()}: fmi2SetupExperiment is allowed only before "
                         f"fmi2EnterInitializationMode (now: {self._mode}); nothing was changed")
            return None
        if not math.isfinite(start_time) or (stop_time is not None and not stop_time >= start_time):
            self._refuse(f"{self._where()}: fmi2SetupExperiment with start time {start_time!r} "
                         f"and stop time {stop_time!r}; expected a finite start time and a stop "
                         f"time >= start time; nothing was changed")
            return None
        if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0.0):
            self._refuse(f"{self._where()}: fmi2SetupExperiment with tolerance {tolerance!r}; "
                         f"expected a finite tolerance > 0 (or toleranceDefined = false); "
                         f"nothing was changed")
            return None
        try:
            impl(self, start_time, stop_time, tolerance)
        except Exception as exc:
            self._refuse(f"{self._where()}: fmi2SetupExperiment failed: {exc}")
            return None
        self._time = float(start_time)
        self._stop = None if stop_time is None else float(stop_time)
        return None
    call._fmu_mb_guarded = True
    return call


def _guard_step(impl):
    @functools.wraps(impl)
    def call(self, current_time, step_size):
        if self._mode != STEPPING:
            self._refuse(f"{self._where()}: fmi2DoStep is not allowed in {self._mode}; "
                         f"nothing was changed")
            return True          # the front already refused it; keep pythonfmu's flag clear
        t = self._time
        stop = getattr(self, "_stop", None)
        if stop is not None and current_time + step_size > stop + 1e-9 * max(1.0, abs(stop)):
            # FMI 2.0 (fmi2SetupExperiment): computing past a defined stop time is an error
            self._stuck = False
            self._refuse(f"{self._where()}: doStep from t = {current_time!r} by "
                         f"{step_size!r} would end at {current_time + step_size!r}, after the "
                         f"stop time {stop!r} defined at fmi2SetupExperiment; the step was not "
                         f"taken (the state is kept)")
            return True          # the front returns the fmi2Error logged here
        misuse = not (math.isfinite(step_size) and step_size > 0.0
                      and math.isfinite(current_time)
                      and abs(current_time + step_size) <= TIME_BOUND) or \
            (t is not None and abs(current_time - t) > 1e-9 * max(1.0, abs(t)))
        self._stuck = False
        try:
            queued = len(self.log_queue)
            done = bool(impl(self, current_time, step_size))
            if done:
                self._time = current_time + step_size
            else:
                self._stuck = not misuse     # the master's call was wrong: it can fix it
                if self._stuck:
                    _fail_in_model(self.log_queue, queued)
            return done
        except Exception as exc:  # an internal error must not kill the host
            self._stuck = True
            self._refuse(f"{self._where()}: internal error in the step at t = "
                         f"{current_time!r}: {type(exc).__name__}: {exc}; the step was "
                         f"discarded", Fmi2Status.discard)
            return False
    call._fmu_mb_guarded = True
    return call


def _fail_in_model(queue, start):
    """A step that failed in the model (the same call would fail again) returns fmi2Error, as
    the native FMI 2.0 FMU's does, so that masters stop with an error instead of retrying the
    step or returning a short result: the step's discard messages (queue[start:]) become
    errors. The state from before the call is kept and fmi2Terminated is true."""
    for i in range(start, len(queue)):
        m = queue[i]
        if m.status == Fmi2Status.discard:
            queue[i] = LogMsg(Fmi2Status.error, "logStatusError",
                              m.msg.replace(" and was discarded", "").replace("was discarded", "failed")
                              +
                              " (the state from before the call is kept; fmi2Terminated is "
                              "true)")


def _guard_get(kind):
    cls, conv, placeholder = _TYPES[kind]

    def wrap(impl):
        @functools.wraps(impl)
        def call(self, vrs):
            if kind == "real" and len(vrs) == 1 and _vr(vrs[0]) == TIME_VR:
                t = self._time                   # the front's fmi2LastSuccessfulTime
                return [math.nan if t is None else t]
            if kind == "real" and len(vrs) == 1 and _vr(vrs[0]) == TERMINATED_VR:
                return [1.0 if self._stuck else 0.0]     # the front's fmi2Terminated
            why = self._check_refs(vrs, kind, setting=False)
            if why is None:
                try:
                    return impl(self, vrs)
                except Exception as exc:
                    why = f"{type(exc).__name__}: {exc}"
            self._refuse(f"{self._where()}: fmi2Get{cls.__name__}: {why}")
            return [placeholder] * len(vrs)
        call._fmu_mb_guarded = True
        return call
    return wrap


def _guard_set(kind):
    cls, conv, _ = _TYPES[kind]

    def wrap(impl):
        @functools.wraps(impl)
        def call(self, vrs, values):
            why = self._check_refs(vrs, kind, setting=True, values=values)
            if why is None:
                try:
                    impl(self, vrs, values)
                    return None
                except Exception as exc:
                    why = f"{type(exc).__name__}: {exc}"
            self._refuse(f"{self._where()}: fmi2Set{cls.__name__}: {why}")
            return None
        call._fmu_mb_guarded = True
        return call
    return wrap


def _guard_get_state(impl):
    @functools.wraps(impl)
    def call(self):
        try:
            return {"fmu_mb_state": self.state_tag,
                    "time": float(math.nan if self._time is None else self._time).hex(),
                    "data": impl(self)}
        except Exception as exc:
            message = (f"{self._where()}: fmi2GetFMUstate failed: {type(exc).__name__}: {exc}")
            self._refuse(message)
            return {INVALID: message}
    call._fmu_mb_guarded = True
    return call


def _guard_set_state(impl):
    @functools.wraps(impl)
    def call(self, blob):
        where = f"{self._where()}: fmi2SetFMUstate"
        why = _wrapper_mismatch(blob, self.state_tag)
        if why:
            self._refuse(f"{where}: not a state of this FMU: {why}; nothing was changed")
            return None
        try:
            before = type(self)._get_fmu_state.__wrapped__(self)
        except Exception:
            before = None
        why = _shape_mismatch(blob["data"], before, "the state") if before is not None else None
        if why:
            self._refuse(f"{where}: the state is not shaped like this FMU's states: {why}; "
                         f"nothing was changed")
            return None
        try:
            impl(self, blob["data"])
            self._time = None if blob["time"] == "nan" else float.fromhex(blob["time"])
            self._stuck = False
        except Exception as exc:
            if before is not None:
                try:
                    impl(self, before)       # undo a partial restore
                except Exception:
                    pass
            self._refuse(f"{where}: the state cannot be restored ({type(exc).__name__}: "
                         f"{exc}); the instance was left as it was")
        return None
    call._fmu_mb_guarded = True
    return call


_GUARDS = {
    "setup_experiment": _guard_setup,
    "enter_initialization_mode": _guard_mode("fmi2EnterInitializationMode", (INSTANTIATED,),
                                             INITIALIZATION),
    "exit_initialization_mode": _guard_mode("fmi2ExitInitializationMode", (INITIALIZATION,),
                                            STEPPING),
    "terminate": _guard_mode("fmi2Terminate", (STEPPING,), TERMINATED),
    "do_step": _guard_step,
    "get_real": _guard_get("real"),
    "get_integer": _guard_get("integer"),
    "get_boolean": _guard_get("boolean"),
    "get_string": _guard_get("string"),
    "set_real": _guard_set("real"),
    "set_integer": _guard_set("integer"),
    "set_boolean": _guard_set("boolean"),
    "set_string": _guard_set("string"),
    "_get_fmu_state": _guard_get_state,
    "_set_fmu_state": _guard_set_state,
}

# GuardedSlave's own entry points: pythonfmu's implementations behind the same guards
for _name, _guard in _GUARDS.items():
    setattr(GuardedSlave, _name, _guard(getattr(Fmi2Slave, _name)))
