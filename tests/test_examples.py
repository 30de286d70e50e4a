"""The closed-loop examples reach their goals in fmpy and in libcosim, and the two masters
agree; the rollback master equals a run with the smaller steps at the same points."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu
pytest.importorskip("pythonfmu")
pytest.importorskip("fmpy")
pytest.importorskip("libcosimpy")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
import closed_loop as cl  # noqa: E402

# (settling time bound [s], overshoot bound [%]); measured: crane 7.52 s / 4.1 %,
# slider-crank 0.06 s / 36.8 % (the peak is the inertia ripple, +-1 rad/s at 15 rad/s),
# cart-pole 2.58 s / 1.9 %
BOUNDS = {"crane": (8.5, 6.0), "slider_crank": (0.5, 45.0), "cart_pole": (3.5, 5.0)}


def _controller(shared_build, controller_file):
    """The controller FMU of a controller file, built once per test run (conftest's
    shared_build: what closed_loop.build and excavator_dig.build make)."""
    from fmu_mb.fmi.build import build_controller_fmu
    return shared_build(f"test_examples controller {Path(controller_file).resolve()}",
                        lambda out: build_controller_fmu(controller_file, out))


@pytest.fixture(scope="module")
def built(shared_fmu, shared_build):
    """Per loop (plant, controller): closed_loop.build's FMUs, each built once per test run
    (conftest's shared_fmu and shared_build, shared by the pytest-xdist workers)."""
    return {loop.name: (shared_fmu(loop.plant, "python"),
                        _controller(shared_build, loop.controller)) for loop in cl.LOOPS}


@pytest.mark.parametrize("loop", cl.LOOPS, ids=[lp.name for lp in cl.LOOPS])
def test_closed_loop_reaches_goal_in_both_masters(built, loop):
    plant, ctrl = built[loop.name]
    res = {"fmpy": cl.run_fmpy(loop, plant, ctrl), "libcosim": cl.run_libcosim(loop, plant, ctrl)}
    settle_bound, over_bound = BOUNDS[loop.name]
    for master, r in res.items():
        settle, over = cl.metrics(r, loop)
        assert settle <= settle_bound, (master, settle)
        assert over <= over_bound, (master, over)
        assert abs(r[loop.goal][-1] - loop.target) <= loop.band
        if loop.name == "crane":                       # the sway is damped, too
            assert np.max(np.abs(r["phi.angle"][r["time"] > loop.stop_time - 2.0])) < 0.01
        if loop.name == "cart_pole":                   # balanced all along
            assert np.max(np.abs(r["pivot.angle"])) < 0.15
            assert abs(r["pivot.angle"][-1]) < 0.005
    a, b = res["fmpy"], res["libcosim"]
    assert len(a["time"]) == len(b["time"]) == round(loop.stop_time / loop.step)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=1e-9, err_msg=k)


def test_osp_system_structure_gives_the_same_result(built, tmp_path):
    loop = next(lp for lp in cl.LOOPS if lp.name == "slider_crank")
    plant, ctrl = built[loop.name]
    a = cl.run_fmpy(loop, plant, ctrl)
    b = cl.run_libcosim_osp(loop, plant, ctrl, tmp_path / "osp")
    assert (tmp_path / "osp" / "OspSystemStructure.xml").is_file()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=1e-9, err_msg=k)


def test_rollback_equals_run_with_the_same_step_points(tmp_path):
    import rollback
    path = rollback.build(tmp_path)
    rows, schedule, n_rollbacks = rollback.run_rollback(path, stop_time=2.0, H=0.05,
                                                        refine=10)
    assert n_rollbacks == 3 and rows[-1, 3] == 3             # three bounces, each refined
    assert sum(h for _, h in schedule) == pytest.approx(2.0, abs=1e-12)
    assert len(schedule) == 40 - 3 + 3 * 10
    replay = rollback.run_schedule(path, schedule)
    np.testing.assert_array_equal(rows, replay)             # bit-identical continuation
    # and the coarse steps that were rolled back really differed (the test can fail)
    coarse = rollback.run_schedule(path, [(k * 0.05, 0.05) for k in range(40)])
    assert not np.array_equal(coarse[-1], rows[-1])


