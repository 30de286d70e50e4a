"""Parameter sweeps on Dask (`fmu-mb sweep`) and the progress bars of build, animate, sweep."""
import csv
import math
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
distributed = pytest.importorskip("dask.distributed")
if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

from fmpy import simulate_fmu  # noqa: E402

import fmu_mb.dynamics.simulate  # noqa: E402
from fmu_mb.tools.cli import main  # noqa: E402
from fmu_mb.tools.sweep import grid, sweep  # noqa: E402

from conftest import MODELS  # noqa: E402

LOCKING_MODEL = Path(__file__).resolve().parent / "data" / "locking_four_bar.py"
OUTPUTS = ["rod1.phi", "rod2.phi", "rod2.omega", "energy.total"]
STOP, DT = 0.5, 0.05


@pytest.fixture(scope="module")
def fmus(shared_fmu):
    return {"dp": shared_fmu(MODELS / "double_pendulum.py", "python"),
            "locking": shared_fmu(LOCKING_MODEL, "python")}


@pytest.fixture(scope="module")
def cluster():
    """A local cluster of two worker processes, given to sweep() by its address."""
    import logging

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c:
        yield c
    assert c.status.name == "closed"


def test_3x3_grid_on_cluster_equals_nine_serial_fmpy_runs(fmus, cluster):
    params = {"l1": [0.4, 0.5, 0.6], "m2": [0.5, 1.0, 2.0]}
    columns, rows = sweep(fmus["dp"], params, STOP, DT, OUTPUTS,
                          scheduler=cluster.scheduler_address)
    assert columns == ["variant", "l1", "m2", "time", *OUTPUTS, "status", "error"]
    assert len(rows) == 9
    for k, (variant, row) in enumerate(zip(grid(params), rows)):
        assert row["variant"] == k and row["status"] == "ok" and row["error"] == ""
        assert {n: row[n] for n in params} == variant
        ref = simulate_fmu(str(fmus["dp"]), stop_time=STOP, output_interval=DT,
                           start_values=variant, output=OUTPUTS)
        assert row["time"] == ref["time"][-1] == STOP
        for o in OUTPUTS:
            assert abs(row[o] - ref[o][-1]) <= 1e-12, (variant, o, row[o], ref[o][-1])
    # the parameters matter: nine different results
    assert len({round(r["rod2.phi"], 12) for r in rows}) == 9


def test_discarded_step_is_recorded(fmus, cluster):
    # the locking four-bar locks up between t = 0.8 and 0.9: fmpy stops at 0.8
    _, rows = sweep(fmus["locking"], {"rate": [1.0]}, 1.0, 0.1, ["O.angle"],
                    scheduler=cluster.scheduler_address)
    assert rows[0]["status"] == "error"
    assert math.isclose(rows[0]["time"], 0.8)
    assert "stopped at t = 0.8" in rows[0]["error"]
    assert "failed" in rows[0]["error"] and "fmi2Terminated is true" in rows[0]["error"]


