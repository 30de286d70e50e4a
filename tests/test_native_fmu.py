"""Native FMUs: the compiled engine behind fmu_mb/fmi/native/fmi2_native.c.

Checked against things that can disagree with it:
- the binary: `fmpy validate`, the ELF dynamic section (only libc and libm needed, only fmi2*
  symbols exported), no resources;
- the numbers: every natively built model's outputs at every communication point of its
  default experiment, run by fmpy, against the Python FMU's adapter (fmu_mb.fmi.slave, the code
  a Python FMU runs, with the auto formulation) stepped at the same communication points, to
  1e-9; the double wishbone in a C host started with an empty environment (`env -i`) against
  the Python FMU built by pythonfmu and run in fmpy, to 1e-9 m;
- the interface: its modelDescription.xml against the Python FMU's (names, value references,
  types, units, ranges, start values, default experiment);
- the promises of docs/fmi-statuses.md (statuses, refusals, messages
  with logging off, states, instances, threads, dlclose/re-dlopen, memory), each by calling the
  FMU the way a host does (fmpy, ctypes, tests/c_host/native_host.c).
Every FMU is built once per module.
"""
import ctypes
import math
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")
if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
    pytest.skip("building native FMUs needs a C compiler", allow_module_level=True)

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402

from fmu_mb import load_model  # noqa: E402
from fmu_mb.errors import FmuMbError  # noqa: E402
from fmu_mb.fmi.native_build import build_native_fmu, native_reason  # noqa: E402
from fmu_mb.mechanics.loader import call_build, load_module  # noqa: E402

from conftest import MODEL_FILES, MODELS, ROOT  # noqa: E402

HOST_SOURCE = ROOT / "tests" / "c_host" / "native_host.c"
DISCARD, ERROR = 2, 3


# ---------------------------------------------------------------------- fixtures
class Built:
    def __init__(self, path, folder):
        self.path = path
        self.dir = extract(str(path), str(folder))
        self.md = read_model_description(str(path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.vars = {v.name: v for v in self.md.modelVariables}
        self.id = self.md.coSimulation.modelIdentifier
        self.so = str(Path(self.dir) / "binaries" / "linux64" / f"{self.id}.so")

    def slave(self, name="inst", logging=False):
        f = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir, modelIdentifier=self.id,
                      instanceName=name)
        f.instantiate(loggingOn=logging)
        return f


@pytest.fixture(scope="module")
def native(tmp_path_factory, shared_fmu):
    """native(name) -> Built: the native FMU of models/<name>.py, built once per run
    (conftest's shared_fmu)."""
    out = tmp_path_factory.mktemp("native")
    cache = {}

    def get(name):
        if name not in cache:
            path = shared_fmu(MODELS / f"{name}.py", "native")
            cache[name] = Built(path, out / f"{name}_x")
        return cache[name]
    return get


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    exe = tmp_path_factory.mktemp("host") / "native_host"
    subprocess.run([cc, "-O1", "-o", str(exe), str(HOST_SOURCE), "-ldl", "-lpthread"],
                   check=True)
    return exe


def _host(host, built, *args, env=None, timeout=300):
    res = subprocess.run([str(host), args[0], built.dir, built.md.guid, built.id,
                          *map(str, args[1:])], capture_output=True, text=True, env=env,
                         timeout=timeout)
    assert res.returncode == 0, res.stderr + res.stdout
    return res.stdout


def _fields(line):
    return dict(kv.split("=") for kv in line.split())


class Log:
    """A host logger that keeps (status, message) of every call."""

    TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                            ctypes.c_char_p, ctypes.c_char_p)

    def __init__(self):
        self.messages = []
        self.fn = self.TYPE(self._log)

    def _log(self, env, name, status, category, message):
        self.messages.append((status, message.decode("utf-8", "replace")))

    def take(self):
        out, self.messages = self.messages, []
        return out


class Callbacks(ctypes.Structure):
    _fields_ = [("logger", Log.TYPE), ("allocateMemory", ctypes.c_void_p),
                ("freeMemory", ctypes.c_void_p), ("stepFinished", ctypes.c_void_p),
                ("componentEnvironment", ctypes.c_void_p)]


class Raw:
    """The FMU's binary through ctypes: for calls fmpy cannot make (NULL and non-UTF-8 names
    and strings, odd resource locations)."""

    def __init__(self, built):
        self.built = built
        self.lib = ctypes.CDLL(built.so)
        self.log = Log()
        self.cb = Callbacks(self.log.fn, None, None, None, None)
        f = self.lib.fmi2Instantiate
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                      ctypes.POINTER(Callbacks), ctypes.c_int, ctypes.c_int]
        for name in ("fmi2EnterInitializationMode", "fmi2ExitInitializationMode"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p]
        self.lib.fmi2FreeInstance.argtypes = [ctypes.c_void_p]
        self.lib.fmi2FreeInstance.restype = None
        self.lib.fmi2SetString.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint),
                                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.fmi2DoStep.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double,
                                        ctypes.c_int]

    def instantiate(self, name=b"raw", guid=None, resources=b"file:///nowhere/resources",
                    kind=1, logging=0):
        guid = self.built.md.guid.encode() if guid is None else guid
        return self.lib.fmi2Instantiate(name, kind, guid, resources, ctypes.byref(self.cb), 0,
                                        logging)

    def set_string(self, c, vr, value):
        vrs = (ctypes.c_uint * 1)(vr)
        vals = (ctypes.c_char_p * 1)(value)
        return self.lib.fmi2SetString(c, vrs, 1, vals)


def _status(call, *args):
    try:
        return 0, call(*args)
    except FMICallException as exc:
        return exc.status, None


