"""The binaries of a native FMU for every desktop platform, and its sources/.

Platforms (FMI 3.0 platform tuples; FMI 2.0 folder in brackets):
    x86_64-linux   [linux64]        ELF, glibc >= 2.17 (libc, libm)
    aarch64-linux  [aarch64-linux]  ELF, glibc >= 2.17; FMI 2.0 names no aarch64 Linux platform:
                                    its folder is the FMI 3.0 tuple (docs/platforms.md)
    x86_64-windows [win64]          PE32+ DLL, Windows' own DLLs only
    x86_64-darwin  [darwin64]       Mach-O, macOS >= 10.13 (libSystem)
    aarch64-darwin [darwin64]       Mach-O, macOS >= 11; FMI 2.0's darwin64 holds one universal
                                    (x86_64 + arm64) library of the two (binfmt.universal)

Toolchains, in order of preference: the `ziglang` package (pip install "fmu_mb[cross]": a
clang that cross-compiles C for all five targets, with glibc, MinGW-w64 and macOS libc stubs,
no SDK to install), then the system's compilers: cc/gcc for the machine's own platform,
x86_64-w64-mingw32-gcc (Debian: gcc-mingw-w64-x86-64) for Windows, aarch64-linux-gnu-gcc for
aarch64 Linux. macOS binaries need zig. Every binary: -O2 -ffp-contract=off (no fused
multiply-add: the FMU computes what the in-process engine computes), only the fmi2*/fmi3*
functions exported.

Build speed: the engine's sources and the FMI front are compiled once per target, toolchain,
flags and source text (headers included) into this user's cache (cache_dir(); the front with
a generic fmu_model.h whose tables are extern: EXTERN_HEADER); per FMU only the model's data
(a small C file holding the tables of the FMU's own fmu_model.h) is compiled and linked, for
all targets in parallel. A front that does not compile against the extern tables (a table used
in a constant expression) is compiled per FMU with its own fmu_model.h instead: slower, the
same binary's behaviour.

sources/ (native_build._source_files: every C file of the binary, the files to compile listed
in <SourceFiles>): this module adds sources/buildDescription.xml (FMI 2.0.4 and 3.0), so that
an importer on another platform compiles its own binary.
"""
import hashlib
import os
import platform as _platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import FmuMbError

NATIVE_DIR = Path(__file__).resolve().parent / "native"
ENGINE_DIR = Path(__file__).resolve().parent.parent / "engine" / "native"


@dataclass(frozen=True)
class Target:
    """A platform a binary is built for."""
    name: str          # the FMI 3.0 platform tuple
    zig: str           # zig's target (with the oldest C library / OS version supported)
    ext: str           # the library's file extension
    format: str        # "elf", "pe", "macho"
    arch: str          # the architecture binfmt reads from the file


TARGETS = {t.name: t for t in (
    Target("x86_64-linux", "x86_64-linux-gnu.2.17", ".so", "elf", "x86_64"),
    Target("aarch64-linux", "aarch64-linux-gnu.2.17", ".so", "elf", "aarch64"),
    Target("x86_64-windows", "x86_64-windows-gnu", ".dll", "pe", "x86_64"),
    Target("x86_64-darwin", "x86_64-macos.10.13", ".dylib", "macho", "x86_64"),
    Target("aarch64-darwin", "aarch64-macos.11.0", ".dylib", "macho", "arm64"),
)}

#: FMI 2.0's binaries/ folders and the targets each holds (darwin64: one universal library)
FMI2_FOLDERS = {"linux64": ("x86_64-linux",), "aarch64-linux": ("aarch64-linux",),
                "win64": ("x86_64-windows",), "darwin64": ("x86_64-darwin", "aarch64-darwin")}
#: FMI 3.0's: one folder per platform tuple
FMI3_FOLDERS = {name: (name,) for name in TARGETS}

#: the MinGW-w64 cross compiler of Windows x86_64 binaries (Debian: gcc-mingw-w64-x86-64)
WIN64_CC = "x86_64-w64-mingw32-gcc"
#: the GNU cross compiler of aarch64 Linux binaries (Debian: gcc-aarch64-linux-gnu)
AARCH64_CC = "aarch64-linux-gnu-gcc"
CROSS_HINT = 'pip install "fmu_mb[cross]" (the ziglang package)'

