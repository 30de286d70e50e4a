"""Build native FMI 2.0 co-simulation FMUs: `fmu-mb build --native MODEL.py -o DIR`.

A native FMU is the compiled engine (fmu_mb/engine/native, engine.h) behind the FMI 2.0 C
interface of fmu_mb/fmi/native/fmi2_native.c, with the model's data embedded in the binary: each
binary needs only the platform's C library (no Python, no numpy, no resources/ folder). Its
variables (names, value references, types, units, ranges, start values), default experiment and
documentation are those of the Python FMU of the same model (`build.build_fmu`): the
modelDescription.xml is made by the same adapter class (slave.MultibodySlave) and the same
post-processing (packaging's units and limits), so a master can swap one for the other.

Per FMU this writes fmu_model.h (the variable table, each variable mapped to a model parameter,
a solver setting, an input or an output; the model-data blob; the GUID), builds the binaries of
every platform a toolchain builds (native_platforms: linux64, aarch64-linux, win64 and a
universal darwin64; `-O2 -ffp-contract=off`, only the fmi2* symbols exported; the engine and
the front compiled once per target into a cache, per FMU only the model's tables and the link)
and zips modelDescription.xml, binaries/<platform>/, documentation/index.html and sources/
(the same C sources, listed in modelDescription.xml's SourceFiles, so that a host of another
platform can compile the binary: fmpy.build.build_platform_binary does).
"""
import hashlib
import math
import os
import re
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from ..errors import FmuMbError, InputError, ModelError
from ..mechanics.loader import call_build, engine_data_only, load_module
from ..dynamics.outputs import output_spec

NATIVE_DIR = Path(__file__).resolve().parent / "native"
FRONT_SOURCE = NATIVE_DIR / "fmi2_native.c"
ENGINE_DIR = Path(__file__).resolve().parent.parent / "engine" / "native"

#: the solver settings' ids in fmi2_native.c (SOLVER_*), by FMU variable name
SOLVER_IDS = {"solver.method": 0, "solver.formulation": 1, "solver.stabilization": 2,
              "solver.rtol": 3, "solver.atol": 4, "solver.step": 5, "solver.rho_inf": 6,
              "solver.newton_tol": 7, "solver.dae_form": 8, "solver.max_steps": 9,
              # the contact event loop's settings (models with contacts only; slave.py's
              # CONTACT_PARAMETERS; engine.h MbeSettings)
              "solver.contact_tol": 10, "solver.contact_velocity": 11, "solver.event_tol": 12, "solver.assembly": 13}

#: what the native FMU runs (fmi2_native.c refuses the rest at fmi2ExitInitializationMode)
NATIVE_METHODS = ("auto", "dopri5", "dop853", "rk4")
NATIVE_FORMULATIONS = ("auto", "recursive")

VT = {"Real": 0, "Integer": 1, "Boolean": 2, "String": 3}
VK_PARAM, VK_FIXED, VK_SOLVER, VK_INPUT, VK_OUTPUT, VK_STATE, VK_DERIV = range(7)


class NativeUnavailable(FmuMbError):
    """The model does not run in the compiled engine (the message says why)."""


# ---------------------------------------------------------------------- the engine's side
def engine_data(model, module=None, overrides=None):
    """(blob, parameter names, parameter defaults, fixed) of the model for the engine: the
    parameter table is the model's parameters in order; fixed maps the names of the parameters
    that cannot change in the native FMU to the reason. With the model file's module, the
    parameter program (fmu_mb.engine.params) compiles the map parameters -> model data, so that
    a parameter set by the master has the effect it has in the Python FMU. Raises
    NativeUnavailable when the model does not run in the compiled engine."""
    from ..engine.data import model_data, supported

    why = supported(model)
    if why is not None:
        raise NativeUnavailable(why)
    try:
        data = model_data(model)
    except InputError as exc:              # a kind of model the engine data do not hold yet
        raise NativeUnavailable(str(exc)) from None
    names = list(data.parameter_names)
    table = data.array("DPARAM")
    defaults = [float(table[3 * k]) for k in range(len(names))]
    program, fixed = None, {}
    try:
        from ..engine.params import compile_parameters
    except ImportError:
        compile_parameters = None
    if compile_parameters is not None and module is not None:
        def data_of(values):       # the EngineData: a set changing its ints fixes a parameter
            with engine_data_only():
                return model_data(call_build(module, None, **values))

        program = compile_parameters(module, dict(overrides or {}), data_of, names=names,
                                     derived=data.derived())
        fixed = dict(getattr(program, "fixed", {}) or {})
    else:
        reason = "the parameter program (fmu_mb.engine.params) is not available"
        fixed = {n: reason for n in names}
    structural = {p.name for p in model.parameters if p.structural}
    fixed = {n: r for n, r in fixed.items() if n not in structural}
    return data.to_bytes(program), names, defaults, fixed


