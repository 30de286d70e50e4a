"""The contact event loop's settings as FMU parameters: solver.contact_tol,
solver.contact_velocity, solver.event_tol (models with contacts), in the Python FMU (pythonfmu,
run by fmpy) and the native FMU (the compiled engine behind fmi2_native.c, run by fmpy).

Checked against things that can disagree with them:
- the bouncing ball (models/bouncing_ball.py, h0 = 1 m, e = 0.5) with a large
  contact_velocity comes to rest at the first impact whose rebound e^k v0 is below it: the
  closed form of the bounce sequence (v0 = sqrt(2 g h0), t_1 = v0 / g, t_k+1 = t_k + 2 e^k v0 /
  g) gives the number of impacts and the time of the last one; the Python and the native FMU
  give the same numbers to 1e-9;
- a coarse event_tol moves the impact times of the fine one by at most that tolerance;
- NaN, 0, < 0, inf and values above the documented maximum are refused at
  fmi2ExitInitializationMode with fmi2Error and a message naming the parameter and its range;
  the instance stays in initialisation mode and, given a valid value, runs as a fresh one;
- the model descriptions declare the three with their units, ranges and today's defaults (the
  model data's EVENT_SETTINGS), for contact models only.
"""
import math
import os
import re
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

fmpy = pytest.importorskip("fmpy")
pytest.importorskip("pythonfmu")

from ctypes import byref  # noqa: E402

from fmpy import calloc, extract, free, read_model_description  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE,  # noqa: E402
                       fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions,
                       fmi2CallbackLoggerTYPE)
from fmpy.logging import addLoggerProxy  # noqa: E402

from fmu_mb.engine.data import EVENT_SETTINGS  # noqa: E402
from fmu_mb.fmi.slave import CONTACT_LIMITS  # noqa: E402

from conftest import MODELS  # noqa: E402

NAMES = ("solver.contact_tol", "solver.contact_velocity", "solver.event_tol")
OUTS = ["floor.impacts", "floor.last_time", "floor.active", "ball.y", "ball.vy"]
H0, G, E = 1.0, 9.81, 0.5          # models/bouncing_ball.py: drop height, gravity; e set here
STOP, STEP = 1.6, 0.02
_CALLBACKS = []
HAVE_CC = bool(shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc"))


class Fmu:
    def __init__(self, path, folder, axis="y"):
        self.path, self.axis = path, axis          # axis: the ball's height coordinate
        self.dir = extract(str(path), str(folder))
        self.md = read_model_description(str(path))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.vars = {v.name: v for v in self.md.modelVariables}

    def slave(self, name):
        """An instance in initialisation mode whose log lines go to its `messages`."""
        messages = []

        def logger(env, instance, status, category, message):
            messages.append((status, message.decode("utf-8", "replace")))

        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(logger)
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(byref(cb))
        # fmpy's logger proxy keeps the last logger process-wide: keep the callbacks alive
        _CALLBACKS.append((cb, logger))
        f = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                      modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName=name)
        f.instantiate(callbacks=cb, loggingOn=False)
        f.messages = messages
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        return f

    def run(self, values, stop=STOP, h=STEP, f=None):
        """(rows of OUTS at t = 0, h, ..., stop): a fresh instance (or f, in initialisation
        mode) with e = E and `values` set, stepped by fmi2DoStep."""
        if f is None:
            f = self.slave("run")
        values = {"e": E, **values}
        f.setReal([self.vr[k] for k in values], list(values.values()))
        f.exitInitializationMode()
        vr = self.vr

        def row():
            last, y, vy = f.getReal([vr["floor.last_time"], vr[f"ball.{self.axis}"],
                                     vr[f"ball.v{self.axis}"]])
            return [f.getInteger([vr["floor.impacts"]])[0], last,
                    float(f.getBoolean([vr["floor.active"]])[0]), y, vy]

        rows = [row()]
        for k in range(int(round(stop / h))):
            f.doStep(k * h, h)
            rows.append(row())
        f.terminate()
        f.freeInstance()
        return np.array(rows)