# ---------------------------------------------------------------------- the binary
def _dynamic(so):
    """(NEEDED libraries, defined dynamic symbols) of an ELF shared object (readelf)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    needed = [line.split("[")[1].split("]")[0] for line in
              subprocess.run([readelf, "-dW", so], capture_output=True, text=True,
                             check=True).stdout.splitlines() if "(NEEDED)" in line]
    symbols = []
    for line in subprocess.run([readelf, "--dyn-syms", "-W", so], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[6] != "UND" and parts[3] in ("FUNC", "OBJECT"):
            symbols.append(parts[7].split("@")[0])
    return needed, symbols


def test_native_binary_needs_only_libc_and_libm_and_exports_only_fmi2(native):
    from fmpy.validation import validate_fmu
    dp = native("double_pendulum")
    assert validate_fmu(str(dp.path)) == []
    needed, symbols = _dynamic(dp.so)
    assert set(needed) <= {"libc.so.6", "libm.so.6"}, needed
    assert not [n for n in needed if "python" in n.lower()]
    assert symbols and all(s.startswith("fmi2") for s in symbols), symbols
    assert {"fmi2Instantiate", "fmi2DoStep", "fmi2GetStringStatus"} <= set(symbols)
    names = zipfile.ZipFile(dp.path).namelist()
    assert not [n for n in names if n.startswith("resources/")], names
    doc = zipfile.ZipFile(dp.path).read("documentation/index.html").decode()
    assert "no Python" in doc and "l1" in doc


def test_sources_listed_in_the_model_description_make_the_same_binary(native, host, tmp_path):
    """sources/ holds what the binary is made of (FMI 2.0 SourceFiles): compiled as a host of
    another platform would (the listed files, nothing else; -lm), the FMU steps bit-identically
    to the shipped binary."""
    import xml.etree.ElementTree as ET
    dp = native("double_pendulum")
    root = ET.parse(Path(dp.dir) / "modelDescription.xml").getroot()
    listed = [f.get("name") for f in root.find("CoSimulation").find("SourceFiles")]
    assert "fmi2_native.c" in listed
    other = tmp_path / "rebuilt"
    shutil.copytree(dp.dir, other)
    so = other / "binaries" / "linux64" / f"{dp.id}.so"
    so.unlink()
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-o", str(so),
                    *[str(other / "sources" / n) for n in listed], "-lm"], check=True)
    outs = ",".join(str(dp.vr[n]) for n in ("rod1.phi", "rod2.phi", "rod2.vx"))
    shipped = _host(host, dp, "run", 0.5, 0.01, dp.vr["actuator_A.h"], outs)
    rebuilt = Built.__new__(Built)
    rebuilt.__dict__.update(dp.__dict__, dir=str(other))
    assert _host(host, rebuilt, "run", 0.5, 0.01, dp.vr["actuator_A.h"], outs) == shipped


# ---------------------------------------------------------------------- the numbers
def _adapter(model_file, overrides=None, parameters=None, start=0.0):
    """An instance of the Python FMU's adapter class (what a Python FMU runs), initialised."""
    from fmu_mb.fmi.slave import MultibodySlave
    mf = Path(model_file)
    module = load_module(mf)
    model = call_build(module, mf, **(overrides or {}))
    cls = type(model.name, (MultibodySlave,), {
        "model_module": f"test_native_{model.name}_{id(mf)}", "model_filename": mf.name,
        "build_overrides": dict(overrides or {}), "model_source": mf.read_text(),
        "experiment": dict(getattr(module, "DEFAULT_EXPERIMENT", {}) or {}),
        "__module__": __name__})
    s = cls(instance_name="reference", resources=None)
    s.setup_experiment(start, None, None)
    s.enter_initialization_mode()
    for name, value in (parameters or {}).items():
        vr = next(v.value_reference for v in s.vars.values() if v.name == name)
        s.set_real([vr], [value])
    s.exit_initialization_mode()
    errors = [m.msg for m in s.log_queue if m.status.value > 1]
    assert not errors, errors
    return s


def _adapter_run(s, names, stop, h, inputs=None):
    """The adapter stepped at fmpy's communication points (t_k = k h, step t_k+1 - t_k)."""
    vrs = [next(v.value_reference for v in s.vars.values() if v.name == n) for n in names]
    rows = [s.get_real(vrs)]
    for k in range(int(round(stop / h))):
        for vr, value in (inputs or {}).items():
            s.set_real([vr], [value(k * h)])
        assert s.do_step(k * h, (k + 1) * h - k * h) is not False, s.log_queue[-1:]
        rows.append(s.get_real(vrs))
    errors = [m.msg for m in s.log_queue if m.status.value > 1]
    assert not errors, errors
    return np.array(rows)


def _native_run(built, names, stop, h, parameters=None):
    """The native FMU in fmpy's simulate_fmu over its default experiment."""
    r = fmpy.simulate_fmu(str(built.path), stop_time=stop, output_interval=h, output=names,
                          start_values=parameters or {})
    return np.array([r[n] for n in names]).T


#: every native model, the N-four-bar (collinear poses that amplify a difference of 4e-16 to
#: 6e-8 in q, qd over 4 s) included: the Python FMU of a model the engine library runs steps
#: in that library too, so the two agree by construction
NATIVE_MODELS = [p.stem for p in MODEL_FILES]