#: flags of every object: no fused multiply-add contraction, only the marked symbols visible
BASE_CFLAGS = ("-O2", "-ffp-contract=off", "-fvisibility=hidden")


@dataclass(frozen=True)
class Toolchain:
    """A C compiler for one target: `command` compiles and links like cc."""
    label: str         # what the user is told ("zig 0.13.0", "gcc 12.2.0", ...)
    command: tuple     # the compiler's argv prefix
    target: Target
    kind: str          # "zig", "gcc", "mingw"

    @property
    def cflags(self):
        flags = list(BASE_CFLAGS)
        if self.target.format == "pe":
            # C99 printf formats (%zu) from MinGW's own stdio rather than the old msvcrt one
            flags.append("-D__USE_MINGW_ANSI_STDIO=1")
        else:
            flags.append("-fPIC")
        return flags

    def ldflags(self, exports_map, identifier="fmu"):
        strip = ["-s"] if self.kind == "zig" else []    # no debugging data (nor a .pdb file)
        if self.target.format == "elf":
            return ["-shared", f"-Wl,--version-script={exports_map}", "-Wl,--as-needed", "-lm",
                    *strip]
        if self.target.format == "macho":       # its install name: not the build's folder
            return ["-shared", f"-Wl,-install_name,@rpath/{identifier}{self.target.ext}", "-lm",
                    *strip]
        if self.kind == "zig":
            return ["-shared", *strip]
        # libgcc and every MinGW library linked in: the DLL needs only Windows' own DLLs
        return ["-shared", "-static-libgcc", "-static", "-Wl,--no-insert-timestamp", "-lm"]

    @property
    def identity(self):
        """What the cached objects depend on besides the sources: compiler and version."""
        return (self.label, self.command, self.target.name, _version(self.command))


@lru_cache(maxsize=None)
def _version(command):
    if command[0].endswith("zig") or "ziglang" in command:
        return zig_version()
    try:
        r = subprocess.run([*command, "-dumpfullversion", "-dumpmachine"], capture_output=True,
                           text=True, timeout=60)
        return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


@lru_cache(maxsize=1)
def zig_version():
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("ziglang")
    except PackageNotFoundError:
        return "?"


def zig_command():
    """The argv prefix of zig (the ziglang package's binary), or None when not installed."""
    return _zig_command()


@lru_cache(maxsize=1)
def _zig_command():
    import importlib.util
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        exe = Path(folder) / ("zig.exe" if os.name == "nt" else "zig")
        if exe.is_file() and os.access(exe, os.X_OK):
            return (str(exe),)
    return (sys.executable, "-m", "ziglang")


def _host_target():
    machine = _platform.machine().lower()
    arch = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64",
            "aarch64": "aarch64"}.get(machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(
        sys.platform if sys.platform != "linux2" else "linux")
    return f"{arch}-{system}" if arch and system else None


def _system_compiler(target):
    """(argv prefix, kind) of the system's compiler for target, or (None, why not)."""
    if target.name == _host_target() and target.format == "elf":
        names = ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]
        found = next((shutil.which(c) for c in names if shutil.which(c)), None)
        return ((found,), "gcc") if found else (None, f"none of {names} is on PATH")
    cross = {"x86_64-windows": (WIN64_CC, "mingw", "Debian: gcc-mingw-w64-x86-64"),
             "aarch64-linux": (AARCH64_CC, "gcc", "Debian: gcc-aarch64-linux-gnu"),
             "x86_64-linux": ("x86_64-linux-gnu-gcc", "gcc", "Debian: gcc-x86-64-linux-gnu")}
    if target.name in cross:
        name, kind, hint = cross[target.name]
        found = shutil.which(name)
        return ((found,), kind) if found else (None, f"{name} is not installed ({hint})")
    return None, "no system compiler builds macOS binaries here"