_BACKGROUND = None      # the (function, arguments) a forked worker of EngineDataLater runs


def _background_job():
    fn, args = _BACKGROUND
    return fn(*args)


class EngineDataLater:
    """engine_data(model, module, overrides) computed in a forked process while the build
    makes the model description and its linear structure (Linux, 2 or more CPUs; elsewhere,
    or with FMU_MB_SERIAL=1, computed at once). result() returns it or raises its error; a
    worker that fails otherwise (a crash, an error that does not pickle) is replaced by
    computing it here. NativeUnavailable is raised at once (native_reason is cheap)."""

    def __init__(self, model, module=None, overrides=None):
        global _BACKGROUND
        why = native_reason(model)
        if why is not None:
            raise NativeUnavailable(why)
        self.args = (model, module, overrides)
        self.pool = self.future = None
        if sys.platform == "linux" and (os.cpu_count() or 1) >= 2 \
                and not os.environ.get("FMU_MB_SERIAL"):
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            _BACKGROUND = (engine_data, self.args)
            try:
                self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
                self.future = self.pool.submit(_background_job)    # forks now
            except (OSError, RuntimeError):
                self.close()
            finally:
                _BACKGROUND = None
        if self.future is None:
            self.value = engine_data(*self.args)

    def result(self):
        if self.future is None:
            return self.value
        try:
            return self.future.result()
        except FmuMbError:
            raise
        except Exception:          # the worker failed, not the model: compute it here
            return engine_data(*self.args)
        finally:
            self.close()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def engine_sources():
    """(C sources, preprocessor defines) of the engine compiled into a native FMU's binary."""
    from ..engine.engine import sources

    src = sources()
    defines = ("MBE_HAVE_PARAMS",) if any(p.name == "params.c" for p in src) else ()
    return list(src), defines


def native_reason(model):
    """None when `model` builds as a native FMU, else why not (one line)."""
    from ..engine.data import model_data, supported

    why = supported(model)
    if why is None:
        try:
            model_data(model)
        except InputError as exc:          # a kind of model the engine data do not hold yet
            why = str(exc)
    return why


def native_start_reason(model, start=0.0):
    """None when the compiled engine starts `model` as the native FMU's
    fmi2ExitInitializationMode does at the default solver settings and inputs 0 (the
    initial state, the outputs there, a trial step of 1e-6 s), else why not (its message):
    the default build then makes the Python FMU."""
    from ..dynamics.integrate import Settings
    from ..engine.engine import Engine

    try:
        engine = Engine(model)
        engine.set_settings(Settings())
        engine.initialize(float(start))
        u = [0.0] * engine.n_inputs
        engine.outputs(u)
        engine.do_step(1e-6, u)
    except FmuMbError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------- the build
