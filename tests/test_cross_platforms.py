"""Native FMUs for five platforms: the cross-compiled binaries, checked by what can
disagree with them.

- Every binary of an FMI 2.0 and an FMI 3.0 FMU is of its platform's format and architecture
  (read from the file by fmu_mb.fmi.binfmt, whose readings are held against binutils' nm and
  objdump), exports only the FMI functions the linux64 binary exports, and needs only the C
  library: the Linux binaries' undefined symbols are all defined by this machine's glibc
  (libc.so.6, libm.so.6, read from the files); the macOS binaries load only libSystem and
  need the Linux binary's C functions plus a few libSystem names; the DLL imports only
  Windows' own DLLs.
- darwin64 is one universal Mach-O: two slices (x86_64, arm64) at aligned offsets.
- The aarch64 Linux binary, run under qemu-user by tests/c_host/win_host.c cross-compiled for
  aarch64, gives the numbers of the x86_64 binary run by the same host source, to 1e-12
  (relative to max(1, |value|)), FMI 2.0 and 3.0. It needs qemu-aarch64 (Debian: qemu-user)
  and the aarch64 C library (Debian: libc6-arm64-cross, or QEMU_LD_PREFIX).
- The macOS binaries cannot run here: they are checked, not run (docs/platforms.md says so).
- --platforms selects; a platform without a toolchain is reported with its reason; the cache
  key changes with any engine source, an included .c file too; a front that does not fit the
  cached split is compiled per FMU and gives bit-identical numbers; folders of the cache not
  used for CACHE_DAYS are removed.
"""
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb.errors import FmuMbError  # noqa: E402
from fmu_mb.fmi import binfmt  # noqa: E402
from fmu_mb.fmi import native_platforms as npl  # noqa: E402
from fmu_mb.fmi.native_build import build_native_fmu  # noqa: E402
from fmu_mb.fmi.native_fmi3 import build_native_fmu3  # noqa: E402

from conftest import MODELS, ROOT  # noqa: E402

ZIG = npl.zig_command()
NO_ZIG = "needs the ziglang package (pip install 'fmu_mb[cross]')"
HOST = ROOT / "tests" / "c_host" / "win_host.c"
QEMU = shutil.which("qemu-aarch64")
ARM_ROOT = Path(os.environ.get("QEMU_LD_PREFIX") or "/usr/aarch64-linux-gnu")
HAVE_ARM_LIBC = (ARM_ROOT / "lib" / "ld-linux-aarch64.so.1").exists()
WINDOWS_DLLS = re.compile(r"^(kernel32|msvcrt|ucrtbase|api-ms-win-crt-[a-z0-9-]+)\.dll$", re.I)
#: what a macOS binary may need from libSystem besides the C functions the Linux one needs
LIBSYSTEM = {"dyld_stub_binder", "__sincos_stret", "bzero", "__bzero", "memcmp",
             "memset_pattern16", "__stack_chk_fail", "__stack_chk_guard"}
#: symbols zig's Mach-O linker defines and exports in every dylib
MACHO_LINKER = {"__dso_handle", "_mh_dylib_header"}

if ZIG is None:
    pytest.skip(NO_ZIG, allow_module_level=True)


class Built:
    def __init__(self, path, folder, log):
        self.path = Path(path)
        self.dir = Path(extract(str(path), str(folder)))
        self.md = read_model_description(str(path))
        self.id = self.md.coSimulation.modelIdentifier
        self.names = zipfile.ZipFile(path).namelist()
        self.log = log

    def binary(self, folder):
        ext = npl.TARGETS[npl.folders(self.fmi)[folder][0]].ext
        return self.dir / "binaries" / folder / f"{self.id}{ext}"

    @property
    def fmi(self):
        return 3 if self.md.fmiVersion.startswith("3") else 2


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("cross")
    log2, log3 = npl.BuildLog(), npl.BuildLog()
    f2 = Built(build_native_fmu(MODELS / "double_pendulum.py", out / "2", log=log2),
               out / "x2", log2)
    f3 = Built(build_native_fmu3(MODELS / "double_pendulum.py", out / "3", log=log3),
               out / "x3", log3)
    return {2: f2, 3: f3}


def _libs(path):
    return binfmt.read(Path(path).read_bytes())


