"""FMUs of every model: validation, fmpy, libcosim and a plain C host against simulate(),
state round trips, reset, several instances, and every bad-input case."""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

from fmpy import extract, read_model_description, simulate_fmu  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb import Settings, load_model, simulate  # noqa: E402

from conftest import MODEL_FILES, MODELS  # noqa: E402

C_HOST = Path(__file__).resolve().parent / "c_host" / "fmi2_host.c"

LOCKING_MODEL = Path(__file__).resolve().parent / "data" / "locking_four_bar.py"


class _Fmus(dict):
    """name -> the FMU built from models/<name>.py ("locking": LOCKING_MODEL), built on first
    use (a run of a few tests, e.g. tests/test_test_order.py's, builds only what they use) by
    conftest's shared_fmu (once per test run, shared with the other modules and workers)."""

    def __init__(self, shared_fmu):
        super().__init__()
        self.shared_fmu = shared_fmu
        self.sources = {p.stem: p for p in MODEL_FILES}
        self.sources["locking"] = LOCKING_MODEL

    def __missing__(self, name):
        path = self[name] = self.shared_fmu(self.sources[name], "python")
        return path


@pytest.fixture(scope="session")
def fmus(shared_fmu):
    return _Fmus(shared_fmu)


def vr_of(fmu_path):
    md = read_model_description(str(fmu_path))
    return {v.name: v.valueReference for v in md.modelVariables}, md


@pytest.mark.parametrize("name", [p.stem for p in MODEL_FILES])
def test_fmu_validates(fmus, name):
    assert validate_fmu(str(fmus[name])) == []


def test_fmpy_command_line_validates_an_fmu(fmus):
    """`python -m fmpy validate` (fmpy.cli: the validate_fmu above, run for every model, and
    its exit status) accepts an FMU."""
    cli = subprocess.run([sys.executable, "-m", "fmpy", "validate",
                          str(fmus["four_bar"])], capture_output=True, text=True)
    assert cli.returncode == 0 and "No problems found" in cli.stdout, cli.stdout + cli.stderr


def applied_inputs(calls, vrs):
    """The input values fmpy set before each doStep, parsed from its FMI call log."""
    current, per_step = {}, []
    for msg in calls:
        if msg.startswith("fmi2SetReal("):
            m = re.search(r"vr=\[([^\]]*)\], nvr=\d+, value=\[([^\]]*)\]", msg)
            refs = [int(v) for v in m.group(1).split(",")]
            vals = [float(v) for v in m.group(2).split(",")]
            current.update(zip(refs, vals))
        elif msg.startswith("fmi2DoStep("):
            per_step.append([current.get(v, 0.0) for v in vrs])
    return np.array(per_step)


@pytest.mark.parametrize("name", [p.stem for p in MODEL_FILES])
def test_fmu_matches_simulate_with_inputs_and_start_values(fmus, name):
    model = load_model(MODELS / f"{name}.py")
    real_params = [p for p in model.parameters
                   if isinstance(p.value, float) and p.unit not in ("rad", "rad/s")
                   and p.value != 0.0 and not p.structural]
    start = {real_params[0].name: real_params[0].value * 1.1} if real_params else {}
    inputs = None
    dt = 0.05
    if model.inputs:
        # an input table with a step and a ramp; fmpy interpolates it and sets the values
        # at each communication point; the reference gets exactly the values fmpy set
        times = np.array([0.0, 0.2, 0.2, 1.0])
        dtype = [("time", float)] + [(i.name, float) for i in model.inputs]
        inputs = np.zeros(len(times), dtype=dtype)
        inputs["time"] = times
        for k, i in enumerate(model.inputs):
            inputs[i.name] = [0.3 * (k + 1), 0.1, -0.2 * (k + 1), 0.4]
    calls = []
    r = simulate_fmu(str(fmus[name]), stop_time=0.5, output_interval=dt,
                     start_values=start, input=inputs, fmi_call_logger=calls.append)
    assert r["time"][-1] == pytest.approx(0.5, abs=1e-12)
    table = {}
    if model.inputs:
        vr, _ = vr_of(fmus[name])
        per_step = applied_inputs(calls, [vr[i.name] for i in model.inputs])
        assert per_step.shape[0] == 10
        assert len(set(per_step[:, 0])) > 2            # the inputs really vary
        for k, i in enumerate(model.inputs):
            table[i.name] = (lambda v: lambda t: v[min(int(round(t / dt)), len(v) - 1)])(
                per_step[:, k])
    ref = simulate(load_model(MODELS / f"{name}.py", **start), 0.5, dt, inputs=table)
    for col in r.dtype.names[1:]:
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)


