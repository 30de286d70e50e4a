"""Discrete PID controllers as FMI 2.0 co-simulation FMUs (ControllerSlave).

A controller definition file (like a model file) defines `build()` returning a
`ControllerSpec`, made with `pid(...)` for one loop or `controller(name, channels)` for the
sum of several PID channels (e.g. cart position + load sway for the crane):

    from fmu_mb.fmi.controller import pid
    def build():
        return pid("speed_pid", kp=20.0, ki=40.0, setpoint=15.0, u_min=-50.0, u_max=50.0)

`fmu-mb build FILE.py -o DIR` (or fmu_build.build_controller_fmu) makes DIR/<name>.fmu.

Discrete law, sample time h = the communication step of each doStep(t, h); y_k is the
measurement input at t (the value set before the call), the output u is computed in the
step and published at its end (one sample of delay, as a sampled controller in a Jacobi
master). Per channel c (no prefix for a single unnamed channel):

    e   = r - y_k
    D_k = Tf/(Tf + h) * D_{k-1} - kd/(Tf + h) * (y_k - y_{k-1})   (derivative on the
          measurement, first-order filter, backward Euler; y_{-1} = y_0 so D_0 = 0)
    v   = sum_c (kp e + I + D + u_ff(t)) ;  u = min(max(v, u_min), u_max)
    I  += ki h e + kaw h (u - v)            anti_windup="back_calculation"
    I  += ki h e   unless saturated and ki e drives v further out     anti_windup="clamp"
    I  += ki h e                            anti_windup="none"

A channel may follow a trajectory: r(t) = setpoint + setpoint_table interpolated at the step's
start t, and add a feed-forward u_ff(t) from feedforward_table (both ((t, value), ...),
piecewise linear, held at the ends; fixed at build time).

Variables: parameters `<c>.kp`, `<c>.ki`, `<c>.kd`, `<c>.Tf`, `<c>.kaw`, `<c>.setpoint`
(or an input `<c>.setpoint` when setpoint_input=True), `u_min`, `u_max`; inputs
`<c>.measurement`; output `u`. A non-finite input or step logs the reason and returns
fmi2Discard with the state unchanged. The FMU state holds the integrators, previous
measurements, filter states, output, time and parameters (a round trip is bit-identical).
"""
import bisect
import math
from dataclasses import dataclass, field

from .guard import GuardedSlave
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Real

from ..units import describe

ANTI_WINDUP = ("back_calculation", "clamp", "none")
NO_LIMIT = 1e300     # an infinite output limit is stored as +-NO_LIMIT


@dataclass
class PidChannel:
    name: str = ""
    kp: float = 0.0
    ki: float = 0.0
    kd: float = 0.0
    Tf: float = 0.01
    kaw: float = 1.0
    setpoint: float = 0.0
    setpoint_input: bool = False
    measurement_unit: str = "1"
    description: str = ""
    setpoint_table: tuple = ()      # ((t, r), ...): r(t) = setpoint + piecewise-linear table
    feedforward_table: tuple = ()   # ((t, u_ff), ...): added to the channel's output

    def __post_init__(self):
        for attr in ("setpoint_table", "feedforward_table"):
            table = tuple((float(t), float(r)) for t, r in getattr(self, attr))
            ts = [t for t, _ in table]
            if any(not (math.isfinite(t) and math.isfinite(r)) for t, r in table) or \
                    any(b <= a for a, b in zip(ts, ts[1:])):
                raise ValueError(f"channel {self.name!r}: {attr} must hold finite (t, value) "
                                 f"pairs with increasing t")
            setattr(self, attr, table)

    def reference(self, t):
        """The set-point r at time t [s]: setpoint plus setpoint_table linearly interpolated
        (held at its end values outside it)."""
        return self.setpoint + _interpolate(self.setpoint_table, t)

    def feedforward(self, t):
        """The feed-forward term at time t [s] (feedforward_table interpolated; 0 without)."""
        return _interpolate(self.feedforward_table, t)

    def var(self, what):
        return f"{self.name}.{what}" if self.name else what


