"""Native FMUs for every platform: the win64 binary and the FMU's own sources
(the aarch64 Linux and macOS binaries: tests/test_cross_platforms.py).

Checked against things that can disagree with them:
- the win64 DLL (zig, or MinGW-w64 without zig): its import table (objdump -p: only Windows'
  own DLLs) and export table (the fmi2* functions the linux64 binary exports, nothing else);
  its numbers, run under wine by tests/c_host/win_host.c cross-compiled for Windows, against the
  linux64 binary run by the same host source compiled for Linux, over the default experiment,
  to 1e-9 (relative to max(1, |value|));
- sources/: every file that <SourceFiles> and buildDescription.xml list is there, every
  #include "..." of the shipped C files resolves inside sources/, the buildDescription.xml
  passes fmpy's FMI 3.0 schema; a binary compiled from them alone (plain cc, as an
  importer would; and fmpy's CMake builder where cmake is installed) gives the shipped
  binary's outputs in fmpy to 1e-9;
- a machine without the cross compiler builds the FMU without win64 (sources still there).
The win64 and wine tests are skipped, saying why, where the tools are missing (pip install
"fmu_mb[cross]" or Debian's gcc-mingw-w64-x86-64; Debian's wine64).
"""
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
if not CC:
    pytest.skip("building native FMUs needs a C compiler", allow_module_level=True)

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb.fmi import native_platforms  # noqa: E402
from fmu_mb.fmi.native_build import build_native_fmu  # noqa: E402

from conftest import MODELS, ROOT  # noqa: E402

HOST = ROOT / "tests" / "c_host" / "win_host.c"
MINGW = shutil.which(native_platforms.WIN64_CC)
WIN64 = native_platforms.toolchain("x86_64-windows")[0]      # zig or MinGW-w64
OBJDUMP = shutil.which("x86_64-w64-mingw32-objdump") or shutil.which("objdump")
WINE = shutil.which("wine64") or shutil.which("wine")
NO_MINGW = "needs a win64 toolchain: the ziglang package (pip install 'fmu_mb[cross]') or " \
           "the MinGW-w64 cross compiler x86_64-w64-mingw32-gcc (Debian: gcc-mingw-w64-x86-64)"
NO_WINE = "needs wine to run the win64 binary (Debian: wine64)"
#: what a win64 binary may import: Windows' own DLLs
WINDOWS_DLLS = re.compile(r"^(kernel32|msvcrt|ucrtbase|api-ms-win-crt-[a-z0-9-]+)\.dll$", re.I)


class Built:
    def __init__(self, path, folder):
        self.path = Path(path)
        self.dir = Path(extract(str(path), str(folder)))
        self.md = read_model_description(str(path))
        self.id = self.md.coSimulation.modelIdentifier
        self.names = zipfile.ZipFile(path).namelist()


@pytest.fixture(scope="module")
def wishbone(tmp_path_factory, shared_fmu):
    """The native FMI 2.0 FMU of the double wishbone (the reference model)."""
    out = tmp_path_factory.mktemp("platforms")
    return Built(shared_fmu(MODELS / "double_wishbone.py", "native"), out / "x")


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    err = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    assert err.max() <= tol, f"largest relative difference {err.max():.3g} > {tol:g}"


def _outputs(result):
    return np.column_stack([result[n] for n in result.dtype.names])


# ---------------------------------------------------------------------- layout and sources
def test_fmu_carries_linux64_win64_and_its_sources(wishbone):
    assert f"binaries/linux64/{wishbone.id}.so" in wishbone.names
    if WIN64:
        assert f"binaries/win64/{wishbone.id}.dll" in wishbone.names
    listed = wishbone.md.buildConfigurations[0].sourceFileSets[0].sourceFiles
    assert listed[0] == "fmi2_native.c" and "fmu_mb_engine.c" in listed
    assert all(f"sources/{f}" in wishbone.names for f in listed)
    # the buildDescription lists the same files and passes fmpy's FMI 3.0 schema
    from fmpy.model_description import read_build_description
    configs = read_build_description(str(wishbone.path), validate=True)
    assert [c.modelIdentifier for c in configs] == [wishbone.id]
    assert configs[0].sourceFileSets[0].sourceFiles == listed
    # every quoted include of the shipped sources is shipped too
    src = wishbone.dir / "sources"
    for f in src.iterdir():
        if f.suffix in (".c", ".h"):
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read_text(), re.M):
                assert (src / inc).is_file(), f"{f.name} includes {inc!r}, not in sources/"
    assert validate_fmu(str(wishbone.path)) == []