def test_units_are_declared(fmus):
    _, md = vr_of(fmus["slider_crank"])
    units = {v.name: v.unit for v in md.modelVariables}
    assert units["crank.x"] == "m" and units["crank.omega"] == "rad/s"
    assert units["drive.h"] == "N.m" and units["O.fx"] == "N"
    assert {u.name for u in md.unitDefinitions} >= {"m", "rad/s", "N.m", "N"}


def test_resources_hold_package_and_model_file(fmus):
    names = zipfile.ZipFile(fmus["four_bar"]).namelist()
    assert "resources/four_bar.py" in names
    assert "resources/fmu_mb/dynamics/integrate.py" in names


def _code_files(code):
    """co_filename of a code object and of every code object nested in it."""
    yield code.co_filename
    for c in code.co_consts:
        if hasattr(c, "co_filename"):
            yield from _code_files(c)


def test_bytecode_is_checked_hash_of_the_packed_sources(fmus):
    """The FMU ships bytecode, so that instantiating it does not compile the bundled packages
    (bench/fmu_step.py, start-up). Only what cannot go stale or leak: exactly one pyc per
    Python file in resources/, for this interpreter's cache tag, checked-hash (PEP 552: the
    import system compares the source's hash on every import), the hash of the packed source,
    and code objects named by the path relative to resources/, never a path of this machine
    (the build copies the package to a temporary folder and pythonfmu to another)."""
    import importlib.util
    import marshal
    import tempfile

    z = zipfile.ZipFile(fmus["four_bar"])
    names = set(z.namelist())
    sources = {n for n in names if n.startswith("resources/") and n.endswith(".py")}
    tag = sys.implementation.cache_tag
    pycs = {n for n in names if "__pycache__" in n or n.endswith(".pyc")}
    assert "resources/fmu_mb/dynamics/__pycache__/integrate." + tag + ".pyc" in pycs
    assert pycs == {f"{d}/__pycache__/{f[:-3]}.{tag}.pyc"
                    for d, _, f in (n.rpartition("/") for n in sources)}
    # the project, the FMU's folder and the build's temporary folders (fmi/build.py, packaging)
    machine = {str(MODELS.parent), str(Path(fmus["four_bar"]).parent),
               str(Path(tempfile.gettempdir()) / "fmu_mb_")}
    for n in pycs:
        d, _, f = n.partition("/__pycache__/")
        source_name = f"{d}/{f.rsplit('.', 2)[0]}.py"
        data = z.read(n)
        assert data[:4] == importlib.util.MAGIC_NUMBER, n
        assert int.from_bytes(data[4:8], "little") == 0b11, n      # hash-based, checked
        assert data[8:16] == importlib.util.source_hash(z.read(source_name)), n
        relative = source_name.split("/", 1)[1]
        assert set(_code_files(marshal.loads(data[16:]))) == {relative}, n
        assert not [p for p in machine if p.encode() in data], n


PYTHONFMU_NAMES = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import pythonfmu
lazy = "pythonfmu.builder" not in sys.modules
from pythonfmu import (FmuBuilder, Fmi2Causality, Fmi2Initial, Fmi2Variability, Fmi2Slave,
                       Boolean, Integer, Real, String, DefaultExperiment, __version__)
import pythonfmu.builder, pythonfmu.enums, pythonfmu.fmi2slave, pythonfmu.variables
same = [FmuBuilder is pythonfmu.builder.FmuBuilder, Fmi2Slave is pythonfmu.fmi2slave.Fmi2Slave,
        Real is pythonfmu.variables.Real, Fmi2Causality is pythonfmu.enums.Fmi2Causality]
try:
    pythonfmu.nothing
    missing = False