def build_native_fmu(model_file, out_dir, overrides=None, platforms=None, log=None):
    """Build one model file into out_dir/<model name>.fmu (native) and return its path.

    platforms: the binaries/ folders to build (native_platforms.parse_platforms; default every
    one a toolchain builds: linux64, aarch64-linux, win64, darwin64); log: a
    native_platforms.BuildLog that gets the time of each stage and the platforms built or
    missing, and why. Raises NativeUnavailable when the model does not run in the compiled
    engine, ModelError for a model file or override that is wrong, FmuMbError when the C
    compiler fails or a platform asked for cannot be built.
    """
    from . import native_platforms as npl

    log = log if log is not None else npl.BuildLog()
    model_file = Path(model_file)
    with log.stage("load the model"):
        module = load_module(model_file)
        overrides = dict(overrides or {})
        model = call_build(module, model_file, **overrides)
    with log.stage("engine data and parameter program (started)"):
        pending = EngineDataLater(model, module, overrides)
    try:
        experiment = dict(getattr(module, "DEFAULT_EXPERIMENT", {}) or {})
        source = model_file.read_text(encoding="utf-8")
        with log.stage("model description"):
            root = _model_description(model, model_file, source, overrides, experiment)
        with log.stage("linear structure (ModelStructure)"):
            linear = _linear_structure(model, root)
        with log.stage("documentation (the 3-D view)"):   # while the worker compiles
            described = _documentation(model)
        with log.stage("engine data and parameter program (the rest)"):
            blob, names, defaults, fixed = pending.result()
    finally:
        pending.close()
    with log.stage("variable table, header, sources/"):
        table = _variable_table(model, root, names, fixed, linear)
        engine, defines = engine_sources()
        sources = [FRONT_SOURCE] + engine
        digest = hashlib.sha1()
        for part in (blob, repr(table).encode(), repr(sorted(overrides.items())).encode(),
                     *(p.read_bytes() for p in sources + sorted(NATIVE_DIR.glob("me*.c")))):
            digest.update(part)
        guid = "{" + str(uuid.UUID(bytes=digest.digest()[:16], version=5)) + "}"
        root.set("guid", guid)
        root.set("generationTool", "fmu_mb (native FMU: the compiled engine, no Python)")
        for name, reason in fixed.items():
            _mark_fixed(root, name, reason)
        _note(root, "solver.formulation", "native FMU: 'auto' and 'recursive' (the compiled "
              "engine); the others need the Python FMU (fmu-mb build --python)")
        _note(root, "solver.method", f"native FMU: {', '.join(NATIVE_METHODS)}; the others "
              f"need the Python FMU (fmu-mb build --python)")
        from .packaging import _html, _serialise
        sources_dir = _source_files(defines)
        cosim = root.find("CoSimulation")
        listed = ET.SubElement(cosim, "SourceFiles")
        for name in sources_dir["listed"]:
            ET.SubElement(listed, "File", name=name)
        from .native_me import add_model_exchange   # one binary, both interfaces
        if linear is not None:
            linear["me"] = add_model_exchange(root, model, linear)
        xml = _serialise(root)
        start = float(experiment.get("start_time", 0.0))
        header = _header(model, guid, table, defaults, blob, start, linear)
    dest = Path(out_dir) / f"{model.name}.fmu"
    with tempfile.TemporaryDirectory(prefix="fmu_mb_native_") as tmp:
        (Path(tmp) / "fmu_model.h").write_text(header, encoding="utf-8")
        binaries = build_platform_binaries(Path(tmp), model.name, 2, FRONT_SOURCE, engine,
                                           defines, platforms, log)
        documentation = _html(model.name, described + host_section(model.name)
                              + npl.host_note(model.name, units=sources_dir["listed"],
                                              platforms=list(log.platforms)))
        with log.stage("zip"):
            package(dest, xml, binaries, documentation, header, sources_dir["files"],
                    npl.build_description(model.name, sources_dir["listed"]))
    return dest


def package(dest, xml, binaries, documentation, header, sources, build_description):
    """Zip a native FMU (FMI 2.0 or 3.0): modelDescription.xml, binaries ({path in the FMU:
    bytes}), documentation/index.html, sources/ (name -> bytes; fmu_model.h: header) and
    sources/buildDescription.xml."""
    files = {"modelDescription.xml": xml, **binaries, "documentation/index.html": documentation,
             "sources/fmu_model.h": header.encode("utf-8")}
    files.update({f"sources/{n}": d for n, d in sources.items()})
    files["sources/buildDescription.xml"] = build_description
    _zip(dest, files)


