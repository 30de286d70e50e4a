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
- an FMU state holds a tag naming the FMU (`state_tag`); bytes that are not a state of this
  FMU (corrupt, truncated, foreign) deserialise to a marker that the front frees while
  returning fmi2Error; a set state that fails is undone;
- the mode (instantiated, initialization, stepping, terminated) follows the FMI 2.0 state
  machine, for the per-variable rules (the front checks the per-function rules).

Messages go through pythonfmu's log queue (one queue per class, so that the class methods
that (de)serialise states can log too; every call empties it before returning). The front
passes each message whose status is not fmi2OK to the host's logger even when logging is off.
Without the front (a plain pythonfmu binary) the same adapter still never raises, but
pythonfmu then reports fmi2OK for a refused call.
"""
import functools
import json
import math

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


def _type_name(var):
    return type(var).__name__


class GuardedSlave(Fmi2Slave):
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
        self.log_queue = type(self).__dict__.get("_queue", self.log_queue)
        self._mode = INSTANTIATED

    # ------------------------------------------------------------------ error funnel
    def _refuse(self, message, status=Fmi2Status.error):
        """Log `message` with `status`; the front returns that status for the call."""
        self.log(message, status)

    @classmethod
    def _class_refuse(cls, message):
        cls.__dict__.get("_queue", []).append(
            LogMsg(Fmi2Status.error, "logStatusError", message))

    def _where(self):
        return f"{self.modelName} ({self.instance_name})"

    # ------------------------------------------------------------------ per-variable rules
    def _check_refs(self, vrs, kind, setting, values=None):
        """None when every reference may be read (or set to its value) now; else the reason."""
        cls = _TYPES[kind][0]
        for k, vr in enumerate(vrs):
            var = self.vars.get(vr) if isinstance(vr, int) else None
            if var is None:
                return (f"value reference {vr} does not exist (this FMU has 0 to "
                        f"{len(self.vars) - 1})")
            if not isinstance(var, cls):
                return (f"value reference {vr} ('{var.name}') is a {_type_name(var)}, not a "
                        f"{cls.__name__}")
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
        return json.dumps(state, allow_nan=True).encode("utf-8")

    @classmethod
    def _fmu_state_from_bytes(cls, data):
        what = f"{cls.__name__}: fmi2DeSerializeFMUstate"
        try:
            blob = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return cls._invalid(f"{what}: the {len(data)} bytes are not a serialized state of "
                                f"this FMU ({type(exc).__name__}: {exc}); nothing was changed")
        if not (isinstance(blob, dict) and blob.get("fmu_mb_state") == cls.state_tag
                and "data" in blob):
            return cls._invalid(f"{what}: the bytes are not a state of this FMU (expected a "
                                f"state tagged {cls.state_tag!r}); nothing was changed")
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
        try:
            impl(self, start_time, stop_time, tolerance)
        except Exception as exc:
            self._refuse(f"{self._where()}: fmi2SetupExperiment failed: {exc}")
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
        try:
            return bool(impl(self, current_time, step_size))
        except Exception as exc:  # an internal error must not kill the host
            self._refuse(f"{self._where()}: internal error in the step at t = "
                         f"{current_time!r}: {type(exc).__name__}: {exc}; the step was "
                         f"discarded", Fmi2Status.discard)
            return False
    call._fmu_mb_guarded = True
    return call


def _guard_get(kind):
    cls, conv, placeholder = _TYPES[kind]

    def wrap(impl):
        @functools.wraps(impl)
        def call(self, vrs):
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
            return {"fmu_mb_state": self.state_tag, "data": impl(self)}
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
        if not (isinstance(blob, dict) and blob.get("fmu_mb_state") == self.state_tag
                and "data" in blob):
            self._refuse(f"{where}: not a state of this FMU (expected a state tagged "
                         f"{self.state_tag!r}); nothing was changed")
            return None
        try:
            before = type(self)._get_fmu_state.__wrapped__(self)
        except Exception:
            before = None
        try:
            impl(self, blob["data"])
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
