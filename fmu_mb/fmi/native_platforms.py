"""Native FMUs for every platform (issue 22): a win64 binary cross-compiled with MinGW-w64, the
FMU's own C sources (sources/, <SourceFiles>, sources/buildDescription.xml) and the FMI 3.0
co-simulation FMU of the same engine (`fmu-mb build --native --fmi 3`).

native_build.build_native_fmu calls platform_files() after it compiled the linux64 binary;
fmu_mb.fmi.native_fmi3 builds the FMI 3.0 FMU with the same pieces. This module imports no
other module of fmu_mb.fmi (both builders import it).

win64: the binary is built when the cross compiler x86_64-w64-mingw32-gcc is on PATH (Debian:
gcc-mingw-w64-x86-64), with libgcc linked statically, so that it needs only Windows' own DLLs
(KERNEL32.dll and the C runtime msvcrt.dll); only the fmi* functions are exported
(__declspec(dllexport)). Without the cross compiler the FMU has no win64 binary (its sources
build one on Windows).

sources/ (made by native_build._source_files: every C file of the binary, the files to
compile listed in <SourceFiles>): this module adds sources/buildDescription.xml (FMI 2.0.4 and
3.0) listing the same files, so that an importer on any platform (macOS, aarch64 Linux...)
compiles its own binary: `cc -O2 -ffp-contract=off -shared -fPIC -Isources <listed files> -o
<id>.so -lm`.
"""
import hashlib
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from ..errors import FmuMbError

NATIVE_DIR = Path(__file__).resolve().parent / "native"
ENGINE_DIR = Path(__file__).resolve().parent.parent / "engine" / "native"

#: the MinGW-w64 cross compiler of Windows x86_64 binaries (Debian: gcc-mingw-w64-x86-64)
WIN64_CC = "x86_64-w64-mingw32-gcc"
#: its flags: those of the linux64 binary (no fused multiply-add contraction) and C99 printf
#: formats (%zu, %llu) from MinGW's own stdio rather than the old msvcrt one
WIN64_CFLAGS = ["-O2", "-ffp-contract=off", "-D__USE_MINGW_ANSI_STDIO=1"]
#: libgcc and every MinGW library linked in: the DLL needs only Windows' own DLLs
WIN64_LDFLAGS = ["-shared", "-static-libgcc", "-static", "-Wl,--no-insert-timestamp", "-lm"]


def win64_compiler():
    """The path of the MinGW-w64 cross compiler, or None when it is not installed."""
    return shutil.which(WIN64_CC)


def _run(command, what):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except OSError as exc:
        raise FmuMbError(f"cannot run {command[0]!r}: {exc}") from exc
    if result.returncode != 0:
        raise FmuMbError(f"{what} failed (exit {result.returncode}):\n"
                         f"{result.stderr.strip()[-4000:]}")


def _win64_objects(cc, sources, defines, cache):
    """The engine's sources cross-compiled once per source text and flags, in the folder
    `cache` (native_build._cache_dir(): this user's own), or in `tmp` without a cache."""
    key = hashlib.sha1(repr((cc, WIN64_CFLAGS, defines)).encode())
    for p in sorted(ENGINE_DIR.glob("*.h")) + list(sources):
        key.update(p.name.encode() + b"\0" + p.read_bytes())
    folder = Path(cache) / f"win64-{key.hexdigest()[:16]}"
    objects = [folder / (p.stem + ".o") for p in sources]
    if all(o.is_file() for o in objects):
        return objects
    folder.mkdir(parents=True, exist_ok=True)
    for src, obj in zip(sources, objects):
        fd, tmp = tempfile.mkstemp(prefix=f".{obj.stem}-", suffix=".o", dir=folder)
        os.close(fd)
        try:
            _run([cc, *WIN64_CFLAGS, *(f"-D{d}" for d in defines), f"-I{ENGINE_DIR}", "-c",
                  str(src), "-o", tmp], f"cross-compiling the engine source {src.name} for win64")
            os.replace(tmp, obj)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return objects


def win64_binary(workdir, identifier, front, engine_sources, defines=(), cache=None):
    """The win64 DLL's bytes (front compiled with workdir/fmu_model.h, linked with the engine's
    objects, cached in the folder `cache` when given: it must be this user's own), or None
    when the cross compiler is not installed."""
    cc = win64_compiler()
    if cc is None:
        return None
    workdir = Path(workdir)
    objects = _win64_objects(cc, [Path(p) for p in engine_sources], tuple(defines),
                             cache if cache is not None else workdir)
    out = workdir / f"{identifier}.dll"
    _run([cc, *WIN64_CFLAGS, *(f"-D{d}" for d in defines), f"-I{workdir}", f"-I{ENGINE_DIR}",
          str(front), *(str(o) for o in objects), "-o", str(out), *WIN64_LDFLAGS],
         f"cross-compiling the native FMU {identifier!r} for win64")
    return out.read_bytes()


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


def platform_files(workdir, identifier, sources, defines=(), listed=(), platform="win64",
                   cache=None):
    """What a native FMU carries besides its linux64 binary and sources/:
    binaries/<platform>/<id>.dll (when the cross compiler is there) and
    sources/buildDescription.xml of the listed files. sources[0] is the front, the rest the
    engine's sources (native_build.build_native_fmu's list); workdir holds fmu_model.h; cache:
    the folder of cached objects (native_build._cache_dir())."""
    front, engine = Path(sources[0]), [Path(p) for p in sources[1:]]
    files = {}
    dll = win64_binary(workdir, identifier, front, engine, defines, cache)
    if dll is not None:
        files[f"binaries/{platform}/{identifier}.dll"] = dll
    files["sources/buildDescription.xml"] = build_description(identifier, listed)
    return files


def host_note(name, fmi=2, units=None):
    """HTML for the FMU's documentation: the platforms and how to build from the sources
    (units: the C files to compile; None: every .c file of sources/)."""
    import html
    files = " ".join(f"sources/{Path(u).name}" for u in units) if units else "sources/*.c"
    win = "binaries/win64" if fmi == 2 else "binaries/x86_64-windows"
    lin = "binaries/linux64" if fmi == 2 else "binaries/x86_64-linux"
    n = html.escape(name)
    return f"""
<h2>Platforms and sources</h2>
<p>Binaries: <code>{lin}/{n}.so</code> (Linux x86_64, glibc) and, when the FMU was built
where the MinGW-w64 cross compiler was installed, <code>{win}/{n}.dll</code> (Windows x86_64;
it needs only Windows' own DLLs). On another platform (macOS, aarch64 Linux, ...) build the
binary from <code>sources/</code>, which holds every C file of it (listed in
<code>sources/buildDescription.xml</code>): for example
<code>cc -O2 -ffp-contract=off -shared -fPIC -Isources {html.escape(files)} -o {n}.so -lm</code>
(macOS: <code>-o {n}.dylib</code>), or fmpy's <code>build_platform_binary</code>.</p>
"""

