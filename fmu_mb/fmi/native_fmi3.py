"""The native FMI 3.0 FMU, co-simulation and model exchange: `fmu-mb build --fmi 3 MODEL.py`.

The same engine, model data, variable table and engine sources as the native FMI 2.0 FMU of
native_build.build_native_fmu, behind fmu_mb/fmi/native/fmi3_native.c (which includes
fmi2_native.c: both FMI versions share one implementation of the instance, the values, the
state machine, the step and the serialized states); the modelDescription.xml is made from the
FMI 2.0 one (fmi3_model_description). Binaries for every platform a toolchain builds
(native_platforms: x86_64-linux, aarch64-linux, x86_64-windows, x86_64-darwin,
aarch64-darwin); sources/ with buildDescription.xml. There is no
Python FMU of FMI 3.0 (pythonfmu writes FMI 2.0 only).
"""
import hashlib
import tempfile
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from ..errors import FmuMbError, ModelError
from . import native_build as nb
from .native_platforms import NATIVE_DIR, BuildLog, build_description, host_note

FMI3_FRONT = NATIVE_DIR / "fmi3_native.c"


#: FMI 2.0 variable types -> FMI 3.0 (fmi3_native.c maps the calls the same way)
FMI3_TYPES = {"Real": "Float64", "Integer": "Int32", "Boolean": "Boolean", "String": "String"}


def fmi3_model_description(root2, guid, early_return=False):
    """The FMI 3.0 modelDescription.xml of the native FMU whose FMI 2.0 modelDescription is
    root2 (native_build's: the Python FMU's variables, units, ranges, documentation): the same
    variables with the same value references, the independent variable `time` (value
    reference = the number of variables) and Event Mode. early_return (a model with
    contacts): mightReturnEarlyFromDoStep = true, fmi3DoStep stops at the first impact inside
    a step when the master allows it (fmi3_native.c step_engine); else the FMU never returns
    early."""
    root = ET.Element("fmiModelDescription")
    root.set("fmiVersion", "3.0")
    for key, value in root2.attrib.items():
        if key in ("fmiVersion", "guid", "numberOfEventIndicators"):
            continue
        root.set(key, value)
    root.set("instantiationToken", guid)
    cs2 = root2.find("CoSimulation")
    identifier = cs2.get("modelIdentifier")
    ET.SubElement(root, "CoSimulation", {
        "modelIdentifier": identifier, "needsExecutionTool": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canGetAndSetFMUState": "true",
        "canSerializeFMUState": "true", "providesDirectionalDerivatives":
            root2.find("CoSimulation").get("providesDirectionalDerivative", "false"),
        "providesAdjointDerivatives": "false", "providesPerElementDependencies": "false",
        "canHandleVariableCommunicationStepSize": "true", "maxOutputDerivativeOrder": "0",
        "providesIntermediateUpdate": "false", "mightReturnEarlyFromDoStep": "true" if early_return else "false",
        "canReturnEarlyAfterIntermediateUpdate": "false", "hasEventMode": "true",
        "providesEvaluateDiscreteStates": "false"})
    units = root2.find("UnitDefinitions")
    unit_names = set()
    if units is not None:
        copy = ET.SubElement(root, "UnitDefinitions")
        for u in units:
            copy.append(u)
            unit_names.add(u.get("name"))
    else:
        copy = None
    if "s" not in unit_names:
        if copy is None:
            copy = ET.SubElement(root, "UnitDefinitions")
        ET.SubElement(ET.SubElement(copy, "Unit", name="s"), "BaseUnit", s="1")
    cats = root2.find("LogCategories")
    if cats is not None:
        c3 = ET.SubElement(root, "LogCategories")
        for c in cats:
            ET.SubElement(c3, "Category", name=c.get("name"),
                          description=(c.get("description") or "").replace("fmi2", "fmi3"))
    exp = root2.find("DefaultExperiment")
    if exp is not None:
        ET.SubElement(root, "DefaultExperiment", dict(exp.attrib))
    mv = ET.SubElement(root, "ModelVariables")
    outputs = []
    n = 0
    for sv in root2.iter("ScalarVariable"):
        typed = next(c for c in sv if c.tag in FMI3_TYPES)
        attrs = {k: sv.get(k) for k in ("name", "valueReference", "description", "causality",
                                        "variability", "initial") if sv.get(k) is not None}
        tag = FMI3_TYPES[typed.tag]
        start = typed.get("start")
        for k in ("unit", "displayUnit", "min", "max", "nominal"):
            if typed.get(k) is not None:
                attrs[k] = typed.get(k)
        if tag != "String" and start is not None:
            attrs["start"] = start
        if typed.get("derivative") is not None:      # FMI 2.0: an index; 3.0: a reference
            attrs["derivative"] = str(int(typed.get("derivative")) - 1)
        v = ET.SubElement(mv, tag, attrs)
        if tag == "String" and start is not None:
            ET.SubElement(v, "Start", value=start)
        if sv.get("causality") == "output":
            outputs.append(sv.get("valueReference"))
        n += 1
    ET.SubElement(mv, "Float64", name="time", valueReference=str(n), causality="independent",
                  variability="continuous", unit="s",
                  description="simulation time (the independent variable)")
    ms = ET.SubElement(root, "ModelStructure")
    # the dependencies and derivatives native_build._linear_structure declared,
    # FMI 2.0's 1-based indices as value references
    ms2 = root2.find("ModelStructure")

    def refs(unknown):
        deps = unknown.get("dependencies")
        return None if deps is None else " ".join(str(int(i) - 1) for i in deps.split())

    def element(tag, vr, unknown):
        e = ET.SubElement(ms, tag, valueReference=str(vr))
        if unknown is not None and refs(unknown) is not None:
            e.set("dependencies", refs(unknown))

    def unknowns(tag):
        group = ms2.find(tag) if ms2 is not None else None
        return {} if group is None else {int(u.get("index")) - 1: u for u in group}

    out2, der2 = unknowns("Outputs"), unknowns("Derivatives")
    ders = list(der2)
    for vr in outputs:
        element("Output", vr, out2.get(int(vr)))
    for vr in ders:
        element("ContinuousStateDerivative", vr, der2[vr])
    # the initial unknowns: FMI 2.0's list (the state derivatives, the added local state
    # variables of Euler parameters that are no output, calculated outputs), as value
    # references; FMI 3.0 asks for the same set (an Euler parameter state missing here made
    # fmpy's validation fail)
    init2 = ms2.find("InitialUnknowns") if ms2 is not None else None
    initial = {int(u.get("index")) - 1 for u in init2} if init2 is not None else set()
    for vr in sorted(initial | set(ders)):
        ET.SubElement(ms, "InitialUnknown", valueReference=str(vr))
    return root