def build_platform_binaries(workdir, identifier, fmi, front, engine, defines, platforms, log):
    """native_platforms.build_binaries with the platforms asked for: raises FmuMbError when one
    asked for (platforms not None) or every one (None) cannot be built, saying why."""
    from . import native_platforms as npl

    wanted = None if platforms is None else npl.parse_platforms(
        platforms if isinstance(platforms, str) else ",".join(platforms), fmi)
    files = npl.build_binaries(workdir, identifier, fmi, front, engine, defines, wanted, log)
    if platforms is not None and log.missing:
        raise FmuMbError("--platforms: cannot build " + "; ".join(
            f"{f} ({why})" for f, why in log.missing.items()))
    if not files:
        raise FmuMbError("no platform can be built: " + "; ".join(
            f"{f} ({why})" for f, why in log.missing.items()))
    return files


def build_model_fmu(model_file, out_dir, overrides=None, standalone=True, kind=None,
                    platforms=None, log=None):
    """Build one model file as a native or a Python FMU; returns (path, kind, why).

    kind : "native" (the compiled engine behind fmi2_native.c: no Python on the host; raises
    FmuMbError saying why when the model does not run in the compiled engine), "python" (the
    pythonfmu FMU: every formulation and method), or None: native whenever the model runs in
    the compiled engine, else Python. platforms, log: build_native_fmu's (native FMUs); why
    names the platforms built and those missing.
    """
    from .build import build_fmu
    from .native_platforms import BuildLog

    if not Path(model_file).is_file():
        raise ModelError(f"model file {str(model_file)!r} does not exist")
    if kind == "python":
        return build_fmu(model_file, out_dir, overrides, standalone), "python", "--python"
    log = log if log is not None else BuildLog()
    if kind is None:              # the kind that can start the model: tried here
        module = load_module(Path(model_file))
        model = call_build(module, Path(model_file), **dict(overrides or {}))
        if native_reason(model) is None:
            experiment = dict(getattr(module, "DEFAULT_EXPERIMENT", {}) or {})
            why = native_start_reason(model, experiment.get("start_time", 0.0))
            if why is not None:
                return (build_fmu(model_file, out_dir, overrides, standalone), "python",
                        f"the compiled engine cannot start the model ({why}); the Python "
                        f"FMU can: the host needs Python, see the README's FMU kinds")
    try:
        path = build_native_fmu(model_file, out_dir, overrides, platforms, log)
    except NativeUnavailable as exc:
        if kind == "native":
            raise FmuMbError(f"{model_file}: cannot build a native FMU: {exc}; build it with "
                             f"--python (a Python FMU runs every model)") from None
        return (build_fmu(model_file, out_dir, overrides, standalone), "python",
                f"the model does not run in the compiled engine: {exc}; the host needs Python, "
                f"see the README's FMU kinds")
    why = ("--native" if kind == "native" else
           "the model runs in the compiled engine: the host needs no Python; --python builds "
           "the Python FMU")
    return path, "native", f"{why}; {log.summary()}"


#: compiled in place of engine.c from sources/: the engine with the parameter program
SOURCE_WRAPPER = "/* the engine with the parameter program (fmu_mb.fmi.native_build) */\n{defines}#include \"engine.c\"\n"


def _source_files(defines):
    """The FMU's sources/ (FMI 2.0: the C sources that make its binary, for a platform without
    one; listed in modelDescription.xml's SourceFiles): fmi2_native.c, the engine's sources
    and headers; fmu_model.h is added per FMU. {"listed": compiled files, "files": name ->
    bytes}."""
    engine, _ = engine_sources()
    files = {FRONT_SOURCE.name: FRONT_SOURCE.read_bytes()}
    for p in sorted(NATIVE_DIR.glob("me*.c")):      # the model-exchange parts the fronts include
        files[p.name] = p.read_bytes()
    for p in sorted(ENGINE_DIR.glob("*.h")) + [Path(x) for x in engine]:
        files[p.name] = p.read_bytes()
    for text in list(files.values()):        # C files a source includes (kernel.c: events.c)
        for name in re.findall(rb'#include "([^"]+\.c)"', text):
            if name.decode() not in files:
                files[name.decode()] = (ENGINE_DIR / name.decode()).read_bytes()
    wrapper = SOURCE_WRAPPER.format(defines="".join(f"#define {d} 1\n" for d in defines))
    files["fmu_mb_engine.c"] = wrapper.encode("utf-8")
    listed = [FRONT_SOURCE.name, "fmu_mb_engine.c"] + [Path(x).name for x in engine
                                                       if Path(x).name != "engine.c"]
    return {"listed": listed, "files": files}