@dataclass
class ControllerSpec:
    name: str
    channels: list = field(default_factory=list)
    u_min: float = -math.inf
    u_max: float = math.inf
    anti_windup: str = "back_calculation"
    output_unit: str = "1"
    description: str = ""
    experiment: dict = field(default_factory=dict)

    def __post_init__(self):
        # no limit = +-1e300: FMI start values must be finite xs:double ("inf" is refused)
        self.u_min, self.u_max = max(float(self.u_min), -NO_LIMIT), \
            min(float(self.u_max), NO_LIMIT)
        if not self.name.isidentifier():
            raise ValueError(f"controller name {self.name!r} must be a Python identifier")
        if self.anti_windup not in ANTI_WINDUP:
            raise ValueError(f"anti_windup must be one of {ANTI_WINDUP}, "
                             f"received {self.anti_windup!r}")
        if not self.u_min <= self.u_max:
            raise ValueError(f"u_min = {self.u_min} > u_max = {self.u_max}")
        names = [c.name for c in self.channels]
        if not names or len(set(names)) != len(names) or ("" in names and len(names) > 1):
            raise ValueError(f"channel names {names} must be unique (one unnamed channel "
                             "at most, and only when it is the only one)")

    def to_dict(self):
        return {"name": self.name, "u_min": self.u_min, "u_max": self.u_max,
                "anti_windup": self.anti_windup, "output_unit": self.output_unit,
                "description": self.description, "experiment": dict(self.experiment),
                "channels": [vars(c).copy() for c in self.channels]}

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["channels"] = [PidChannel(**c) for c in d["channels"]]
        return cls(**d)

    def units(self):
        u = {"u": self.output_unit, "u_min": self.output_unit, "u_max": self.output_unit}
        for c in self.channels:
            mu = c.measurement_unit
            u.update({c.var("measurement"): mu, c.var("setpoint"): mu,
                      c.var("Tf"): "s", c.var("kaw"): "1/s"})
        return {k: v for k, v in u.items() if v in _KNOWN_UNITS}


def _interpolate(table, t):
    """Piecewise-linear table ((t, v), ...) at t, held at its ends; 0.0 for no table."""
    if not table:
        return 0.0
    ts, vs = zip(*table)
    k = bisect.bisect_right(ts, t)
    if k == 0:
        return vs[0]
    if k == len(ts):
        return vs[-1]
    s = (t - ts[k - 1]) / (ts[k] - ts[k - 1])
    return vs[k - 1] + s * (vs[k] - vs[k - 1])


def _known_units():
    from ..units import UNITS
    return set(UNITS)


_KNOWN_UNITS = _known_units()


def pid(name, kp=0.0, ki=0.0, kd=0.0, setpoint=0.0, u_min=-math.inf, u_max=math.inf,
        anti_windup="back_calculation", kaw=1.0, Tf=0.01, setpoint_input=False,
        measurement_unit="1", output_unit="1", description="", experiment=None,
        setpoint_table=(), feedforward_table=()):
    """A single-loop PID controller spec (input `measurement`, output `u`).

    setpoint_table : ((t, r), ...) a set-point that changes in time: r(t) = setpoint + the
        table linearly interpolated at the start t of each step (a trajectory to follow).
    feedforward_table : ((t, u_ff), ...) a known part of the output (e.g. the force the
        trajectory needs, from inverse dynamics) added to the PID law before the clamp."""
    return ControllerSpec(name, [PidChannel("", kp, ki, kd, Tf, kaw, setpoint, setpoint_input,
                                            measurement_unit,
                                            setpoint_table=setpoint_table,
                                            feedforward_table=feedforward_table)],
                          u_min, u_max, anti_windup, output_unit, description,
                          dict(experiment or {}))


def controller(name, channels, u_min=-math.inf, u_max=math.inf,
               anti_windup="back_calculation", output_unit="1", description="",
               experiment=None):
    """A controller whose output is the clamped sum of named PID channels."""
    return ControllerSpec(name, list(channels), u_min, u_max, anti_windup, output_unit,
                          description, dict(experiment or {}))


def channel(name, **kw):
    """A named PID channel for controller(); keywords as PidChannel."""
    return PidChannel(name, **kw)