def test_every_platform_is_in_the_fmus_and_fmpy_validates_them(fmus):
    for fmi, f in fmus.items():
        assert sorted(f.log.platforms) == sorted(npl.folders(fmi)), f.log.missing
        for folder in npl.folders(fmi):
            assert f.binary(folder).is_file(), folder
        assert [n for n in f.names if n.startswith("binaries/")] == [
            str(f.binary(d).relative_to(f.dir)) for d in npl.folders(fmi)]
        assert validate_fmu(str(f.path)) == []
        doc = (f.dir / "documentation" / "index.html").read_text()
        assert "checked" in doc and "not run" in doc
        for folder in npl.folders(fmi):
            assert f"binaries/{folder}/" in doc
    # one modelDescription, one documentation, one sources/ for all platforms
    for f in fmus.values():
        assert sum(n.endswith("modelDescription.xml") for n in f.names) == 1
        assert "sources/fmu_model.h" in f.names and "sources/buildDescription.xml" in f.names


def test_darwin64_is_one_universal_library_of_x86_64_and_arm64(fmus):
    data = fmus[2].binary("darwin64").read_bytes()
    arches = binfmt.fat_arches(data)
    assert [a[0] for a in arches] == [binfmt.CPU_X86_64, binfmt.CPU_ARM64]
    end = 8 + 20 * len(arches)
    for cputype, subtype, offset, size, align in arches:
        assert offset % (1 << align) == 0 and offset >= end and offset + size <= len(data)
        end = offset + size
    # re-joined, the slices are the file
    slices = [data[o:o + s] for _, _, o, s, _ in arches]
    assert binfmt.universal(slices) == data
    assert [lib.arch for lib in _libs(fmus[2].binary("darwin64"))] == ["x86_64", "arm64"]
    with pytest.raises(FmuMbError, match="different architectures"):
        binfmt.universal([slices[0], slices[0]])
    with pytest.raises(FmuMbError, match="thin 64-bit Mach-O"):
        binfmt.universal([b"\x7fELF" + b"\0" * 60])


def _glibc_exports():
    names = set()
    for lib in ("libc.so.6", "libm.so.6"):
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
            p = Path(d) / lib
            if p.is_file():
                names |= _libs(p)[0].exports
                break
        else:
            pytest.skip(f"this machine's {lib} was not found (a glibc x86_64 Linux is needed)")
    return names


def test_binaries_export_only_fmi_functions_and_need_only_the_c_library(fmus):
    glibc = _glibc_exports()
    for fmi, f in fmus.items():
        linux = _libs(f.binary("linux64" if fmi == 2 else "x86_64-linux"))[0]
        fmi_functions = {n for n in linux.exports if n.startswith(f"fmi{fmi}")}
        assert linux.exports == fmi_functions and len(fmi_functions) > 20
        assert linux.undefined <= glibc, sorted(linux.undefined - glibc)
        for folder, targets in npl.folders(fmi).items():
            libs = _libs(f.binary(folder))
            assert [(lib.format, lib.arch) for lib in libs] == [
                (npl.TARGETS[t].format, npl.TARGETS[t].arch) for t in targets], folder
            for lib in libs:
                if lib.format == "elf":
                    assert lib.exports == fmi_functions, folder
                    assert set(lib.needed) <= {"libc.so.6", "libm.so.6"}, lib.needed
                    assert lib.undefined <= linux.undefined, folder
                elif lib.format == "macho":
                    assert lib.exports - MACHO_LINKER == fmi_functions, folder
                    assert lib.needed == ["/usr/lib/libSystem.B.dylib"], lib.needed
                    assert lib.name == f"@rpath/{f.id}.dylib"      # not the build's folder
                    extra = lib.undefined - linux.undefined - LIBSYSTEM
                    assert not extra, f"{folder} {lib.arch} needs {sorted(extra)}"
                else:
                    assert lib.exports == fmi_functions, folder
                    assert lib.needed and all(WINDOWS_DLLS.match(d) for d in lib.needed), \
                        lib.needed


