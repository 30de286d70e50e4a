"""The Python FMU's adapter (fmu_mb/fmi/slave.py): parameters and FMU states that must
agree, damaged states refused value by value, bounded work per doStep, a formulation or a
parameter value the model cannot start with refused at initialisation, warnings through the
FMU logger.

Most checks drive the adapter in process (the class an FMU's wrapper defines, without
packaging an FMU: fast); one per item goes through a real FMU and fmpy."""
import json
import math
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")

from fmu_mb import Settings, load_model, simulate  # noqa: E402
from fmu_mb.fmi.slave import MultibodySlave  # noqa: E402

from conftest import MODELS  # noqa: E402

DISTANCE_PENDULUM = '''"""Point mass on a massless rod: the link is a distance joint (no tree joint)."""
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("distance_pendulum", overrides, description=__doc__)
    L = mb.param("L", 0.5, "m", "rod length", min=1e-9)
    mb.gravity = (0.0, -9.81)
    bob = mb.body("bob", mass=1.0, inertia=0.0, position=(L, 0.0))
    mb.distance("rod", mb.ground, bob, length=L)
    return mb.build()
'''

WARNING_ARM = '''"""An arm whose hydraulic cylinder is outside its range at some start angles."""
from fmu_mb import ModelBuilder, rod_inertia


def build(**overrides):
    mb = ModelBuilder("warning_arm", overrides, description=__doc__)
    angle = mb.param("angle", 0.2, "rad", "initial arm angle")
    mb.gravity = (0.0, -9.81)
    b = mb.body("arm", mass=10.0, inertia=rod_inertia(10.0, 1.0))
    mb.revolute("A", mb.ground, b, child_point=(-0.5, 0.0))
    mb.cylinder("cyl", mb.ground, b, a_point=(0.3, -0.6), b_point=(0.0, 0.0),
                min_length=0.6, max_length=0.9)
    mb.initial("A", value=angle)
    return mb.build()
'''


# ---------------------------------------------------------------------- in-process adapter
def slave_class(path, source=None):
    """The MultibodySlave subclass an FMU of `path` defines (see fmi/build.py's WRAPPER)."""
    path = Path(path)
    name = f"t_{path.stem}_{uuid.uuid4().hex[:8]}"
    return type(name, (MultibodySlave,), dict(
        model_module=name + "_model", model_filename=path.name,
        model_source=source if source is not None else path.read_text(encoding="utf-8"),
        build_overrides={}, experiment={}))


class Inst:
    """One adapter instance with FMI-like calls: each returns (status, messages), status the
    worst logged (what the FMU's front returns): 0 ok, 1 warning, 2 discard, 3 error."""

    RANK = {"ok": 0, "warning": 1, "discard": 2, "error": 3, "fatal": 4}

    def __init__(self, cls):
        self.s = cls(instance_name="inst")
        self.vr = {v.name: v.value_reference for v in self.s.vars.values()}
        self.init_messages = self._drain()

    def _drain(self):
        out = [(m.status.name, m.msg) for m in self.s.log_queue]
        self.s.log_queue.clear()
        return out

    def call(self, method, *args):
        result = getattr(self.s, method)(*args)
        msgs = self._drain()
        status = max([self.RANK[st] for st, _ in msgs], default=0)
        if method == "do_step" and result is False:
            status = max(status, 2)
        return status, msgs, result

    def start(self, **values):
        self.call("setup_experiment", 0.0, None, None)
        self.call("enter_initialization_mode")
        self.set(**values)
        return self.call("exit_initialization_mode")

    def set(self, **values):
        for name, v in values.items():
            kind = ("set_string" if isinstance(v, str) else
                    "set_integer" if isinstance(v, int) else "set_real")
            status, msgs, _ = self.call(kind, [self.vr[name]], [v])
            assert status == 0, msgs

    def get(self, name):
        return self.s.get_real([self.vr[name]])[0]

    def run(self, n, dt=0.01):
        for _ in range(n):
            status, msgs, _ = self.call("do_step", self.s._state.t, dt)
            assert status == 0, msgs
        return self.s._state

    def get_state(self):
        return self.s._get_fmu_state()

    def set_state(self, blob):
        return self.call("_set_fmu_state", blob)


@pytest.fixture(scope="module")
def dp():
    return slave_class(MODELS / "double_pendulum.py")


