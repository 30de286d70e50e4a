"""The native FMI 3.0 co-simulation FMU: `fmu-mb build --native --fmi 3`.

Checked against things that can disagree with it:
- fmpy's FMI 3.0 import: `fmpy validate` (schema, variables, model structure) and the
  buildDescription.xml schema; simulate_fmu with and without Event Mode and early return;
- the native FMI 2.0 FMU of the same model (another front over the same engine): the same
  variables (names, value references, causality, variability, units, ranges, start values,
  descriptions) and the same outputs at every communication point;
- the FMU's own state: a saved and a serialized-then-deserialized state (in another instance)
  continue bit-identically;
- the FMI 3.0 state machine and refusals, by calling the FMU as a host does (fmpy's
  FMU3Slave and ctypes): messages name the FMI 3.0 functions;
- its sources: a binary compiled from the files buildDescription.xml lists gives the same
  outputs.
Early return at impacts needs contact models in the compiled engine: that test is skipped,
saying why, while bouncing_ball does not build natively.
"""
import ctypes
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
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
if not CC:
    pytest.skip("building native FMUs needs a C compiler", allow_module_level=True)

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi3 import FMU3Slave, fmi3LogMessageCallback  # noqa: E402

from fmu_mb import load_model  # noqa: E402
from fmu_mb.errors import FmuMbError  # noqa: E402
from fmu_mb.fmi.native_fmi3 import build_model_fmu3  # noqa: E402
from fmu_mb.fmi.native_build import native_reason  # noqa: E402

from conftest import MODELS  # noqa: E402

ERROR = 3


class Built:
    def __init__(self, path, folder):
        self.path = Path(path)
        self.dir = Path(extract(str(path), str(folder)))
        self.md = read_model_description(str(path))
        self.vars = {v.name: v for v in self.md.modelVariables}
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.id = self.md.coSimulation.modelIdentifier

    def slave(self, messages=None, **kw):
        f = FMU3Slave(guid=self.md.guid, unzipDirectory=str(self.dir), modelIdentifier=self.id,
                      instanceName="inst")
        log = None
        if messages is not None:
            def log(env, status, category, message):
                messages.append((status, message.decode()))
        f.instantiate(logMessage=log, **kw)
        return f


@pytest.fixture(scope="module")
def fmus(tmp_path_factory, shared_fmu):
    """fmus(name) -> (FMI 2.0 Built, FMI 3.0 Built) of models/<name>.py, once per module."""
    out = tmp_path_factory.mktemp("fmi3")
    cache = {}

    def get(name):
        if name not in cache:
            p2 = shared_fmu(MODELS / f"{name}.py", "native")
            p3 = shared_fmu(MODELS / f"{name}.py", "native3")
            cache[name] = (Built(p2, out / f"{name}2"), Built(p3, out / f"{name}3"))
        return cache[name]
    return get


def _table(result):
    return np.column_stack([result[n] for n in result.dtype.names])