def toolchain(target_name):
    """(Toolchain, None) for the target, or (None, why none is available)."""
    target = TARGETS[target_name]
    zig = zig_command()
    if zig is not None:
        return Toolchain(f"zig {zig_version()}", (*zig, "cc", "-target", target.zig), target,
                         "zig"), None
    command, kind = _system_compiler(target)
    if command is None:
        return None, f"{kind}; {CROSS_HINT} builds it"
    return Toolchain(f"{Path(command[0]).name} {_version(command)}".strip(), command, target,
                     kind), None


def folders(fmi):
    return FMI2_FOLDERS if int(fmi) == 2 else FMI3_FOLDERS


#: names --platforms accepts besides the folder names of the FMI version built
ALIASES = {2: {"x86_64-linux": "linux64", "x86_64-windows": "win64", "darwin": "darwin64",
               "x86_64-darwin": "darwin64", "aarch64-darwin": "darwin64"},
           3: {"linux64": "x86_64-linux", "win64": "x86_64-windows",
               "darwin64": ("x86_64-darwin", "aarch64-darwin"),
               "darwin": ("x86_64-darwin", "aarch64-darwin")}}


def parse_platforms(text, fmi):
    """The folders of `--platforms` (comma-separated folder names, FMI 3.0 tuples or "all") for
    FMI version fmi; raises FmuMbError naming the valid names for an unknown one."""
    valid = folders(fmi)
    if text is None or text.strip() in ("", "all"):
        return list(valid)
    out = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        if name == "all":
            chosen = list(valid)
        elif name in valid:
            chosen = [name]
        elif name in ALIASES[int(fmi)]:
            alias = ALIASES[int(fmi)][name]
            chosen = list(alias) if isinstance(alias, tuple) else [alias]
        else:
            raise FmuMbError(f"--platforms: unknown platform {name!r}; the FMI {fmi} platforms "
                             f"are {', '.join(valid)} (or 'all')")
        out += [c for c in chosen if c not in out]
    return out


def select(fmi, wanted=None):
    """({folder: [Toolchain per target]}, {folder: why it cannot be built}) of the folders
    wanted (default: all of FMI version fmi)."""
    chosen, missing = {}, {}
    for folder in wanted if wanted is not None else folders(fmi):
        chains, why = [], None
        for t in folders(fmi)[folder]:
            chain, reason = toolchain(t)
            if chain is None:
                why = f"{t}: {reason}"
                break
            chains.append(chain)
        if why is None:
            chosen[folder] = chains
        else:
            missing[folder] = why
    return chosen, missing


# ---------------------------------------------------------------------- timings
class BuildLog:
    """Time per stage of a build (wall and CPU, the compilers' included) and the platforms
    built or missing; `fmu-mb build --verbose` prints it."""

    def __init__(self):
        self.stages = []          # (name, wall s, cpu s)
        self.platforms = {}       # folder -> toolchain labels
        self.missing = {}         # folder -> why
        self.notes = []

    @contextmanager
    def stage(self, name):
        t0, c0 = time.perf_counter(), _cpu()
        try:
            yield
        finally:
            self.stages.append((name, time.perf_counter() - t0, _cpu() - c0))

    def summary(self):
        built = ", ".join(f"{f} ({' + '.join(sorted(set(c)))})" for f, c in
                          self.platforms.items()) or "none"
        text = f"platforms: {built}"
        if self.missing:
            text += "; not built: " + "; ".join(f"{f} ({why})" for f, why in self.missing.items())
        return text

    def table(self):
        rows = [f"  {name:<44s} {wall:7.2f} s wall {cpu:7.2f} s CPU"
                for name, wall, cpu in self.stages]
        return "\n".join(rows + [f"  note: {n}" for n in self.notes])


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# ---------------------------------------------------------------------- cache
def cache_dir():
    """This user's cache of compiled objects: $FMU_MB_CACHE, else
    $XDG_CACHE_HOME/fmu_mb/native_objects (default ~/.cache), or a folder of the temporary
    directory named after the user id when there is no home; a folder another user could
    write to is not used (its objects would end up in the FMUs)."""
    if os.environ.get("FMU_MB_CACHE"):
        folder = Path(os.environ["FMU_MB_CACHE"])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or (
            os.path.join(os.path.expanduser("~"), ".cache")
            if os.path.expanduser("~") != "~" else None)
        uid = os.getuid() if hasattr(os, "getuid") else os.getlogin()
        folder = (Path(base) / "fmu_mb" / "native_objects" if base else
                  Path(tempfile.gettempdir()) / f"fmu_mb_native_objects_{uid}")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
        if not hasattr(os, "getuid"):          # Windows: the folder is in the user's profile
            return folder
        if st.st_uid == os.getuid() and not st.st_mode & 0o022:
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="fmu_mb_native_objects_"))   # private, this build