@pytest.mark.parametrize("name", NATIVE_MODELS)
def test_outputs_equal_the_python_fmus_at_every_communication_point(native, name):
    why = native_reason(load_model(MODELS / f"{name}.py"))
    if why is not None:
        pytest.skip(f"not a native FMU: {why}")
    built = native(name)
    from fmpy.validation import validate_fmu
    assert validate_fmu(str(built.path)) == []       # every native FMU, its ModelStructure too
    exp = built.md.defaultExperiment
    stop, h = float(exp.stopTime), float(exp.stepSize)
    names = [v.name for v in built.md.modelVariables
             if v.causality == "output" and v.type == "Real"]
    discrete = [v.name for v in built.md.modelVariables
                if v.causality == "output" and v.type in ("Integer", "Boolean")]
    adapter = _adapter(MODELS / f"{name}.py")
    ref = _adapter_run(adapter, names, stop, h)
    got = _native_run(built, names, stop, h)
    assert got.shape == ref.shape
    # 1e-9, relative to the value above 1: the contact models' reactions and contact forces
    # (the excavator's 1.4e5 N on its end stops) come from the Python FMU's KKT solve in
    # absolute coordinates and from the engine's Newton-Euler / joint-space solves, equal to
    # ~1e-14 relative
    diff = got - ref
    # Cardan angles live on a circle: +pi and -pi (a rounding apart) are the same angle
    cardan = [j for j, n in enumerate(names) if n.rsplit(".", 1)[-1] in ("alpha", "beta", "gamma")]
    diff[:, cardan] = (diff[:, cardan] + np.pi) % (2 * np.pi) - np.pi
    err = np.abs(diff) / np.maximum(1.0, np.abs(ref))
    k, i = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= 1e-9, f"{names[i]} at t = {k * h}: {got[k, i]!r} vs {ref[k, i]!r}"
    if discrete:          # impact counts, persistent contacts, end stops at the end
        r = fmpy.simulate_fmu(str(built.path), stop_time=stop, output_interval=h,
                              output=discrete)
        for n in discrete:
            v = next(v for v in adapter.vars.values() if v.name == n)
            want = (adapter.get_integer if v.__class__.__name__ == "Integer"
                    else adapter.get_boolean)([v.value_reference])[0]
            assert int(r[n][-1]) == int(want), n


PARAMETER_CASES = {
    "double_pendulum": ({"l1": 0.4, "m2": 1.7, "phi1": 0.3},
                        ["rod1.phi", "rod2.phi", "rod2.x", "rod2.y"]),
    "four_bar": ({"coupler_length": 0.37, "ground_length": 0.38, "theta0": 1.4, "omega0": 4.0},
                 ["crank.phi", "coupler.phi", "rocker.phi"]),
    "double_wishbone": ({"spring_stiffness": 30000.0, "wheel_load": 4000.0,
                         "lower_arm_mass": 20.0}, ["wheel_centre.x", "wheel_centre.z"]),
    # contacts: the restitution coefficient e and the contact geometry
    "bouncing_ball": ({"e": 0.5, "h0": 0.7, "r": 0.15}, ["ball.y", "ball.vy", "floor.gap",
                                                          "floor.last_time"]),
    "slider_crank_stop": ({"e": 0.9, "stop": 0.47, "omega0": -12.0},
                          ["slider.x", "end_stop.gap", "end_stop.last_impulse"]),
    # a spatial contact model: restitution, box size, drop height and spin
    "tumbling_box": ({"e": 0.8, "a": 0.35, "h0": 0.45, "wz0": 3.0},
                     ["box.z", "box.wz", "corner000.gap", "corner000.last_impulse"]),
}


@pytest.mark.parametrize("name", sorted(PARAMETER_CASES))
def test_parameters_set_by_the_master_act_as_in_the_python_fmu(native, name):
    """Parameters and initial conditions set before initialisation give the motion the Python
    FMU gives (which rebuilds the model with them): the compiled parameter program, planar,
    with a closed loop, and spatial."""
    built = native(name)
    values, names = PARAMETER_CASES[name]
    fixed = [n for n in values if "fixed in the native FMU"
             in (built.vars[n].description or "")]
    assert not fixed, f"parameters fixed in the native FMU: {fixed}"
    ref = _adapter_run(_adapter(MODELS / f"{name}.py", parameters=values), names, 0.3, 0.01)
    got = _native_run(built, names, 0.3, 0.01, values)
    assert np.abs(got - ref).max() <= 1e-9
    assert np.abs(got - _native_run(built, names, 0.3, 0.01)).max() > 1e-5  # they did act


def test_model_description_is_the_python_fmus(native, python_dw):
    """Same variables (names, value references, types, causality, variability, units,
    min/max, start values), default experiment and modelIdentifier as the pythonfmu build."""
    built = native("double_wishbone")
    py = read_model_description(str(python_dw))

    def table(md):
        return {v.name: (v.valueReference, v.type, v.causality, v.variability, v.unit,
                         v.min, v.max, v.start, v.initial) for v in md.modelVariables}
    mine, theirs = table(built.md), table(py)
    # the native FMU's linearization variables come after the Python FMU's (Linearization:
    # the der(<state>) variables and the states that are no output, local and continuous)
    extra = {n: v for n, v in mine.items() if n not in theirs}
    assert {n: v for n, v in mine.items() if n in theirs} == theirs
    from fmu_mb.dynamics.linearize import model_structure
    ms = model_structure(load_model(MODELS / "double_wishbone.py"))
    assert set(extra) <= set(ms["states"]) | {d.variable.name for d in built.md.derivatives}
    assert extra and all(v[2] == "local" and v[3] == "continuous" and v[0] >= len(theirs)
                         for v in extra.values())
    for a in ("startTime", "stopTime", "stepSize"):
        assert getattr(built.md.defaultExperiment, a) == getattr(py.defaultExperiment, a)
    assert built.id == py.coSimulation.modelIdentifier and built.md.guid != py.guid
    assert built.md.unitDefinitions and len(built.md.unitDefinitions) == \
        len(py.unitDefinitions)


@pytest.fixture(scope="module")
def python_dw(shared_fmu):
    return shared_fmu(MODELS / "double_wishbone.py", "python")