# ---------------------------------------------------------------------- the FMU
def test_fmi3_fmu_passes_fmpy_validate_and_declares_its_capabilities(fmus):
    _, f3 = fmus("double_pendulum")
    assert validate_fmu(str(f3.path)) == []
    md = f3.md
    assert md.fmiVersion == "3.0"
    import xml.etree.ElementTree as ET
    root = ET.fromstring(zipfile.ZipFile(f3.path).read("modelDescription.xml"))
    cs = root.find("CoSimulation").attrib
    assert cs["canGetAndSetFMUState"] == cs["canSerializeFMUState"] == "true"
    assert cs["hasEventMode"] == "true"
    assert cs["mightReturnEarlyFromDoStep"] == "false"   # no contacts: no early return
    assert root.get("instantiationToken") == md.guid
    names = zipfile.ZipFile(f3.path).namelist()
    assert f"binaries/x86_64-linux/{f3.id}.so" in names
    from fmpy.model_description import read_build_description
    files = read_build_description(str(f3.path), validate=True)[0].sourceFileSets[0].sourceFiles
    assert files[0] == "fmi3_native.c" and "fmi2_native.c" not in files
    assert all(f"sources/{f}" in names for f in files + ["fmi2_native.c", "fmu_model.h"])
    nm = subprocess.run(["nm", "-D", "--defined-only", str(f3.dir / "binaries" / "x86_64-linux"
                                                            / f"{f3.id}.so")],
                        capture_output=True, text=True, check=True).stdout
    exported = [line.split()[-1] for line in nm.splitlines() if " T " in line]
    assert exported and all(n.startswith("fmi3") for n in exported)
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if objdump and f"binaries/x86_64-windows/{f3.id}.dll" in names:
        text = subprocess.run([objdump, "-p", str(f3.dir / "binaries" / "x86_64-windows"
                                                  / f"{f3.id}.dll")],
                              capture_output=True, text=True, check=True).stdout
        table = text.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
        assert sorted(re.findall(r"\]\s+(\w+)", table)) == sorted(exported)
        # Windows' own DLLs only (zig links the Universal C Runtime, MinGW-w64 msvcrt)
        assert all(re.match(r"^(kernel32|msvcrt|ucrtbase|api-ms-win-crt-[a-z0-9-]+)\.dll$", d,
                            re.I) for d in re.findall(r"DLL Name: (\S+)", text))


@pytest.mark.parametrize("model", ["double_pendulum", "double_wishbone"])
def test_fmi3_fmu_has_the_variables_of_the_fmi2_fmu(fmus, model):
    f2, f3 = fmus(model)
    types = {"Real": "Float64", "Integer": "Int32", "Boolean": "Boolean", "String": "String"}
    v3 = dict(f3.vars)
    time = v3.pop("time")
    assert time.causality == "independent" and time.valueReference == len(f2.vars)
    # after `time`: model exchange's event indicators (fmu_mb.fmi.native_me), one per contact
    # and the partition's, which FMI 2.0 counts in numberOfEventIndicators instead
    indicators = [n for n, v in v3.items() if v.valueReference > time.valueReference]
    assert all(n.endswith(".event_indicator") for n in indicators)
    assert len(indicators) == f2.md.numberOfEventIndicators
    for n in indicators:
        v3.pop(n)
    assert list(v3) == list(f2.vars)
    for name, a in f2.vars.items():
        b = v3[name]
        assert b.type == types[a.type], name
        for attr in ("valueReference", "causality", "variability", "unit", "min", "max",
                     "description", "start"):
            assert getattr(b, attr) == getattr(a, attr), (name, attr)
    e2, e3 = f2.md.defaultExperiment, f3.md.defaultExperiment
    assert (e2.startTime, e2.stopTime, e2.stepSize) == (e3.startTime, e3.stopTime, e3.stepSize)
    assert {u.name for u in f2.md.unitDefinitions} <= {u.name for u in f3.md.unitDefinitions}


@pytest.mark.parametrize("model", ["double_pendulum", "double_wishbone"])
@pytest.mark.parametrize("event_mode,early", [(False, False), (True, True), (False, True)])
def test_fmi3_fmu_gives_the_numbers_of_the_fmi2_fmu(fmus, model, event_mode, early):
    f2, f3 = fmus(model)
    r2 = fmpy.simulate_fmu(str(f2.dir))
    r3 = fmpy.simulate_fmu(str(f3.dir), use_event_mode=event_mode,
                           early_return_allowed=early)
    assert r2.dtype.names == r3.dtype.names and len(r2) == len(r3) > 100
    np.testing.assert_array_equal(_table(r3), _table(r2))   # one engine, one front's code