@pytest.fixture(scope="module")
def fmus(tmp_path_factory, shared_fmu):
    """{"python": Fmu, "native": Fmu} of models/bouncing_ball.py, built once per run
    (conftest's shared_fmu)."""
    out = tmp_path_factory.mktemp("contact_settings")
    built = {"python": Fmu(shared_fmu(MODELS / "bouncing_ball.py", "python"), out / "xp")}
    if HAVE_CC:
        built["native"] = Fmu(shared_fmu(MODELS / "bouncing_ball.py", "native"), out / "xn")
    return built


def _kinds(fmus):
    return [k for k in ("python", "native") if k in fmus]


def _bounces(cv):
    """Closed form: (number of impacts until rest, time of the last one) of the ball dropped
    from H0 with restitution E, at rest at the first impact k whose rebound E^k v0 < cv."""
    v0 = math.sqrt(2 * G * H0)
    t, k = v0 / G, 1
    while E ** k * v0 >= cv:
        t += 2 * E ** k * v0 / G
        k += 1
    return k, t


@pytest.mark.parametrize("cv", [0.5, 1.5])
def test_a_large_contact_velocity_rests_the_ball_at_the_closed_form_impact(fmus, cv):
    k, t_k = _bounces(cv)
    assert k == {0.5: 4, 1.5: 2}[cv]          # the rebounds: 2.21, 1.11, 0.55, 0.28 m/s
    runs = {kind: fmus[kind].run({"solver.contact_velocity": cv}) for kind in _kinds(fmus)}
    for kind, r in runs.items():
        impacts, last, active, y, vy = r[-1]
        assert impacts == k, kind
        assert abs(last - t_k) < 1e-9, (kind, last, t_k)
        assert active == 1 and vy == 0.0, kind     # at rest on the floor from t_k on
        rest = r[:, 2] == 1
        assert rest.any() and abs(r[rest, 3] - y).max() < 1e-12, kind
    # the default (1e-3 m/s) bounces on: more impacts (13 in all)
    assert fmus["python"].run({})[-1, 0] > k
    if len(runs) == 2:
        assert np.abs(runs["python"] - runs["native"]).max() < 1e-9


def test_python_and_native_give_the_same_numbers_with_every_setting_changed(fmus):
    if "native" not in fmus:
        pytest.skip("the native FMU needs a C compiler")
    values = {"solver.contact_tol": 1e-6, "solver.contact_velocity": 0.2,
              "solver.event_tol": 1e-6}
    py, nat = (fmus[k].run(values) for k in ("python", "native"))
    assert np.abs(py - nat).max() < 1e-9
    k, t_k = _bounces(0.2)
    assert py[-1, 0] == k and abs(py[-1, 1] - t_k) < 1e-5


def test_a_coarse_event_tol_moves_the_impact_times_by_at_most_itself(fmus):
    """The first impact's time with event_tol = 1e-15 s and a coarse 1e-4 s: Brent's method
    stops within the tolerance (plus 4 eps |t|) of the gap's root."""
    coarse = 1e-4
    v0 = math.sqrt(2 * G * H0)
    for kind in _kinds(fmus):
        fine = fmus[kind].run({"solver.event_tol": 1e-15}, stop=0.6, h=0.1)
        rough = fmus[kind].run({"solver.event_tol": coarse}, stop=0.6, h=0.1)
        assert fine[-1, 0] == rough[-1, 0] == 1
        t_fine, t_rough = fine[-1, 1], rough[-1, 1]
        assert abs(t_fine - v0 / G) < 1e-12, kind                   # the closed form
        assert abs(t_rough - t_fine) <= coarse + 4 * np.finfo(float).eps * t_fine, kind
        assert t_rough != t_fine, kind          # the setting reaches the event loop


BAD = [math.nan, 0.0, -1.0, math.inf, -math.inf]


