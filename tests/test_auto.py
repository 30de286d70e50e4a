"""formulation "auto" (the default): the first entry of formulations.AUTO that supports the
model runs it, in simulate(), advance(), the CLI and the FMU; its results are those of the
formulation it picks, within the integration tolerance of the other routes."""
import numpy as np
import pytest

from fmu_mb import Settings, advance, initial_state, simulate
from fmu_mb.dynamics import formulations
from fmu_mb.engine import kernel
from fmu_mb.dynamics.formulations import auto_choice, describe_choice
from fmu_mb.tools.cli import _parser, main

from conftest import MODELS, model, python_drive
from fmpy_logger import restore_fmpy_logger

OPEN_TREES = [("double_pendulum", {}), ("pendulum_chain", {"N": 5}),
              ("hinged_body_spring", {})]
OTHERS = [("python_drive", "Python function")]
LOOPS = ["slider_crank", "four_bar", "n_four_bar", "bouncing_ball"]     # loops and contacts


def test_auto_is_the_default_of_settings_cli_and_fmu():
    assert Settings().formulation == "auto"
    assert _parser().parse_args(["simulate", "m.py", "--stop-time", "1"]).formulation \
        == "auto"
    slave = pytest.importorskip("fmu_mb.fmi.slave")
    assert slave.SOLVER_PARAMETERS["solver.formulation"][1] == "auto"


@pytest.mark.parametrize("name,pars", OPEN_TREES)
def test_open_trees_run_in_the_compiled_kernel(name, pars):
    m = model(name, **pars)
    assert auto_choice(m) == ("recursive", {})
    assert Settings().formulation_for(m) == "recursive"
    assert initial_state(m).coords == "joint"


@pytest.mark.parametrize("name,why", OTHERS)
def test_other_models_run_in_newton_euler_and_say_why(name, why):
    m = python_drive() if name == "python_drive" else model(name)
    chosen, reasons = auto_choice(m)
    assert chosen == "newton_euler"
    assert why in reasons["recursive"]
    line = describe_choice(m)
    assert line.startswith("formulation auto -> newton_euler (not recursive: ") and why in line
    assert describe_choice(m, "tmt") == "formulation tmt (set explicitly)"


@pytest.mark.parametrize("name", LOOPS)
def test_closed_loops_run_in_the_kernel_when_it_takes_them(name):
    """recursive when the kernel runs closed loops and contacts (kernel.supported), else
    newton_euler."""
    m = model(name)
    why = kernel.supported(m)
    chosen, reasons = auto_choice(m)
    assert chosen == ("recursive" if why is None else "newton_euler")
    assert reasons == ({} if why is None else {"recursive": why})


def test_auto_results_are_within_the_tolerance_of_every_route():
    """Double pendulum with an input: auto (recursive, in C) against newton_euler, tmt and
    lagrange (Python); each at rtol 1e-10, so they must agree to ~1e-8."""
    m = model("double_pendulum")
    inputs = {"actuator_A.h": lambda t: 0.5 * np.sin(3 * t)}
    auto = simulate(m, 1.0, 0.05, inputs=inputs, rtol=1e-10, atol=1e-12)
    for f in ("newton_euler", "tmt", "lagrange"):
        other = simulate(m, 1.0, 0.05, inputs=inputs, formulation=f, rtol=1e-10, atol=1e-12)
        for n in ("A.angle", "B.angle", "rod2.x", "A.rate", "energy.total"):
            np.testing.assert_allclose(auto[n], other[n], atol=2e-8, err_msg=f"{f}: {n}")


@pytest.mark.parametrize("name,t_end", [("container_crane_driven", 2.0),
                                        ("slider_crank_stop", 0.8)])
def test_drives_and_persistent_contacts_run_in_the_kernel_within_tolerance(name, t_end):
    """The driven crane (a drive with a harmonic law) and the slider-crank held at its stop
    (a persistent contact) go to recursive; auto's results agree with tmt's (rtol 1e-10)."""
    m = model(name)
    assert auto_choice(m) == ("recursive", {})
    a = simulate(m, t_end, 0.05, rtol=1e-10, atol=1e-12)
    b = simulate(m, t_end, 0.05, formulation="tmt", rtol=1e-10, atol=1e-12)
    for col in b.dtype.names:
        scale = 1.0 + np.abs(b[col]).max()
        np.testing.assert_allclose(a[col], b[col], rtol=0, atol=1e-7 * scale, err_msg=col)


def test_auto_is_exactly_the_formulation_it_names():
    for name in ("slider_crank", "bouncing_ball"):
        a = simulate(model(name), 0.3, 0.05)
        b = simulate(model(name), 0.3, 0.05, formulation=auto_choice(model(name))[0])
        for n in a.dtype.names:
            np.testing.assert_array_equal(a[n], b[n])