def test_fmi3_driven_spatial_arm_gives_the_numbers_of_the_fmi2_fmu(fmus):
    """The spatial drives (engine data version 3) behind FMI 3.0: the FMI 2.0 FMU's numbers,
    which test_native_fmu holds to the Python FMU's."""
    f2, f3 = fmus("driven_arm")
    assert "waist_drive.effort" in f3.vars and "elbow_drive.effort" in f3.vars
    r2 = fmpy.simulate_fmu(str(f2.dir))
    r3 = fmpy.simulate_fmu(str(f3.dir), use_event_mode=True, early_return_allowed=True)
    assert r2.dtype.names == r3.dtype.names and len(r2) == len(r3) > 100
    np.testing.assert_array_equal(_table(r3), _table(r2))


def test_fmi3_spatial_directional_derivatives_are_the_fmi2_fmus(fmus):
    """The double wishbone's states (a wishbone angle, an Euler parameter of each of two
    spherical joints, their rates) and directional derivatives behind FMI 3.0: the FMI 2.0
    FMU's numbers (one engine call), which test_native_derivatives holds to linearize's."""
    f2, f3 = fmus("double_wishbone")
    from fmpy.fmi2 import FMU2Slave
    states = [d.variable.derivative.name for d in f2.md.derivatives]
    ders = [d.variable.name for d in f2.md.derivatives]
    inputs = [v.name for v in f2.md.modelVariables if v.causality == "input"]
    assert [d.variable.name for d in f3.md.derivatives] == ders
    assert len(states) == 6 and "upper_ball.e3" in states and inputs
    a = FMU2Slave(guid=f2.md.guid, unzipDirectory=str(f2.dir), modelIdentifier=f2.id,
                  instanceName="a")
    a.instantiate()
    a.setupExperiment(startTime=0.0)
    a.enterInitializationMode()
    a.exitInitializationMode()
    b = f3.slave()
    b.enterInitializationMode(startTime=0.0)
    b.exitInitializationMode()
    try:
        for t in (0.0, 0.01):
            if t:
                a.doStep(0.0, t)
                b.doStep(0.0, t)
            for s in states + inputs:
                da = a.getDirectionalDerivative([f2.vr[n] for n in ders], [f2.vr[s]], [1.0])
                db = b.getDirectionalDerivative([f3.vr[n] for n in ders], [f3.vr[s]], [1.0])
                np.testing.assert_array_equal(db, da)
                assert np.isfinite(da).all()
    finally:
        a.terminate()
        a.freeInstance()
        b.terminate()
        b.freeInstance()


def test_fmi3_states_continue_bit_identically(fmus):
    _, f3 = fmus("double_pendulum")
    outs = [v.valueReference for v in f3.md.modelVariables if v.causality == "output"]
    a = f3.slave()
    a.enterInitializationMode(startTime=0.0)
    a.exitInitializationMode()
    t, h = 0.0, 0.01
    for _ in range(20):
        a.doStep(t, h)
        t += h
    state = a.getFMUState()
    blob = a.serializeFMUState(state)

    def run(f, t0):
        rows, tt = [], t0
        for _ in range(30):
            assert f.doStep(tt, h) == (False, False, False, pytest.approx(tt + h, abs=0))
            tt += h
            rows.append(f.getFloat64(outs + [len(f3.vars) - 1]))
        return np.array(rows)

    first = run(a, t)
    a.setFMUState(state)
    np.testing.assert_array_equal(run(a, t), first)
    b = f3.slave()
    b.enterInitializationMode(startTime=0.0)
    b.exitInitializationMode()
    restored = b.deserializeFMUState(blob)
    b.setFMUState(restored)
    np.testing.assert_array_equal(run(b, t), first)
    assert first[-1, -1] == pytest.approx(t + 30 * h, abs=1e-12)   # `time` follows the steps
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_fmi3_event_mode_state_machine(fmus):
    _, f3 = fmus("double_pendulum")
    msgs = []
    f = f3.slave(messages=msgs, eventModeUsed=True, earlyReturnAllowed=True)
    f.enterInitializationMode(startTime=0.0, stopTime=1.0)
    f.exitInitializationMode()               # FMI 3.0: Event Mode when the master uses it
    with pytest.raises(FMICallException) as exc:
        f.doStep(0.0, 0.01)
    assert exc.value.status == ERROR
    assert "fmi3DoStep" in msgs[-1][1] and "event mode" in msgs[-1][1]
    assert f.updateDiscreteStates() == (False, False, False, False, False, 0.0)
    f.enterStepMode()
    assert f.doStep(0.0, 0.01) == (False, False, False, 0.01)
    f.enterEventMode()
    f.enterStepMode()
    f.terminate()
    f.freeInstance()
    # without eventModeUsed the FMU goes to Step Mode and refuses Event Mode
    msgs.clear()
    g = f3.slave(messages=msgs)
    g.enterInitializationMode(startTime=0.0)
    g.exitInitializationMode()
    with pytest.raises(FMICallException):
        g.enterEventMode()
    assert "eventModeUsed = false" in msgs[-1][1]
    assert g.doStep(0.0, 0.01)[3] == 0.01
    g.terminate()
    g.freeInstance()


