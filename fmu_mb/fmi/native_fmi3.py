"""The native FMI 3.0 co-simulation FMU (issue 22): `fmu-mb build --native --fmi 3 MODEL.py`.

The same engine, model data, variable table and engine sources as the native FMI 2.0 FMU of
native_build.build_native_fmu, behind fmu_mb/fmi/native/fmi3_native.c (which includes
fmi2_native.c: both FMI versions share one implementation of the instance, the values, the
state machine, the step and the serialized states); the modelDescription.xml is made from the
FMI 2.0 one (fmi3_model_description). Binaries x86_64-linux and, with the MinGW-w64 cross
compiler, x86_64-windows; sources/ with buildDescription.xml (native_platforms). There is no
Python FMU of FMI 3.0 (pythonfmu writes FMI 2.0 only).
"""
import hashlib
import tempfile
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from ..errors import FmuMbError, ModelError
from . import native_build as nb
from .native_platforms import (NATIVE_DIR, WIN64_CC, build_description, host_note,
                               win64_binary, win64_compiler)

FMI3_FRONT = NATIVE_DIR / "fmi3_native.c"


#: FMI 2.0 variable types -> FMI 3.0 (fmi3_native.c maps the calls the same way)
FMI3_TYPES = {"Real": "Float64", "Integer": "Int32", "Boolean": "Boolean", "String": "String"}
FMI3_EXPORTS = "{\n  global: fmi3*;\n  local: *;\n};\n"


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
    # the dependencies and derivatives native_build._linear_structure declared (issue 23),
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
    for vr in sorted(ders):
        ET.SubElement(ms, "InitialUnknown", valueReference=str(vr))
    return root


def build_native_fmu3(model_file, out_dir, overrides=None):
    """Build one model file into out_dir/<model name>.fmu: the native FMI 3.0 co-simulation
    FMU (fmi3_native.c over the same engine, variable table and model data as the FMI 2.0
    FMU of native_build.build_native_fmu), with binaries/x86_64-linux, binaries/x86_64-windows
    (when the MinGW-w64 cross compiler is there) and sources/. Raises
    native_build.NativeUnavailable when the model does not run in the compiled engine."""
    from ..mechanics.loader import call_build, load_module
    from .packaging import _html, _serialise

    model_file = Path(model_file)
    module = load_module(model_file)
    overrides = dict(overrides or {})
    model = call_build(module, model_file, **overrides)
    blob, names, defaults, fixed = nb.engine_data(model, module, overrides)
    experiment = dict(getattr(module, "DEFAULT_EXPERIMENT", {}) or {})
    source = model_file.read_text(encoding="utf-8")
    root2 = nb._model_description(model, model_file, source, overrides, experiment)
    linear = nb._linear_structure(model, root2)
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
    nb._note(root2, "solver.formulation", "native FMU: 'auto' and 'recursive' (the compiled "
             "engine); the others need the Python FMU (fmu-mb build --python)")
    nb._note(root2, "solver.method", f"native FMU: {', '.join(nb.NATIVE_METHODS)}; the others "
             f"need the Python FMU (fmu-mb build --python)")
    root = fmi3_model_description(root2, guid, early_return=bool(model.contacts))
    from .native_me import add_model_exchange3      # issue 31: one binary, both interfaces
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
    documentation = _html(model.name, nb._documentation(model)
                          + nb.host_section(model.name)
                          .replace("fmi2Instantiate", "fmi3InstantiateCoSimulation")
                          .replace("fmi2", "fmi3")
                          .replace("binaries/linux64", "binaries/x86_64-linux")
                          + host_note(model.name, fmi=3, units=listed))
    dest = Path(out_dir) / f"{model.name}.fmu"
    with tempfile.TemporaryDirectory(prefix="fmu_mb_native3_") as tmp:
        tmp = Path(tmp)
        binary = nb._compile(tmp, model.name, header, [FMI3_FRONT, *engine], defines,
                             exports=FMI3_EXPORTS)
        files = {"modelDescription.xml": xml,
                 f"binaries/x86_64-linux/{model.name}.so": binary,
                 "documentation/index.html": documentation}
        dll = win64_binary(tmp, model.name, FMI3_FRONT, engine, defines, nb._cache_dir())
        if dll is not None:
            files[f"binaries/x86_64-windows/{model.name}.dll"] = dll
        files["sources/fmu_model.h"] = header.encode("utf-8")
        files.update({f"sources/{n}": d for n, d in sources_dir["files"].items()})
        files["sources/buildDescription.xml"] = build_description(model.name, listed)
        nb._zip(dest, files)
    return dest


def build_model_fmu3(model_file, out_dir, overrides=None, kind=None):
    """`fmu-mb build --fmi 3`: (path, kind, why) as native_build.build_model_fmu. Raises
    FmuMbError saying why for kind "python" and for a model that does not run in the compiled
    engine (FMI 3.0 FMUs are native only)."""
    if not Path(model_file).is_file():
        raise ModelError(f"model file {str(model_file)!r} does not exist")
    if kind == "python":
        raise FmuMbError("--fmi 3 builds native FMUs only (the Python FMU is FMI 2.0: "
                         "pythonfmu writes no FMI 3.0); drop --python, or build FMI 2.0")
    try:
        path = build_native_fmu3(model_file, out_dir, overrides)
    except nb.NativeUnavailable as exc:
        raise FmuMbError(f"{model_file}: cannot build an FMI 3.0 FMU: {exc}; FMI 3.0 FMUs are "
                         f"native only (build FMI 2.0 with --python for this model)") from None
    why = "--fmi 3: the compiled engine behind fmi3_native.c"
    if win64_compiler() is None:
        why += (f"; no x86_64-windows binary: the cross compiler {WIN64_CC} is not installed "
                f"(Debian: gcc-mingw-w64-x86-64); sources/ builds one")
    return path, "native FMI 3.0", why
