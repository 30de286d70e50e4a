"""MultibodySlave: the generic pythonfmu 0.7.0 co-simulation adapter over Model/State/advance.

A generated subclass per model (see fmu_build.py) carries the model file's source text, so the
FMU needs no installed fmu_mb: the package is bundled in resources/ and the model is built
from the embedded source.

Variables (names = simulate() column names, "structured" convention, units in the
description and as FMI unit attributes):
- parameters: every model parameter (Real, Integer or String; structural ones are fixed at
  build time) and the solver settings solver.method, solver.formulation,
  solver.stabilization, solver.rtol, solver.atol, solver.step;
- inputs: every model input h, start 0, held constant over a communication step;
- outputs: every output of outputs.output_spec (initial="exact").

Behaviour importers rely on (statuses through GuardedSlave, fmi/guard.py, and the FMI front):
- parameters are validated when initialisation ends; an invalid one fails
  fmi2ExitInitializationMode with fmi2Error and a logged message naming the parameter, the
  value received and the valid range (the instance stays in initialisation mode); a
  structural parameter set to another value than the FMU was built with is refused at once;
- doStep never raises: a non-finite input, a negative step, a communication point that is not
  the FMU's time, or a step the solver cannot complete (lock-up, NaN) logs the reason and
  returns fmi2Discard; so does a step that needs more than `solver.max_steps` integrator
  steps (a huge step, a huge input) or whose state leaves |q|, |qd| <= STATE_BOUND; the state
  from before the call is kept, so the master may retry or restore a saved FMU state;
- the FMU state (get/set, serialise) holds the whole solver state (time, coordinates, rates,
  step-size hint, contact data), the inputs, parameters and settings: a round trip continues
  bit-identically.
"""
import math
import sys
import types

import numpy as np
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Boolean, Integer, Real, String

from ..errors import FmuMbError
from ..dynamics.formulations import CHOICES, describe_choice
from ..dynamics.implicit import DAE_FORMS
from ..dynamics.integrate import (METHODS, STABILIZATIONS, Settings, State, check_settings,
                                  initial_state, stepper)
from ..dynamics.outputs import Outputs, _direct_coordinates, output_spec
from ..units import describe
from .guard import INITIALIZATION, INSTANTIATED, GuardedSlave

#: solver settings exposed as FMU parameters: name -> (Settings field, default, unit, text)
SOLVER_PARAMETERS = {
    "solver.method": ("method", "dop853", "1", f"integration method, one of {list(METHODS)}"),
    "solver.formulation": ("formulation", "auto", "1",
                           f"formulation, one of {list(CHOICES)} (auto: the fastest that "
                           f"runs the model, logged at initialisation)"),
    "solver.stabilization": ("stabilization", "projection", "1",
                             f"drift control, one of {list(STABILIZATIONS)}"),
    "solver.rtol": ("rtol", 1e-9, "1", "relative tolerance of the adaptive methods"),
    "solver.atol": ("atol", 1e-11, "1", "absolute tolerance of the adaptive methods"),
    "solver.step": ("step", 1e-3, "s", "step of the fixed-step methods rk4, euler, "
                    "generalized_alpha, trapezoidal"),
    "solver.rho_inf": ("rho_inf", 0.9, "1", "spectral radius of generalized_alpha at large "
                       "steps, in [0, 1]"),
    "solver.newton_tol": ("newton_tol", 1e-10, "1", "Newton tolerance of the implicit methods"),
    "solver.dae_form": ("dae_form", "auto", "1", f"constraint rows of the implicit methods, "
                        f"one of {list(DAE_FORMS)}"),
    "solver.max_steps": ("max_steps", 2000, "1",
                         "most integrator steps per doStep (0: no limit); beyond it the step "
                         "is discarded, so that every doStep returns in bounded time"),
}

#: valid ranges [min, max] of the numeric solver settings (also in modelDescription.xml)
SOLVER_LIMITS = {
    "solver.rtol": (1e-15, 0.1),
    "solver.atol": (1e-30, 1.0),
    "solver.step": (1e-9, 1.0),
    "solver.max_steps": (0, 10**9),
    "solver.rho_inf": (0.0, 1.0),
    "solver.newton_tol": (1e-16, 1e-2),
}

#: a doStep whose result has |q| or |qd| above this is discarded (a state running away)
STATE_BOUND = 1e12