def test_fmi3_refusals_name_fmi3_functions_and_change_nothing(fmus):
    _, f3 = fmus("double_pendulum")
    msgs = []
    f = f3.slave(messages=msgs)
    n = len(f3.vars) - 1                      # the value reference of `time`
    f.enterInitializationMode(startTime=0.5)
    assert f.getFloat64([n]) == [0.5]
    f.exitInitializationMode()
    x = f3.vr["rod1.x"]
    before = f.getFloat64([x, n])
    cases = [
        (lambda: f.getFloat64([n + 1]), "fmi3GetFloat64", "does not exist"),
        (lambda: f.setFloat64([n], [1.0]), "fmi3SetFloat64", "'time'"),
        (lambda: f.setFloat64([x], [1.0]), "fmi3SetFloat64", "output"),
        (lambda: f.getFloat32([x]), "fmi3GetFloat32", "is a Float64, not a Float32"),
        (lambda: f.getInt32([x]), "fmi3GetInt32", "is a Float64, not a Int32"),
        (lambda: f.doStep(0.25, 0.01), "doStep at t = 0.25",
         "expected the last communication point"),
        (lambda: f.enterStepMode(), "fmi3EnterStepMode", "step mode"),
        (lambda: f.getDirectionalDerivative([x], [x], [1.0]), "fmi3GetDirectionalDerivative",
         "neither a state nor an input"),
    ]
    for call, fn, text in cases:
        msgs.clear()
        with pytest.raises(FMICallException) as exc:
            call()
        assert exc.value.status in (2, ERROR), fn
        assert msgs and fn in msgs[-1][1] and text in msgs[-1][1], (fn, msgs)
        assert "fmi2" not in msgs[-1][1] and "FMI 2.0" not in msgs[-1][1], msgs[-1][1]
    assert f.getFloat64([x, n]) == before
    # nValues must match nValueReferences (every variable is a scalar)
    vrs = (ctypes.c_uint * 1)(x)
    vals = (ctypes.c_double * 2)()
    assert f.dll.fmi3GetFloat64(f.component, vrs, 1, vals, 2) == ERROR
    assert "nValues" in msgs[-1][1]
    f.terminate()
    f.freeInstance()
    # model exchange (tests/test_model_exchange.py): an instance for this FMU's token, NULL
    # with a message for another; no scheduled execution: NULL with a message
    lib = ctypes.CDLL(str(f3.dir / "binaries" / "x86_64-linux" / f"{f3.id}.so"))
    lib.fmi3InstantiateModelExchange.restype = ctypes.c_void_p
    lib.fmi3InstantiateScheduledExecution.restype = ctypes.c_void_p
    lib.fmi3FreeInstance.argtypes = [ctypes.c_void_p]
    got = []
    cb = fmi3LogMessageCallback(lambda env, st, cat, m: got.append(m.decode()))
    me = lib.fmi3InstantiateModelExchange(b"me", f3.md.guid.encode(), None, False, False,
                                          None, cb)
    assert me is not None
    lib.fmi3FreeInstance(me)
    assert lib.fmi3InstantiateModelExchange(b"me", b"{not-this-fmu}", None, False, False,
                                            None, cb) is None
    assert "instantiation token" in got[-1] and "fmi3InstantiateModelExchange" in got[-1]
    assert lib.fmi3InstantiateScheduledExecution(b"se", f3.md.guid.encode(), None, False,
                                                 False, None, cb, None, None, None) is None
    assert "no scheduled execution" in got[-1]
    # a NULL or non-UTF-8 instance name, a wrong instantiation token: NULL with a message
    lib.fmi3InstantiateCoSimulation.restype = ctypes.c_void_p
    for name, token, text in ((None, f3.md.guid.encode(), "instance name is NULL"),
                              (b"\xff\xfe", f3.md.guid.encode(), "not valid UTF-8"),
                              (b"cs", b"{not-this-fmu}", "instantiation token")):
        got.clear()
        assert lib.fmi3InstantiateCoSimulation(name, token, None, False, False, False, False,
                                               None, 0, None, cb, None) is None
        assert got and text in got[-1] and "fmi3InstantiateCoSimulation" in got[-1], got