def _road(t):
    """A 20 mm curb at 0.05 s, then a 5 Hz, 10 mm wave on top from 0.15 s (test_suspensions)."""
    return (0.02 if t >= 0.05 else 0.0) + (0.01 * math.sin(10 * math.pi * (t - 0.15))
                                            if t >= 0.15 else 0.0)


def test_double_wishbone_in_a_bare_c_host_gives_the_python_fmus_wheel_centre(
        native, host, python_dw, tmp_path):
    """A bare environment: `env -i` (no PATH, nothing), a C host, the road input; the
    wheel-centre trajectory of the Python FMU (pythonfmu, in fmpy) to 1e-9 m."""
    model = load_model(MODELS / "double_wishbone.py")
    why = native_reason(model)
    if why is not None:
        pytest.fail(f"the double wishbone does not build natively: {why}")
    built = native("double_wishbone")
    k_tyre = model.parameter("tyre_stiffness").value
    h, stop = 0.005, 0.4
    n = int(round(stop / h))
    u = [-k_tyre * _road(k * h) for k in range(n)]
    (tmp_path / "u.txt").write_text("\n".join(repr(v) for v in u))
    outs = [built.vr[f"wheel_centre.{c}"] for c in "xyz"]
    text = _host(host, built, "run", stop, h, built.vr["tyre.h"], ",".join(map(str, outs)),
                 tmp_path / "u.txt", env={})
    got = np.array([[float(x) for x in line.split(",")] for line in text.split()])
    md = read_model_description(str(python_dw))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(python_dw)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="python_dw")
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    pvr = [vr[f"wheel_centre.{c}"] for c in "xyz"]
    rows = [[0.0, *f.getReal(pvr)]]
    for k in range(n):
        f.setReal([vr["tyre.h"]], [u[k]])
        f.doStep(k * h, h)
        rows.append([(k + 1) * h, *f.getReal(pvr)])
    f.terminate()
    f.freeInstance()
    ref = np.array(rows)
    assert got.shape == ref.shape
    assert np.abs(got[:, 1:] - ref[:, 1:]).max() <= 1e-9
    assert np.ptp(ref[:, 3]) > 5e-3          # the road moved the wheel


def test_double_wishbone_hits_its_bump_stop_natively_in_fmpy_and_a_c_host(host, tmp_path):
    """The double wishbone with its bump and rebound stops (stops = "on") built natively: a
    100 mm road step at 0.05 s drives the wheel into the bump stop, which it hits and then
    stays on (a persistent contact pushing). In fmpy (FMU2Slave) and in a C host under
    `env -i`, against the Python FMU's adapter stepped with the same held input, to 1e-9."""
    model = load_model(MODELS / "double_wishbone.py", stops="on")
    assert native_reason(model) is None
    path = build_native_fmu(MODELS / "double_wishbone.py", tmp_path / "fmu",
                            overrides={"stops": "on"})
    built = Built(path, tmp_path / "x")
    k_tyre = model.parameter("tyre_stiffness").value
    h, stop = 0.005, 0.3
    n = int(round(stop / h))
    u = [-k_tyre * (0.1 if k * h >= 0.05 - 1e-12 else 0.0) for k in range(n)]
    names = ["wheel_centre.z", "coil_over.length", "bump_stop.gap", "bump_stop.force",
             "bump_stop.last_time", "bump_stop.last_impulse", "rebound_stop.gap"]
    def adapter_run(scale):
        s = _adapter(MODELS / "double_wishbone.py", overrides={"stops": "on"})
        vr_in = next(v.value_reference for v in s.vars.values() if v.name == "tyre.h")
        run = _adapter_run(s, names, stop, h, {vr_in: lambda t: scale * u[int(round(t / h))]})
        return s, run

    s, ref = adapter_run(1.0)
    # the bump stop's bounces amplify rounding: the road force one ulp larger moves the second
    # impulse by about 1e-9 relative (the FMU's compiled parameters round differently from the
    # engine library's data), so each output is compared to 1e-9 plus ten times its own
    # spread under that one-ulp change
    _, nudged = adapter_run(1.0 + np.finfo(float).eps)
    spread = (np.abs(nudged - ref) / np.maximum(1.0, np.abs(ref))).max(axis=0)
    assert spread.max() < 1e-7, spread          # the states themselves are well conditioned
    tol = 1e-9 + 10.0 * spread
    impacts = next(v for v in s.vars.values() if v.name == "bump_stop.impacts")
    want_impacts = s.get_integer([impacts.value_reference])[0]
    assert want_impacts >= 1 and ref[-1, 3] > 0.0          # hit, and pushing at the end
    assert ref[:, 1].min() >= 0.2753645852320157 - 0.05 - 1e-8    # never past the stop
    f = built.slave()                                       # fmpy
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    vrs = [built.vr[x] for x in names]
    rows = [f.getReal(vrs)]
    for k in range(n):
        f.setReal([built.vr["tyre.h"]], [u[k]])
        f.doStep(k * h, h)
        rows.append(f.getReal(vrs))
    got_impacts = f.getInteger([built.vr["bump_stop.impacts"]])[0]
    f.terminate()
    f.freeInstance()
    got = np.array(rows)
    assert got.shape == ref.shape
    err = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
    assert (err <= tol).all(), names[int(np.argmax((err / tol).max(axis=0)))]
    assert got_impacts == want_impacts
    (tmp_path / "u.txt").write_text("\n".join(repr(v) for v in u))   # the C host
    text = _host(host, built, "run", stop, h, built.vr["tyre.h"],
                 ",".join(str(v) for v in vrs), tmp_path / "u.txt", env={})
    c = np.array([[float(x) for x in line.split(",")] for line in text.split()])[:, 1:]
    assert c.shape == ref.shape
    assert (np.abs(c - ref) / np.maximum(1.0, np.abs(ref)) <= tol).all()