except AttributeError:
    missing = True
print(json.dumps({"file": pythonfmu.__file__, "lazy": lazy, "same": same,
                  "version": __version__, "missing": missing}))
"""


def test_pythonfmu_in_the_fmu_imports_its_builder_only_when_asked(fmus, tmp_path):
    """The FMU's copy of pythonfmu has pythonfmu's names, FmuBuilder imported on first use
    (packaging.LAZY_PYTHONFMU_INIT: an FMU never builds, and the builder's imports cost ~10 ms
    of every instantiation); its pyc is of the replaced source (the bytecode test above)."""
    import json

    from fmu_mb.fmi.packaging import LAZY_PYTHONFMU_INIT

    z = zipfile.ZipFile(fmus["four_bar"])
    assert z.read("resources/pythonfmu/__init__.py") == LAZY_PYTHONFMU_INIT
    z.extractall(tmp_path)
    p = subprocess.run([sys.executable, "-c", PYTHONFMU_NAMES, str(tmp_path / "resources")],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert Path(out["file"]) == tmp_path / "resources" / "pythonfmu" / "__init__.py"
    assert out["lazy"] and all(out["same"]) and out["missing"]
    assert out["version"] == pythonfmu.__version__


USES_BYTECODE = r"""
import importlib._bootstrap_external as ext, json, sys
compiled = []
original = ext.SourceLoader.source_to_code
def spy(self, data, path, *args, **kwargs):
    compiled.append(path)
    return original(self, data, path, *args, **kwargs)
ext.SourceLoader.source_to_code = spy
sys.path.insert(0, sys.argv[1])
import fmu_mb.fmi.slave, fmu_mb.units
print(json.dumps({"compiled": compiled, "file": fmu_mb.__file__,
                  "edited": getattr(fmu_mb.units, "EDITED", None),
                  "co": fmu_mb.fmi.slave.module_from_source.__code__.co_filename}))