def _model_description(model, model_file, source, overrides, experiment):
    """The Python FMU's modelDescription.xml (same adapter class, same post-processing)."""
    from .build import units_and_limits
    from .packaging import _MODEL_OPTIONS, _add_limits, _add_units
    from .slave import MultibodySlave

    tag = hashlib.sha1(repr((source, sorted(overrides.items()))).encode()).hexdigest()[:10]
    module_name = f"fmu_mb_native_{model.name}_{tag}_model"
    cls = type(model.name, (MultibodySlave,), {
        "model_module": module_name, "model_filename": model_file.name,
        "build_overrides": overrides, "experiment": experiment, "model_source": source,
        "__module__": __name__})
    try:
        slave = cls(instance_name="fmu_mb_native_build", resources=None)
        root = slave.to_xml(_MODEL_OPTIONS)
    finally:
        sys.modules.pop(module_name, None)
    units, limits = units_and_limits(model)
    _add_units(root, units)
    _add_limits(root, limits)
    return root


def _variable_table(model, root, names, fixed, linear=None):
    """One row per ScalarVariable (value reference = row): (name, type, kind, index, start,
    start string, min, max, structural, fixed reason). linear: _linear_structure's (the states
    that are no other variable and the state derivatives)."""
    from .slave import solver_limits, solver_parameters

    solver = solver_parameters(model)
    limits = solver_limits(model)

    params = {p.name: p for p in model.parameters}
    engine_index = {n: k for k, n in enumerate(names)}
    inputs = {i.name: k for k, i in enumerate(model.inputs)}
    outputs = {v.name: k for k, v in enumerate(output_spec(model))}
    rows = []
    for vr, sv in enumerate(root.iter("ScalarVariable")):
        if int(sv.get("valueReference")) != vr:
            raise FmuMbError(f"modelDescription.xml: variable {sv.get('name')!r} has value "
                             f"reference {sv.get('valueReference')}, expected {vr}")
        name = sv.get("name")
        typ = next(c.tag for c in sv if c.tag in VT)
        low, high = -math.inf, math.inf
        start, text, structural, reason = 0.0, "", 0, ""
        if name in params:
            p = params[name]
            low = -math.inf if p.min is None else float(p.min)
            high = math.inf if p.max is None else float(p.max)
            if typ == "String":
                text = p.value
            else:
                start = float(p.value)
            if p.structural:
                kind, index, structural = VK_FIXED, -1, 1
                reason = "structural: it changes the model's variables"
            elif name in engine_index and name not in fixed:
                kind, index = VK_PARAM, engine_index[name]
            else:
                kind, index = VK_FIXED, -1
                reason = fixed.get(name) or "its effect on the model is not compiled"
        elif name in solver:
            kind, index = VK_SOLVER, SOLVER_IDS[name]
            default = solver[name][1]
            if typ == "String":
                text = default
            else:
                start = float(default)
            if name in limits:
                low, high = (float(v) for v in limits[name])
        elif name in inputs:
            kind, index = VK_INPUT, inputs[name]
        elif name in outputs:
            kind, index = VK_OUTPUT, outputs[name]
        elif linear is not None and name in linear["locals"]:
            kind, index = VK_STATE, linear["locals"][name]
        elif linear is not None and name in linear["derivatives"]:
            kind, index = VK_DERIV, linear["derivatives"][name]
        else:
            raise FmuMbError(f"modelDescription.xml: variable {name!r} is neither a parameter, "
                             f"a solver setting, an input nor an output of model {model.name!r}")
        rows.append((name, VT[typ], kind, index, start, text, low, high, structural, reason))
    missing = set(solver) - {r[0] for r in rows}
    if missing:
        raise FmuMbError(f"modelDescription.xml lacks the solver settings {sorted(missing)}")
    return rows