def _compile_from_sources(built, dest):
    """What an importer does: compile the listed files of sources/ into its own binary."""
    listed = built.md.buildConfigurations[0].sourceFileSets[0].sourceFiles
    src = built.dir / "sources"
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([CC, "-O2", "-fPIC", "-shared", f"-I{src}",
                    *(str(src / f) for f in listed), "-o", str(dest), "-lm"],
                   check=True, capture_output=True, text=True, timeout=600)


@pytest.mark.slow     # (~50 s; test_native_fmu rebuilds the FMI 2.0 binary from its sources)
def test_sources_rebuild_a_binary_with_the_same_numbers(wishbone, tmp_path):
    copy = tmp_path / "fmu"
    shutil.copytree(wishbone.dir, copy)
    so = copy / "binaries" / "linux64" / f"{wishbone.id}.so"
    so.unlink()
    _compile_from_sources(wishbone, so)
    shipped = fmpy.simulate_fmu(str(wishbone.dir))
    rebuilt = fmpy.simulate_fmu(str(copy))
    assert len(shipped) > 100
    _close(_outputs(rebuilt), _outputs(shipped))


@pytest.mark.slow     # (~80 s: cmake and a compile of the engine)
@pytest.mark.skipif(not shutil.which("cmake"), reason="fmpy's builder needs cmake")
def test_fmpy_builder_builds_the_binary_from_the_sources(wishbone, tmp_path):
    from fmpy.build import build_platform_binary
    copy = tmp_path / "fmu"
    shutil.copytree(wishbone.dir, copy)
    (copy / "binaries" / "linux64" / f"{wishbone.id}.so").unlink()
    (tmp_path / "build").mkdir()
    build_platform_binary(str(copy.resolve()), build_dir=str(tmp_path / "build"))
    _close(_outputs(fmpy.simulate_fmu(str(copy))), _outputs(fmpy.simulate_fmu(str(wishbone.dir))))


def test_without_the_cross_compiler_the_fmu_has_no_win64(monkeypatch, tmp_path):
    real = native_platforms.toolchain
    monkeypatch.setattr(native_platforms, "toolchain", lambda t: (None, "none in this test")
                        if t != "x86_64-linux" else real(t))
    log = native_platforms.BuildLog()
    path = build_native_fmu(MODELS / "double_pendulum.py", tmp_path, log=log)
    names = zipfile.ZipFile(path).namelist()
    assert not any(n.startswith("binaries/win64/") for n in names)
    assert sorted(log.missing) == ["aarch64-linux", "darwin64", "win64"]
    assert "none in this test" in log.summary() and "not built: " in log.summary()
    assert "binaries/linux64/double_pendulum.so" in names
    assert "sources/buildDescription.xml" in names and "sources/fmu_model.h" in names


# ---------------------------------------------------------------------- win64
@pytest.mark.skipif(not (WIN64 and OBJDUMP), reason=NO_MINGW + " and objdump (binutils)")
def test_win64_dll_needs_only_windows_dlls_and_exports_fmi2_only(wishbone):
    dll = wishbone.dir / "binaries" / "win64" / f"{wishbone.id}.dll"
    text = subprocess.run([OBJDUMP, "-p", str(dll)], check=True, capture_output=True,
                          text=True).stdout
    imports = re.findall(r"DLL Name: (\S+)", text)
    assert imports and all(WINDOWS_DLLS.match(d) for d in imports), imports
    table = text.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
    exported = set(re.findall(r"\]\s+(\w+)", table))
    nm = subprocess.run(["nm", "-D", "--defined-only",
                         str(wishbone.dir / "binaries" / "linux64" / f"{wishbone.id}.so")],
                        check=True, capture_output=True, text=True).stdout
    linux = {line.split()[-1] for line in nm.splitlines() if line.split()[-1].startswith("fmi")}
    assert exported == linux and all(n.startswith("fmi2") for n in exported)