def test_python_fmu_of_a_spatial_contact_model_keeps_its_records_in_its_state():
    """The Python FMU of a spatial contact model steps in the engine (as the native FMU); its
    FMU state carries the contact records: restored, it continues bit for bit, impact
    counts, times and impulses included."""
    s = _adapter(MODELS / "tumbling_box.py")
    names = ["box.z", "box.wz", "corner000.last_impulse", "corner010.last_time",
             "corner010.force"]
    vrs = [next(v.value_reference for v in s.vars.values() if v.name == n) for n in names]
    h = 0.01

    def steps(k0, k1):
        rows = []
        for k in range(k0, k1):
            assert s.do_step(k * h, h) is not False, s.log_queue[-1:]
            rows.append(s.get_real(vrs))
        return np.array(rows)
    steps(0, 30)                                        # just after the first impact
    saved = s._get_fmu_state()
    a = steps(30, 50)
    s._set_fmu_state(saved)
    b = steps(30, 50)
    np.testing.assert_array_equal(a, b)
    assert a[0, 2] > 0.0                                # corner000's impact, restored


def test_planar_fmu_in_a_bare_c_host_gives_the_python_fmus_numbers(native, host, tmp_path):
    """The double pendulum with an input in a C host under `env -i`, against the Python FMU's
    adapter stepped with the same held input, to 1e-9."""
    built = native("double_pendulum")
    h, n = 0.01, 100
    u = [0.3 * math.sin(2.0 * k * h) for k in range(n)]
    (tmp_path / "u.txt").write_text("\n".join(repr(v) for v in u))
    names = ["rod1.phi", "rod2.phi", "rod2.vx", "A.torque" if "A.torque" in built.vr
             else "rod1.omega"]
    outs = ",".join(str(built.vr[x]) for x in names)
    text = _host(host, built, "run", n * h, h, built.vr["actuator_A.h"], outs,
                 tmp_path / "u.txt", env={})
    got = np.array([[float(x) for x in line.split(",")] for line in text.split()])[:, 1:]
    s = _adapter(MODELS / "double_pendulum.py")
    vr_in = next(v.value_reference for v in s.vars.values() if v.name == "actuator_A.h")
    ref = _adapter_run(s, names, n * h, h, {vr_in: lambda t: u[int(round(t / h))]})
    assert got.shape == ref.shape and np.abs(got - ref).max() <= 1e-9