@pytest.mark.parametrize("name", NAMES)
def test_bad_values_are_refused_naming_the_setting_and_its_range(fmus, name):
    low, high = CONTACT_LIMITS[name]
    for kind in _kinds(fmus):
        fmu = fmus[kind]
        ref = fmu.run({"solver.contact_velocity": 0.5}, stop=1.4, h=0.1)
        f = fmu.slave("bad")
        for value in BAD + [2 * high]:
            f.setReal([fmu.vr[name]], [value])
            with pytest.raises(FMICallException) as exc:
                f.exitInitializationMode()
            assert exc.value.status == 3, (kind, value)               # fmi2Error
            text = " ".join(m for s, m in f.messages if s == 3)
            f.messages.clear()
            shown = re.search(r"valid range \[([^,\]]+), ([^\]]+)\]", text)
            assert name in text and shown, (kind, value, text)
            assert (float(shown[1]), float(shown[2])) == (low, high), (kind, text)
        f.setReal([fmu.vr[name]], [float(fmu.vars[name].start)])     # the default again
        got = fmu.run({"solver.contact_velocity": 0.5}, stop=1.4, h=0.1, f=f)
        assert np.array_equal(got, ref), kind            # nothing of the refusals remains


def test_the_model_descriptions_declare_them_for_contact_models_only(fmus, tmp_path):
    units = {"solver.contact_tol": "m", "solver.contact_velocity": "m/s",
             "solver.event_tol": "s"}
    for kind in _kinds(fmus):
        v = fmus[kind].vars
        for name, default in zip(NAMES, EVENT_SETTINGS):
            assert v[name].causality == "parameter" and v[name].variability == "fixed"
            assert float(v[name].start) == default, (kind, name)
            assert v[name].unit == units[name], (kind, name)
            low, high = CONTACT_LIMITS[name]
            assert (float(v[name].min), float(v[name].max)) == (low, high)
            assert 0 < low <= default <= high < math.inf
    if "native" in fmus:
        for name in NAMES:                       # a master can swap one for the other
            a, b = fmus["python"].vars[name], fmus["native"].vars[name]
            assert (a.valueReference, a.start, a.unit, a.min, a.max) == (
                b.valueReference, b.start, b.unit, b.min, b.max)
    from fmu_mb import load_model
    from fmu_mb.fmi.native_build import _model_description
    path = MODELS / "double_pendulum.py"
    root = _model_description(load_model(path), path, path.read_text(), {}, {})
    names = {sv.get("name") for sv in root.iter("ScalarVariable")}
    assert "solver.rtol" in names and not names & set(NAMES)


@pytest.mark.skipif(not HAVE_CC, reason="the native FMU needs a C compiler")
def test_the_fmi3_fmu_takes_them_too(tmp_path):
    """fmi3_native.c (the FMI 2.0 front's settings, the model description made from the FMI
    2.0 one): the same variables; contact_velocity = 0.5 m/s rests the ball at the closed-form
    impact, with and without early return; NaN is refused, naming the setting."""
    from fmu_mb.fmi.native_fmi3 import build_native_fmu3
    path = build_native_fmu3(MODELS / "bouncing_ball.py", tmp_path, platforms="linux64")
    md = read_model_description(str(path))
    v = {x.name: x for x in md.modelVariables}
    for name, default in zip(NAMES, EVENT_SETTINGS):
        assert v[name].causality == "parameter" and float(v[name].start) == default
        assert (float(v[name].min), float(v[name].max)) == CONTACT_LIMITS[name]
    k, t_k = _bounces(0.5)
    for early in (False, True):
        r = fmpy.simulate_fmu(str(path), stop_time=STOP, output_interval=STEP,
                              early_return_allowed=early,
                              output=["floor.impacts", "floor.last_time"],
                              start_values={"e": E, "solver.contact_velocity": 0.5})
        assert r["floor.impacts"][-1] == k and abs(r["floor.last_time"][-1] - t_k) < 1e-9
    from fmpy.fmi3 import FMU3Slave
    messages = []

    def log(env, status, category, message):
        messages.append((status, message.decode()))

    f = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(path), str(tmp_path / "x")),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bad")
    f.instantiate(logMessage=log)
    f.enterInitializationMode()
    f.setFloat64([v["solver.event_tol"].valueReference], [math.nan])
    with pytest.raises(FMICallException) as exc:
        f.exitInitializationMode()
    assert exc.value.status == 3                                    # fmi3Error
    assert any(s == 3 and "solver.event_tol" in m and "valid range" in m for s, m in messages)
    f.setFloat64([v["solver.event_tol"].valueReference], [1e-12])
    f.exitInitializationMode()                                      # usable after the refusal
    f.doStep(0.0, 0.1)
    f.terminate()
    f.freeInstance()