# ---------------------------------------------------------------------- the discrete law
class PidState:
    """Integrators I, previous measurements, filter states D, last output, time."""

    def __init__(self, n):
        self.I = [0.0] * n
        self.y_prev = [None] * n
        self.D = [0.0] * n
        self.u = 0.0
        self.t = 0.0

    def to_dict(self):
        hx = lambda v: None if v is None else float(v).hex()  # noqa: E731
        return {"I": [hx(v) for v in self.I], "y_prev": [hx(v) for v in self.y_prev],
                "D": [hx(v) for v in self.D], "u": hx(self.u), "t": hx(self.t)}

    @classmethod
    def from_dict(cls, d):
        uh = lambda v: None if v is None else float.fromhex(v)  # noqa: E731
        s = cls(len(d["I"]))
        s.I = [uh(v) for v in d["I"]]
        s.y_prev = [uh(v) for v in d["y_prev"]]
        s.D = [uh(v) for v in d["D"]]
        s.u, s.t = uh(d["u"]), uh(d["t"])
        return s


def pid_step(spec, state, y, r, h, ff=None):
    """One sample of the discrete law: returns the new PidState (state is not changed).

    y, r : per-channel measurements and set-points; h : sample time (> 0); ff : per-channel
    feed-forward terms added to v (None: none).
    """
    new = PidState(len(spec.channels))
    e, v = [], float(sum(ff)) if ff else 0.0
    for i, c in enumerate(spec.channels):
        yp = y[i] if state.y_prev[i] is None else state.y_prev[i]
        D = c.Tf / (c.Tf + h) * state.D[i] - c.kd / (c.Tf + h) * (y[i] - yp)
        e.append(r[i] - y[i])
        new.D[i] = D
        new.y_prev[i] = y[i]
        v += c.kp * e[i] + state.I[i] + D
    u = min(max(v, spec.u_min), spec.u_max)
    for i, c in enumerate(spec.channels):
        dI = c.ki * h * e[i]
        if spec.anti_windup == "back_calculation":
            dI += c.kaw * h * (u - v)
        elif spec.anti_windup == "clamp" and u != v and dI * (v - u) > 0.0:
            dI = 0.0
        new.I[i] = state.I[i] + dI
    new.u = u
    new.t = state.t + h
    return new