@pytest.fixture
def excavator_tables():
    """examples/excavator_dig.py (its set-point and feed-forward tables are computed once per
    process: each controller_spec, three controller builds and three in the in-process loop,
    asks for the tables of all three joints and keeps its joint's)."""
    import excavator_dig as ed
    return ed


def test_excavator_digging_tracks_its_path_in_both_masters(shared_fmu, shared_build,
                                                           excavator_tables):
    """Three PID FMUs (set-point and feed-forward tables) drive the excavator's cylinders
    along the digging path; the first 3 s (hold, reach out and penetrate) in fmpy and
    libcosim, against the in-process loop. Measured (10 s run, python
    examples/excavator_dig.py): largest tip error 0.0112 m, RMS 0.0054 m, no end stop hit."""
    ed = excavator_tables
    # excavator_dig.build's FMUs, each built once per test run (the plant's Python FMU is
    # test_excavator's)
    plant = shared_fmu(ed.PLANT, "python")
    ctrls = [_controller(shared_build, f) for f in ed.controller_files()]
    stop = 3.0
    res = {"fmpy": ed.run_fmpy(plant, ctrls, stop_time=stop),
           "libcosim": ed.run_libcosim(plant, ctrls, stop_time=stop)}
    for master, r in res.items():
        emax, erms = ed.tracking_error(r)
        assert emax < 0.03 and erms < 0.015, (master, emax, erms)
        assert all(r[f"{j}_cyl.end_stops"][-1] == 0 for j in ("boom", "stick", "bucket"))
        # the tip went where the path goes: 0.6 m into the ground, 2 m ahead
        assert r["tip.y"].min() < -0.55 and r["tip.x"].max() > 6.9
    a, b = res["fmpy"], res["libcosim"]
    assert len(a["time"]) == len(b["time"]) == round(stop / ed.STEP)
    # libcosim's time is integer nanoseconds, fmpy's i * h: the set-point tables are read at
    # times a rounding apart, so the masters agree to rounding, relative to each signal
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-9, atol=1e-9, err_msg=k)
    # the FMU loop is the in-process loop (same PID law, same plant)
    ref = ed.run_inprocess(stop_time=1.0)
    n = len(ref["time"])
    for k in ("tip.x", "tip.y", "boom_pid.u", "bucket_pid.u"):
        np.testing.assert_allclose(a[k][:n], ref[k], rtol=1e-9, atol=1e-6, err_msg=k)


@pytest.mark.slow   # ~70 s; the compiled excavator's end stops = the Python loop's in test_kernel_events.py
def test_excavator_digging_on_the_native_plant_tracks_as_the_python_plant(tmp_path,
                                                                         excavator_tables):
    """The same loop with the excavator as a native FMU (its six end stops' events in the
    compiled engine): in fmpy and libcosim the tracking of the Python plant (the in-process
    loop's numbers over the first second, the error bounds over 3 s)."""
    pytest.importorskip("libcosimpy")
    import shutil
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("building a native FMU needs a C compiler")
    ed = excavator_tables
    plant, ctrls = ed.build(tmp_path, native=True)
    stop = 3.0
    res = {"fmpy": ed.run_fmpy(plant, ctrls, stop_time=stop),
           "libcosim": ed.run_libcosim(plant, ctrls, stop_time=stop)}
    ref = ed.run_inprocess(stop_time=1.0)
    n = len(ref["time"])
    for master, r in res.items():
        emax, erms = ed.tracking_error(r)
        assert emax < 0.03 and erms < 0.015, (master, emax, erms)
        assert all(r[f"{j}_cyl.end_stops"][-1] == 0 for j in ("boom", "stick", "bucket"))
        assert r["tip.y"].min() < -0.55 and r["tip.x"].max() > 6.9
        for k in ("tip.x", "tip.y", "boom_pid.u", "bucket_pid.u"):
            np.testing.assert_allclose(r[k][:n], ref[k], rtol=1e-9, atol=1e-6,
                                       err_msg=(master, k))