def test_a_start_time_other_than_zero_gives_the_python_fmus_numbers(native):
    """fmi2SetupExperiment(startTime = 1.5): the same motion as the Python FMU started there
    (a driven model, whose drive law depends on the time)."""
    built = native("container_crane_driven")
    names = [v.name for v in built.md.modelVariables
             if v.causality == "output" and v.type == "Real"][:8]
    t0, h, n = 1.5, 0.01, 50
    s = _adapter(MODELS / "container_crane_driven.py", start=t0)
    vrs = [next(v.value_reference for v in s.vars.values() if v.name == x) for x in names]
    ref = [s.get_real(vrs)]
    f = built.slave("start")
    f.setupExperiment(startTime=t0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    got = [f.getReal([built.vr[x] for x in names])]
    for k in range(n):
        assert s.do_step(t0 + k * h, h) is not False
        ref.append(s.get_real(vrs))
        f.doStep(t0 + k * h, h)
        got.append(f.getReal([built.vr[x] for x in names]))
    f.freeInstance()
    assert np.abs(np.array(got) - np.array(ref)).max() <= 1e-9


# ---------------------------------------------------------------------- the interface
def test_instantiate_refuses_bad_names_guids_and_types_with_a_message(native):
    raw = Raw(native("double_pendulum"))
    for name, guid, kind, what in [
            (None, None, 1, "NULL"), (b"\xff\xfe", None, 1, "UTF-8"), (b"", None, 1, "empty"),
            (b"x", b"{00000000-0000-0000-0000-000000000000}", 1, "GUID"),
            (b"x", None, 2, "co-simulation"), (b"x", b"\xc3", 1, "GUID")]:   # 0: model
                                                       # exchange (test_model_exchange.py)
        assert raw.instantiate(name, guid, kind=kind) is None
        messages = raw.log.take()
        assert len(messages) == 1 and messages[0][0] == ERROR and what in messages[0][1], \
            messages


@pytest.mark.parametrize("uri", [None, b"", b"file:///a/b%20c/resources",
                                 b"file:/abs/resources", b"file://localhost/abs/resources",
                                 b"file:///x/%5Fy/%C3%A9", b"file:///does/not/exist",
                                 b"http://example.org/x"])
def test_any_resource_location_or_none_works(native, uri):
    raw = Raw(native("double_pendulum"))
    c = raw.instantiate(b"uri", resources=uri)
    assert c
    assert raw.lib.fmi2EnterInitializationMode(c) == 0
    assert raw.lib.fmi2ExitInitializationMode(c) == 0
    assert raw.lib.fmi2DoStep(c, 0.0, 0.01, 1) == 0
    raw.lib.fmi2FreeInstance(c)
    assert raw.log.take() == []


def test_strings_null_non_utf8_and_huge_are_refused_with_a_short_message(native):
    built = native("double_pendulum")
    raw = Raw(built)
    c = raw.instantiate(b"strings")
    method = built.vr["solver.method"]
    for value, what in [(None, "NULL"), (b"dop\xff853", "UTF-8")]:
        assert raw.set_string(c, method, value) == ERROR
        (status, text), = raw.log.take()
        assert status == ERROR and what in text and "solver.method" in text
    assert raw.set_string(c, method, b"x" * 50_000_000) == 0       # stored; checked at init
    assert raw.lib.fmi2EnterInitializationMode(c) == 0
    assert raw.lib.fmi2ExitInitializationMode(c) == ERROR
    (status, text), = raw.log.take()
    assert status == ERROR and len(text) < 600 and "50000000 bytes" in text
    for value, status, words in [(b"radau", ERROR, "--python"), (b"bogus", ERROR, "dop853"),
                                 (b"rk4", 0, None)]:
        assert raw.set_string(c, method, value) == 0
        assert raw.lib.fmi2ExitInitializationMode(c) == status
        log = raw.log.take()
        assert (not log) if words is None else (words in log[0][1])
    raw.lib.fmi2FreeInstance(c)


def test_value_references_types_and_states_are_checked(native):
    built = native("double_pendulum")
    vr = built.vr
    f = built.slave("refs")
    for ref in (2 ** 31, 2 ** 32 - 1, len(built.vr)):
        assert _status(f.setReal, [ref], [1.0])[0] == ERROR
    assert _status(f.getReal, [vr["l1"]])[0] == ERROR                # instantiated: no get
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    assert _status(f.getInteger, [vr["l1"]])[0] == ERROR             # a Real
    assert _status(f.setReal, [vr["rod1.phi"]], [1.0])[0] == ERROR   # an output
    assert _status(f.setReal, [vr["actuator_A.h"]], [math.nan])[0] == ERROR
    assert _status(f.setReal, [vr["l1"]], [-1.0])[0] == 0            # checked at the end
    assert _status(f.exitInitializationMode)[0] == ERROR             # l1 < 0: stays
    f.setReal([vr["l1"]], [0.55])
    for name, value in (("phi1", 1e300), ("g", 1e300), ("l1", 1e300)):   # cannot start
        f.setReal([vr[name]], [value])
        assert _status(f.exitInitializationMode)[0] == ERROR
        f.setReal([vr[name]], [{"phi1": math.pi / 6, "g": 9.81, "l1": 0.55}[name]])
    f.exitInitializationMode()
    assert _status(f.setReal, [vr["l1"]], [0.7])[0] == ERROR         # fixed after init
    assert f.getReal([vr["l1"]]) == [0.55]
    assert _status(f.enterInitializationMode)[0] == ERROR
    f.terminate()
    assert _status(f.doStep, 0.0, 0.01)[0] == ERROR
    f.freeInstance()


def test_structural_parameter_is_fixed_at_its_build_value(tmp_path):
    path = build_native_fmu(MODELS / "n_four_bar.py", tmp_path, {"N": 4})
    built = Built(path, tmp_path / "x")
    n = built.vars["N"]
    assert n.start == "4" and n.type == "Integer" and "--set N=" in n.description
    raw = Raw(built)
    c = raw.instantiate(b"structural")
    lib = raw.lib
    lib.fmi2SetInteger.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint),
                                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
    vr = (ctypes.c_uint * 1)(n.valueReference)
    assert lib.fmi2SetInteger(c, vr, 1, (ctypes.c_int * 1)(5)) == ERROR
    (status, text), = raw.log.take()
    assert "N = 4" in text and "received 5" in text and "--set N=VALUE" in text
    assert lib.fmi2SetInteger(c, vr, 1, (ctypes.c_int * 1)(4)) == 0
    assert lib.fmi2EnterInitializationMode(c) == 0 and lib.fmi2ExitInitializationMode(c) == 0
    lib.fmi2FreeInstance(c)


def test_refused_calls_are_logged_with_logging_off_and_name_the_value_reference(native):
    built = native("double_pendulum")
    raw = Raw(built)
    c = raw.instantiate(b"log", logging=0)
    lib = raw.lib
    lib.fmi2GetReal.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint),
                                ctypes.c_size_t, ctypes.POINTER(ctypes.c_double)]
    lib.fmi2EnterInitializationMode(c)
    vr = (ctypes.c_uint * 1)(2 ** 31)
    out = (ctypes.c_double * 1)()
    assert lib.fmi2GetReal(c, vr, 1, out) == ERROR
    (status, text), = raw.log.take()
    assert status == ERROR and "2147483648" in text and "-2147483648" not in text
    lib.fmi2FreeInstance(c)


def test_discard_keeps_the_state_and_the_status_queries_are_right(native):
    built = native("double_pendulum")
    f = built.slave("discard")
    vr = built.vr
    for start in (math.nan, 1e11, -1e11):        # beyond the time bound |t| <= 1e10 s
        assert _status(f.setupExperiment, None, start)[0] == ERROR
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.setInteger([vr["solver.max_steps"]], [10 ** 9])
    f.exitInitializationMode()
    f.doStep(0.0, 0.01)
    before = f.getReal([vr["rod1.phi"], vr["rod2.phi"]])
    start = time.process_time()
    # wrong time, bad steps, a step beyond the time bound: Discard (the master can correct
    # its call); a huge step that spends the work budget fails in the model: Error
    for t, h, status in [(0.0, 0.01, DISCARD), (0.01, -0.01, DISCARD),
                         (0.01, math.nan, DISCARD), (0.01, math.inf, DISCARD),
                         (0.01, 1e6, ERROR), (0.01, 1e11, DISCARD)]:
        assert _status(f.doStep, t, h)[0] == status, (t, h)
        assert f.getReal([vr["rod1.phi"], vr["rod2.phi"]]) == before
    assert time.process_time() - start < 30      # bounded whatever solver.max_steps says
    lib = f.dll
    lib.fmi2GetRealStatus.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_double)]
    lib.fmi2GetBooleanStatus.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_int)]
    last, term = ctypes.c_double(), ctypes.c_int(7)
    assert lib.fmi2GetRealStatus(f.component, 2, ctypes.byref(last)) == 0
    assert lib.fmi2GetBooleanStatus(f.component, 3, ctypes.byref(term)) == 0
    assert last.value == 0.01 and term.value == 0
    f.doStep(0.01, 0.01)                         # a successful retry
    assert lib.fmi2GetRealStatus(f.component, 2, ctypes.byref(last)) == 0
    assert lib.fmi2GetBooleanStatus(f.component, 3, ctypes.byref(term)) == 0
    assert last.value == 0.02 and term.value == 0
    f.terminate()
    f.freeInstance()