# ---------------------------------------------------------------------- the FMU adapter
class ControllerSlave(GuardedSlave):
    """pythonfmu adapter; a generated subclass sets `spec_dict` (ControllerSpec.to_dict()).

    Statuses as MultibodySlave's (GuardedSlave, fmi/guard.py): an invalid parameter fails
    fmi2ExitInitializationMode with fmi2Error and a logged message; misuse returns fmi2Error
    and changes nothing; a non-finite input or a wrong step returns fmi2Discard."""

    spec_dict = {}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.spec = ControllerSpec.from_dict(self.spec_dict)
        s = self.spec
        self.description = (s.description or f"PID controller {s.name}").strip()
        exp = s.experiment
        self.default_experiment = DefaultExperiment(
            start_time=exp.get("start_time", 0.0), stop_time=exp.get("stop_time", 10.0),
            step_size=exp.get("step_size", 0.01))
        self._state = PidState(len(s.channels))
        self._y = [0.0] * len(s.channels)
        self._start = None
        self._register()

    def _param(self, name, obj, attr, unit, text, causality=Fmi2Causality.parameter):
        fixed = causality == Fmi2Causality.parameter
        self.register_variable(Real(
            name, causality=causality,
            variability=Fmi2Variability.fixed if fixed else Fmi2Variability.continuous,
            start=getattr(obj, attr), description=describe(text, unit),
            getter=lambda: getattr(obj, attr),
            setter=lambda v: setattr(obj, attr, float(v))), nested=False)

    def _register(self):
        s, ou = self.spec, self.spec.output_unit
        for i, c in enumerate(s.channels):
            mu = c.measurement_unit
            self.register_variable(Real(
                c.var("measurement"), causality=Fmi2Causality.input,
                variability=Fmi2Variability.continuous, start=0.0,
                description=describe("measured value y (sampled at each step)", mu),
                getter=lambda i=i: self._y[i],
                setter=lambda v, i=i: self._y.__setitem__(i, float(v))), nested=False)
            self._param(c.var("setpoint"), c, "setpoint", mu, "set-point r",
                        Fmi2Causality.input if c.setpoint_input else Fmi2Causality.parameter)
            self._param(c.var("kp"), c, "kp", f"({ou})/({mu})", "proportional gain")
            self._param(c.var("ki"), c, "ki", f"({ou})/({mu}.s)", "integral gain")
            self._param(c.var("kd"), c, "kd", f"({ou}).s/({mu})", "derivative gain")
            self._param(c.var("Tf"), c, "Tf", "s", "derivative filter time constant")
            self._param(c.var("kaw"), c, "kaw", "1/s", "anti-windup back-calculation gain")
        self._param("u_min", s, "u_min", ou, "lower output limit")
        self._param("u_max", s, "u_max", ou, "upper output limit")
        self.register_variable(Real(
            "u", causality=Fmi2Causality.output, variability=Fmi2Variability.discrete,
            initial=Fmi2Initial.exact, start=0.0,
            description=describe("controller output (clamped, held over a step)", ou),
            getter=lambda: self._state.u), nested=False)

    def setup_experiment(self, start_time, stop_time, tolerance):
        self._start = float(start_time)
        self._state.t = self._start

    def exit_initialization_mode(self):
        s = self.spec
        bad = [c.var(k) for c in s.channels for k in ("kp", "ki", "kd", "kaw", "setpoint")
               if not math.isfinite(getattr(c, k))]
        bad += [c.var("Tf") for c in s.channels if not (c.Tf >= 0.0 and math.isfinite(c.Tf))]
        if bad or not s.u_min <= s.u_max:
            values = {k: getattr(c, k.split(".")[-1]) for c in s.channels for k in
                      [c.var(x) for x in ("kp", "ki", "kd", "kaw", "setpoint", "Tf")]
                      if k in bad}
            raise ValueError(
                f"{s.name}: invalid parameter(s) {bad or ['u_min > u_max']} "
                f"(received {values or {'u_min': s.u_min, 'u_max': s.u_max}}); expected finite "
                f"gains and set-points, Tf >= 0 and u_min <= u_max")

    def do_step(self, current_time, step_size):
        s = self.spec
        try:
            if not (math.isfinite(step_size) and step_size > 0.0):
                return self._discard(f"{s.name}: doStep with step {step_size!r}; expected a "
                                     "finite step > 0")
            t = self._state.t
            if abs(current_time - t) > 1e-9 * max(1.0, abs(t)):
                return self._discard(f"{s.name}: doStep at t = {current_time!r}, but the FMU "
                                     f"is at t = {t!r}")
            r = [c.reference(current_time) for c in s.channels]
            bad = [c.var("measurement") for c, v in zip(s.channels, self._y)
                   if not math.isfinite(v)]
            bad += [c.var("setpoint") for c, v in zip(s.channels, r) if not math.isfinite(v)]
            if bad:
                return self._discard(f"{s.name}: input(s) {bad} are not finite at "
                                     f"t = {current_time!r}; the step was not taken")
            ff = [c.feedforward(current_time) for c in s.channels]
            new = pid_step(s, self._state, self._y, r, step_size, ff)
            new.t = current_time + step_size
            self._state = new
            return True
        except Exception as exc:  # never kill the host
            return self._discard(f"{s.name}: internal error: {type(exc).__name__}: {exc}")

    def _discard(self, message):
        self.log(message, Fmi2Status.discard)
        return False

    def _get_fmu_state(self):
        return {"state": self._state.to_dict(), "y": [float(v).hex() for v in self._y],
                "params": {v.name: float(v.getter()).hex() for v in self.vars.values()
                           if v.causality in (Fmi2Causality.parameter, Fmi2Causality.input)
                           and v.setter is not None},
                "start": self._start}

    def _set_fmu_state(self, blob):
        by_name = {v.name: v for v in self.vars.values()}
        for k, v in blob["params"].items():
            by_name[k].setter(float.fromhex(v))
        self._state = PidState.from_dict(blob["state"])
        self._y = [float.fromhex(v) for v in blob["y"]]
        self._start = blob["start"]