#: cached objects not used for this long are removed (each engine version leaves ~10 MB)
CACHE_DAYS = 14


def prune_cache(cache, keep=()):
    """Remove the folders of `cache` not used for CACHE_DAYS days (a build touches the folders
    it uses), except those in `keep`."""
    limit = time.time() - CACHE_DAYS * 86400
    keep = {Path(k).name for k in keep}
    try:
        entries = list(Path(cache).iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir() and entry.name not in keep and entry.stat().st_mtime < limit:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass


def _touch(folder):
    try:
        os.utime(folder)
    except OSError:
        pass


def _run(command, what, cwd=None):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=cwd)
    except OSError as exc:
        raise FmuMbError(f"cannot run {command[0]!r}: {exc}") from exc
    except subprocess.TimeoutExpired:
        raise FmuMbError(f"{what}: the compiler did not finish in 900 s") from None
    if result.returncode != 0:
        raise FmuMbError(f"{what} failed (exit {result.returncode}):\n"
                         f"{' '.join(command[:8])} ...\n{result.stderr.strip()[-4000:]}")


def _compile_object(chain, source, obj, defines, includes, what):
    """Compile one source to `obj` (atomic: a parallel build never sees half a file)."""
    obj.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{obj.stem}-", suffix=".o", dir=obj.parent)
    os.close(fd)
    try:
        _run([*chain.command, *chain.cflags, *(f"-D{d}" for d in defines),
              *(f"-I{i}" for i in includes), "-c", str(source), "-o", tmp], what)
        os.replace(tmp, obj)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _key(*parts, files=()):
    h = hashlib.sha1(repr(parts).encode())
    for p in files:
        h.update(Path(p).name.encode() + b"\0" + Path(p).read_bytes())
    return h.hexdigest()[:16]


def _engine_files(sources):
    """The engine's headers and the .c files its sources include (events.c, ...), then the
    sources: a change to any of them is a new key, never a stale object."""
    included = sorted(p for p in ENGINE_DIR.glob("*.c") if p not in set(sources))
    return sorted(ENGINE_DIR.glob("*.h")) + included + list(sources)


def engine_objects(chain, sources, defines, cache):
    """[(source, object path)] of the engine's sources for this toolchain, in the cache."""
    folder = Path(cache) / f"{chain.target.name}-engine-{_key(chain.identity, chain.cflags, defines, files=_engine_files(sources))}"
    return [(src, folder / (src.stem + ".o")) for src in sources]


# ---------------------------------------------------------------------- the split front
#: the tables of fmu_model.h (native_build._header) as the cached front sees them: extern
#: objects of the FMU's data file. (macro, C declaration of the symbol)
EXTERN_TABLES = (
    ("FMU_GUID", "const char* const"), ("FMU_MODEL_NAME", "const char* const"),
    ("FMU_N_VARS", "const int"), ("FMU_N_PARAMS", "const int"), ("FMU_N_INPUTS", "const int"),
    ("FMU_N_OUTPUTS", "const int"), ("FMU_N_IND", "const int"),
    ("FMU_START_TIME", "const double"), ("FMU_MAX_STEP", "const double"),
    ("FMU_BAUMGARTE_ALPHA", "const double"), ("FMU_BAUMGARTE_BETA", "const double"),
    ("FMU_PROJECTION_TOL", "const double"),
    ("FMU_PY_METHODS", "const char* const* const"),
    ("FMU_PY_FORMULATIONS", "const char* const* const"),
    ("FMU_DAE_FORMS", "const char* const* const"),
    ("FMU_LOG_CATEGORIES", "const char* const* const"),
    ("FMU_PARAM_DEFAULTS", "const double* const"), ("FMU_VARS", "const FmuVar* const"),
    ("FMU_IND", "const int* const"), ("FMU_STATE_VR", "const int* const"),
    ("FMU_DATA", "const unsigned char* const"), ("FMU_DATA_SIZE", "const size_t"),
    ("FMU_HAS_ME", "const int"), ("FMU_N_EVENT_INDICATORS", "const int"),   # model exchange
)