@pytest.mark.parametrize("formulation", ["newton_euler", "recursive"])
def test_the_cli_simulate_options_reach_the_event_loop(tmp_path, capsys, formulation):
    """fmu-mb simulate --contact-velocity (the Python event loop and the compiled one): the
    closed-form rest; bad values exit with status 2 naming the option."""
    from fmu_mb.tools.cli import main
    k, t_k = _bounces(0.5)
    out = tmp_path / "ball.csv"
    assert main(["simulate", str(MODELS / "bouncing_ball.py"), "--stop-time", "1.4",
                 "--output-interval", "0.1", "--set", "e=0.5", "--contact-velocity", "0.5",
                 "--event-tol", "1e-12", "--contact-tol", "1e-8", "--formulation",
                 formulation, "--quiet", "-o", str(out)]) == 0
    data = np.genfromtxt(out, delimiter=",", names=True)
    assert data["floorimpacts"][-1] == k and abs(data["floorlast_time"][-1] - t_k) < 1e-9
    for option in ("--contact-tol", "--contact-velocity", "--event-tol"):
        for bad in ("nan", "0", "-1", "inf"):
            with pytest.raises(SystemExit) as exc:
                main(["simulate", str(MODELS / "bouncing_ball.py"), "--stop-time", "0.1",
                      option, bad, "--quiet"])
            assert exc.value.code == 2
            assert option in capsys.readouterr().err


SPATIAL_BALL = '''"""A sphere dropped from rest onto a rigid floor (spatial, gravity along -z)."""
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("spatial_ball", overrides, gravity=(0.0, 0.0, -9.81), description=__doc__)
    h0 = mb.param("h0", 1.0, "m", "drop height of the centre above its height at contact")
    e = mb.param("e", 0.8, "1", "coefficient of restitution", min=0.0, max=1.0)
    r = mb.param("r", 0.1, "m", "radius", min=0.0)
    ball = mb.body("ball", mass=1.0, inertia=(0.004, 0.004, 0.004), position=(0.0, 0.0, r + h0))
    mb.contact("floor", ball, radius=r, normal=(0.0, 0.0, 1.0), restitution=e)
    return mb.build()
'''


@pytest.mark.skipif(not HAVE_CC, reason="the native FMU needs a C compiler")
def test_a_spatial_contact_model_takes_them_in_both_fmus(tmp_path):
    """The spatial event loop (spatial_events.c; the Python FMU runs it through the engine
    library, fmu_mb.engine.engine's MbeSettings): the closed-form rest, Python = native."""
    from fmu_mb.fmi.build import build_fmu
    from fmu_mb.fmi.native_build import build_native_fmu
    path = tmp_path / "spatial_ball.py"
    path.write_text(SPATIAL_BALL)
    py = Fmu(build_fmu(path, tmp_path / "py"), tmp_path / "xp", axis="z")
    nat = Fmu(build_native_fmu(path, tmp_path / "nat", platforms="linux64"), tmp_path / "xn",
              axis="z")
    k, t_k = _bounces(0.5)
    a, b = (f.run({"solver.contact_velocity": 0.5}) for f in (py, nat))
    assert a[-1, 0] == k and abs(a[-1, 1] - t_k) < 1e-9 and a[-1, 2] == 1
    assert np.abs(a - b).max() < 1e-9
    assert py.run({})[-1, 0] > k                         # the default bounces on


