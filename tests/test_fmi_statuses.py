"""Bounded FMI calls, fmi2Terminated, stop times and misuse (docs/fmi-statuses.md).

Each scenario runs in a subprocess of its own with a timeout (a Python host: fmpy, or plain
ctypes calls into the FMU's binary), so that a hang or a crash of the host fails the test
instead of the test run. The FMUs are built once per session (conftest's session_fmus)."""
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import MODELS

pytestmark = pytest.mark.fmu
fmpy = pytest.importorskip("fmpy")
pythonfmu = pytest.importorskip("pythonfmu")

ARM = '''"""A planar 3R arm of three uniform links driven by torques at its joints."""
from fmu_mb import ModelBuilder, rod_inertia

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("arm3r", overrides, description=__doc__, gravity=(0.0, -9.81))
    parent, point = mb.ground, (0.0, 0.0)
    for i in (1, 2, 3):
        link = mb.body(f"link{i}", mass=1.0, inertia=rod_inertia(1.0, 0.5))
        mb.revolute(f"J{i}", parent, link, parent_point=point, child_point=(-0.25, 0.0))
        mb.rsda(f"motor{i}", joint=f"J{i}")
        parent, point = link, (0.25, 0.0)
    return mb.build()
'''

# a host in a subprocess: fmpy's FMU2Slave/FMU3Slave with a logger collecting the messages,
# every call timed (CPU time)
PRELUDE = textwrap.dedent('''
    import ctypes, json, sys, time
    from pathlib import Path
    import numpy as np
    from fmpy import extract, read_model_description
    from fmpy.fmi1 import FMICallException
    from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    from fmpy.fmi2 import fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE
    from fmpy.fmi3 import FMU3Slave

    PATH = sys.argv[1]
    md = read_model_description(PATH)
    d = extract(PATH)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    messages = []
    out = {}

    def fmu2(name="h"):
        f = FMU2Slave(guid=md.guid, unzipDirectory=d,
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(
            lambda env, inst, status, cat, msg: messages.append((status, msg.decode())))
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(
            ctypes.cdll.LoadLibrary(None).calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(ctypes.cdll.LoadLibrary(None).free)
        f._cb = cb
        f.instantiate(callbacks=cb)
        return f

    def fmu3(name="h"):
        f = FMU3Slave(guid=md.guid, unzipDirectory=d,
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        f.instantiate(logMessage=lambda env, status, cat, msg: messages.append(
            (status, msg.decode())))
        return f

    def call(f, method, *args):
        """[status, seconds, messages] of one call; seconds: the CPU time of this process (the
        machine may be busy; the FMU runs in this process's thread)"""
        n, t = len(messages), time.process_time()
        try:
            getattr(f, method)(*args)
            status = 0
        except FMICallException as exc:
            status = exc.status
        return [status, time.process_time() - t, messages[n:]]

    def setup(f, fmi=2, stop=None, **values):
        if fmi == 2:
            f.setupExperiment(startTime=0.0, stopTime=stop)
            f.enterInitializationMode()
        else:
            f.enterInitializationMode(startTime=0.0, stopTime=stop)
        types = {v.name: v.type for v in md.modelVariables}
        for k, v in values.items():
            if isinstance(v, str):
                f.setString([vr[k]], [v])
            elif types[k] in ("Integer", "Int32"):
                (f.setInteger if fmi == 2 else f.setInt32)([vr[k]], [int(v)])
            elif fmi == 3:
                f.setFloat64([vr[k]], [float(v)])
            else:
                f.setReal([vr[k]], [float(v)])
''')