def _symbol(macro):
    return "fmu_mb_" + macro[4:].lower()


EXTERN_HEADER = ("/* fmu_model.h of the cached FMI front (fmu_mb.fmi.native_platforms): the "
                 "model's tables are\n   defined in the FMU's data file; sources/fmu_model.h "
                 "is the header of this FMU itself */\n"
                 + "".join(f"extern {decl} {_symbol(m)};\n#define {m} {_symbol(m)}\n"
                           for m, decl in EXTERN_TABLES))


def split_ok(header):
    """None when every table of the FMU's header is one of EXTERN_TABLES (the cached front
    fits), else what is not."""
    names = set(re.findall(r"^#define (FMU_\w+)", header, re.M))
    names |= set(re.findall(r"^static const [^=]*?\b(FMU_\w+)\s*\[\]", header, re.M))
    extra = sorted(names - {m for m, _ in EXTERN_TABLES})
    return f"fmu_model.h has tables the cached front does not know: {extra}" if extra else None


def data_source(front_text):
    """The FMU's data file: its own fmu_model.h (included) with every table as a hidden extern
    object (EXTERN_TABLES), and the FmuVar type of the front."""
    m = re.search(r"typedef struct \{[^}]*\} FmuVar;", front_text)
    if m is None:
        raise FmuMbError("the FMI front defines no 'typedef struct {...} FmuVar;'")
    lines = ["/* the model's tables for the cached FMI front (fmu_mb.fmi.native_platforms) */",
             "#include <math.h>", "#include <stddef.h>",
             "#if defined(_WIN32)", "#define HIDDEN", "#else",
             '#define HIDDEN __attribute__((visibility("hidden")))', "#endif",
             m.group(0), '#include "fmu_model.h"']
    lines += [f"HIDDEN extern {decl} {_symbol(mac)};\nHIDDEN {decl} {_symbol(mac)} = {mac};"
              for mac, decl in EXTERN_TABLES]
    return "\n".join(lines) + "\n"


def _front_text(front):
    """The front's source and the sources of the front directory it includes (fmi3_native.c
    includes fmi2_native.c, which defines FmuVar)."""
    text = Path(front).read_text(encoding="utf-8")
    for name in re.findall(r'#include "([^"]+\.c)"', text):
        if (NATIVE_DIR / name).is_file():
            text += "\n" + (NATIVE_DIR / name).read_text(encoding="utf-8")
    return text


def front_object(chain, front, defines, cache):
    """The cached object of the FMI front compiled against EXTERN_HEADER, or (None, why) when
    the front does not compile so (it is then compiled per FMU)."""
    key = _key(chain.identity, chain.cflags, defines, EXTERN_HEADER,
               files=[*sorted(ENGINE_DIR.glob("*.h")), *sorted(NATIVE_DIR.glob("*.c"))])
    folder = Path(cache) / f"{chain.target.name}-front-{key}"
    obj, failed = folder / (Path(front).stem + ".o"), folder / (Path(front).stem + ".failed")
    if obj.is_file():
        return obj, None
    if failed.is_file():
        return None, failed.read_text(errors="replace")[:300]
    include = folder / "include"
    include.mkdir(parents=True, exist_ok=True, mode=0o700)
    header = include / "fmu_model.h"
    if not header.is_file():
        fd, tmp = tempfile.mkstemp(dir=include)
        with os.fdopen(fd, "w") as f:
            f.write(EXTERN_HEADER)
        os.replace(tmp, header)
    try:
        _compile_object(chain, front, obj, defines, [include, ENGINE_DIR],
                        f"compiling the FMI front {Path(front).name} for {chain.target.name}")
    except FmuMbError as exc:
        failed.write_text(str(exc))
        return None, str(exc)[:300]
    return obj, None