def _run_steps(f, vrs, t0, n, h=0.01):
    rows = []
    for k in range(n):
        f.doStep(t0 + k * h, h)
        rows.append(f.getReal(vrs))
    return rows


def test_states_continue_bit_identically_and_carry_the_parameters(native):
    built = native("double_pendulum")
    vr = built.vr
    outs = [vr["rod1.phi"], vr["rod2.phi"], vr["rod2.vx"]]
    f = built.slave("a")
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    _run_steps(f, outs, 0.0, 10)
    state = f.getFMUstate()
    first = _run_steps(f, outs, 0.1, 20)
    blob = f.serializeFMUstate(state)
    f.setFMUstate(state)
    assert _run_steps(f, outs, 0.1, 20) == first
    g = built.slave("b")                         # a state into another instance
    g.setupExperiment(startTime=0.0)
    g.enterInitializationMode()
    g.setReal([vr["l1"]], [0.4])                 # other parameters: the state's win
    g.exitInitializationMode()
    g.setFMUstate(g.deSerializeFMUstate(blob))
    assert g.getReal([vr["l1"]]) == f.getReal([vr["l1"]])
    assert _run_steps(g, outs, 0.1, 20) == first
    f.freeFMUstate(state)
    f.freeInstance()
    g.freeInstance()


def test_reset_gives_what_a_new_instance_gives(native):
    built = native("double_pendulum")
    vr = built.vr
    outs = [vr["rod1.phi"], vr["rod2.phi"]]

    def begin(f, **values):
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        for k, v in values.items():
            f.setReal([vr[k]], [v])
        f.exitInitializationMode()
    fresh = built.slave("fresh")
    begin(fresh)
    ref = _run_steps(fresh, outs, 0.0, 10)
    f = built.slave("reset")
    begin(f, l1=0.4)
    f.setReal([vr["actuator_A.h"]], [2.0])
    other = _run_steps(f, outs, 0.0, 10)
    f.reset()
    begin(f)
    assert f.getReal([vr["l1"], vr["actuator_A.h"]]) == [0.55, 0.0]
    assert _run_steps(f, outs, 0.0, 10) == ref != other
    fresh.freeInstance()
    f.freeInstance()


def _reseal(data):
    """The bytes with a valid checksum again (FNV-1a 64 of all but the last 8 bytes)."""
    h = 1469598103934665603
    for b in data[:-8]:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return data[:-8] + struct.pack("<Q", h)


def test_damaged_or_foreign_states_are_refused_and_change_nothing(native):
    built = native("double_pendulum")
    vr = built.vr
    f = built.slave("damaged")
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    f.doStep(0.0, 0.05)
    blob = bytes(f.serializeFMUstate(f.getFMUstate()))
    f.doStep(0.05, 0.05)
    here = f.getReal([vr["rod1.phi"], vr["rod2.phi"]])
    rng = np.random.default_rng(0)
    bad = [blob[:k] for k in (0, 7, 20, len(blob) - 1)] + [blob + b"\0"]
    for i in rng.choice(len(blob), 200, replace=False):     # one byte changed anywhere
        bad.append(blob[:i] + bytes([blob[i] ^ (1 << int(rng.integers(8)))]) + blob[i + 1:])
    # valid checksums, bad values: the engine state (t, q (2), qd (2), h) ends the content
    tail = len(blob) - 8
    slots = {1: (math.nan, math.inf, -1.0),                              # h
             2: (math.nan, math.inf, 1e200, -1e300), 3: (math.nan, 1e200),  # qd
             4: (math.nan, -1e200), 5: (math.inf, 1e13),                  # q
             6: (math.nan, -1e300, 1e200, -1.0)}                          # t (starts at 0)
    for back, values in slots.items():
        at = tail - 8 * back
        for value in values:
            bad.append(_reseal(blob[:at] + struct.pack("<d", value) + blob[at + 8:]))
    assert struct.unpack_from("<d", blob, tail - 48)[0] == 0.05         # the layout as said
    for data in bad:
        st, _ = _status(f.deSerializeFMUstate, data)
        if st == 0:                           # the bytes may pass: then setting must refuse
            pytest.fail(f"damaged state accepted ({len(data)} bytes)")
        assert st == ERROR
    other = native("four_bar").slave("foreign")
    other.setupExperiment(startTime=0.0)
    other.enterInitializationMode()
    other.exitInitializationMode()
    foreign = bytes(other.serializeFMUstate(other.getFMUstate()))
    assert _status(f.deSerializeFMUstate, foreign)[0] == ERROR
    assert f.getReal([vr["rod1.phi"], vr["rod2.phi"]]) == here
    f.doStep(0.1, 0.05)
    f.freeInstance()
    other.freeInstance()