@pytest.fixture(scope="module")
def dp_fmu(shared_fmu):
    """The double pendulum packaged as an FMU (fmpy and pythonfmu's binary needed)."""
    pytest.importorskip("fmpy")
    if not pythonfmu.FmuBuilder.has_binary():
        pytest.skip("pythonfmu has no binary for this platform")
    return shared_fmu(MODELS / "double_pendulum.py", "python")


# ---------------------------------------------------------------------- parameters and states
def test_parameter_set_after_a_state_round_trip_is_the_one_that_runs(dp):
    """Before initialisation, after fmi2GetFMUstate + fmi2SetFMUstate, l1 = 0.3 reads back 0.3
    and the motion is that of a fresh instance with l1 = 0.3 (it was that of 0.55); an
    out-of-range solver.rtol set then is refused at fmi2ExitInitializationMode."""
    fresh = Inst(dp)
    assert fresh.start(l1=0.3)[0] == 0
    ref = fresh.run(10)
    a = Inst(dp)
    a.call("setup_experiment", 0.0, None, None)
    a.call("enter_initialization_mode")
    assert a.set_state(a.get_state())[0] == 0
    a.set(l1=0.3)
    assert a.get("l1") == 0.3
    assert a.call("exit_initialization_mode")[0] == 0
    got = a.run(10)
    assert np.array_equal(got.q, ref.q) and np.array_equal(got.qd, ref.qd)
    assert a.get("l1") == 0.3
    # the out-of-range setting after a restore
    b = Inst(dp)
    b.call("setup_experiment", 0.0, None, None)
    b.call("enter_initialization_mode")
    b.set_state(b.get_state())
    b.set(**{"solver.rtol": 0.5})
    status, msgs, _ = b.call("exit_initialization_mode")
    assert status == 3 and "solver.rtol" in msgs[-1][1] and "0.5" in msgs[-1][1]
    b.set(**{"solver.rtol": 1e-9})
    assert b.call("exit_initialization_mode")[0] == 0


def test_a_restored_state_brings_its_parameters_along(dp):
    """A state saved with l1 = 0.3, restored into an instance running l1 = 0.55: l1 reads
    0.3 and the motion continues as the l1 = 0.3 instance's (both ways round)."""
    a, b = Inst(dp), Inst(dp)
    a.start(l1=0.3)
    b.start()
    a.run(5)
    b.run(7)
    sa, sb = a.get_state(), b.get_state()
    assert b.set_state(sa)[0] == 0
    assert b.get("l1") == 0.3
    ea, eb = a.run(5), b.run(5)
    assert np.array_equal(ea.q, eb.q) and np.array_equal(ea.qd, eb.qd)
    assert a.set_state(sb)[0] == 0
    assert a.get("l1") == 0.55
    c = Inst(dp)
    c.start()
    ref = c.run(12)
    got = a.run(5)
    assert got.t == ref.t and np.array_equal(got.q, ref.q)


def test_a_state_of_the_other_phase_is_refused(dp):
    """A state saved before initialisation ended, into an initialised instance: its
    parameters were never validated (nor its initial state built from them). A state saved
    after, into an instance in initialisation mode: fmi2ExitInitializationMode would rebuild
    the state from the parameters and silently drop the restored motion."""
    a = Inst(dp)
    a.call("setup_experiment", 0.0, None, None)
    a.call("enter_initialization_mode")
    a.set(l1=0.3)
    early = a.get_state()
    a.call("exit_initialization_mode")
    a.run(3)
    before = a.get_state()
    status, msgs, _ = a.set_state(early)
    assert status == 3 and "before fmi2ExitInitializationMode" in msgs[-1][1]
    assert a.get_state() == before
    # and the other way round: initialisation would drop the restored motion
    b = Inst(dp)
    b.call("setup_experiment", 0.0, None, None)
    b.call("enter_initialization_mode")
    fresh = b.get_state()
    status, msgs, _ = b.set_state(before)
    assert status == 3 and "after fmi2ExitInitializationMode" in msgs[-1][1]
    assert b.get_state() == fresh