def hold_globals(namespace):
    """Keep one more reference to a generated wrapper module's globals.

    pythonfmu 0.7.0's fmi2Instantiate (findClass) re-executes the wrapper script in the
    module's globals and then releases a *borrowed* reference to that dict. Once the dict is
    freed, the next instantiation of the same FMU in the process fails or crashes. The wrapper
    calls this at module level, so every execution of the script (the import and each
    re-execution) adds the reference that findClass takes away. The references live on the
    `sys` module, which outlives any copy of fmu_mb (build.OWN_PACKAGE may re-import it).
    The reference is taken with Py_IncRef when ctypes can reach it (always in practice: numpy
    imports ctypes), so that nothing grows per instantiation; else it is kept in that list.
    """
    try:
        import ctypes
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(namespace))
    except (ImportError, AttributeError, OSError):
        sys.__dict__.setdefault("_fmu_mb_keep_alive", []).append(namespace)


def module_from_source(name, filename, source):
    """Execute a model file's source as module `name` (cached in sys.modules)."""
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)
        sys.modules[name] = module
    return module


def _state_size(state):
    """max(|q|, |qd|), NaN when any entry is NaN: one reduction over the stepper's single
    (q, qd) array when the state holds views of one (integrate.stepper), else over both."""
    y = state.q.base
    if y is None or y is not state.qd.base or y.size != state.q.size + state.qd.size:
        y = np.concatenate([state.q, state.qd])
    return np.abs(y).max() if y.size else 0.0      # ndarray.max: NaN propagates