@pytest.mark.slow   # a cold compile of the engine (~25 s); FMI 2.0's sources rebuild in the default run
def test_fmi3_sources_rebuild_the_binary(fmus, tmp_path):
    _, f3 = fmus("double_pendulum")
    copy = tmp_path / "fmu"
    shutil.copytree(f3.dir, copy)
    so = copy / "binaries" / "x86_64-linux" / f"{f3.id}.so"
    so.unlink()
    src = copy / "sources"
    files = f3.md.buildConfigurations[0].sourceFileSets[0].sourceFiles
    subprocess.run([CC, "-O2", "-fPIC", "-shared", f"-I{src}",
                    *(str(src / f) for f in files), "-o", str(so), "-lm"],
                   check=True, capture_output=True, text=True, timeout=600)
    np.testing.assert_array_equal(_table(fmpy.simulate_fmu(str(copy))),
                                  _table(fmpy.simulate_fmu(str(f3.dir))))


@pytest.mark.skipif(not shutil.which("x86_64-w64-mingw32-gcc"),
                    reason="needs the MinGW-w64 cross compiler (Debian: gcc-mingw-w64-x86-64)")
@pytest.mark.skipif(not (shutil.which("wine64") or shutil.which("wine")),
                    reason="needs wine to run the win64 binary (Debian: wine64)")
@pytest.mark.xdist_group("wine")   # one wine prefix, one worker
@pytest.mark.slow   # ~90 s of wine start-up; FMI 2.0's win64 binary runs under wine in the default run
def test_fmi3_windows_binary_under_wine_gives_the_linux_numbers(fmus, tmp_path):
    import tempfile
    _, f3 = fmus("double_pendulum")
    host = MODELS.parent / "tests" / "c_host" / "win_host.c"
    win_exe, lin_exe = tmp_path / "win_host.exe", tmp_path / "win_host"
    for cc, exe, extra in (("x86_64-w64-mingw32-gcc", win_exe, ["-static", "-static-libgcc"]),
                           (CC, lin_exe, ["-ldl"])):
        subprocess.run([cc, "-O2", str(host), "-o", str(exe), *extra], check=True,
                       capture_output=True, text=True, timeout=300)
    e = f3.md.defaultExperiment
    vrs = [str(v.valueReference) for v in f3.md.modelVariables if v.causality == "output"]
    args = [f3.md.guid, str(e.startTime), str(e.stopTime), str(e.stepSize), *vrs]
    env = dict(os.environ, WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=",
               WINEPREFIX=str(Path(tempfile.gettempdir())
                              / f"fmu_mb_wineprefix_{os.getuid()}"))
    runs = []
    for command, environ in (
            ([shutil.which("wine64") or shutil.which("wine"), str(win_exe), "-3",
              str(f3.dir / "binaries" / "x86_64-windows" / f"{f3.id}.dll")], env),
            ([str(lin_exe), "-3", str(f3.dir / "binaries" / "x86_64-linux" / f"{f3.id}.so")],
             None)):
        r = subprocess.run(command + args, capture_output=True, text=True, timeout=300,
                           env=environ)
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append(np.loadtxt(r.stdout.splitlines(), delimiter=",", ndmin=2))
    win, lin = runs
    assert win.shape == lin.shape and len(lin) > 100
    assert (np.abs(win - lin) / np.maximum(1.0, np.abs(lin))).max() <= 1e-9
    # and the host's linux rows are fmpy's
    r = fmpy.simulate_fmu(str(f3.dir), output=[f3.md.modelVariables[int(vrs[0])].name])
    np.testing.assert_array_equal(lin[:, 1], r[r.dtype.names[1]])