@pytest.mark.skipif(not shutil.which("nm"), reason="needs binutils' nm")
def test_binfmt_reads_what_binutils_reads(fmus):
    for folder in ("linux64", "aarch64-linux"):
        path = fmus[2].binary(folder)
        lib = _libs(path)[0]
        out = subprocess.run(["nm", "-D", str(path)], capture_output=True, text=True,
                             check=True).stdout
        defined = {ln.split()[-1] for ln in out.splitlines()
                   if len(ln.split()) == 3 and ln.split()[1] in "TDBRW"}
        undefined = {ln.split()[-1].split("@")[0] for ln in out.splitlines()
                     if ln.split()[0] in ("U", "w")}
        assert lib.exports == defined and lib.undefined == undefined, folder
    dll = fmus[2].binary("win64")
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if objdump:
        text = subprocess.run([objdump, "-p", str(dll)], capture_output=True, text=True,
                              check=True).stdout
        table = text.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
        lib = _libs(dll)[0]
        assert lib.exports == set(re.findall(r"\]\s+(\w+)", table))
        assert lib.needed == re.findall(r"DLL Name: (\S+)", text)


def _host_run(command, env=None):
    r = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return np.loadtxt(r.stdout.splitlines(), delimiter=",", ndmin=2)


@pytest.mark.skipif(not QEMU, reason="needs qemu-aarch64 (Debian: qemu-user)")
@pytest.mark.skipif(not HAVE_ARM_LIBC, reason="needs the aarch64 C library (Debian: "
                    "libc6-arm64-cross, or QEMU_LD_PREFIX set to an aarch64 root)")