# ---------------------------------------------------------------------- the binaries
def build_binaries(workdir, identifier, fmi, front, engine_sources, defines=(), wanted=None,
                   log=None, cache=None):
    """{"binaries/<folder>/<id><ext>": bytes} of every wanted folder that a toolchain builds
    (FMI version fmi; wanted: folder names, default all). workdir holds the FMU's own
    fmu_model.h. log (BuildLog) gets the platforms built, those missing and why, and the
    time of each stage."""
    log = log if log is not None else BuildLog()
    workdir, front = Path(workdir), Path(front)
    engine_sources = [Path(p) for p in engine_sources]
    defines = tuple(defines)
    chosen, missing = select(fmi, wanted)
    log.missing.update(missing)
    if not chosen:
        return {}
    cache = Path(cache) if cache is not None else cache_dir()
    header = (workdir / "fmu_model.h").read_text(encoding="utf-8")
    chains = {c.target.name: c for cs in chosen.values() for c in cs}
    workers = max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # 1. the engine's objects and the fronts not yet cached (a cold cache: all targets in
        #    parallel)
        # the objects' paths once per target: sources edited during the build change no path
        objects = {t: engine_objects(c, engine_sources, defines, cache) for t, c in chains.items()}
        with log.stage("engine and front objects (cached)"):
            jobs = []
            for t, chain in chains.items():
                for src, obj in objects[t]:
                    if not obj.is_file():
                        jobs.append(pool.submit(
                            _compile_object, chain, src, obj, defines, [ENGINE_DIR],
                            f"compiling the engine source {src.name} for {chain.target.name}"))
            why_split = split_ok(header)
            fronts = {}
            if why_split is None:
                fronts = {t: pool.submit(front_object, c, front, defines, cache)
                          for t, c in chains.items()}
            for j in jobs:
                j.result()
            fronts = {t: f.result() for t, f in fronts.items()}
            whys = [why for _, why in fronts.values() if why] + ([why_split] if why_split else [])
            if whys:
                log.notes.append(f"the FMI front is compiled per FMU: {whys[0]}")
        # 2. per target: the model's data and the link
        (workdir / "fmu_data.c").write_text(data_source(_front_text(front)), encoding="utf-8")
        exports = workdir / f"exports_fmi{fmi}.map"
        exports.write_text(f"{{\n  global: fmi{fmi}*;\n  local: *;\n}};\n", encoding="utf-8")

        def link(t):
            chain = chains[t]
            obj, _ = fronts.get(t, (None, None))
            out = workdir / t / f"{identifier}{chain.target.ext}"
            out.parent.mkdir(exist_ok=True)
            engine = [str(o) for _, o in objects[t]]
            if obj is not None:
                units = [str(workdir / "fmu_data.c"), str(obj)]
            else:                                         # the front with this FMU's header
                units = [str(front)]
            t0 = time.perf_counter()
            _run([*chain.command, *chain.cflags, *(f"-D{d}" for d in defines),
                  f"-I{workdir}", f"-I{ENGINE_DIR}", *units, *engine, "-o", str(out),
                  *chain.ldflags(exports, identifier)],
                 f"building the native FMU {identifier!r} for {t} ({chain.label})", cwd=workdir)
            return t, out.read_bytes(), time.perf_counter() - t0

        with log.stage(f"model data and link ({len(chains)} targets in parallel)"):
            built = {t: (data, secs) for t, data, secs in pool.map(link, list(chains))}
    used = {objs[0][1].parent for objs in objects.values()} | \
        {obj.parent for obj, _ in fronts.values() if obj is not None}
    for folder in used:
        _touch(folder)
    prune_cache(cache, keep=used)
    files = {}
    for folder, cs in chosen.items():
        targets = [c.target for c in cs]
        if len(targets) == 1:
            data = built[targets[0].name][0]
        else:
            from .binfmt import universal
            data = universal([built[t.name][0] for t in targets])
        files[f"binaries/{folder}/{identifier}{targets[0].ext}"] = data
        log.platforms[folder] = [c.label for c in cs]
    return files