"""


def test_the_shipped_bytecode_is_used_and_an_edited_source_wins(fmus, tmp_path):
    """Importing the FMU's fmu_mb compiles nothing (the pycs are valid for this interpreter);
    after a source in the unpacked FMU is edited, that module is compiled from the edited
    source (checked hash), the others still come from their pycs."""
    import json

    zipfile.ZipFile(fmus["four_bar"]).extractall(tmp_path)
    resources = tmp_path / "resources"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")

    def run():
        p = subprocess.run([sys.executable, "-c", USES_BYTECODE, str(resources)],
                           capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run()
    assert Path(first["file"]) == resources / "fmu_mb" / "__init__.py"
    assert Path(first["co"]) == resources / "fmu_mb" / "fmi" / "slave.py"   # the real path
    assert [c for c in first["compiled"] if "fmu_mb" in c or "pythonfmu" in c] == []
    units = resources / "fmu_mb" / "units.py"
    units.write_text(units.read_text() + "\nEDITED = 1\n")
    second = run()
    assert second["edited"] == 1
    assert [Path(c) for c in second["compiled"] if "fmu_mb" in c] == [units]


# ---------------------------------------------------------------------- fmpy low level
def instantiate(fmu_path, name="inst", unzipdir=None):
    md = read_model_description(str(fmu_path))
    unzipdir = unzipdir or extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir,
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    messages = []
    fmu.instantiate(loggingOn=True, callbacks=None)
    return fmu, md, unzipdir, messages


def init(fmu, start=None, vr=None):
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    for k, v in (start or {}).items():
        fmu.setReal([vr[k]], [v])
    fmu.exitInitializationMode()


def run(fmu, vr, t0, n, dt, names, inp=None):
    out = []
    t = t0
    for k in range(n):
        if inp:
            fmu.setReal([vr[inp]], [0.5 * np.sin(3 * t)])
        fmu.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
        t += dt
        out.append(fmu.getReal([vr[x] for x in names]))
    return np.array(out), t


NAMES = ["rod1.phi", "rod2.phi", "B.fx", "energy.total"]


def test_state_get_set_and_serialize_continue_bit_identically(fmus):
    path = fmus["double_pendulum"]
    vr, _ = vr_of(path)
    a, _, unz, _ = instantiate(path, "a")
    init(a)
    run(a, vr, 0.0, 37, 0.013, NAMES, "actuator_A.h")
    t = 37 * 0.013
    saved = a.getFMUstate()
    blob = a.serializeFMUstate(saved)
    first, _ = run(a, vr, t, 25, 0.011, NAMES, "actuator_A.h")
    a.setFMUstate(saved)
    again, _ = run(a, vr, t, 25, 0.011, NAMES, "actuator_A.h")
    assert np.array_equal(first, again)
    b, _, _, _ = instantiate(path, "b", unz)
    init(b)
    b.setFMUstate(b.deSerializeFMUstate(blob))
    other, _ = run(b, vr, t, 25, 0.011, NAMES, "actuator_A.h")
    assert np.array_equal(first, other)
    a.freeFMUstate(saved)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_reset_and_two_instances_match_a_fresh_instance(fmus):
    path = fmus["double_pendulum"]
    vr, _ = vr_of(path)
    a, _, unz, _ = instantiate(path, "a")
    b, _, _, _ = instantiate(path, "b", unz)
    init(a, {"l1": 0.7}, vr)
    init(b)
    ra, _ = run(a, vr, 0.0, 20, 0.01, NAMES, "actuator_A.h")
    rb, _ = run(b, vr, 0.0, 20, 0.01, NAMES)
    assert not np.allclose(ra, rb)
    a.reset()
    init(a)
    ra2, _ = run(a, vr, 0.0, 20, 0.01, NAMES)
    assert np.array_equal(ra2, rb)
    ref = simulate(load_model(MODELS / "double_pendulum.py"), 0.2, 0.01)
    np.testing.assert_allclose(rb[:, 0], ref["rod1.phi"][1:], rtol=1e-12, atol=1e-13)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_two_different_fmus_in_one_process(fmus):
    dp, sc = fmus["double_pendulum"], fmus["slider_crank"]
    vr1, _ = vr_of(dp)
    vr2, _ = vr_of(sc)
    a, *_ = instantiate(dp, "dp")
    b, *_ = instantiate(sc, "sc")
    init(a)
    init(b)
    ra, _ = run(a, vr1, 0.0, 10, 0.02, ["rod2.phi"])
    rb, _ = run(b, vr2, 0.0, 10, 0.02, ["slider.x"])
    np.testing.assert_allclose(ra[:, 0], simulate(load_model(MODELS / "double_pendulum.py"),
                                                  0.2, 0.02)["rod2.phi"][1:], atol=1e-12)
    np.testing.assert_allclose(rb[:, 0], simulate(load_model(MODELS / "slider_crank.py"),
                                                  0.2, 0.02)["slider.x"][1:], atol=1e-12)
    for f in (a, b):
        f.terminate()
        f.freeInstance()


def test_deterministic_outputs(fmus):
    res = []
    for _ in range(2):
        r = simulate_fmu(str(fmus["four_bar"]), stop_time=0.3, output_interval=0.01)
        res.append(r)
    for col in res[0].dtype.names:
        assert np.array_equal(res[0][col], res[1][col])


def test_small_and_irregular_communication_steps(fmus):
    path = fmus["double_pendulum"]
    vr, _ = vr_of(path)
    a, *_ = instantiate(path, "a")
    init(a)
    t = 0.0
    for dt in (1e-6, 3.7e-4, 0.0123, 1e-5, 0.05):
        a.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
        t += dt
    ref = simulate(load_model(MODELS / "double_pendulum.py"), t, t)
    assert a.getReal([vr["rod2.phi"]])[0] == pytest.approx(ref["rod2.phi"][-1], abs=1e-9)
    a.terminate()
    a.freeInstance()


# ---------------------------------------------------------------------- bad input
def instantiate_logged(path, name, messages):
    """FMU2Slave with a logger callback that collects the messages (as fmpy does)."""
    from ctypes import byref

    from fmpy import calloc, free
    from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                           fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
    from fmpy.logging import addLoggerProxy

    md = read_model_description(str(path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(
        lambda env, inst, status, cat, msg: messages.append(msg.decode()))
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    addLoggerProxy(byref(cb))
    fmu.instantiate(callbacks=cb, loggingOn=True)     # (fmu.callbacks keeps cb alive)
    # fmpy's logger proxy keeps the last logger in a process-wide variable that other
    # instances' default callbacks also go through: conftest's autouse fixture points it
    # back at fmpy's printLogMessage after the test (fmpy_logger.py)
    return fmu, {v.name: v.valueReference for v in md.modelVariables}


def discarded(fmu, t, dt, status=2):
    """doStep is refused with `status`: fmi2Discard (2) for a call the master can correct,
    fmi2Error (3) for a step that fails in the model (docs/fmi-statuses.md); never fatal."""
    with pytest.raises(FMICallException) as exc:
        fmu.doStep(currentCommunicationPoint=t, communicationStepSize=dt)
    assert exc.value.status == status


@pytest.mark.parametrize("case", ["nan_input", "inf_input", "negative_step", "wrong_time"])
def test_bad_input_discards_and_keeps_state(fmus, case):
    path = fmus["double_pendulum"]
    vr, _ = vr_of(path)
    a, *_ = instantiate(path, "a")
    init(a)
    run(a, vr, 0.0, 5, 0.01, NAMES)
    before = a.getReal([vr[x] for x in NAMES])
    if case == "nan_input":
        a.setReal([vr["actuator_A.h"]], [float("nan")])
        discarded(a, 0.05, 0.01, status=3)
        a.setReal([vr["actuator_A.h"]], [0.0])
    elif case == "inf_input":
        a.setReal([vr["actuator_B.h"]], [float("inf")])
        discarded(a, 0.05, 0.01, status=3)
        a.setReal([vr["actuator_B.h"]], [0.0])
    elif case == "negative_step":
        discarded(a, 0.05, -0.01)
    else:
        discarded(a, 0.3, 0.01)
    assert a.getReal([vr[x] for x in NAMES]) == before
    # the instance stays usable from the same point and gives the undisturbed result
    rest, _ = run(a, vr, 0.05, 5, 0.01, NAMES)
    ref = simulate(load_model(MODELS / "double_pendulum.py"), 0.1, 0.01)
    assert rest[-1][0] == pytest.approx(ref["rod1.phi"][-1], abs=1e-12)
    a.terminate()
    a.freeInstance()


def test_lock_up_discards_with_logged_message_and_keeps_state(fmus):
    messages = []
    a, vr = instantiate_logged(fmus["locking"], "lock", messages)
    init(a)
    t = 0.0
    for _ in range(8):
        a.doStep(currentCommunicationPoint=t, communicationStepSize=0.1)
        t += 0.1
    before = a.getReal([vr["O.angle"], vr["coupler.x"]])
    discarded(a, t, 0.1, status=3)       # fails in the model: fmi2Error, the state kept
    assert a.getReal([vr["O.angle"], vr["coupler.x"]]) == before
    text = " ".join(messages)
    assert "failed" in text and "fmi2Terminated is true" in text and "t = 0.8" in text
    # the master can go on with smaller steps up to the lock-up
    a.doStep(currentCommunicationPoint=t, communicationStepSize=0.01)
    a.terminate()
    a.freeInstance()


def test_invalid_parameter_fails_initialisation_with_message(fmus):
    messages = []
    a, vr = instantiate_logged(fmus["double_pendulum"], "bad", messages)
    a.setupExperiment(startTime=0.0)
    a.enterInitializationMode()
    a.setReal([vr["l1"]], [-1.0])
    with pytest.raises(FMICallException):
        a.exitInitializationMode()
    text = " ".join(messages)
    assert "invalid parameter" in text and "'l1'" in text and "expected a value >= 1e-09" in text


def test_default_callbacks_log_through_fmpy_after_a_logged_test(fmus, capfd):
    """The tests above hand fmpy's logger proxy their own lists (instantiate_logged); after
    them (conftest's autouse fixture: restore_fmpy_logger) an instance on fmpy's default
    callbacks logs through fmpy's printLogMessage again (stdout), not into the last of those
    lists (as it did before: the lists were kept alive for that)."""
    messages = []
    a, vr = instantiate_logged(fmus["double_pendulum"], "first", messages)
    a.freeInstance()
    from fmpy_logger import restore_fmpy_logger  # (what conftest calls after each test)
    restore_fmpy_logger()
    n = len(messages)
    capfd.readouterr()
    b, _, _, _ = instantiate(fmus["double_pendulum"], "second")
    init(b)
    b.terminate()
    b.freeInstance()
    assert "formulation auto ->" in capfd.readouterr().out
    assert len(messages) == n


@pytest.mark.parametrize("formulation", ["tmt", "lagrange", "recursive"])
def test_contact_model_in_joint_coordinates_matches_simulate(fmus, formulation):
    """solver.formulation works for impacts: the FMU equals simulate() in that formulation,
    and the contact outputs equal newton_euler's."""
    r = simulate_fmu(str(fmus["pendulum_wall"]), stop_time=1.5, output_interval=0.05,
                     start_values={"solver.formulation": formulation})
    assert r["time"][-1] == pytest.approx(1.5, abs=1e-12)
    m = load_model(MODELS / "pendulum_wall.py")
    ref = simulate(m, 1.5, 0.05, settings=Settings(formulation=formulation))
    ne = simulate(m, 1.5, 0.05)
    assert r["wall.impacts"][-1] >= 2
    for col in r.dtype.names[1:]:
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
    for col in ("wall.impacts", "wall.last_time", "wall.last_impulse", "wall.energy_loss",
                "O.fx", "O.fy", "rod.omega"):
        np.testing.assert_allclose(r[col], ne[col], rtol=0, atol=1e-7, err_msg=col)


def test_recursive_formulation_fmu_matches_simulate(fmus):
    """The FMU runs the compiled kernel it carries: equal to simulate() in 'recursive', and to
    newton_euler within the integration tolerance."""
    with zipfile.ZipFile(fmus["double_pendulum"]) as z:
        assert any(n.startswith("resources/fmu_mb/engine/native/_kernel-") and n.endswith(".so")
                   for n in z.namelist())
    r = simulate_fmu(str(fmus["double_pendulum"]), stop_time=0.5, output_interval=0.01,
                     start_values={"solver.formulation": "recursive"})
    m = load_model(MODELS / "double_pendulum.py")
    ref = simulate(m, 0.5, 0.01, settings=Settings(formulation="recursive"))
    ne = simulate(m, 0.5, 0.01, settings=Settings(formulation="newton_euler"))
    for col in r.dtype.names[1:]:
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
        np.testing.assert_allclose(r[col], ne[col], rtol=0, atol=1e-7, err_msg=col)


def test_recursive_formulation_on_a_loop_fmu_matches_simulate(fmus):
    """Closed loops run in the kernel the FMU carries: equal to simulate() in 'recursive',
    and to newton_euler within the integration tolerance."""
    r = simulate_fmu(str(fmus["slider_crank"]), stop_time=0.5, output_interval=0.01,
                     start_values={"solver.formulation": "recursive"})
    m = load_model(MODELS / "slider_crank.py")
    ref = simulate(m, 0.5, 0.01, settings=Settings(formulation="recursive"))
    ne = simulate(m, 0.5, 0.01)
    for col in r.dtype.names[1:]:
        scale = max(1.0, np.abs(ne[col]).max())
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
        np.testing.assert_allclose(r[col], ne[col], rtol=0, atol=1e-7 * scale, err_msg=col)


def test_recursive_formulation_on_a_driven_fmu_matches_simulate(fmus):
    """Drives run in the kernel the FMU carries (the crane's harmonic cart motion): equal to
    simulate() in 'recursive', and to newton_euler within the integration tolerance (the
    drive's effort included)."""
    r = simulate_fmu(str(fmus["container_crane_driven"]), stop_time=0.5, output_interval=0.01,
                     start_values={"solver.formulation": "recursive"})
    m = load_model(MODELS / "container_crane_driven.py")
    ref = simulate(m, 0.5, 0.01, settings=Settings(formulation="recursive"))
    ne = simulate(m, 0.5, 0.01, settings=Settings(formulation="newton_euler"))
    for col in r.dtype.names[1:]:
        scale = max(1.0, np.abs(ne[col]).max())
        np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
        np.testing.assert_allclose(r[col], ne[col], rtol=0, atol=1e-7 * scale, err_msg=col)


def test_a_formulation_that_cannot_run_the_model_fails_initialisation(fmus):
    """The bouncing ball's contact in 'minimal' (coordinate partitioning has no contact
    phases) is refused at initialisation. (The driven crane and Bricard, used here before,
    run in 'recursive' now.)"""
    with pytest.raises(Exception):
        simulate_fmu(str(fmus["bouncing_ball"]), stop_time=0.1,
                     start_values={"solver.formulation": "minimal"})


def test_structural_parameter_change_is_refused(fmus):
    path = fmus["n_four_bar"]
    md = read_model_description(str(path))
    assert any(v.name == "N" and v.type == "Integer" for v in md.modelVariables)
    with pytest.raises(Exception):
        simulate_fmu(str(path), stop_time=0.1, start_values={"N": 3})


# ---------------------------------------------------------------------- other hosts
def test_libcosim_matches_simulate_with_two_different_fmus(fmus):
    cosim = pytest.importorskip("libcosimpy.CosimExecution")
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    log_output_level(CosimLogLevel.ERROR)
    dt = 0.01
    ex = cosim.CosimExecution.from_step_size(step_size=int(dt * 1e9))
    i1 = ex.add_local_slave(CosimLocalSlave(fmu_path=str(fmus["double_pendulum"]),
                                            instance_name="dp"))
    i2 = ex.add_local_slave(CosimLocalSlave(fmu_path=str(fmus["slider_crank"]),
                                            instance_name="sc"))
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    vr1, _ = vr_of(fmus["double_pendulum"])
    vr2, _ = vr_of(fmus["slider_crank"])
    ex.real_initial_value(i1, vr1["l1"], 0.6)
    ex.real_initial_value(i2, vr2["drive.h"], 0.4)
    ex.simulate_until(int(0.5e9))
    dp = obs.last_real_values(i1, [vr1["rod1.phi"], vr1["rod2.phi"]])
    sc = obs.last_real_values(i2, [vr2["slider.x"], vr2["O.rate"]])
    ref1 = simulate(load_model(MODELS / "double_pendulum.py", l1=0.6), 0.5, dt)
    ref2 = simulate(load_model(MODELS / "slider_crank.py"), 0.5, dt, inputs={"drive.h": 0.4})
    np.testing.assert_allclose(dp, [ref1["rod1.phi"][-1], ref1["rod2.phi"][-1]], atol=1e-11)
    np.testing.assert_allclose(sc, [ref2["slider.x"][-1], ref2["O.rate"][-1]], atol=1e-11)


def test_plain_c_host_without_environment(fmus, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    host = tmp_path / "host"
    subprocess.run([cc, "-O1", "-o", str(host), str(C_HOST), "-ldl"], check=True)
    path = fmus["double_pendulum"]
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unz = tmp_path / "dp"
    zipfile.ZipFile(path).extractall(unz)
    outs = [vr[n] for n in ("rod1.phi", "rod2.phi", "B.fx")]
    cmd = [str(host), str(unz), md.guid, md.coSimulation.modelIdentifier, "0.3", "0.01",
           "--set", f"{vr['l1']}=0.6", "--input", f"{vr['actuator_A.h']}=0.25",
           "--out", ",".join(map(str, outs))]
    res = subprocess.run(cmd, capture_output=True, text=True,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [list(map(float, line.split(",")))[1:] for line in res.stdout.strip().splitlines()
            if line and line[0] in "0123456789-"]      # columns: run, time, outputs
    ref = simulate(load_model(MODELS / "double_pendulum.py", l1=0.6), 0.3, 0.01,
                   inputs={"actuator_A.h": 0.25})
    last = rows[-1]
    np.testing.assert_allclose(last[-3:], [ref["rod1.phi"][-1], ref["rod2.phi"][-1],
                                           ref["B.fx"][-1]], atol=1e-12)
    # both runs in the one process gave the same numbers
    n = len(rows) // 2
    assert rows[:n] == rows[n:]