def _run(fmu, body, timeout=120):
    code = PRELUDE + textwrap.dedent(body) + "\nprint(json.dumps(out), flush=True)\n"
    res = subprocess.run([sys.executable, "-c", code, str(fmu)], capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, f"the host died (exit status {res.returncode}): " \
                                f"{res.stdout[-2000:]} {res.stderr[-3000:]}"
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def arm_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("arm") / "arm3r.py"
    path.write_text(ARM)
    return path


# ---------------------------------------------------------------- bounded calls
def test_fmpy_simulate_fmu_raises_on_a_3r_arm_with_a_torque_of_1e9(session_fmus, arm_file):
    """The first doStep cannot be taken (the work budget): FMI 2.0 fmi2Error with fmi2Terminated
    true, so fmpy's simulate_fmu raises within seconds naming the input (def1338: 193 discards
    in 60 s, never ending); the state from before the call is kept and the instance continues
    with a sane input."""
    fmu = session_fmus(arm_file)
    t = time.perf_counter()
    out = _run(fmu, """
        import time as _time
        from fmpy import simulate_fmu
        names = [f"motor{i}.h" for i in (1, 2, 3)]
        u = np.array([(0.0, 1e9, 0.0, 0.0), (1.0, 1e9, 0.0, 0.0)],
                     dtype=[("time", float)] + [(n, float) for n in names])
        t0 = _time.perf_counter()
        try:
            simulate_fmu(PATH, input=u, stop_time=1.0, output_interval=0.01,
                         logger=lambda *a: messages.append((a[2], a[4].decode())))
            out["raised"] = None
        except FMICallException as exc:
            out["raised"] = str(exc)
        out["seconds"] = _time.perf_counter() - t0
        out["messages"] = list(messages)
        f = fmu2()
        setup(f)
        f.exitInitializationMode()
        f.setReal([vr["motor1.h"]], [1e9])
        out["huge"] = call(f, "doStep", 0.0, 0.01)
        out["terminated"] = f.getBooleanStatus(3)
        out["last"] = f.getRealStatus(2)
        f.setReal([vr["motor1.h"]], [0.0])
        out["again"] = call(f, "doStep", 0.0, 0.01)
        out["terminated again"] = f.getBooleanStatus(3)
    """, timeout=60)
    assert time.perf_counter() - t < 30
    assert out["raised"] is not None and out["seconds"] < 10, out
    errors = [m for s, m in out["messages"] if s == 3]
    assert len(errors) == 1 and "fmi2Terminated is true" in errors[0]
    assert "the largest is input 'motor1.h' = 1e+09" in errors[0], errors
    assert out["huge"][0] == 3 and out["terminated"] is True and out["last"] == 0.0
    assert out["again"][0] == 0 and out["terminated again"] is False


def test_fmi3_terminate_simulation_after_a_step_that_cannot_be_taken(session_fmus, arm_file):
    """FMI 3.0: fmi3DoStep's terminateSimulation is true with the Discard of such a step; a
    step that succeeds clears it."""
    fmu = session_fmus(arm_file, fmi=3)
    out = _run(fmu, """
        f = fmu3()
        setup(f, fmi=3)
        f.exitInitializationMode()
        ev, term, early, last = (ctypes.c_bool(), ctypes.c_bool(), ctypes.c_bool(),
                                 ctypes.c_double())
        def step(t, h):
            s = f.dll.fmi3DoStep(f.component, ctypes.c_double(t), ctypes.c_double(h),
                                 ctypes.c_bool(True), ctypes.byref(ev), ctypes.byref(term),
                                 ctypes.byref(early), ctypes.byref(last))
            return [s, term.value, last.value]
        out["ok"] = step(0.0, 0.01)
        f.setFloat64([vr["motor1.h"]], [1e9])
        n = len(messages)
        out["huge"] = step(0.01, 0.01)
        out["message"] = messages[n:]
        f.setFloat64([vr["motor1.h"]], [0.0])
        out["again"] = step(0.01, 0.01)
    """)
    assert out["ok"] == [0, False, 0.01]
    assert out["huge"] == [2, True, 0.01]
    assert "terminateSimulation is true" in out["message"][-1][1], out["message"]
    assert out["again"] == [0, False, 0.02]


def test_a_chatter_in_short_steps_ends_with_the_zeno_error_native(session_fmus):
    """The rattle of tests/data/rattle.py (its slider hits the upper stop every 40 ns: 2500
    events per 0.1 ms, solver.max_steps raised for them) in doSteps of 0.1 ms: the Zeno
    guard's rate window spans the steps, so the 5th step fails at the hit 10001 (0.40001 ms)
    with fmi2Error, fmi2Terminated and the message logged, the state of 0.4 ms kept (10000
    hits on the upper stop)."""
    fmu = session_fmus(Path(__file__).resolve().parent / "data" / "rattle.py")
    out = _run(fmu, """
        f = fmu2()
        setup(f, stop=1e-3, **{"solver.max_steps": 100000})
        f.exitInitializationMode()
        out["steps"] = [call(f, "doStep", k * 1e-4, 1e-4) for k in range(5)]
        out["terminated"] = f.getBooleanStatus(3)
        out["impacts"] = f.getInteger([vr["lim0_upper.impacts"]])[0]
    """)
    assert [s[0] for s in out["steps"]] == [0, 0, 0, 0, 3], out["steps"]
    assert out["terminated"] is True
    logged = [m for s, m in out["steps"][4][2] if s == 3]
    assert len(logged) == 1 and "failed at t = 0.00040001 s (contact 1 of the model's " \
        "contacts): a contact switches state endlessly (Zeno behaviour" in logged[0], logged
    assert out["impacts"] == 10000


def test_fmpy_ends_on_the_former_lock_up_of_the_double_wishbone(session_fmus):
    """The double wishbone with tie_rod_mass = 1e-5 (def1338: a lock-up in the first step that
    fmpy retried until it held 6 GB): fmpy's simulate_fmu ends, a wrong call is Discarded."""
    fmu = session_fmus(MODELS / "double_wishbone.py")
    out = _run(fmu, """
        from fmpy import simulate_fmu
        try:
            simulate_fmu(PATH, stop_time=0.1, output_interval=0.01,
                         start_values={"tie_rod_mass": 1e-5},
                         logger=lambda *a: messages.append((a[2], a[4].decode())))
            out["raised"] = None
        except FMICallException as exc:
            out["raised"] = str(exc)
        f = fmu2()
        setup(f, tie_rod_mass=1e-5)
        f.exitInitializationMode()
        out["step"] = call(f, "doStep", 0.0, 0.01)
        out["terminated"] = f.getBooleanStatus(3)
        out["last"] = f.getRealStatus(2)
        out["misuse"] = call(f, "doStep", 0.5, 0.01)     # a wrong time: the master's error
        out["terminated after misuse"] = f.getBooleanStatus(3)
    """, timeout=60)
    # def1338 locked up here in the first step and fmpy retried until it held 6 GB; the
    # default method (auto) now steps it: fmpy's run ends at the stop time and the direct
    # step is OK. A lock-up's fmi2Error with fmi2Terminated and the master's stop are checked
    # on the locking four-bar (tests/test_fmu.py, tests/test_sweep.py) and on the 3R arm above.
    assert out["raised"] is None
    assert out["step"][0] == 0 and out["terminated"] is False and out["last"] == 0.01
    assert out["misuse"][0] == 2 and out["terminated after misuse"] is False


def test_every_native_call_returns_within_seconds_whatever_the_settings(session_fmus):
    """The double wishbone with rtol 1e-15, atol 1e-30, max_steps 1e9 (def1338: 18.4 s in
    fmi2ExitInitializationMode, 27.1 s in a 0.01 s doStep) and with its three stiffnesses at
    1e12 (def1338: 1 s steps of 12.4 s and 10.7 s): every call returns within about 5 s, the
    ones that cannot be done refused with a message naming the cause."""
    fmu = session_fmus(MODELS / "double_wishbone.py")
    out = _run(fmu, """
        f = fmu2()
        setup(f, **{"solver.rtol": 1e-15, "solver.atol": 1e-30, "solver.max_steps": 1e9})
        out["tight init"] = call(f, "exitInitializationMode")
        f.freeInstance()
        f = fmu2()
        setup(f, spring_stiffness=1e12, tyre_stiffness=1e12, steering_stiffness=1e12,
              **{"solver.max_steps": 1e9})
        out["stiff init"] = call(f, "exitInitializationMode")
        t, out["stiff steps"] = 0.0, []
        for k in range(2):
            out["stiff steps"].append(call(f, "doStep", t, 1.0))
            t += 1.0 if out["stiff steps"][-1][0] == 0 else 0.0
    """, timeout=120)
    status, seconds, msgs = out["tight init"]
    assert status == 3 and seconds < 5.0
    assert "solver.rtol = 1e-15" in msgs[-1][1] and "work budget" in msgs[-1][1]
    assert out["stiff init"][0] == 0
    for status, seconds, msgs in out["stiff steps"]:
        assert seconds < 5.0
        assert status == 0 or "budget" in msgs[-1][1], msgs


# ---------------------------------------------------------------- the stop time
@pytest.mark.parametrize("fmi", [2, 3])
def test_a_step_past_the_stop_time_is_an_error_native(session_fmus, fmi):
    """FMI 2.0 (fmi2SetupExperiment) and 3.0 (fmi3EnterInitializationMode): a doStep that
    would end after a defined stop time returns Error with a message; the state is kept and
    a step to the stop time still works (def1338: OK)."""
    fmu = session_fmus(MODELS / "double_pendulum.py", fmi=fmi)
    out = _run(fmu, f"""
        fmi = {fmi}
        f = fmu2() if fmi == 2 else fmu3()
        setup(f, fmi=fmi, stop=0.05)
        f.exitInitializationMode()
        get = f.getReal if fmi == 2 else f.getFloat64
        out["first"] = call(f, "doStep", 0.0, 0.03)
        phi = get([vr["rod1.phi"]])[0]
        out["past"] = call(f, "doStep", 0.03, 0.03)
        out["kept"] = get([vr["rod1.phi"]])[0] == phi
        out["to stop"] = call(f, "doStep", 0.03, 0.02)
    """)
    assert out["first"][0] == 0 and out["to stop"][0] == 0
    status, _, msgs = out["past"]
    assert status == 3 and "after the stop time 0.05" in msgs[-1][1]
    assert out["kept"]


def test_a_step_past_the_stop_time_is_an_error_python_fmu(session_fmus):
    fmu = session_fmus(MODELS / "double_pendulum.py", kind="python")
    out = _run(fmu, """
        f = fmu2()
        setup(f, stop=0.05)
        f.exitInitializationMode()
        out["first"] = call(f, "doStep", 0.0, 0.03)
        phi = f.getReal([vr["rod1.phi"]])[0]
        out["past"] = call(f, "doStep", 0.03, 0.03)
        out["kept"] = f.getReal([vr["rod1.phi"]])[0] == phi
        out["terminated"] = f.getBooleanStatus(3)
        out["to stop"] = call(f, "doStep", 0.03, 0.02)
    """)
    assert out["first"][0] == 0 and out["to stop"][0] == 0
    status, _, msgs = out["past"]
    assert status == 3 and "after the stop time 0.05" in msgs[-1][1]
    assert out["kept"] and out["terminated"] is False


# ---------------------------------------------------------------- the Python FMU
def test_python_fmu_calls_return_within_seconds(session_fmus):
    """singular_pendulum's Python FMU: doStep(0.0137, 50) (def1338: 60.7 s) and radau with
    rtol 1e-15 and max_steps 1e9 (def1338: no return in 120 s) fail (fmi2Error, the state
    kept) or are refused within a few seconds by the counted work budget, with a message."""
    fmu = session_fmus(MODELS / "singular_pendulum.py")
    out = _run(fmu, """
        f = fmu2()
        setup(f)
        f.exitInitializationMode()
        out["short"] = call(f, "doStep", 0.0, 0.0137)
        out["long"] = call(f, "doStep", 0.0137, 50.0)
        out["terminated"] = f.getBooleanStatus(3)
        f.freeInstance()
        f = fmu2()
        setup(f, **{"solver.method": "radau", "solver.rtol": 1e-15, "solver.max_steps": 1e9})
        out["radau init"] = call(f, "exitInitializationMode")
        if out["radau init"][0] == 0:
            out["radau step"] = call(f, "doStep", 0.0, 0.1)
    """, timeout=200)
    assert out["short"][0] == 0
    status, seconds, msgs = out["long"]
    assert status == 3 and seconds < 8.0 and "work budget" in msgs[-1][1]
    assert "communication step of 50 s" in msgs[-1][1] and out["terminated"] is True
    for key in ("radau init", "radau step"):
        if key in out:
            status, seconds, msgs = out[key]
            assert seconds < 8.0
            assert status == 0 or "budget" in msgs[-1][1], msgs


# ---------------------------------------------------------------- host misuse
@pytest.mark.parametrize("fmi", [2, 3])
def test_native_fronts_refuse_junk_instance_pointers(session_fmus, fmi):
    """A pointer that is no instance (0x1234, readable memory that holds no instance, a freed
    instance) is refused with Error, never dereferenced blindly (def1338: a segfault)."""
    fmu = session_fmus(MODELS / "double_pendulum.py", fmi=fmi)
    out = _run(fmu, f"""
        fmi = {fmi}
        f = fmu2() if fmi == 2 else fmu3()
        lib = f.dll
        D, P = ctypes.c_double, ctypes.c_void_p
        zeros = ctypes.create_string_buffer(4096)
        freed = (fmu2("gone") if fmi == 2 else fmu3("gone")).component
        (lib.fmi2FreeInstance if fmi == 2 else lib.fmi3FreeInstance)(P(freed))
        results = []
        for junk in (0x1234, ctypes.addressof(zeros), freed, 0xdeadbeef0):
            if fmi == 2:
                results.append(lib.fmi2DoStep(P(junk), D(0.0), D(0.01), 1))
                results.append(lib.fmi2Terminate(P(junk)))
                lib.fmi2FreeInstance(P(junk))
            else:
                b = ctypes.c_bool()
                results.append(lib.fmi3DoStep(P(junk), D(0.0), D(0.01), ctypes.c_bool(True),
                                              ctypes.byref(b), ctypes.byref(b),
                                              ctypes.byref(b), ctypes.byref(D())))
                results.append(lib.fmi3Terminate(P(junk)))
                lib.fmi3FreeInstance(P(junk))
        out["results"] = results
        setup(f, fmi=fmi)                     # the live instance is untouched
        f.exitInitializationMode()
        out["step"] = call(f, "doStep", 0.0, 0.01)[0]
    """)
    assert out["results"] == [3] * 8 and out["step"] == 0


def test_python_fmu_refuses_null_category_empty_name_and_states_of_freed_instances(
        session_fmus):
    """As the native FMU: fmi2SetDebugLogging with a NULL category, fmi2Instantiate with an
    empty name and fmi2SetFMUstate with a state made by an instance freed since are refused
    (def1338: accepted)."""
    fmu = session_fmus(MODELS / "double_pendulum.py", kind="python")
    out = _run(fmu, """
        f = fmu2("a")
        lib = f.dll
        cats = (ctypes.c_char_p * 2)(b"logStatusError", None)
        n = len(messages)
        out["null category"] = [lib.fmi2SetDebugLogging(f.component, 1, 2, cats),
                                messages[n:]]
        lib.fmi2Instantiate.restype = ctypes.c_void_p
        out["empty name"] = lib.fmi2Instantiate(b"", 1, md.guid.encode(),
                                                 (Path(d) / "resources").as_uri().encode(),
                                                 ctypes.byref(f._cb), 0, 0)
        setup(f)
        f.exitInitializationMode()
        state = f.getFMUstate()
        g = fmu2("b")
        setup(g)
        g.exitInitializationMode()
        out["live owner"] = call(g, "setFMUstate", state)[0]
        f.freeInstance()
        out["freed owner"] = call(g, "setFMUstate", state)
        out["step"] = call(g, "doStep", 0.0, 0.01)[0]
    """)
    st, msgs = out["null category"]
    assert st == 3 and "category 1 is NULL" in msgs[-1][1]
    assert out["empty name"] is None
    assert out["live owner"] == 0
    st, _, msgs = out["freed owner"]
    assert st == 3 and "not" in msgs[-1][1]
    assert out["step"] == 0


def test_a_mass_whose_products_overflow_is_refused_at_initialisation(session_fmus):
    """tie_rod_mass = 1e300 (def1338: accepted, then every step Discarded): refused by
    fmi2ExitInitializationMode with a message naming the parameter; a sane value then works."""
    fmu = session_fmus(MODELS / "double_wishbone.py")
    out = _run(fmu, """
        f = fmu2()
        setup(f, tie_rod_mass=1e300)
        out["init"] = call(f, "exitInitializationMode")
        f.setReal([vr["tie_rod_mass"]], [6.0])
        out["again"] = call(f, "exitInitializationMode")[0]
        out["step"] = call(f, "doStep", 0.0, 0.01)[0]
    """)
    status, _, msgs = out["init"]
    assert status == 3 and "tie_rod_mass = 1e+300" in msgs[-1][1]
    assert "mass of 1e+300" in msgs[-1][1]
    assert out["again"] == 0 and out["step"] == 0