def build_native_fmu3(model_file, out_dir, overrides=None, platforms=None, log=None):
    """Build one model file into out_dir/<model name>.fmu: the native FMI 3.0 co-simulation
    FMU (fmi3_native.c over the same engine, variable table and model data as the FMI 2.0
    FMU of native_build.build_native_fmu), with a binary for every platform a toolchain
    builds (x86_64-linux, aarch64-linux, x86_64-windows, x86_64-darwin, aarch64-darwin;
    platforms selects, log gets the stages' times: native_build.build_native_fmu's) and
    sources/. Raises native_build.NativeUnavailable when the model does not run in the
    compiled engine."""
    from ..mechanics.loader import call_build, load_module
    from .packaging import _html, _serialise

    log = log if log is not None else BuildLog()
    model_file = Path(model_file)
    with log.stage("load the model"):
        module = load_module(model_file)
        overrides = dict(overrides or {})
        model = call_build(module, model_file, **overrides)
    with log.stage("engine data and parameter program (started)"):
        pending = nb.EngineDataLater(model, module, overrides)
    try:
        experiment = dict(getattr(module, "DEFAULT_EXPERIMENT", {}) or {})
        source = model_file.read_text(encoding="utf-8")
        with log.stage("model description"):
            root2 = nb._model_description(model, model_file, source, overrides, experiment)
        with log.stage("linear structure (ModelStructure)"):
            linear = nb._linear_structure(model, root2)
        with log.stage("documentation (the 3-D view)"):   # while the worker compiles
            described = nb._documentation(model)
        with log.stage("engine data and parameter program (the rest)"):
            blob, names, defaults, fixed = pending.result()
    finally:
        pending.close()
    with log.stage("variable table, header, sources/"):
        table = nb._variable_table(model, root2, names, fixed, linear)
        engine, defines = nb.engine_sources()
        front = [FMI3_FRONT, nb.FRONT_SOURCE]
        digest = hashlib.sha1(b"fmi3")
        for part in (blob, repr(table).encode(), repr(sorted(overrides.items())).encode(),
                     *(p.read_bytes() for p in front + list(engine)
                       + sorted(NATIVE_DIR.glob("me*.c")))):
            digest.update(part)
        guid = "{" + str(uuid.UUID(bytes=digest.digest()[:16], version=5)) + "}"
        root2.set("generationTool", "fmu_mb (native FMU: the compiled engine, no Python)")
        for name, reason in fixed.items():
            nb._mark_fixed(root2, name, reason)
        # the notes native_build.build_native_fmu adds (tests/test_fmi3.py holds the two FMUs'
        # variables equal)
        nb._note(root2, "solver.formulation", "native FMU: 'auto' and 'recursive' (the "
                 "compiled engine); the others need the Python FMU (fmu-mb build --python)")
        nb._note(root2, "solver.method", f"native FMU: {', '.join(nb.NATIVE_METHODS)}; the "
                 f"others need the Python FMU (fmu-mb build --python)")
        root = fmi3_model_description(root2, guid, early_return=bool(model.contacts))
        from .native_me import add_model_exchange3  # one binary, both interfaces
        if linear is not None:
            linear["me"] = add_model_exchange3(root, model, linear)
        xml = _serialise(root)
        start = float(experiment.get("start_time", 0.0))
        header = nb._header(model, guid, table, defaults, blob, start, linear)
        # sources/: the FMI 2.0 FMU's (native_build._source_files) with this front compiled
        # instead of fmi2_native.c, which it includes
        sources_dir = nb._source_files(defines)
        sources_dir["files"][FMI3_FRONT.name] = FMI3_FRONT.read_bytes()
        listed = [FMI3_FRONT.name if n == nb.FRONT_SOURCE.name else n
                  for n in sources_dir["listed"]]
    dest = Path(out_dir) / f"{model.name}.fmu"
    with tempfile.TemporaryDirectory(prefix="fmu_mb_native3_") as tmp:
        tmp = Path(tmp)
        (tmp / "fmu_model.h").write_text(header, encoding="utf-8")
        binaries = nb.build_platform_binaries(tmp, model.name, 3, FMI3_FRONT, engine, defines,
                                              platforms, log)
        documentation = _html(model.name, described
                              + nb.host_section(model.name)
                              .replace("fmi2Instantiate", "fmi3InstantiateCoSimulation")
                              .replace("fmi2", "fmi3")
                              + host_note(model.name, fmi=3, units=listed,
                                          platforms=list(log.platforms)))
        with log.stage("zip"):
            nb.package(dest, xml, binaries, documentation, header, sources_dir["files"],
                       build_description(model.name, listed))
    return dest


def build_model_fmu3(model_file, out_dir, overrides=None, kind=None, platforms=None, log=None):
    """`fmu-mb build --fmi 3`: (path, kind, why) as native_build.build_model_fmu. Raises
    FmuMbError saying why for kind "python" and for a model that does not run in the compiled
    engine (FMI 3.0 FMUs are native only)."""
    if not Path(model_file).is_file():
        raise ModelError(f"model file {str(model_file)!r} does not exist")
    if kind == "python":
        raise FmuMbError("--fmi 3 builds native FMUs only (the Python FMU is FMI 2.0: "
                         "pythonfmu writes no FMI 3.0); drop --python, or build FMI 2.0")
    try:
        log = log if log is not None else BuildLog()
        path = build_native_fmu3(model_file, out_dir, overrides, platforms, log)
    except nb.NativeUnavailable as exc:
        raise FmuMbError(f"{model_file}: cannot build an FMI 3.0 FMU: {exc}; FMI 3.0 FMUs are "
                         f"native only (build FMI 2.0 with --python for this model)") from None
    return (path, "native FMI 3.0",
            f"--fmi 3: the compiled engine behind fmi3_native.c; {log.summary()}")