def read_table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_cli_sweep_records_invalid_variant_and_finishes(fmus, tmp_path, capsys):
    out = tmp_path / "table.csv"
    rc = main(["sweep", str(fmus["dp"]), "--param", "l1=0.5:0.5:1", "--param",
               "l2=-0.1:0.5:3", "--stop-time", str(STOP), "--output-interval", str(DT),
               "--workers", "2", "--quiet", "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "3 variants, 1 failed" in captured.out
    assert "%" not in captured.err                      # --quiet
    table = read_table(out)
    assert [r["status"] for r in table] == ["error", "ok", "ok"]
    assert "parameter 'l2': expected a value >= 1e-09, received -0.1" in table[0]["error"]
    assert table[0]["rod2.phi"] == "nan"
    # default outputs: every output of the FMU
    md = fmpy.read_model_description(str(fmus["dp"]))
    assert [v.name for v in md.modelVariables if v.causality == "output"] == \
        list(table[0])[4:-2]
    for r in table[1:]:
        assert r["error"] == "" and float(r["time"]) == STOP
        ref = simulate_fmu(str(fmus["dp"]), stop_time=STOP, output_interval=DT,
                           start_values={"l1": 0.5, "l2": float(r["l2"])}, output=["rod2.phi"])
        assert float(r["rod2.phi"]) == pytest.approx(ref["rod2.phi"][-1], abs=1e-12)


@pytest.mark.parametrize("argv, code, message", [
    (["--param", "l1=0.4:0.6"], 2, "expected NAME=start:stop:count, received 'l1=0.4:0.6'"),
    (["--param", "l1"], 2, "expected NAME=start:stop:count"),
    (["--param", "l1=a:1:3"], 2, "start and stop must be numbers"),
    (["--param", "l1=0.4:0.6:0"], 2, "count must be an integer >= 1, received 0"),
    (["--param", "l1=0.4:0.6:2.5"], 2, "count must be an integer >= 1, received '2.5'"),
    (["--param", "l1=0.4:0.6:2", "--param", "l1=1:2:2"], 2, "--param l1 given twice"),
    (["--param", "l1=0.4:0.6:2", "--workers", "0"], 2, "expected an integer >= 1"),
    (["--param", "nope=0:1:2"], 1, "unknown parameter 'nope'"),
    (["--param", "nope=0:1:2"], 1, "parameters are ['m1', 'm2', 'l1', 'l2'"),
    (["--param", "solver.method=0:1:2"], 1, "only Real and Integer parameters"),
    (["--param", "l1=0.4:0.6:2", "--outputs", "rod9.x"], 1, "unknown output(s) ['rod9.x']"),
    (["--param", "l1=0.4:0.6:2", "FMU=missing.fmu"], 1, "does not exist"),
])
def test_cli_sweep_argument_errors(fmus, argv, code, message, capsys):
    fmu = str(fmus["dp"])
    if "FMU=missing.fmu" in argv:
        argv, fmu = argv[:-1], "missing.fmu"
    try:
        rc = main(["sweep", fmu, "--stop-time", "0.1", *argv])
    except SystemExit as exc:
        rc = exc.code
    assert rc == code
    err = capsys.readouterr().err
    assert message in err
    if code == 1:
        assert err.count("\n") == 1      # one line "fmu-mb: error: ..."


@pytest.fixture
def eager_progress(monkeypatch):
    """Progress bars that show at once instead of after one second (and on the captured
    stderr, which is no terminal)."""
    init = sys.modules["fmu_mb.dynamics.simulate"]._Progress.__init__

    def started_early(self, total):
        init(self, total)
        self.start -= 5.0
        self.terminal = True

    monkeypatch.setattr(sys.modules["fmu_mb.dynamics.simulate"]._Progress, "__init__", started_early)


def test_sweep_build_animate_show_progress(fmus, tmp_path, capsys, eager_progress):
    rc = main(["sweep", str(fmus["dp"]), "--param", "l1=0.4:0.6:2", "--stop-time", "0.1",
               "--outputs", "rod1.phi", "--workers", "1", "-o", str(tmp_path / "t.csv")])
    assert rc == 0 and "100.0%" in capsys.readouterr().err
    # this machine's binary only: the progress is the subject, not the platforms
    rc = main(["build", str(MODELS / "double_pendulum.py"), "-o", str(tmp_path),
               "--platforms", "linux64"])
    captured = capsys.readouterr()
    assert rc == 0 and "100.0%" in captured.err
    assert captured.out.strip().endswith("double_pendulum.fmu")
    rc = main(["build", str(MODELS / "double_pendulum.py"), "-o", str(tmp_path), "--quiet",
               "--platforms", "linux64"])
    assert rc == 0 and "%" not in capsys.readouterr().err
    csv_path = tmp_path / "dp.csv"
    assert main(["simulate", str(MODELS / "double_pendulum.py"), "--stop-time", "0.1",
                 "--output-interval", "0.02", "--quiet", "-o", str(csv_path)]) == 0
    rc = main(["animate", str(MODELS / "double_pendulum.py"), str(csv_path), "-o",
               str(tmp_path / "a.gif")])
    captured = capsys.readouterr()
    assert rc == 0 and "6 frames" in captured.out
    assert "100.0%" in captured.err and " 50.0%" in captured.err
    rc = main(["animate", str(MODELS / "double_pendulum.py"), str(csv_path), "-o",
               str(tmp_path / "b.gif"), "--quiet"])
    assert rc == 0 and "%" not in capsys.readouterr().err