def _derivative_name(state):
    """The name of the derivative variable of a state: der(<state>), or der(<x>,2) for a state
    der(<x>) (FMI 2.0's structured naming)."""
    if state.startswith("der(") and state.endswith(")") and "," not in state:
        return f"der({state[4:-1]},2)"
    return f"der({state})"


def _linear_structure(model, root):
    """Declare in the modelDescription `root` what an importer needs to linearize the FMU
    (fmu-mb linearize, fmpy): the states of fmu_mb.dynamics.linearize (model_structure: the independent
    joint coordinates and their rates) as continuous Real variables (the joint outputs; a
    local variable for a state that is no output), a local variable der(<state>) with
    derivative= for each, <Derivatives> in ModelStructure, the dependencies of the outputs and
    of the derivatives on the states and inputs, and providesDirectionalDerivative="true"
    (fmi2_native.c's fmi2GetDirectionalDerivative computes them with the engine).

    Returns {"independent": engine coordinate indices of the states' coordinates,
    "state_vr": value reference of each state, "locals": {name: state index} of the added
    state variables, "derivatives": {name: state index} of the added derivative variables},
    or None (nothing declared) when there is no linear model at the initial state.

    Spatial models: the tree coordinates are tmt's (revolute angles, prismatic positions, the
    four Euler parameters of a spherical joint or of a floating body's rotation); their
    normalisation p . p - 1 = 0 is a row like a loop's, so coordinate partitioning (QR with
    column pivoting on Dq) keeps three of the four Euler parameters as states (the fourth,
    and the loops' dependent coordinates, follow from the closure at every evaluation): a
    state is never an Euler parameter that the others fix, and the states are a minimal set
    (2 f of them for f degrees of freedom), as fmu_mb.linearize's."""
    from ..dynamics.formulations import tmt
    from ..dynamics.linearize import model_structure

    try:
        ms = model_structure(model)
    except (FmuMbError, ArithmeticError, ValueError):   # no linear model at the initial
        return None                                      # state (a singular pose)
    if not ms["states"] and not ms["inputs"]:
        return None        # every joint driven and no inputs: nothing to differentiate
    coords = list(tmt.coordinates(model))
    independent = [coords.index(k) for k in ms["independent"]]
    mv = root.find("ModelVariables")
    variables = list(mv.iter("ScalarVariable"))
    index = {sv.get("name"): k for k, sv in enumerate(variables)}     # 0-based, = vr
    states, f = ms["states"], len(ms["independent"])
    locals_, derivs, state_vr = {}, {}, []

    def add(name, description, derivative=None):
        vr = len(variables)
        sv = ET.SubElement(mv, "ScalarVariable", name=name, valueReference=str(vr),
                           description=description, causality="local",
                           variability="continuous", initial="calculated")
        real = ET.SubElement(sv, "Real")
        if derivative is not None:
            real.set("derivative", str(derivative + 1))
        variables.append(sv)
        index[name] = vr
        return vr

    for k, s in enumerate(states):
        if s in index:
            sv = variables[index[s]]
            if sv.find("Real") is None or sv.get("variability") != "continuous":
                return None        # not a continuous Real: cannot be declared a state
        else:
            add(s, f"state {k} of the linear model: "
                + (f"coordinate {s}" if k < f else f"rate of coordinate {states[k - f]}"))
            locals_[s] = k
        state_vr.append(index[s])
    for k, s in enumerate(states):
        name = _derivative_name(s)
        if name in index:          # the rate state der(<x>) is the derivative of <x>
            sv = variables[index[name]]
            if name not in locals_:
                return None
            sv.find("Real").set("derivative", str(state_vr[k] + 1))
            derivs.setdefault(name, None)
            continue
        add(name, f"time derivative of state {s}", state_vr[k])
        derivs[name] = k
    derivs = {n: k for n, k in derivs.items() if k is not None}

    known = {s: state_vr[k] + 1 for k, s in enumerate(states)}
    for u in ms["inputs"]:
        known[u] = index[u] + 1

    def deps(names):
        return " ".join(str(i) for i in sorted({known[n] for n in names}))

    structure = root.find("ModelStructure")
    outputs = structure.find("Outputs")
    out_deps = ms["output_dependencies"]
    if outputs is not None:
        for unk in outputs.findall("Unknown"):
            name = variables[int(unk.get("index")) - 1].get("name")
            if name in out_deps:
                unk.set("dependencies", deps(out_deps[name]))
    der_el = ET.Element("Derivatives")
    for k, s in enumerate(states):
        vr = index[_derivative_name(s)]
        ET.SubElement(der_el, "Unknown", index=str(vr + 1),
                      dependencies=deps(ms["derivative_dependencies"][f"der({s})"]))
    if states:             # (a model without degrees of freedom, every joint driven: none)
        structure.insert(1 if outputs is not None else 0, der_el)
    # FMI 2.0: the state derivatives (initial="calculated") are initial unknowns, in the order
    # of their index (no dependencies attribute: they may depend on every parameter)
    initial = structure.find("InitialUnknowns")
    if initial is None:
        initial = ET.SubElement(structure, "InitialUnknowns")
    listed = {int(u.get("index")) for u in initial.findall("Unknown")}
    listed |= {index[n] + 1 for n in derivs}
    listed |= {index[n] + 1 for n in locals_}   # the added state variables (calculated)
    every = list(mv.iter("ScalarVariable"))
    for s in states:          # and the rate states that are a derivative too (der(<x>) of a
        vr = index[_derivative_name(s)]          # floating body), when calculated
        if every[vr].get("initial", "calculated") == "calculated":
            listed.add(vr + 1)
    for u in list(initial):
        initial.remove(u)
    for i in sorted(listed):
        ET.SubElement(initial, "Unknown", index=str(i))
    if not listed:
        structure.remove(initial)
    root.find("CoSimulation").set("providesDirectionalDerivative", "true")
    return {"independent": independent, "state_vr": state_vr, "locals": locals_,
            "derivatives": derivs, "n": len(coords)}