def test_fmi3_fuzzed_call_sequences_never_crash_and_refusals_change_nothing(fmus):
    """Seeded random FMI 3.0 call sequences (tests/fmi3_fuzz_worker.py), each in a subprocess
    of its own: no crash, no fmi3Fatal, a message for every status other than fmi3OK, and a
    refused call leaves time and every output as they were."""
    import json
    import sys
    _, f3 = fmus("double_pendulum")
    worker = Path(__file__).with_name("fmi3_fuzz_worker.py")
    steps = 0
    for seed in (1, 2, 3):
        r = subprocess.run([sys.executable, str(worker), str(f3.dir), str(seed), "300"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        report = json.loads(r.stdout.strip().splitlines()[-1])
        assert report["problems"] == [], (seed, report)
        steps += report["counts"].get("steps", 0)
    assert steps > 10        # the sequences reach Step Mode and step


# ---------------------------------------------------------------------- the build
def test_build_fmi3_is_native_only(tmp_path):
    from fmu_mb.tools.cli import main
    assert main(["build", "--native", "--fmi", "3", "--quiet", str(MODELS / "four_bar.py"),
                 "-o", str(tmp_path)]) == 0
    assert read_model_description(str(tmp_path / "four_bar.fmu")).fmiVersion == "3.0"
    path, kind, _ = build_model_fmu3(MODELS / "four_bar.py", tmp_path / "b", kind="native")
    assert kind == "native FMI 3.0" and read_model_description(str(path)).fmiVersion == "3.0"
    with pytest.raises(FmuMbError, match="--fmi 3 builds native FMUs only"):
        build_model_fmu3(MODELS / "four_bar.py", tmp_path, kind="python")
    assert native_reason(load_model(MODELS / "singular_pendulum.py")) is not None
    with pytest.raises(FmuMbError, match="cannot build an FMI 3.0 FMU.*Reduction Method"):
        build_model_fmu3(MODELS / "singular_pendulum.py", tmp_path)


@pytest.mark.parametrize("event_mode", [False, True])
def test_fmi3_bouncing_ball_returns_early_at_each_impact(fmus, event_mode):
    """With earlyReturnAllowed the FMI 3.0 FMU stops at each impact (fmpy's simulate_fmu then
    samples there and goes on to its next communication point): lastSuccessfulTime is the
    impact time the records give, and the impact times and impulses are the FMI 2.0 FMU's
    (which handles the same impacts inside its steps) to 1e-12."""
    f2, f3 = fmus("bouncing_ball")
    assert f3.md.coSimulation.mightReturnEarlyFromDoStep
    assert not fmus("double_pendulum")[1].md.coSimulation.mightReturnEarlyFromDoStep
    out = ["floor.impacts", "floor.last_time", "floor.last_impulse", "ball.y"]
    r2 = fmpy.simulate_fmu(str(f2.dir), output=out)
    r3 = fmpy.simulate_fmu(str(f3.dir), output=out, early_return_allowed=True,
                           use_event_mode=event_mode)
    h = float(f2.md.defaultExperiment.stepSize)
    t3 = r3["time"]
    off_grid = np.abs(t3 / h - np.round(t3 / h)) > 1e-6
    # (with Event Mode fmpy samples again after it: one row per time)
    keep = np.concatenate([[True], np.diff(t3) > 0])
    early = r3[off_grid & keep]
    # one early return per impact, each at the impact it reports
    assert len(early) == int(r2["floor.impacts"][-1]) >= 3
    np.testing.assert_array_equal(early["floor.last_time"], early["time"])
    assert np.all(np.diff(early["floor.impacts"]) == 1)
    # the FMI 2.0 FMU's impacts (at most one per communication step here: the last one)
    new = np.flatnonzero(np.diff(r2["floor.impacts"]) > 0) + 1
    assert len(new) == len(early)
    np.testing.assert_allclose(early["time"], r2["floor.last_time"][new], rtol=0, atol=1e-12)
    np.testing.assert_allclose(early["floor.last_impulse"], r2["floor.last_impulse"][new],
                               rtol=1e-12, atol=0)
    # on the grid the two FMUs give the same motion
    grid = r3[~off_grid & keep]
    assert len(grid) == len(r2)
    np.testing.assert_allclose(grid["ball.y"], r2["ball.y"], rtol=0, atol=1e-9)
    # without earlyReturnAllowed the FMU steps over the impacts as the FMI 2.0 FMU does
    r3b = fmpy.simulate_fmu(str(f3.dir), output=out)
    np.testing.assert_array_equal(_table(r3b), _table(r2))


def test_fmi3_tumbling_box_returns_early_at_its_impacts(fmus):
    """A spatial contact model (spatial_events.c's loop): with earlyReturnAllowed the FMI 3.0
    FMU stops at each impact event (one or several corners at once), lastSuccessfulTime the
    time its records give; the impact counts, times and impulses at the end are the FMI 2.0
    FMU's to 1e-12, and without early return the two FMUs give the same numbers bit for bit
    (its default experiment: 1.5 s, 65 impacts)."""
    f2, f3 = fmus("tumbling_box")
    assert f3.md.coSimulation.mightReturnEarlyFromDoStep
    corners = [v.name[:-len(".impacts")] for v in f2.md.modelVariables
               if v.name.endswith(".impacts")]
    out = [f"{c}.{f}" for c in corners for f in ("impacts", "last_time", "last_impulse")]
    stop = 1.5
    r2 = fmpy.simulate_fmu(str(f2.dir), output=out + ["box.z"], stop_time=stop)
    r3 = fmpy.simulate_fmu(str(f3.dir), output=out + ["box.z"], stop_time=stop,
                           early_return_allowed=True)
    h = float(f2.md.defaultExperiment.stepSize)
    t3 = r3["time"]
    keep = np.concatenate([[True], np.diff(t3) > 0])
    early = r3[(np.abs(t3 / h - np.round(t3 / h)) > 1e-6) & keep]
    total = sum(int(r2[f"{c}.impacts"][-1]) for c in corners)
    assert 10 <= len(early) <= total
    for row in early:                        # each return at the impact it reports
        assert max(row[f"{c}.last_time"] for c in corners) == row["time"]
    for c in corners:
        assert r3[f"{c}.impacts"][-1] == r2[f"{c}.impacts"][-1], c
        for f in ("last_time", "last_impulse"):
            assert abs(r3[f"{c}.{f}"][-1] - r2[f"{c}.{f}"][-1]) <= 1e-12 * max(
                1.0, abs(r2[f"{c}.{f}"][-1])), (c, f)
    r3b = fmpy.simulate_fmu(str(f3.dir), output=out + ["box.z"], stop_time=stop)
    np.testing.assert_array_equal(_table(r3b), _table(r2))