@pytest.mark.parametrize("fmi", [2, 3])
def test_aarch64_binary_under_qemu_gives_the_x86_64_numbers(fmus, fmi, tmp_path):
    f = fmus[fmi]
    arm_cc, _ = npl.toolchain("aarch64-linux")
    x86_cc, _ = npl.toolchain("x86_64-linux")
    arm_host, x86_host = tmp_path / "host_arm", tmp_path / "host_x86"
    for chain, exe in ((arm_cc, arm_host), (x86_cc, x86_host)):
        subprocess.run([*chain.command, "-O2", str(HOST), "-o", str(exe), "-ldl"], check=True,
                       capture_output=True, text=True, timeout=600)
    md = f.md
    e = md.defaultExperiment
    real = "Real" if fmi == 2 else "Float64"
    vrs = [str(v.valueReference) for v in md.modelVariables
           if v.causality == "output" and v.type == real]
    token = getattr(md, "instantiationToken", None) or md.guid
    flag = ["-3"] if fmi == 3 else []
    args = [token, str(e.startTime), str(e.stopTime), str(e.stepSize), *vrs]
    x86_dir = "linux64" if fmi == 2 else "x86_64-linux"
    arm = _host_run([QEMU, "-L", str(ARM_ROOT), str(arm_host), *flag,
                     str(f.binary("aarch64-linux")), *args])
    x86 = _host_run([str(x86_host), *flag, str(f.binary(x86_dir)), *args])
    steps = round((float(e.stopTime) - float(e.startTime)) / float(e.stepSize))
    assert arm.shape == x86.shape == (steps + 1, len(vrs) + 1) and steps >= 100
    err = np.abs(arm - x86) / np.maximum(1.0, np.abs(x86))
    assert np.all(np.isfinite(arm)) and err.max() <= 1e-12, err.max()
    # the host is not the reference: its x86_64 rows are fmpy's
    r = fmpy.simulate_fmu(str(f.dir), output_interval=float(e.stepSize),
                          output=[v.name for v in md.modelVariables
                                  if str(v.valueReference) in vrs[:3]])
    np.testing.assert_allclose(x86[:, 1:4], np.column_stack([r[n] for n in r.dtype.names[1:]]),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- selection, cache
def test_platforms_selects_and_a_missing_toolchain_is_named(monkeypatch, tmp_path):
    log = npl.BuildLog()
    path = build_native_fmu(MODELS / "double_pendulum.py", tmp_path, platforms="win64",
                            log=log)
    assert [n for n in zipfile.ZipFile(path).namelist() if n.startswith("binaries/")] == [
        "binaries/win64/double_pendulum.dll"]
    assert list(log.platforms) == ["win64"] and not log.missing
    assert npl.parse_platforms("darwin", 3) == ["x86_64-darwin", "aarch64-darwin"]
    assert npl.parse_platforms("x86_64-linux,all", 2) == list(npl.FMI2_FOLDERS)
    with pytest.raises(FmuMbError, match=r"unknown platform 'macos'.*linux64, aarch64-linux"):
        npl.parse_platforms("macos", 2)
    monkeypatch.setattr(npl, "zig_command", lambda: None)
    monkeypatch.setattr(npl, "_system_compiler", lambda t: (None, "not here"))
    with pytest.raises(FmuMbError, match=r"cannot build darwin64 \(x86_64-darwin: not here; "
                                         r"pip install \"fmu_mb\[cross\]\""):
        build_native_fmu(MODELS / "double_pendulum.py", tmp_path, platforms="darwin64")


def test_cli_platforms_and_verbose(tmp_path, capsys):
    from fmu_mb.tools.cli import main
    assert main(["build", str(MODELS / "double_pendulum.py"), "-o", str(tmp_path),
                 "--platforms", "nowhere"]) == 2
    assert "unknown platform 'nowhere'" in capsys.readouterr().err
    assert main(["build", str(MODELS / "double_pendulum.py"), "-o", str(tmp_path),
                 "--platforms", "linux64,darwin64", "--verbose", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "platforms: linux64 (zig" in err and "darwin64 (zig" in err
    assert "model data and link" in err and "s CPU" in err and "linear structure" in err


def test_cache_key_covers_every_engine_source_and_header(monkeypatch, tmp_path):
    engine = tmp_path / "engine"
    shutil.copytree(npl.ENGINE_DIR, engine)
    monkeypatch.setattr(npl, "ENGINE_DIR", engine)
    chain, _ = npl.toolchain("x86_64-linux")
    sources = [engine / "engine.c", engine / "kernel.c"]
    first = npl.engine_objects(chain, sources, (), tmp_path)[0][1].parent
    for name in ("events.c", "engine.h", "kernel.c"):        # included, header, compiled
        p = engine / name
        p.write_bytes(p.read_bytes() + b"\n/* changed */\n")
        now = npl.engine_objects(chain, sources, (), tmp_path)[0][1].parent
        assert now != first, name
        first = now
    assert npl.engine_objects(chain, sources, ("X",), tmp_path)[0][1].parent != first


def test_a_front_that_does_not_fit_the_split_is_compiled_per_fmu(monkeypatch, tmp_path):
    header = "#define FMU_N_VARS 3\n#define FMU_SOMETHING_NEW 1\n"
    assert "FMU_SOMETHING_NEW" in npl.split_ok(header)
    split = build_native_fmu(MODELS / "double_pendulum.py", tmp_path / "a",
                             platforms="linux64")
    monkeypatch.setattr(npl, "split_ok", lambda h: "a table the test made up")
    log = npl.BuildLog()
    whole = build_native_fmu(MODELS / "double_pendulum.py", tmp_path / "b",
                             platforms="linux64", log=log)
    assert any("compiled per FMU" in n for n in log.notes)

    def run(path):
        r = fmpy.simulate_fmu(str(path), stop_time=2.0)
        return np.column_stack([r[n] for n in r.dtype.names])
    np.testing.assert_array_equal(run(whole), run(split))


def test_the_cache_forgets_what_was_not_used_for_weeks(tmp_path):
    import time
    old, recent, kept = tmp_path / "old", tmp_path / "recent", tmp_path / "kept"
    for d in (old, recent, kept):
        (d / "x.o").parent.mkdir()
        (d / "x.o").write_bytes(b"o")
    weeks = time.time() - (npl.CACHE_DAYS + 1) * 86400
    os.utime(old, (weeks, weeks))
    os.utime(kept, (weeks, weeks))
    npl.prune_cache(tmp_path, keep=[kept])
    assert not old.exists() and recent.is_dir() and kept.is_dir()


def _crash():
    os._exit(3)


def test_engine_data_in_a_forked_process_is_the_serial_one(monkeypatch):
    from fmu_mb.fmi import native_build as nb
    from fmu_mb.mechanics.loader import call_build, load_module
    module = load_module(MODELS / "double_pendulum.py")
    model = call_build(module, MODELS / "double_pendulum.py", l1=0.8)
    serial = nb.engine_data(model, module, {"l1": 0.8})
    later = nb.EngineDataLater(model, module, {"l1": 0.8})
    assert later.future is not None or os.cpu_count() < 2      # it did run in a worker
    assert later.result() == serial
    monkeypatch.setattr(nb, "_background_job", _crash)          # a worker that dies
    assert nb.EngineDataLater(model, module, {"l1": 0.8}).result() == serial
    monkeypatch.setenv("FMU_MB_SERIAL", "1")
    later = nb.EngineDataLater(model, module, {"l1": 0.8})
    assert later.future is None and later.result() == serial
