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
- outputs: every output of outputs.output_spec (initial="exact") but the model's
  undeclared_outputs (outputs.declared_outputs).

Behaviour importers rely on (statuses through GuardedSlave, fmi/guard.py, and the FMI front):
- parameters are validated when initialisation ends; an invalid one fails
  fmi2ExitInitializationMode with fmi2Error and a logged message naming the parameter, the
  value received and the valid range (the instance stays in initialisation mode); a
  structural parameter set to another value than the FMU was built with is refused at once;
  initialisation also builds the initial state and takes one trial step of 1e-6 s from it, so
  that a value the model cannot start with (l1 = 1e300, an angle of 1e300) or a formulation
  that cannot run the model is refused there (naming the parameter, or the formulation), not
  at the first doStep;
- doStep never raises: a negative step or a communication point that is not the FMU's time
  logs the reason and returns fmi2Discard; a non-finite input or a step the solver cannot
  complete (lock-up, NaN) logs it and returns fmi2Error with fmi2Terminated true (guard.py);
  so does a step that needs more than `solver.max_steps` integrator
  steps (never more than MAX_STEPS_CAP, whatever the setting: a huge step, a huge input) or
  more work than PY_WORK_BUDGET (counted evaluations, fmu_mb.dynamics.work; the compiled
  engine has its own; docs/fmi-statuses.md),
  whose state leaves |q|, |qd| <= STATE_BOUND or that would end beyond |t| <= TIME_BOUND; the
  state from before the call is kept, so the master may retry or restore a saved FMU state;
- the FMU state (get/set, serialise) holds the whole solver state (time, coordinates, rates,
  step-size hint, contact data), the inputs, parameters and settings: a round trip continues
  bit-identically. A restored state is checked value by value (keys, types, finite values
  within the bounds above) and a damaged one is refused with fmi2Error, changing nothing;
  restored parameters are validated like set ones, and the parameters read back are always
  those the restored motion runs with;
- Python warnings (AssemblyWarning, numpy) go to the FMU's logger (fmi2Warning), not to the
  host's stderr.