class MultibodySlave(GuardedSlave):
    """Co-simulation adapter; a generated subclass sets the class attributes below."""

    model_module = ""         # unique module name for the model source
    model_filename = ""       # file name of the model (also bundled in resources/)
    model_source = ""         # text of the model file
    build_overrides = {}      # structural parameter values fixed at build time
    experiment = {}           # default experiment: start_time, stop_time, step_size

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.state_tag = cls.model_module       # unique per model source, overrides, package

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._module = module_from_source(self.model_module, self.model_filename,
                                          self.model_source)
        self._model = self._module.build(**self.build_overrides)
        self._pending = {p.name: p.value for p in self._model.parameters}
        self._solver = {k: v[1] for k, v in SOLVER_PARAMETERS.items()}
        self._settings = Settings()
        self._inputs = np.zeros(len(self._model.inputs))
        self._state = initial_state(self._model, self._settings)
        self._out = None
        self._step = None         # integrate.stepper, made when first needed
        self._nonfinite = set()   # indices of inputs set to NaN or infinity
        self._direct = {}         # outputs that are q or qd entries (set by _configure)
        self.description = (self._model.description or self._model.name).strip()
        exp = dict(self.experiment)
        self.default_experiment = DefaultExperiment(
            start_time=exp.get("start_time", 0.0), stop_time=exp.get("stop_time", 2.0),
            step_size=exp.get("step_size", 0.01))
        self._structural = {p.name: p for p in self._model.parameters if p.structural}
        self._register()
        self._real_getters = {v.value_reference: v.getter for v in self.vars.values()
                              if isinstance(v, Real)}

    # ------------------------------------------------------------------ variables
    def _register(self):
        m = self._model
        for p in m.parameters:
            self._register_parameter(p.name, p.value, p.unit, p.description, p.structural,
                                     self._pending)
        for name, (_, default, unit, text) in SOLVER_PARAMETERS.items():
            self._register_parameter(name, default, unit, text, False, self._solver)
        for k, inp in enumerate(m.inputs):
            self.register_variable(Real(
                inp.name, start=0.0, causality=Fmi2Causality.input,
                variability=Fmi2Variability.continuous,
                description=describe(inp.description + " (held over a step)", inp.unit),
                getter=(lambda k=k: float(self._inputs[k])),
                setter=(lambda v, k=k: self._set_input(k, v))), nested=False)
        for i, var in enumerate(output_spec(m)):
            cls, conv = {"real": (Real, float), "integer": (Integer, int),
                         "boolean": (Boolean, bool)}[var.kind]
            extra = {} if var.kind == "real" else {"variability": Fmi2Variability.discrete}
            self.register_variable(cls(
                var.name, causality=Fmi2Causality.output, initial=Fmi2Initial.exact,
                description=describe(var.description, var.unit),
                getter=(lambda i=i, conv=conv: conv(self._output(i))),
                **({"variability": Fmi2Variability.continuous} if not extra else extra)),
                nested=False)

    def _register_parameter(self, name, value, unit, text, structural, store):
        if isinstance(value, str):
            cls = String
        elif isinstance(value, int):
            cls = Integer
        else:
            cls = Real
        note = (f" (structural: fixed when the FMU was built; to change it, rebuild with "
                f"fmu-mb build MODEL.py --set {name}=VALUE)" if structural else "")
        self.register_variable(cls(
            name, causality=Fmi2Causality.parameter, variability=Fmi2Variability.fixed,
            description=describe(text + note, unit), getter=(lambda: store[name]),
            setter=(lambda v: store.__setitem__(name, v))), nested=False)

    def _set_input(self, k, value):
        self._inputs[k] = value   # a bad value is reported by do_step (a setter cannot fail)
        if math.isfinite(value):
            self._nonfinite.discard(k)
        else:
            self._nonfinite.add(k)
        self._out = None

    def _output(self, i):
        """Output i; a tree joint's coordinate or rate straight from a joint-coordinate
        state (the same number Outputs gives), anything else through Outputs."""
        hit = self._direct.get(i)
        if hit is not None:
            return (self._state.qd if hit[0] else self._state.q)[hit[1]]
        return self._outputs().value(i)

    def get_real(self, vrs):
        """pythonfmu's get_real without its per-variable type dispatch (one dict lookup per
        reference); a reference that is not a Real goes to pythonfmu's own error."""
        getters = self._real_getters
        try:
            return [float(getters[vr]()) for vr in vrs]
        except KeyError:
            return super().get_real(vrs)

    def _outputs(self):
        if self._out is None:
            self._out = Outputs(self._model, self._state, self._safe_inputs(),
                                self._settings.formulation)
        return self._out

    def _safe_inputs(self):
        u = self._inputs
        return u if np.all(np.isfinite(u)) else np.where(np.isfinite(u), u, 0.0)

    # ------------------------------------------------------------------ life cycle
    def exit_initialization_mode(self):
        try:
            self._configure()
        except (FmuMbError, ValueError, TypeError) as exc:
            # the guard logs it with fmi2Error; the instance stays in initialisation mode
            raise FmuMbError(f"{self._model.name}: invalid parameter: {exc}") from None

    def _refuse_value(self, var, value):
        """A structural parameter cannot change in this FMU: refused when it is set."""
        p = self._structural.get(var.name)
        if p is not None and value != p.value:
            return (f"parameter '{p.name}' is structural (it changes the model's variables); "
                    f"this FMU was built with {p.name} = {p.value!r}, received {value!r}; "
                    f"rebuild it with fmu-mb build MODEL.py --set {p.name}={value}")
        return None

    def _configure(self):
        for p in self._model.parameters:
            if p.structural and self._pending[p.name] != p.value:
                raise FmuMbError(
                    f"parameter '{p.name}' is structural (it changes the model's variables); "
                    f"this FMU was built with {p.name} = {p.value!r}, received "
                    f"{self._pending[p.name]!r}; rebuild it with "
                    f"fmu-mb build MODEL.py --set {p.name}={self._pending[p.name]}")
        for k, (low, high) in SOLVER_LIMITS.items():
            v = self._solver[k]
            if not (isinstance(v, (int, float)) and low <= v <= high):
                raise FmuMbError(f"solver setting '{k}' = {v!r} is outside its valid range "
                                 f"[{low!r}, {high!r}]")
        overrides = {k: v for k, v in self._pending.items()}
        settings = Settings(**{SOLVER_PARAMETERS[k][0]: v for k, v in self._solver.items()})
        same = overrides == {p.name: p.value for p in self._model.parameters}
        model = self._model if same else self._module.build(**overrides)   # built once
        check_settings(model, settings)
        resolved = settings.for_model(model)
        self.log(f"{model.name}: "
                 f"{describe_choice(model, settings.formulation, resolved.formulation)}")
        settings = resolved
        self._model, self._settings = model, settings
        state = initial_state(model, settings)
        t0 = self.default_experiment.start_time if self._start is None else self._start
        self._state = State(float(t0), state.q.copy(), state.qd.copy(), 0.0, state.coords,
                            dict(state.extra))
        self._out = None
        self._step = None
        self._direct = _direct_coordinates(model) if state.coords == "joint" else {}

    _start = None

    def setup_experiment(self, start_time, stop_time, tolerance):
        self._start = float(start_time)

    def do_step(self, current_time, step_size):
        name = self._model.name
        t = self._state.t
        try:
            if not (math.isfinite(step_size) and step_size >= 0.0):
                return self._discard(f"{name}: doStep with communication step {step_size!r} "
                                     f"at t = {current_time!r}; expected a finite step >= 0")
            if abs(current_time - t) > 1e-9 * max(1.0, abs(t)):
                return self._discard(f"{name}: doStep at t = {current_time!r}, but the FMU is "
                                     f"at t = {t!r}; expected the last communication point "
                                     f"(restore a saved FMU state to go back)")
            if self._nonfinite:
                bad = [self._model.inputs[k].name for k in sorted(self._nonfinite)]
                return self._discard(f"{name}: input(s) {bad} are not finite at "
                                     f"t = {current_time!r}; the step was not taken")
            if step_size == 0.0:
                return True
            if self._step is None:
                self._step = stepper(self._model, self._settings)
            with np.errstate(all="ignore"):      # a runaway state is reported, not warned
                new = self._step(self._state, current_time + step_size, self._inputs)
            size = _state_size(new)
            if not size <= STATE_BOUND:
                return self._discard(
                    f"{name}: the step from t = {t!r} to {current_time + step_size!r} was "
                    f"discarded: the state left the bounded region |q|, |qd| <= "
                    f"{STATE_BOUND:g} (max {size:.3g}); check the inputs and parameters")
            self._state = new
            self._out = None
            return True
        except FmuMbError as exc:
            return self._discard(f"{name}: the step from t = {t!r} to "
                                 f"{current_time + step_size!r} failed and was discarded: {exc}")
        except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            return self._discard(f"{name}: the step from t = {t!r} failed and was "
                                 f"discarded: {type(exc).__name__}: {exc}")

    def _discard(self, message):
        self.log(message, Fmi2Status.discard)
        return False

    # ------------------------------------------------------------------ FMU state
    def _get_fmu_state(self):
        return {"state": self._state.to_dict(),
                "inputs": [float(v).hex() for v in self._inputs],
                "parameters": {k: (v.hex() if isinstance(v, float) else v)
                               for k, v in self._pending.items()},
                "solver": {k: (v.hex() if isinstance(v, float) else v)
                           for k, v in self._solver.items()},
                "start": self._start}

    def _set_fmu_state(self, blob):
        def unhex(v):
            return float.fromhex(v) if isinstance(v, str) and v.startswith(("0x", "-0x")) \
                else v

        def hexed(d):      # compared as written, so that NaN equals NaN
            return {k: (v.hex() if isinstance(v, float) else v) for k, v in d.items()}

        pending = {k: unhex(v) for k, v in blob["parameters"].items()}
        solver = {k: unhex(v) for k, v in blob["solver"].items()}
        if set(pending) != set(self._pending) or set(solver) != set(self._solver):
            raise FmuMbError("the state holds other parameters than this FMU")
        configured = hexed({p.name: p.value for p in self._model.parameters})
        if self._mode not in (INSTANTIATED, INITIALIZATION) and (
                hexed(pending) != configured or hexed(solver) != hexed(self._solver)):
            # parameters are validated when initialisation ends: before that they are stored
            self._pending, self._solver = pending, solver
            self._configure()
        state = State.from_dict(blob["state"])
        inputs = np.array([float.fromhex(v) for v in blob["inputs"]])
        ref = self._state          # its shape and coordinates are this model's
        if (state.q.shape != ref.q.shape or state.qd.shape != ref.qd.shape
                or state.coords != ref.coords or inputs.shape != self._inputs.shape):
            raise FmuMbError(f"the state holds {state.q.size} {state.coords} coordinates and "
                             f"{inputs.size} inputs; this model has {ref.q.size} {ref.coords} "
                             f"coordinates and {self._inputs.size} inputs")
        self._pending, self._solver = pending, solver
        self._start = blob.get("start")
        self._state = state
        self._inputs = inputs
        self._out = None
        self._nonfinite = {k for k, v in enumerate(self._inputs) if not math.isfinite(v)}