def test_a_state_keeps_its_coordinates():
    """A state made by newton_euler (absolute x) continues in newton_euler under auto; a
    joint-coordinate state of a loop model continues in a joint-coordinate formulation:
    recursive when the kernel closes the loop, else tmt."""
    m = model("double_pendulum")
    ne = Settings(formulation="newton_euler")
    s0 = initial_state(m, ne)
    a = advance(m, s0, 0.1)
    b = advance(m, s0, 0.1, settings=ne)
    assert a.coords == "absolute"
    np.testing.assert_array_equal(a.q, b.q)
    sc = model("slider_crank")
    s1 = initial_state(sc, Settings(formulation="tmt"))
    c = advance(sc, s1, 0.1)
    joint = "recursive" if kernel.supported(sc) is None else "tmt"
    d = advance(sc, s1, 0.1, settings=Settings(formulation=joint))
    assert c.coords == "joint"
    np.testing.assert_array_equal(c.q, d.q)


@pytest.fixture
def fresh_kernel_state():
    kernel.library.cache_clear()
    yield
    kernel.library.cache_clear()


def test_without_a_compiler_auto_falls_back_to_newton_euler(tmp_path, fresh_kernel_state):
    ref = simulate(model("double_pendulum"), 0.5, 0.1)          # recursive
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel, "_cache_dirs", lambda: [tmp_path / "empty"])
        mp.setattr(kernel, "compiler", lambda: None)
        kernel.library.cache_clear()
        m = model("double_pendulum")
        chosen, reasons = auto_choice(m)
        assert chosen == "newton_euler"
        assert "C compiler" in reasons["recursive"]
        out = simulate(m, 0.5, 0.1)
    for n in ("A.angle", "B.angle", "B.rate"):
        np.testing.assert_allclose(out[n], ref[n], atol=1e-8)


def test_a_new_formulation_goes_in_front_of_the_list():
    calls = []

    def supports(m):
        calls.append(m.name)
        return None if m.topology.cut_joints else "it has no loop"

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(formulations, "AUTO", [("tmt", supports)] + formulations.AUTO)
        assert auto_choice(model("slider_crank"))[0] == "tmt"
        chosen, reasons = auto_choice(model("double_pendulum"))
        assert chosen == "recursive" and reasons == {"tmt": "it has no loop"}
    assert calls == ["slider_crank", "double_pendulum"]


def test_settings_a_formulation_cannot_run_move_auto_to_the_next():
    """A method the first candidate refuses (check_settings raises InputError) makes auto run
    the next one, and the description says so."""
    from fmu_mb.dynamics import integrate
    from fmu_mb.errors import InputError

    real = integrate.check_settings

    def check(model, settings):
        if settings.formulation == "recursive" and settings.method == "rk4":
            raise InputError("recursive cannot run rk4 (test)")
        return real(model, settings)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(integrate, "check_settings", check)
        m = model("double_pendulum")
        assert Settings(method="rk4").formulation_for(m) == "newton_euler"
        assert Settings().formulation_for(m) == "recursive"
        assert describe_choice(m, "auto", "newton_euler") == (
            "formulation auto -> newton_euler (not recursive: the solver settings rule it out)")
        a = simulate(m, 0.2, 0.05, method="rk4")
    b = simulate(m, 0.2, 0.05, method="rk4", formulation="newton_euler")
    np.testing.assert_array_equal(a["A.angle"], b["A.angle"])


def test_info_prints_the_choice(capsys):
    assert main(["info", str(MODELS / "double_pendulum.py")]) == 0
    assert "formulation auto -> recursive" in capsys.readouterr().out


def simulate_logged(fmu, **kwargs):
    """(simulate_fmu's result, the FMU's log messages), fmpy's logger restored after."""
    from fmpy import simulate_fmu
    messages = []
    try:
        r = simulate_fmu(str(fmu), debug_logging=True, logger=lambda env, inst, status, cat,
                         msg: messages.append(msg.decode() if isinstance(msg, bytes)
                                              else str(msg)), **kwargs)
    finally:
        restore_fmpy_logger()           # (conftest's fixture does it too, after the test)
    return r, messages


@pytest.mark.fmu
def test_fmu_logs_its_choice_and_runs_it(shared_fmu, capfd):
    """A default-built FMU runs auto's choice (the outputs equal simulate()'s) and says which
    in one log line at initialisation; afterwards an FMU on fmpy's default callbacks logs
    through fmpy's printLogMessage again, not through the freed logger of that call."""
    pytest.importorskip("pythonfmu")
    import gc

    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    for name in ("double_pendulum", "slider_crank"):
        chosen = auto_choice(model(name))[0]
        fmu = shared_fmu(MODELS / f"{name}.py", "python")
        r, messages = simulate_logged(fmu, stop_time=0.2, output_interval=0.01)
        lines = [x for x in messages if "formulation auto ->" in x]
        assert len(lines) == 1 and f"formulation auto -> {chosen}" in lines[0], messages
        ref = simulate(model(name), 0.2, 0.01, formulation=chosen)
        for col in r.dtype.names[1:]:
            np.testing.assert_allclose(r[col], ref[col], rtol=1e-12, atol=1e-12, err_msg=col)
    gc.collect()                         # (frees what simulate_fmu left)
    capfd.readouterr()
    n = len(messages)
    md = read_model_description(str(fmu))
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(fmu)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="again")
    slave.instantiate(loggingOn=True)    # fmpy's default callbacks
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    slave.terminate()
    slave.freeInstance()
    assert "formulation auto ->" in capfd.readouterr().out
    assert len(messages) == n            # not into the last simulate_fmu's logger