def _mark_fixed(root, name, reason):
    """Say in a parameter's description that the native FMU cannot change it, and why."""
    for sv in root.iter("ScalarVariable"):
        if sv.get("name") == name:
            note = (f" (fixed in the native FMU: {reason}; to change it, rebuild with fmu-mb "
                    f"build MODEL.py --set {name}=VALUE, or build with --python)")
            sv.set("description", (sv.get("description") or "") + note)


def _note(root, name, text):
    """Append `text` (in parentheses) to a variable's description."""
    for sv in root.iter("ScalarVariable"):
        if sv.get("name") == name:
            sv.set("description", f"{sv.get('description') or ''} ({text})".strip())


def _c_double(x):
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return float(x).hex()


def _c_list(strings):
    from .packaging import _c_string
    return "{" + ", ".join(_c_string(s) for s in strings) + ", NULL}"


def _header(model, guid, table, defaults, blob, start, linear=None):
    """fmu_model.h: the tables fmi2_native.c reads (linear: _linear_structure's, the states of
    fmi2GetDirectionalDerivative; None: the FMU provides none)."""
    from ..dynamics.formulations import CHOICES
    from ..dynamics.implicit import DAE_FORMS
    from ..dynamics.integrate import METHODS, Settings
    from .packaging import _c_string

    settings = Settings()
    n_inputs, n_outputs = len(model.inputs), len(output_spec(model))
    lines = ["/* generated by fmu_mb.fmi.native_build for model "
             f"{model.name!r}; do not edit */",
             f"#define FMU_GUID {_c_string(guid)}",
             f"#define FMU_MODEL_NAME {_c_string(model.name)}",
             f"#define FMU_N_VARS {len(table)}",
             f"#define FMU_N_PARAMS {len(defaults)}",
             f"#define FMU_N_INPUTS {n_inputs}",
             f"#define FMU_N_OUTPUTS {n_outputs}",
             f"#define FMU_START_TIME {_c_double(start)}",
             f"#define FMU_MAX_STEP {_c_double(settings.max_step)}",
             f"#define FMU_BAUMGARTE_ALPHA {_c_double(settings.baumgarte[0])}",
             f"#define FMU_BAUMGARTE_BETA {_c_double(settings.baumgarte[1])}",
             f"#define FMU_PROJECTION_TOL {_c_double(settings.projection_tol)}",
             f"static const char* const FMU_PY_METHODS[] = {_c_list(METHODS)};",
             f"static const char* const FMU_PY_FORMULATIONS[] = {_c_list(CHOICES)};",
             f"static const char* const FMU_DAE_FORMS[] = {_c_list(DAE_FORMS)};",
             "static const char* const FMU_LOG_CATEGORIES[] = "
             + _c_list(["logStatusWarning", "logStatusDiscard", "logStatusError",
                        "logStatusFatal", "logAll"]) + ";",
             "static const double FMU_PARAM_DEFAULTS[] = {"
             + ", ".join(_c_double(v) for v in defaults or [0.0]) + "};",
             "static const FmuVar FMU_VARS[] = {"]
    for name, typ, kind, index, start_value, text, low, high, structural, reason in table:
        lines.append(f"    {{{_c_string(name)}, {typ}, {kind}, {index}, {_c_double(start_value)}, "
                     f"{_c_string(text)}, {_c_double(low)}, {_c_double(high)}, {structural}, "
                     f"{_c_string(reason)}}},")
    lines.append("};")
    ind = linear["independent"] if linear else []
    lines.append(f"#define FMU_N_IND {len(ind)}   /* states: 2 x FMU_N_IND (0: no directional "
                 f"derivatives) */")
    lines.append("static const int FMU_IND[] = {" + ", ".join(map(str, ind or [0])) + "};")
    lines.append("static const int FMU_STATE_VR[] = {"
                 + ", ".join(map(str, (linear["state_vr"] if linear else None) or [0])) + "};")
    from .native_me import header_lines
    lines += header_lines(linear.get("me") if linear else None)
    lines.append(f"#define FMU_DATA_SIZE ((size_t){len(blob)})")
    lines.append("static const unsigned char FMU_DATA[] = {")
    for k in range(0, max(len(blob), 1), 24):
        chunk = blob[k:k + 24] or b"\0"
        lines.append("    " + ",".join(str(b) for b in chunk) + ",")
    lines.append("};")
    return "\n".join(lines) + "\n"


def _zip(dest, files):
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name, data in files.items():
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o755 if name.startswith("binaries/") else 0o644
                info.external_attr = (0o100000 | mode) << 16
                z.writestr(info, data)
        os.replace(partial, dest)
    finally:
        if partial.exists():
            partial.unlink()


def _documentation(model):
    from .build import _documentation as python_documentation
    return python_documentation(model)


def host_section(name):
    """HTML: what a machine needs to run a native FMU, and what it runs."""
    return f"""
<h2>What the host machine needs</h2>
<p>This is a native FMU: each of its binaries (<code>binaries/</code>, listed below) is the
compiled fmu_mb engine with the model's data inside; it needs the platform's C library (and
math library) and nothing else: no Python, no resources folder, no environment variables. The
resource location given to fmi2Instantiate is not used.</p>
<p>It runs the formulation <code>recursive</code> (<code>solver.formulation</code> =
<code>auto</code> or <code>recursive</code>) with the methods {', '.join(NATIVE_METHODS)}.
The other formulations and methods of <code>solver.formulation</code> and
<code>solver.method</code> run only in the Python FMU of the same model (<code>fmu-mb build
--python</code>); this FMU refuses them at fmi2ExitInitializationMode with fmi2Error.</p>
"""