@pytest.mark.skipif(not HAVE_CC, reason="the engine library needs a C compiler")
def test_the_engine_api_refuses_bad_contact_settings_and_keeps_its_own():
    """mbe_set_settings (engine.h MbeSettings): NaN, < 0 and inf refused naming the setting,
    nothing changed; 0 is the model data's value (A_DCSET)."""
    from dataclasses import replace

    from fmu_mb import load_model
    from fmu_mb.dynamics.integrate import Settings
    from fmu_mb.engine.engine import Engine
    from fmu_mb.errors import InputError
    m = load_model(MODELS / "bouncing_ball.py", e=E)
    good = Settings(formulation="recursive", contact_velocity=0.5)

    def run(settings, bad=None):
        eng = Engine(m)
        eng.set_settings(settings)
        if bad is not None:
            with pytest.raises(InputError, match=bad[0]):
                eng.set_settings(bad[1])
        eng.initialize(0.0)
        for _ in range(14):
            eng.do_step(0.1)
        return eng.get_state()

    ref = run(good)
    # the state ends with the contact's record: impacts, last time, impulse, energy, active
    assert ref[-5] == _bounces(0.5)[0] and abs(ref[-4] - _bounces(0.5)[1]) < 1e-9
    assert ref[-1] == 1
    for name in ("contact_tol", "contact_velocity", "event_tol"):
        for value in (math.nan, -1.0, math.inf):
            bad = replace(good, **{name: 1.0})
            object.__setattr__(bad, name, value)   # past Settings' own check: the C API's
            assert np.array_equal(run(good, (name, bad)), ref)
    # 0: the model data's defaults, which are Settings' (EVENT_SETTINGS)
    zero = Settings(formulation="recursive")
    for name in ("contact_tol", "contact_velocity", "event_tol"):
        object.__setattr__(zero, name, 0.0)
    assert np.array_equal(run(zero), run(Settings(formulation="recursive")))


STOP_ARM = '''"""A pendulum on a revolute joint with an angular end stop{extra}."""
from fmu_mb import ModelBuilder, rod_inertia


def build(**overrides):
    mb = ModelBuilder("stop_arm", overrides, description=__doc__)
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
    mb.revolute("O", mb.ground, rod, child_point=(-0.5, 0.0))
    mb.joint_limit("stop", "O", lower=-0.5, restitution=0.5)
    {wall}
    return mb.build()
'''


@pytest.mark.parametrize("mixed", [False, True])
def test_an_angular_stop_declares_rad_and_mixed_gaps_no_unit(tmp_path, mixed):
    """The gap unit of a revolute joint's stop is rad; contacts of both kinds get no unit
    declaration (the description says m or rad)."""
    from fmu_mb import load_model
    from fmu_mb.fmi.native_build import _model_description
    path = tmp_path / "stop_arm.py"
    wall = ('mb.contact("wall", rod, (0.5, 0.0), normal=(1.0, 0.0), restitution=0.5)'
            if mixed else "")
    path.write_text(STOP_ARM.format(extra=" and a wall" if mixed else "", wall=wall))
    model = load_model(path)
    assert set(model.compiled.contacts.units) == ({"m", "rad"} if mixed else {"rad"})
    root = _model_description(model, path, path.read_text(), {}, {})
    svs = {sv.get("name"): sv for sv in root.iter("ScalarVariable")}
    for name, unit in (("solver.contact_tol", "rad"), ("solver.contact_velocity", "rad/s"),
                       ("solver.event_tol", "s")):
        real = svs[name].find("Real")
        want = None if mixed and name != "solver.event_tol" else unit
        assert real.get("unit") == want, (name, real.get("unit"))
        assert (float(real.get("min")), float(real.get("max"))) == CONTACT_LIMITS[name]
        if want is None:
            assert f"[{unit.replace('rad', 'm')} or {unit}]" in svs[name].get("description")


@pytest.mark.parametrize("name", ["contact_tol", "contact_velocity", "event_tol"])
def test_settings_refuse_an_infinite_contact_setting_as_the_engine_does(name):
    """integrate.Settings refuses inf for the event loop's settings (the engine library and
    both FMUs refuse it; the Python loop took it as given)."""
    import math

    from fmu_mb.dynamics.integrate import Settings
    from fmu_mb.errors import InputError
    with pytest.raises(InputError, match=name):
        Settings(**{name: math.inf})
    Settings(**{name: 1e-3})