# ---------------------------------------------------------------------- sources/
def build_description(identifier, listed):
    """sources/buildDescription.xml (the FMI 3.0 schema; FMI 2.0.4 uses the same file): the
    files to compile (listed: names in sources/), as <SourceFiles> of an FMI 2.0
    modelDescription lists them."""
    root = ET.Element("fmiBuildDescription", fmiVersion="3.0")
    bc = ET.SubElement(root, "BuildConfiguration", modelIdentifier=identifier,
                       description="the FMI front, the fmu_mb engine and the model's data "
                                   "(fmu_model.h); plain C99 and libm, no preprocessor "
                                   "definitions needed")
    fs = ET.SubElement(bc, "SourceFileSet")
    for name in listed:
        ET.SubElement(fs, "SourceFile", name=Path(name).name)
    ET.SubElement(bc, "Library", name="m", external="true",
                  description="the C math library (libm; part of the C library on Windows "
                              "and macOS)")
    ET.indent(root, "  ")
    return (b"<?xml version='1.0' encoding='UTF-8'?>\n"
            + ET.tostring(root, encoding="utf-8", xml_declaration=False) + b"\n")


#: what each folder's binary needs, for the FMU's documentation
NEEDS = {"linux64": "Linux x86_64, glibc 2.17 or later", "x86_64-linux": "Linux x86_64, glibc "
         "2.17 or later", "aarch64-linux": "Linux aarch64 (arm64), glibc 2.17 or later",
         "win64": "Windows x86_64 (only Windows' own DLLs)",
         "x86_64-windows": "Windows x86_64 (only Windows' own DLLs)",
         "darwin64": "macOS 10.13 or later on Intel, macOS 11 or later on Apple silicon (one "
                     "universal library)",
         "x86_64-darwin": "macOS 10.13 or later, Intel", "aarch64-darwin": "macOS 11 or later, "
         "Apple silicon"}


def host_note(name, fmi=2, units=None, platforms=None):
    """HTML for the FMU's documentation: the binaries it carries (platforms: the folders), and
    how to build from the sources (units: the C files to compile; None: every .c file of
    sources/)."""
    import html
    files = " ".join(f"sources/{Path(u).name}" for u in units) if units else "sources/*.c"
    n = html.escape(name)
    items = "".join(
        f"<li><code>binaries/{f}/{n}{TARGETS[folders(fmi)[f][0]].ext}</code>: "
        f"{html.escape(NEEDS.get(f, f))}</li>" for f in (platforms or []))
    aarch64 = ("" if fmi != 2 or "aarch64-linux" not in (platforms or []) else
               "<p>FMI 2.0 names no folder for aarch64 Linux; this FMU's is "
               "<code>binaries/aarch64-linux</code> (FMI 3.0's name). Importers of FMI 2.0 "
               "(fmpy, FMI Library) look in <code>binaries/linux64</code> on every 64-bit "
               "Linux: on an aarch64 machine, copy the aarch64-linux library there.</p>")
    macos = ("" if not any("darwin" in f for f in (platforms or [])) else
             "<p>The macOS binaries were cross-compiled and checked (format, architectures, "
             "exported and undefined symbols) but not run where they were built.</p>")
    return f"""
<h2>Platforms and sources</h2>
<p>Binaries:</p>
<ul>{items or '<li>none</li>'}</ul>
{aarch64}{macos}
<p>On another platform build the binary from <code>sources/</code>, which holds every C file
of it (listed in <code>sources/buildDescription.xml</code>): for example
<code>cc -O2 -ffp-contract=off -shared -fPIC -Isources {html.escape(files)} -o {n}.so -lm</code>
(macOS: <code>-o {n}.dylib</code>), or fmpy's <code>build_platform_binary</code>.</p>
"""