Where the compiled engine library runs the configuration (formulation resolved to recursive,
method dopri5, dop853 or rk4, no contacts: fmu_mb.engine.data.supported), the initial state
(mbe_initialize), every doStep (mbe_do_step with the same settings and step caps) and the
outputs come from an fmu_mb.engine.engine.Engine of the instance, the C code the native FMU
runs, so that the two kinds of FMU agree by construction; the State, its serialisation and the
guard's checks stay here (a restored State is loaded with mbe_set_state). Everything else
(contacts, the other formulations and methods, no C compiler) runs fmu_mb.dynamics as before.
"""
import contextlib
from dataclasses import replace
import math
import sys
import types
import warnings

import numpy as np
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Boolean, Integer, Real, String

from ..errors import FmuMbError, IntegrationError
from ..dynamics.formulations import CHOICES, KINDS, describe_choice
from ..dynamics.implicit import DAE_FORMS
from ..dynamics.formulations import get_formulation
from ..dynamics.implicit import IMPLICIT_METHODS
from ..dynamics.integrate import (METHODS, STABILIZATIONS, Settings, State, check_settings,
                                  initial_state, stepper)
from ..dynamics.outputs import Outputs, _direct_coordinates, declared_outputs
from ..dynamics.work import WorkBudgetError, unit_cost, work_budget
from ..units import describe
from .guard import INITIALIZATION, INSTANTIATED, TIME_BOUND, GuardedSlave

#: solver settings exposed as FMU parameters: name -> (Settings field, default, unit, text)
SOLVER_PARAMETERS = {
    "solver.method": ("method", "auto", "1", f"integration method, one of {list(METHODS)}"),
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
    "solver.assembly": ("assembly", "warn", "1",
                        "what initialisation does when the loops close far from the bodies' "
                        "declared poses (another assembly branch): 'warn' logs a warning, "
                        "'error' refuses the initialisation (fmi2Error)"),
    "solver.max_steps": ("max_steps", 2000, "1",
                         "most integrator steps per doStep; 0 or a value above the hard cap "
                         "(200000 steps for the compiled integrators, 5000 for the others and "
                         "for models with contacts) means the cap; beyond it the step is "
                         "discarded, so that every doStep returns in bounded time"),
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

_DEFAULT = Settings()

#: the contact event loop's settings, FMU parameters of models with contacts only:
#: name -> (Settings field, default, unit, text); the unit of a gap ("m" or "rad") is that
#: of the model's contacts (contact_units); defaults: Settings' (= fmu_mb.engine.data's
#: EVENT_SETTINGS, the native FMU's model data)
CONTACT_PARAMETERS = {
    "solver.contact_tol": ("contact_tol", _DEFAULT.contact_tol, "{gap}",
                           "contact event loop: a gap at or below it counts as closed at an "
                           "impact (all contacts within it take part in that impact)"),
    "solver.contact_velocity": ("contact_velocity", _DEFAULT.contact_velocity, "{gap}/s",
                                "contact event loop: a contact whose rebound velocity after an "
                                "impact is below it becomes persistent (comes to rest; raise it "
                                "to stop chatter)"),
    "solver.event_tol": ("event_tol", _DEFAULT.event_tol, "s",
                         "contact event loop: time tolerance of the event location (Brent's "
                         "method); the impact times move by at most about it"),
}

#: valid ranges [min, max] of the contact settings (finite, > 0)
CONTACT_LIMITS = {
    "solver.contact_tol": (1e-15, 1e-3),
    "solver.contact_velocity": (1e-9, 100.0),
    "solver.event_tol": (1e-18, 1e-3),
}


def contact_units(model):
    """The unit of the gaps of `model`'s contacts, "m" or "rad", or None when they mix (or the
    model has none)."""
    units = set(model.compiled.contacts.units) if model.contacts else set()
    return units.pop() if len(units) == 1 else None


def solver_parameters(model):
    """The solver settings that are FMU parameters of `model` (SOLVER_PARAMETERS, and
    CONTACT_PARAMETERS when it has contacts), units resolved (contacts of mixed units: "m or
    rad" in the description; no unit declaration, solver_units)."""
    out = dict(SOLVER_PARAMETERS)
    if model.contacts:
        gap = contact_units(model)
        for k, (field, default, unit, text) in CONTACT_PARAMETERS.items():
            if gap:
                unit = unit.format(gap=gap)
            elif "{gap}" in unit:
                unit = unit.format(gap="m") + " or " + unit.format(gap="rad")
            out[k] = (field, default, unit, text)
    return out


def solver_limits(model):
    """[min, max] of the numeric solver settings of `model`'s FMU."""
    out = dict(SOLVER_LIMITS)
    if model.contacts:
        out.update(CONTACT_LIMITS)
    return out


def solver_units(model):
    """FMI units of the solver settings of `model`'s FMU (the contact settings' gap unit only
    when all its contacts agree, m or rad)."""
    units = {"solver.step": "s", "solver.rtol": "1", "solver.atol": "1"}
    if model.contacts:
        gap = contact_units(model)
        units["solver.event_tol"] = "s"
        if gap:
            units.update({"solver.contact_tol": gap, "solver.contact_velocity": f"{gap}/s"})
    return units


#: a doStep whose result has |q| or |qd| above this is discarded (a state running away); an
#: initial state or a restored FMU state beyond it is refused
STATE_BOUND = 1e12

#: the FMU's time stays within |t| <= TIME_BOUND [s] (guard.py; about 317 years, where a double
#: still resolves 2e-6 s): a start time, a restored state or a doStep beyond it is refused

#: hard caps on the integrator steps of one doStep, whatever solver.max_steps says (0 or a
#: larger value means the cap): compiled integrators (about 2 to 50 us a step) and the others
#: (Python-level steps and the steps of the contact event loop, about 0.1 to 3 ms a step), so
#: that every doStep returns in bounded time (seconds, not hours)
MAX_STEPS_CAP = {"compiled": 2 * 10**5, "python": 5000}

#: the work budget of one doStep, and of initialisation, on the Python path (fmu_mb.dynamics.
#: work: counted evaluations at an estimated cost each, in ms; about 2 s of computing): every
#: call returns in bounded time whatever the settings and inputs (the compiled engine has its
#: own, engine.c's MBE_WORK_BUDGET)
PY_WORK_BUDGET = 2000.0

#: keys of an FMU state (the dict _get_fmu_state returns) and of its "state" entry
STATE_KEYS = frozenset({"state", "inputs", "parameters", "solver", "start", "initialized"})
SOLVER_STATE_KEYS = frozenset({"t", "q", "qd", "h", "coords", "extra"})


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
        with warnings.catch_warnings(record=True) as caught:   # logged below, not printed
            warnings.simplefilter("always")
            self._model = self._module.build(**self.build_overrides)
        self._pending = {p.name: p.value for p in self._model.parameters}
        self._defaults = dict(self._pending)       # the values this FMU was built with
        self._kinds = {k: type(v) for k, v in self._pending.items()}
        self._solver_params = solver_parameters(self._model)   # + the contact settings
        self._solver_limits = solver_limits(self._model)
        self._solver = {k: v[1] for k, v in self._solver_params.items()}
        self._solver_kinds = {k: type(v) for k, v in self._solver.items()}
        self._settings = Settings()
        self._inputs = np.zeros(len(self._model.inputs))
        self._state = initial_state(self._model, self._settings)
        self._out = None
        self._step = None         # integrate.stepper, made when first needed
        self._nonfinite = set()   # indices of inputs set to NaN or infinity
        self._direct = {}         # outputs that are q or qd entries (set by _configure)
        # the engine library (fmu_mb.engine.engine) when it runs the configuration (recursive,
        # no contacts): the initial state, the doStep and the outputs, as in the native FMU
        self._eng = None          # its Engine, or None: today's Python path (self._step)
        self._eng_step = None     # Engine.stepper()
        self._held = None         # the State the engine holds (identity), None: unknown
        self._ygroup = None       # the engine's output group of every output
        self._y = None            # the engine's outputs at self._state (valid: self._yvalid)
        self._yvalid = 0
        self.description = (self._model.description or self._model.name).strip()
        exp = dict(self.experiment)
        self.default_experiment = DefaultExperiment(
            start_time=exp.get("start_time", 0.0), stop_time=exp.get("stop_time", 2.0),
            step_size=exp.get("step_size", 0.01))
        self._structural = {p.name: p for p in self._model.parameters if p.structural}
        self._register()
        self._real_getters = {v.value_reference: v.getter for v in self.vars.values()
                              if isinstance(v, Real)}
        for text in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
            self.log(f"{self._model.name}: {text}", Fmi2Status.warning)

    # ------------------------------------------------------------------ variables
    def _register(self):
        m = self._model
        for p in m.parameters:
            self._register_parameter(p.name, p.value, p.unit, p.description, p.structural,
                                     self._pending)
        for name, (_, default, unit, text) in self._solver_params.items():
            self._register_parameter(name, default, unit, text, False, self._solver)
        for k, inp in enumerate(m.inputs):
            self.register_variable(Real(
                inp.name, start=0.0, causality=Fmi2Causality.input,
                variability=Fmi2Variability.continuous,
                description=describe(inp.description + " (held over a step)", inp.unit),
                getter=(lambda k=k: float(self._inputs[k])),
                setter=(lambda v, k=k: self._set_input(k, v))), nested=False)
        for i, var in declared_outputs(m):
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
        self._yvalid = 0

    def _output(self, i):
        """Output i; a tree joint's coordinate or rate straight from a joint-coordinate
        state (the same number Outputs gives), anything else through Outputs."""
        hit = self._direct.get(i)
        if hit is not None:
            return (self._state.qd if hit[0] else self._state.q)[hit[1]]
        if self._eng is not None:
            g = self._ygroup[i]
            if self._yvalid & g or self._engine_outputs(g):
                return self._y[i]
        out = self._out
        if out is not None:
            v = out.fmu_read.get(i)
            if v is not None:
                return v
        with np.errstate(all="call", call=self._fp_warning):    # logged, not printed
            out = self._outputs()
            v = out.fmu_read[i] = out.value(i)
        return v

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
            self._out.fmu_read = {}      # values read already (no errstate around a re-read)
        return self._out

    def _engine_outputs(self, group):
        """The outputs of `group` (engine.h MBE_GROUP_*) from the engine at self._state into
        self._y; False when the engine refuses (the Python outputs serve)."""
        try:
            self._hold(self._state)
            self._eng.outputs_into(self._safe_inputs(), group, self._y)
        except FmuMbError:
            return False
        self._yvalid |= group
        return True

    def _hold(self, state):
        """Make the engine hold `state` (mbe_set_state unless it holds that very State)."""
        if self._held is not state:
            self._held = None
            self._eng.load(state)
            self._held = state

    def _safe_inputs(self):
        u = self._inputs
        return u if np.all(np.isfinite(u)) else np.where(np.isfinite(u), u, 0.0)

    # ------------------------------------------------------------------ life cycle
    @contextlib.contextmanager
    def _warnings_logged(self):
        """Python warnings raised inside (AssemblyWarning, numpy's RuntimeWarning...) go to the
        FMU's logger with status fmi2Warning, once per distinct message, not to stderr. Used
        around the calls that build a model (instantiation, initialisation, a restore)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        seen = set()
        for w in caught:
            text = f"{w.category.__name__}: {w.message}"
            if text not in seen:
                seen.add(text)
                self.log(f"{self._model.name}: {text}", Fmi2Status.warning)

    def _fp_warning(self, kind, flag):
        """numpy floating-point error handler (np.errstate(call=...)): logged, not printed."""
        text = f"{self._model.name}: numpy: floating-point {kind} in an output computation"
        if not any(m.msg == text for m in self.log_queue):
            self.log(text, Fmi2Status.warning)

    def exit_initialization_mode(self):
        with self._warnings_logged():
            try:
                self._configure()
            except _InitError as exc:
                raise FmuMbError(f"{self._model.name}: {exc}") from None
            except (FmuMbError, ValueError, TypeError, ArithmeticError) as exc:
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

    def _configure(self, pending=None, solver=None):
        """Validate the parameters and solver settings, build the model and its initial state
        and take a trial step from it; commit all of it only when everything holds."""
        self._commit(self._prepare(pending, solver))

    def _prepare(self, pending=None, solver=None):
        """The configuration of `pending` parameters and `solver` settings (default: the
        instance's), checked, without changing the instance. Raises FmuMbError (a message
        naming the parameter or setting) or _InitError (the model cannot start)."""
        pending = dict(self._pending if pending is None else pending)
        solver = dict(self._solver if solver is None else solver)
        for p in self._model.parameters:
            if p.structural and pending[p.name] != p.value:
                raise FmuMbError(
                    f"parameter '{p.name}' is structural (it changes the model's variables); "
                    f"this FMU was built with {p.name} = {p.value!r}, received "
                    f"{pending[p.name]!r}; rebuild it with "
                    f"fmu-mb build MODEL.py --set {p.name}={pending[p.name]}")
        for k, (low, high) in self._solver_limits.items():
            v = solver[k]
            if not (isinstance(v, (int, float)) and low <= v <= high):
                unit = self._solver_params[k][2]
                unit = "" if unit == "1" else f" {unit}"
                raise FmuMbError(f"solver setting '{k}' = {v!r} is outside its valid range "
                                 f"[{low!r}, {high!r}]{unit}")
        try:
            return self._attempt(pending, solver)
        except _StartFailure as exc:
            raise _InitError(self._explain(pending, solver, exc)) from None

    def _attempt(self, pending, solver):
        """Build, set up and try the configuration; _StartFailure when the model cannot be
        built (a numeric overflow) or run from its initial state."""
        settings = Settings(**{self._solver_params[k][0]: v for k, v in solver.items()})
        same = pending == {p.name: p.value for p in self._model.parameters}
        try:
            model = self._model if same else self._module.build(**pending)
        except ArithmeticError as exc:           # math range errors: name the parameter
            raise _StartFailure(f"building the model failed ({type(exc).__name__}: {exc})")
        check_settings(model, settings)
        if model.assembly_note and settings.assembly == "error":
            raise _StartFailure(f"{model.assembly_note} (solver.assembly = 'error')")
        resolved = settings.for_model(model)
        form = get_formulation(resolved.formulation)
        kind = ("compiled" if form.cosim_stepper is not None and not model.contacts
                and resolved.method not in IMPLICIT_METHODS else "python")
        cap = MAX_STEPS_CAP[kind]
        asked = int(solver["solver.max_steps"])
        notes = [describe_choice(model, settings.formulation, resolved.formulation)]
        if asked == 0 or asked > cap:
            notes.append(f"solver.max_steps = {asked}: at most {cap} integrator steps per "
                         f"doStep (the hard cap of the {kind} integrators); a longer step is "
                         f"discarded")
            asked = cap
        resolved = replace(resolved, max_steps=asked)
        t0 = self.default_experiment.start_time if self._start is None else self._start
        step = None
        engine = self._new_engine(model, resolved)
        try:
            if engine is not None:
                state = self._engine_start(engine, resolved, float(t0))
                return types.SimpleNamespace(pending=pending, solver=solver, model=model,
                                             settings=resolved, state=state, notes=notes,
                                             engine=engine)
            with np.errstate(all="ignore"), work_budget(PY_WORK_BUDGET, unit_cost(model),
                                                        resolved, self._safe_inputs(), model):
                state = initial_state(model, resolved)
                state = State(float(t0), state.q.copy(), state.qd.copy(), 0.0, state.coords,
                              dict(state.extra))
                size = _state_size(state)
                if not size <= STATE_BOUND:
                    raise FmuMbError(f"the initial state is outside the bounded region |q|, "
                                     f"|qd| <= {STATE_BOUND:g} (max {size:.3g})")
                # one short step from the initial state with the inputs as set: a formulation
                # that cannot run the model fails here, not at the first doStep
                step = stepper(model, resolved)
                trial = step(state, t0 + max(1e-6, 1e3 * math.ulp(t0)), self._safe_inputs())
                size = _state_size(trial)
                if not size <= STATE_BOUND:
                    raise FmuMbError(f"a first step of 1e-6 s leaves the bounded region |q|, "
                                     f"|qd| <= {STATE_BOUND:g} (max {size:.3g})")
        except WorkBudgetError as exc:        # the settings, not a parameter: no blame search
            raise _StartFailure(str(exc), budget=True) from None
        except (FmuMbError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            raise _StartFailure(str(exc) if isinstance(exc, FmuMbError)
                                else f"{type(exc).__name__}: {exc}") from None
        return types.SimpleNamespace(pending=pending, solver=solver, model=model,
                                     settings=resolved, state=state, notes=notes, engine=None)

    def _new_engine(self, model, settings):
        """An Engine of `model` with `settings` when the engine library runs them (the
        recursive formulation, an explicit method it has, no contacts), else None (today's
        Python path: initial_state and integrate.stepper over the kernels)."""
        if settings.formulation != "recursive":
            return None
        from ..engine.data import supported
        from ..engine.engine import METHODS, Engine

        if (settings.method not in METHODS or (model.contacts and not model.spatial)
                or supported(model) is not None):   # planar contacts: the Python event
            return None                             # loop's records live in State.extra
        # (spatial contact models step in the engine, their records carried into
        # State.extra: a tumbling box is chaotic, and only the very code of the native FMU,
        # its initial state included, gives its numbers to 1e-9 over its experiment)
        try:
            if model is self._model and self._eng is not None:     # the same model data
                engine = Engine(blob=self._eng._blob.raw, name=model.name)
            else:
                engine = Engine(model, name=model.name)
        except (FmuMbError, OSError):        # no C compiler, data the engine cannot take
            return None
        return engine

    def _engine_start(self, engine, settings, t0):
        """The initial state at t0 from the engine with `settings` (mbe_initialize: loop
        assembly, velocity projection), checked like the Python path's, and one trial step of
        1e-6 s from it (then the initial state back in the engine). _StartFailure when it
        cannot start."""
        try:
            engine.set_settings(settings)
            engine.initialize(t0)
            s0 = engine.get_state()
            n = engine.n
            state = State(float(s0[0]), s0[1:1 + n], s0[1 + n:1 + 2 * n],
                          float(s0[1 + 2 * n]), KINDS["recursive"], {})
            size = _state_size(state)
            if not size <= STATE_BOUND:
                raise FmuMbError(f"the initial state is outside the bounded region |q|, "
                                 f"|qd| <= {STATE_BOUND:g} (max {size:.3g})")
            # one short step from the initial state with the inputs as set: a model the
            # engine cannot step from there fails here, not at the first doStep
            dt = (t0 + max(1e-6, 1e3 * math.ulp(t0))) - t0
            engine.stepper()(dt, self._safe_inputs())
            engine.set_state(s0)
        except FmuMbError as exc:     # engine.c's budget: the settings, not a parameter
            raise _StartFailure(str(exc), budget="work budget" in str(exc)) from None
        return state

    def _explain(self, pending, solver, failure):
        """The message of a configuration that cannot start: the parameter(s) to blame (each
        tried alone on the FMU's defaults), else the formulation and settings."""
        defaults = self._defaults
        changed = [k for k, v in pending.items() if _hexed(v) != _hexed(defaults[k])]
        form = solver["solver.formulation"]
        if failure.budget:
            return (f"the model cannot start with these settings (a trial step of 1e-6 s from "
                    f"the initial state): {failure}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._attempt(defaults, solver)
                base_ok = True
            except (_StartFailure, FmuMbError, ValueError, TypeError):
                base_ok = False
            if not base_ok:
                return (f"formulation '{form}' (solver settings {self._settings_text(solver)}) "
                        f"cannot run the model from its initial state: {failure}; choose "
                        f"another solver.formulation (auto picks one that runs the model)")
            blamed = []
            for k in changed:
                try:
                    self._attempt({**defaults, k: pending[k]}, solver)
                except (_StartFailure, FmuMbError, ValueError, TypeError):
                    blamed.append(k)
        names = blamed or changed
        values = ", ".join(f"{k} = {pending[k]!r}" for k in names)
        which = ("parameter" if len(names) == 1 else "parameters") + f" {values}"
        together = "" if blamed else " (together)"
        return (f"invalid parameter: {which}{together}: the model cannot start: {failure}; "
                f"expected values of a sane magnitude (defaults: "
                f"{', '.join(f'{k} = {defaults[k]!r}' for k in names)})")

    @staticmethod
    def _settings_text(solver):
        keys = ("solver.method", "solver.stabilization")
        return ", ".join(f"{k} = {solver[k]!r}" for k in keys)

    def _commit(self, cfg):
        for note in cfg.notes:
            self.log(f"{cfg.model.name}: {note}")
        _assign(self._pending, cfg.pending)      # in place: the variables' getters and
        _assign(self._solver, cfg.solver)        # setters hold these very dicts
        self._model, self._settings = cfg.model, cfg.settings
        self._state = cfg.state
        self._out = None
        self._step = None
        eng = cfg.engine
        if eng is not None and eng is not self._eng:
            if self._ygroup is None or len(self._ygroup) != eng.n_outputs:
                self._ygroup = eng.output_groups().tolist()   # the FMU's outputs are fixed
            self._y = np.full(max(1, eng.n_outputs), np.nan)
        self._eng = eng
        self._eng_step = eng.stepper() if eng is not None else None
        self._held = cfg.state if eng is not None else None
        self._yvalid = 0
        self._direct = _direct_coordinates(cfg.model) if cfg.state.coords == "joint" else {}

    _start = None

    def setup_experiment(self, start_time, stop_time, tolerance):
        if not abs(start_time) <= TIME_BOUND:
            raise FmuMbError(f"start time {start_time!r} is outside |t| <= {TIME_BOUND:g} s")
        self._start = float(start_time)

    def do_step(self, current_time, step_size):
        # no warnings.catch_warnings here: it swaps process-wide state (not thread-safe with
        # instances stepping in parallel threads) and costs ~5 us a step; the step's numpy
        # floating-point warnings are suppressed below; Python warnings come from building a
        # model (instantiation, initialisation, a restore), where they are logged
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
            if not abs(current_time + step_size) <= TIME_BOUND:
                return self._discard(f"{name}: doStep from t = {current_time!r} with step "
                                     f"{step_size!r} would end beyond the FMU's time range "
                                     f"|t| <= {TIME_BOUND:g} s; the step was not taken")
            if self._nonfinite:
                bad = [self._model.inputs[k].name for k in sorted(self._nonfinite)]
                return self._discard(f"{name}: input(s) {bad} are not finite at "
                                     f"t = {current_time!r}; the step was not taken")
            if step_size == 0.0:
                return True
            if self._eng is not None:
                return self._engine_step(current_time + step_size)
            if self._step is None:
                self._step = stepper(self._model, self._settings)
            with np.errstate(all="ignore"), work_budget(     # a runaway state is reported,
                    PY_WORK_BUDGET, unit_cost(self._model), self._settings,  # not warned
                    self._inputs, self._model, step_size):
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

    def _engine_step(self, t_end):
        """doStep in the engine library (mbe_do_step, as the native FMU steps: by t_end minus
        the FMU's time); a refused step keeps the state and is discarded with its reason."""
        name, state = self._model.name, self._state
        t = state.t
        h = t_end - t
        if not (h > 0.0 and math.isfinite(h)):
            return self._discard(f"{name}: doStep to {t_end!r}: the end is not after the "
                                 f"FMU's time t = {t!r}; the step was not taken")
        self._hold(state)
        try:
            s = self._eng_step(h, self._inputs)
        except IntegrationError as exc:
            text = str(exc)
            if "step budget" in text:       # engine.c's message of a budget used up
                text += (f" (solver.max_steps: at most {self._settings.max_steps} "
                         f"integrator steps per doStep)")
            return self._discard(f"{name}: the step from t = {t!r} to {t_end!r} failed and "
                                 f"was discarded: {text}")
        n = state.q.shape[0]
        extra = state.extra
        if len(s) > 2 + 2 * n:               # the engine's records into State.extra
            from ..dynamics.formulations.recursive import _extra, _records

            st, rec = _records(self._model, extra)
            new_rec = s[2 + 2 * n:].reshape(rec.shape)
            if not np.array_equal(new_rec, rec):
                extra = _extra(st, new_rec, extra)
        new = State.make(float(s[0]), s[1:1 + n], s[1 + n:1 + 2 * n], float(s[1 + 2 * n]),
                         state.coords, extra)
        self._state = self._held = new
        self._out = None
        self._yvalid = 0
        return True

    def _discard(self, message):
        self.log(message, Fmi2Status.discard)
        return False

    # ------------------------------------------------------------------ FMU state
    def _get_fmu_state(self):
        return {"state": self._state.to_dict(),
                "inputs": [float(v).hex() for v in self._inputs],
                "parameters": {k: _hexed(v) for k, v in self._pending.items()},
                "solver": {k: _hexed(v) for k, v in self._solver.items()},
                "start": self._start,
                "initialized": self._mode not in (INSTANTIATED, INITIALIZATION)}

    def _set_fmu_state(self, blob):
        """Restore a state of _get_fmu_state, every value checked first (_check_fmu_state);
        a state that fails a check changes nothing. In an initialised instance, parameters
        that differ from the configured ones are validated and the model rebuilt, so that the
        parameter values and the restored motion always agree."""
        with self._warnings_logged():
            self._restore(blob)

    def _restore(self, blob):
        pending, solver, state, inputs, start, initialized = self._check_fmu_state(blob)
        if self._mode in (INSTANTIATED, INITIALIZATION):
            if initialized:
                # initialisation would rebuild the state from the parameters and drop the
                # restored motion (t back to the start): refused rather than lost silently
                raise FmuMbError(f"the state was saved after fmi2ExitInitializationMode; this "
                                 f"instance is in {self._mode}: restore it once "
                                 f"initialisation has ended")
            cfg = None        # parameters are validated when initialisation ends
            ref = self._state
        else:
            if not initialized:
                raise FmuMbError("the state was saved before fmi2ExitInitializationMode "
                                 "(its parameters were never validated); this instance is "
                                 "initialised: restore it before initialisation ends, or "
                                 "use fmi2Reset")
            same = (_hexed_all(pending) == _hexed_all(self._configured())
                    and _hexed_all(solver) == _hexed_all(self._solver))
            cfg = None if same else self._prepare(pending, solver)
            ref = self._state if cfg is None else cfg.state
        if (state.q.shape != ref.q.shape or state.qd.shape != ref.qd.shape
                or state.coords != ref.coords):
            raise FmuMbError(f"the state holds {state.q.size} + {state.qd.size} "
                             f"{state.coords} coordinates and rates; this model has "
                             f"{ref.q.size} + {ref.qd.size} {ref.coords} ones")
        eng = self._eng if cfg is None else cfg.engine
        if eng is not None:
            # the engine's own checks of the restored values (mbe_set_state: unit Euler
            # parameters, ...); a refused state changes nothing (the engine holds its own)
            try:
                eng.load(state)
            except FmuMbError as exc:
                raise FmuMbError(f"the FMU state is damaged: {exc}; nothing was "
                                 f"changed") from None
            if eng is self._eng:
                self._held = state
        # nothing else is changed before this point
        if cfg is not None:
            self._commit(cfg)
            self._held = state
        _assign(self._pending, pending)
        _assign(self._solver, solver)
        self._start = start
        self._state = state
        self._inputs = inputs
        self._out = None
        self._yvalid = 0
        self._nonfinite = set()

    def _configured(self):
        return {p.name: p.value for p in self._model.parameters}

    def _check_fmu_state(self, blob):
        """(parameters, solver settings, State, inputs, start,
        initialized) of a state blob, every value checked: the keys, the types, hex floats
        written as float.hex writes them, t finite within |t| <= TIME_BOUND, h finite >= 0, q
        and qd finite within STATE_BOUND, finite inputs, the sizes. FmuMbError otherwise."""
        def bad(what):
            return FmuMbError(f"the FMU state is damaged: {what}; nothing was changed")

        def keys(d, expected, where):
            if not isinstance(d, dict):
                raise bad(f"{where} is a {type(d).__name__}, expected an object")
            missing, unknown = set(expected) - set(d), set(d) - set(expected)
            if missing or unknown:
                raise bad(f"{where}: missing keys {sorted(missing)}, unknown keys "
                          f"{sorted(unknown)}")

        def real(v, where, bound=None, nonneg=False):
            try:
                x = float.fromhex(v) if isinstance(v, str) else None
            except (ValueError, OverflowError):
                x = None
            if x is None or x.hex() != v:
                raise bad(f"{where} = {str(v)[:40]!r} is not a float written in hex")
            if bound is not None and not (abs(x) <= bound and (x >= 0.0 or not nonneg)):
                raise bad(f"{where} = {x!r} is outside the valid range "
                          f"[{0.0 if nonneg else -bound:g}, {bound:g}]")
            return x

        def reals(v, n, where, bound):
            if not isinstance(v, list) or len(v) != n:
                raise bad(f"{where} holds {len(v) if isinstance(v, list) else v!r} values, "
                          f"expected {n}")
            return np.array([real(x, f"{where}[{i}]", bound) for i, x in enumerate(v)])

        def values(d, kinds, where):
            keys(d, kinds, where)
            out = {}
            for k, v in d.items():
                if kinds[k] is float:
                    out[k] = real(v, f"{where} '{k}'")
                elif type(v) is kinds[k]:
                    out[k] = v
                else:
                    raise bad(f"{where} '{k}' = {str(v)[:40]!r} is not a "
                              f"{kinds[k].__name__}")
            return out

        keys(blob, STATE_KEYS, "the state")
        pending = values(blob["parameters"], self._kinds, "parameter")
        solver = values(blob["solver"], self._solver_kinds, "solver setting")
        st = blob["state"]
        keys(st, SOLVER_STATE_KEYS, "the solver state")
        ref = self._state
        t = real(st["t"], "time t", TIME_BOUND)
        h = real(st["h"], "step-size hint h", TIME_BOUND, nonneg=True)
        q = reals(st["q"], ref.q.size, "q", STATE_BOUND)
        qd = reals(st["qd"], ref.qd.size, "qd", STATE_BOUND)
        if not isinstance(st["coords"], str):
            raise bad(f"coords = {st['coords']!r} is not a string")
        _check_extra(st["extra"], bad)
        inputs = reals(blob["inputs"], self._inputs.size, "inputs", math.inf)
        if not np.all(np.isfinite(inputs)):
            raise bad("the inputs are not all finite")
        start = blob["start"]
        if start is not None and not (type(start) is float and abs(start) <= TIME_BOUND):
            raise bad(f"start time {start!r} is not a float within |t| <= {TIME_BOUND:g}")
        if type(blob["initialized"]) is not bool:
            raise bad(f"initialized = {blob['initialized']!r} is not a boolean")
        state = State(t, q, qd, h, st["coords"], _decode_extra(st["extra"]))
        return pending, solver, state, inputs, start, blob["initialized"]


class _StartFailure(Exception):
    """The model cannot be built or started with a configuration (explained by _explain);
    `budget`: the work budget ran out (the settings are the cause, not a parameter)."""

    def __init__(self, message, budget=False):
        super().__init__(message)
        self.budget = budget


class _InitError(FmuMbError):
    """A complete message of a refused fmi2ExitInitializationMode."""


def _hexed(v):
    """A float as hex text (compared and stored as written, so that NaN equals NaN)."""
    return v.hex() if isinstance(v, float) else v


def _hexed_all(d):
    return {k: _hexed(v) for k, v in d.items()}


def _assign(target, values):
    """Replace the contents of dict `target` in place."""
    target.clear()
    target.update(values)


def _check_extra(v, bad, where="extra", depth=0):
    """The solver state's extra data (contact status, implicit history): JSON values whose
    floats are {"float": hex} and finite."""
    if depth > 8:
        raise bad(f"{where} is nested too deeply")
    if isinstance(v, dict):
        if set(v) == {"float"}:
            x = v["float"]
            try:
                ok = isinstance(x, str) and float.fromhex(x).hex() == x
            except (ValueError, OverflowError):
                ok = False
            if not ok or not math.isfinite(float.fromhex(x)):
                raise bad(f"{where} = {str(x)[:40]!r} is not a finite float written in hex")
            return
        if not all(isinstance(k, str) for k in v):
            raise bad(f"{where} has a key that is not a string")
        for k, x in v.items():
            _check_extra(x, bad, f"{where}.{k}", depth + 1)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _check_extra(x, bad, f"{where}[{i}]", depth + 1)
    elif isinstance(v, float) or not (v is None or isinstance(v, (bool, int, str))):
        raise bad(f"{where} = {str(v)[:40]!r} is not a valid value")


def _decode_extra(extra):
    return State.from_dict({"t": "0x0.0p+0", "q": [], "qd": [], "h": "0x0.0p+0",
                            "coords": "", "extra": extra}).extra