def _host(tmp_path, cc, name, extra=()):
    exe = tmp_path / name
    cc = list(cc) if isinstance(cc, tuple) else [cc]
    subprocess.run([*cc, "-O2", str(HOST), "-o", str(exe), *extra], check=True,
                   capture_output=True, text=True, timeout=300)
    return exe


def _run_host(command, env=None):
    r = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return np.loadtxt(r.stdout.splitlines(), delimiter=",", ndmin=2)


@pytest.mark.skipif(not WIN64, reason=NO_MINGW)
@pytest.mark.xdist_group("wine")   # one wine prefix, one worker
@pytest.mark.skipif(not WINE, reason=NO_WINE)
def test_win64_binary_under_wine_gives_the_linux64_numbers(wishbone, tmp_path):
    md = wishbone.md
    e = md.defaultExperiment
    start, stop, step = float(e.startTime), float(e.stopTime), float(e.stepSize)
    vrs = [str(v.valueReference) for v in md.modelVariables
           if v.causality == "output" and v.type == "Real"]
    args = [md.guid, repr(start), repr(stop), repr(step), *vrs]
    win_exe = (_host(tmp_path, MINGW, "win_host.exe", ["-static", "-static-libgcc"]) if MINGW
               else _host(tmp_path, WIN64.command, "win_host.exe", ["-s"]))
    lin_exe = _host(tmp_path, CC, "win_host", ["-ldl"])
    env = dict(os.environ, WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=",
               WINEPREFIX=str(Path(tempfile.gettempdir())
                              / f"fmu_mb_wineprefix_{os.getuid()}"))
    win = _run_host([WINE, str(win_exe),
                     str(wishbone.dir / "binaries" / "win64" / f"{wishbone.id}.dll"), *args], env)
    lin = _run_host([str(lin_exe),
                     str(wishbone.dir / "binaries" / "linux64" / f"{wishbone.id}.so"), *args])
    steps = round((stop - start) / step)
    assert win.shape == lin.shape == (steps + 1, len(vrs) + 1)
    _close(win, lin)
    # the host itself is not the reference: its linux64 rows are fmpy's
    _close(lin[:, 1:4], _outputs(fmpy.simulate_fmu(
        str(wishbone.dir), output_interval=step,
        output=[v.name for v in md.modelVariables if str(v.valueReference) in vrs[:3]]))[:, 1:])


ARM_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU = shutil.which("qemu-aarch64")
ARM_ROOT = Path("/usr/aarch64-linux-gnu")


@pytest.mark.skipif(not (ARM_CC and QEMU and ARM_ROOT.is_dir()),
                    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian: "
                           "gcc-aarch64-linux-gnu qemu-user)")
def test_sources_build_an_aarch64_binary_with_the_linux64_numbers(wishbone, tmp_path):
    """What the README tells an aarch64 user: the FMU's sources, cc -ffp-contract=off."""
    listed = wishbone.md.buildConfigurations[0].sourceFileSets[0].sourceFiles
    src = wishbone.dir / "sources"
    so = tmp_path / f"{wishbone.id}.so"
    subprocess.run([ARM_CC, "-O2", "-ffp-contract=off", "-fPIC", "-shared", f"-I{src}",
                    *(str(src / f) for f in listed), "-o", str(so), "-lm"],
                   check=True, capture_output=True, text=True, timeout=600)
    arm_host = _host(tmp_path, ARM_CC, "host_arm", ["-ldl"])
    lin_host = _host(tmp_path, CC, "host_x86", ["-ldl"])
    md = wishbone.md
    e = md.defaultExperiment
    vrs = [str(v.valueReference) for v in md.modelVariables
           if v.causality == "output" and v.type == "Real"]
    args = [md.guid, str(e.startTime), str(e.stopTime), str(e.stepSize), *vrs]
    arm = _run_host([QEMU, "-L", str(ARM_ROOT), str(arm_host), str(so), *args])
    lin = _run_host([str(lin_host),
                     str(wishbone.dir / "binaries" / "linux64" / f"{wishbone.id}.so"), *args])
    assert arm.shape == lin.shape and len(lin) > 100
    _close(arm, lin)