def test_fmu_parameters_after_state_round_trip_through_fmpy(dp_fmu):
    """The reported sequence on a packaged FMU in fmpy: the l1 = 0.3 set after a get/set
    state round trip before initialisation is the l1 the FMU runs with."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    path = dp_fmu
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="a")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.setFMUstate(fmu.getFMUstate())
    fmu.setReal([vr["l1"]], [0.3])
    fmu.exitInitializationMode()
    for k in range(10):
        fmu.doStep(k * 0.01, 0.01)
    phi = fmu.getReal([vr["rod1.phi"]])[0]
    fmu.terminate()
    fmu.freeInstance()
    ref = simulate(load_model(MODELS / "double_pendulum.py", l1=0.3), 0.1, 0.01)
    other = simulate(load_model(MODELS / "double_pendulum.py"), 0.1, 0.01)
    assert phi == pytest.approx(ref["rod1.phi"][-1], abs=1e-9)
    assert abs(phi - other["rod1.phi"][-1]) > 1e-4


# ---------------------------------------------------------------------- damaged states
def _damaged(blob):
    """(label, damaged copy) pairs of a state blob (the FMU's tag kept)."""
    def edit(f):
        d = json.loads(json.dumps(blob))
        f(d["data"])
        return d

    def put(*path_value):
        *path, value = path_value

        def f(d):
            for k in path[:-1]:
                d = d[k]
            d[path[-1]] = value
        return f

    nan, big = float("nan").hex(), (1e200).hex()
    real = [k for k, v in blob["data"]["parameters"].items() if str(v).startswith("0x")]
    return [
        ("t NaN", edit(put("state", "t", nan))),
        ("t infinite", edit(put("state", "t", float("inf").hex()))),
        ("t not hex", edit(put("state", "t", "abc"))),
        ("t decimal text", edit(put("state", "t", "0.5"))),
        ("t huge", edit(put("state", "t", (1e300).hex()))),
        ("h negative", edit(put("state", "h", (-1.0).hex()))),
        ("q NaN", edit(put("state", "q", 0, nan))),
        ("qd 1e200", edit(put("state", "qd", 1, big))),
        ("q too short", edit(lambda d: d["state"]["q"].pop())),
        ("q not a list", edit(put("state", "q", "0x1p+0"))),
        ("coords", edit(put("state", "coords", "absolute"))),
        ("input NaN", edit(put("inputs", [nan]))),
        ("parameter type", edit(put("parameters", real[0], 0.3))),
        ("parameter not hex", edit(put("parameters", real[0], "0.3"))),
        ("unknown parameter", edit(put("parameters", "l9", (1.0).hex()))),
        ("missing parameter", edit(lambda d: d["parameters"].pop(real[1]))),
        ("solver type", edit(put("solver", "solver.max_steps", "2000"))),
        ("extra key", edit(put("bogus", 1))),
        ("missing key", edit(lambda d: d.pop("inputs"))),
        ("extra key in the solver state", edit(put("state", "bogus", 1))),
        ("non-finite extra", edit(put("state", "extra", {"x": {"float": nan}}))),
        ("start NaN", edit(put("start", float("nan")))),
        ("start text", edit(put("start", "0"))),
        ("initialized", edit(put("initialized", 1))),
    ]


def test_damaged_states_are_refused_and_change_nothing():
    """Every damaged value of a state (t = NaN, t as non-hex text, q = NaN,
    qd = 1e200, a NaN input, an unknown key, and more) is refused with fmi2Error and a
    message; the instance then continues exactly as an untouched one."""
    cls = slave_class(MODELS / "slider_crank.py")     # has an input
    a, ref = Inst(cls), Inst(cls)
    for inst in (a, ref):
        inst.start()
        inst.set(**{inst.s._model.inputs[0].name: 0.5})
        inst.run(3)
    good = a.get_state()
    assert ref.get_state() == good
    for label, blob in _damaged(good):
        status, msgs, _ = a.set_state(blob)
        assert status == 3, label
        text = msgs[-1][1]        # the guard's shape check or the adapter's value checks
        assert ("damaged" in text or "cannot be restored" in text
                or "not shaped like this FMU's states" in text), (label, msgs)
        assert a.get_state() == good, label
    assert a.set_state(good)[0] == 0
    ea, er = a.run(3), ref.run(3)
    assert np.array_equal(ea.q, er.q) and np.array_equal(ea.qd, er.qd)


def test_damaged_state_bytes_are_refused_by_the_fmu(dp_fmu):
    """Through a packaged FMU: fmi2DeSerializeFMUstate + fmi2SetFMUstate of a state whose t
    is NaN (it carries the FMU's own tag) returns fmi2Error, and the FMU keeps running."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy import read_model_description
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Slave
    path = dp_fmu
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="a")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    fmu.doStep(0.0, 0.01)
    data = bytes(fmu.serializeFMUstate(fmu.getFMUstate()))
    text = data.decode()
    t_hex = (0.01).hex()
    assert f'"t": "{t_hex}"' in text
    bad = text.replace(f'"t": "{t_hex}"', '"t": "nan"').encode()
    refused = False
    try:
        fmu.setFMUstate(fmu.deSerializeFMUstate(bad))
    except FMICallException as exc:
        refused = exc.status == 3
    assert refused
    fmu.doStep(0.01, 0.01)             # still at t = 0.01, and moving
    phi = fmu.getReal([vr["rod1.phi"]])[0]
    fmu.terminate()
    fmu.freeInstance()
    ref = simulate(load_model(MODELS / "double_pendulum.py"), 0.02, 0.01)
    assert phi == pytest.approx(ref["rod1.phi"][-1], abs=1e-9)


# ---------------------------------------------------------------------- bounded work
def test_one_do_step_is_bounded_whatever_max_steps(dp):
    """solver.max_steps = 1e9 (in its range): doStep(0, 1e6) on the double pendulum and a
    huge input on the slider-crank against its stop fail (fmi2Error: the step fails in the
    model, fmi2Terminated true) after at most the hard cap of integrator steps, with the state
    kept."""
    from fmu_mb.fmi.slave import MAX_STEPS_CAP
    a = Inst(dp)
    status, msgs, _ = a.start(**{"solver.max_steps": 10**9})
    assert status == 0
    assert any(f"at most {MAX_STEPS_CAP['compiled']} integrator steps" in m for _, m in msgs)
    t0 = time.perf_counter()
    status, msgs, _ = a.call("do_step", 0.0, 1e6)
    assert status == 3 and f"{MAX_STEPS_CAP['compiled']} integrator steps" in msgs[-1][1]
    assert time.perf_counter() - t0 < 120
    assert a.s._state.t == 0.0
    b = Inst(slave_class(MODELS / "slider_crank_stop.py"))
    b.start(**{"solver.max_steps": 10**9})
    b.run(30)
    b.set(**{"drive.h": 1e10})
    t = b.s._state.t
    status, msgs, _ = b.call("do_step", t, 1.0)
    assert status == 3 and f"{MAX_STEPS_CAP['python']} integrator steps" in msgs[-1][1]
    assert b.s._state.t == t


def test_a_step_beyond_the_time_range_is_discarded():
    """doStep(t, 1e300) on the slider-crank resting against its stop returned fmi2OK and left
    t = 1e300 (where no later step moves t): now discarded, and a normal step goes on."""
    b = Inst(slave_class(MODELS / "slider_crank_stop.py"))
    b.start()
    b.run(300)
    t = b.s._state.t
    status, msgs, _ = b.call("do_step", t, 1e300)
    assert status == 2 and "time range" in msgs[-1][1]
    assert b.s._state.t == t
    assert b.call("do_step", t, 0.01)[0] == 0


# ---------------------------------------------------------------------- refused at initialisation
@pytest.mark.parametrize("formulation", ["minimal", "recursive"])
def test_a_formulation_that_cannot_start_is_refused_at_initialisation(tmp_path, formulation):
    """A point mass on a distance joint: minimal and recursive cannot run it (a singular
    mass matrix / articulated inertia); fmi2ExitInitializationMode fails with fmi2Error
    naming the formulation (the first doStep was discarded instead); auto runs it."""
    path = tmp_path / "distance_pendulum.py"
    path.write_text(DISTANCE_PENDULUM)
    cls = slave_class(path)
    a = Inst(cls)
    status, msgs, _ = a.start(**{"solver.formulation": formulation})
    assert status == 3 and f"formulation '{formulation}'" in msgs[-1][1]
    assert "cannot run the model from its initial state" in msgs[-1][1]
    a.set(**{"solver.formulation": "auto"})
    assert a.call("exit_initialization_mode")[0] == 0
    a.run(10)
    ref = simulate(load_model(path), 0.1, 0.01, settings=Settings(formulation="newton_euler"))
    assert a.get("bob.y") == pytest.approx(ref["bob.y"][-1], abs=1e-7)
    assert a.get("bob.y") < -0.01                   # it fell


def test_singular_pendulum_classical_in_recursive_is_refused_at_initialisation():
    """Seed 002's singular pendulum with a free ball (inertia 0): recursive cannot run it."""
    cls = type("t_singular_classical_" + uuid.uuid4().hex[:8], (MultibodySlave,), dict(
        model_module="t_singular_classical_model_" + uuid.uuid4().hex[:8],
        model_filename="singular_pendulum.py",
        model_source=(MODELS / "singular_pendulum.py").read_text(encoding="utf-8"),
        build_overrides={"method": "classical"}, experiment={}))
    a = Inst(cls)
    status, msgs, _ = a.start(**{"solver.formulation": "recursive"})
    assert status == 3 and "formulation 'recursive'" in msgs[-1][1]


def test_simulate_fmu_raises_instead_of_a_result_ending_at_t0(tmp_path):
    """fmpy's simulate_fmu returned a result ending at t = 0 without raising."""
    fmpy = pytest.importorskip("fmpy")
    from fmu_mb.fmi.build import build_fmu

    if not pythonfmu.FmuBuilder.has_binary():
        pytest.skip("pythonfmu has no binary for this platform")
    model = tmp_path / "distance_pendulum.py"
    model.write_text(DISTANCE_PENDULUM)
    path = build_fmu(model, tmp_path / "out")
    with pytest.raises(Exception, match="fmi2ExitInitializationMode|status 3|Error"):
        fmpy.simulate_fmu(str(path), stop_time=0.1, output_interval=0.01,
                          start_values={"solver.formulation": "minimal"})
    res = fmpy.simulate_fmu(str(path), stop_time=0.1, output_interval=0.01)
    assert res["time"][-1] == pytest.approx(0.1)


@pytest.mark.parametrize("name, value, what", [
    ("l1", 1e300, "building the model failed"),       # was "(34, 'Numerical result ...')"
    ("phi1", 1e300, "initial state is outside"),      # was accepted, then every step discarded
    ("g", 1e300, "the model cannot start"),
])
def test_a_value_the_model_cannot_start_with_is_refused_naming_it(dp, name, value, what):
    a = Inst(dp)
    status, msgs, _ = a.start(**{name: value})
    text = msgs[-1][1]
    assert status == 3 and f"parameter {name} = {value!r}" in text and what in text, text
    a.set(**{name: 0.5})
    assert a.call("exit_initialization_mode")[0] == 0


def test_a_huge_damping_is_refused_naming_it():
    a = Inst(slave_class(MODELS / "double_wishbone.py"))
    status, msgs, _ = a.start(damper_damping=1e300)
    assert status == 3 and "parameter damper_damping = 1e+300" in msgs[-1][1]


def test_warnings_go_to_the_fmu_logger_not_stderr(tmp_path, capfd):
    """An AssemblyWarning (a cylinder assembled outside its range) at initialisation is
    logged with fmi2Warning; nothing is printed on the host's stderr."""
    path = tmp_path / "warning_arm.py"
    path.write_text(WARNING_ARM)
    a = Inst(slave_class(path))
    status, msgs, _ = a.start(angle=1.2)
    assert status == 1, msgs
    assert any(st == "warning" and "AssemblyWarning" in m and "cylinder 'cyl'" in m
               for st, m in msgs)
    a.run(2)
    assert "Warning" not in capfd.readouterr().err
    assert math.isfinite(a.get("A.phi") if "A.phi" in a.vr else 0.0)


def test_the_documented_ranges_are_the_real_ones():
    """documentation/index.html listed [-inf, inf] for g and the angles, which refuse inf."""
    from fmu_mb.fmi.build import _documentation

    html = _documentation(load_model(MODELS / "double_pendulum.py"))
    html = html[html.index("<table>"):]      # the parameter table (not the 3-D view's script)
    assert "inf" not in html.replace("information", "")
    row = html[html.index("<td>g</td>"):].split("</tr>")[0]
    assert "any finite value" in row
    row = html[html.index("<td>l1</td>"):].split("</tr>")[0]
    assert "finite, &gt;= 1e-09" in row
    a = Inst(slave_class(MODELS / "double_pendulum.py"))
    status, msgs, _ = a.start(g=float("inf"))
    assert status == 3 and "'g'" in msgs[-1][1]