def test_two_instances_interleaved_give_the_runs_alone(native):
    built = native("four_bar")
    outs = [v.valueReference for v in built.md.modelVariables if v.causality == "output"
            and v.type == "Real"][:6]

    def begin(name):
        f = built.slave(name)
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        f.exitInitializationMode()
        return f
    alone = begin("alone")
    ref = _run_steps(alone, outs, 0.0, 30)
    alone.freeInstance()
    a, b = begin("a"), begin("b")
    ra, rb = [], []
    for k in range(30):
        ra += _run_steps(a, outs, k * 0.01, 1)
        rb += _run_steps(b, outs, k * 0.01, 1)
    assert ra == ref and rb == ref
    a.freeInstance()
    b.freeInstance()


@pytest.mark.parametrize("name,outputs,cycles", [
    ("double_pendulum", ("rod1.phi", "rod2.phi", "rod2.vy"), 10000),
    ("double_wishbone", ("wheel_centre.x", "wheel_centre.z", "tyre.force"), 2000)])
def test_threads_dlclose_reload_and_memory(native, host, name, outputs, cycles):
    """Instances in 4 threads equal one after the other bit for bit; an instance continues
    bit-identically after the host dlclosed the library and re-dlopened it at another
    address; instantiate/free cycles leave the resident memory where it was."""
    built = native(name)
    outs = ",".join(str(built.vr[n]) for n in outputs)
    r = _fields(_host(host, built, "threads", 0.5, 0.01, outs, 4))
    assert r["identical"] == "1"
    r = _fields(_host(host, built, "reload", 0.5, 0.01, outs))
    assert r == {"relocated": "1", "identical": "1", "unmapped": "1"}
    r = _fields(_host(host, built, "cycles", cycles))
    growth = int(r["rss_kb_after_all"]) - int(r["rss_kb_after_half"])
    assert growth <= 4, f"{growth} kB more after the second {cycles // 2} cycles"


def test_build_chooses_native_when_it_can_and_says_why(tmp_path, capsys):
    from fmu_mb.tools.cli import main
    assert main(["build", str(MODELS / "double_pendulum.py"), "-o", str(tmp_path),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().endswith("double_pendulum.fmu")
    assert "native FMU" in captured.err and "compiled engine" in captured.err
    assert main(["build", str(MODELS / "singular_pendulum.py"), "-o", str(tmp_path),
                 "--native", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Reduction Method" in err and "--python" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(FmuMbError, match="Reduction Method"):
        build_native_fmu(MODELS / "singular_pendulum.py", tmp_path)
    from conftest import python_drive
    assert "Python function" in native_reason(python_drive())   # a drive only Python runs


def test_without_a_flag_a_model_only_python_runs_gets_the_python_fmu(tmp_path, monkeypatch):
    import fmu_mb.fmi.build as build
    from fmu_mb.fmi.native_build import build_model_fmu
    made = []
    monkeypatch.setattr(build, "build_fmu", lambda *a, **k: made.append(a) or tmp_path / "p.fmu")
    path, kind, why = build_model_fmu(MODELS / "singular_pendulum.py", tmp_path)
    assert kind == "python" and "Reduction Method" in why and made and path == tmp_path / "p.fmu"
    path, kind, why = build_model_fmu(MODELS / "double_pendulum.py", tmp_path, kind="python")
    assert kind == "python" and len(made) == 2


WORKER = ROOT / "tests" / "fmu_fuzz_worker.py"


@pytest.mark.parametrize("name", ["double_pendulum", "four_bar", "double_wishbone"])
def test_fuzz_worker_on_native_fmus(native, name):
    """tests/fmu_fuzz_worker.py's random call sequences (misuse of every kind, then a clean
    replay of the accepted calls) on native FMUs: no crash, no fmi2Fatal, every non-OK status
    logged, a refused call changes nothing."""
    built = native(name)
    for seed in range(3):
        res = subprocess.run([sys.executable, str(WORKER), built.dir, str(seed), "25"],
                             capture_output=True, text=True, timeout=180)
        assert res.returncode == 0, res.stderr[-2000:]
        import json
        out = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1])
        assert out["violations"] == [], out["violations"][:5]


def _sanitizer_runtime():
    """LD_PRELOAD value for AddressSanitizer + UBSan runtimes of the C compiler, or None."""
    cc = shutil.which("gcc")
    if cc is None:
        return None
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):
            return None
        libs.append(path)
    return " ".join(libs)


@pytest.mark.slow   # ~45 s: the engine built with sanitizers, then a fuzz run
def test_fuzz_worker_under_address_and_undefined_behaviour_sanitizers(native, tmp_path):
    """The FMU compiled from its sources/ with -fsanitize=address,undefined and driven by the
    fuzz worker's random call sequences (misuse, corrupt and truncated states): no report."""
    preload = _sanitizer_runtime()
    if preload is None:
        pytest.skip("no gcc with AddressSanitizer and UBSan runtimes")
    import xml.etree.ElementTree as ET
    dp = native("double_pendulum")
    folder = tmp_path / "asan"
    shutil.copytree(dp.dir, folder)
    root = ET.parse(folder / "modelDescription.xml").getroot()
    listed = [f.get("name") for f in root.find("CoSimulation").find("SourceFiles")]
    so = folder / "binaries" / "linux64" / f"{dp.id}.so"
    subprocess.run([shutil.which("gcc"), "-O1", "-g", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-fPIC",
                    "-shared", "-o", str(so), *[str(folder / "sources" / n) for n in listed],
                    "-lm"], check=True)
    env = dict(os.environ, LD_PRELOAD=preload, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    for seed in range(2):          # an injected off-by-one in dupstr is reported by seed 0
        res = subprocess.run([sys.executable, str(WORKER), str(folder), str(seed), "25"],
                             capture_output=True, text=True, timeout=300, env=env)
        report = [ln for ln in res.stderr.splitlines()
                  if "Sanitizer" in ln or "runtime error" in ln]
        assert res.returncode == 0 and not report, (report or res.stderr[-2000:])
