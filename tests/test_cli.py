"""The fmu-mb command line: simulate to CSV, info, and clear errors for bad arguments."""
import numpy as np
import pytest

from fmu_mb import simulate
from fmu_mb.tools.cli import main

from conftest import MODELS, model


def test_simulate_writes_csv_equal_to_simulate(tmp_path, capsys):
    out = tmp_path / "dp.csv"
    rc = main(["simulate", str(MODELS / "double_pendulum.py"), "--stop-time", "0.5",
               "--output-interval", "0.1", "--set", "l1=0.6", "--input", "actuator_A.h=0.3",
               "-o", str(out), "--quiet"])
    assert rc == 0
    data = np.genfromtxt(out, delimiter=",", names=True, deletechars="")
    ref = simulate(model("double_pendulum", l1=0.6), 0.5, 0.1, inputs={"actuator_A.h": 0.3})
    assert data.dtype.names[0] == "time"
    assert list(data.dtype.names) == list(ref.dtype.names)
    for name in ref.dtype.names:
        np.testing.assert_array_equal(data[name], ref[name])


def test_info_lists_parameters_inputs_outputs_topology(capsys):
    assert main(["info", str(MODELS / "slider_crank.py")]) == 0
    text = capsys.readouterr().out
    for piece in ("crank_length = 0.1 [m]", "drive.h [N.m]", "slider.x [m]",
                  "loops n_L = 1", "DOF from rank(D) = 1", "loop closed by B"):
        assert piece in text


@pytest.mark.parametrize("argv,code,message", [
    (["simulate", "MODEL", "--stop-time", "-1"], 2, "expected a finite number > 0"),
    (["simulate", "MODEL", "--stop-time", "1", "--set", "L1=3"], 1,
     "unknown parameter(s) ['L1']"),
    (["simulate", "MODEL", "--stop-time", "1", "--set", "oops"], 2, "expected NAME=VALUE"),
    (["simulate", "MODEL", "--stop-time", "1", "--input", "actuator_A.h=x"], 2,
     "expected a number, received 'x'"),
    (["simulate", "MODEL", "--stop-time", "1", "--input", "nope=1"], 1,
     "unknown input 'nope'"),
    (["simulate", "MODEL", "--stop-time", "1", "--formulation", "hamilton"], 2,
     "invalid choice: 'hamilton'"),
    (["simulate", "missing.py", "--stop-time", "1"], 1, "does not exist"),
    (["info", "MODEL", "--set", "l1=-2"], 1, "expected a value >= 1e-09"),
])
def test_bad_arguments(argv, code, message, capsys):
    argv = [str(MODELS / "double_pendulum.py") if a == "MODEL" else a for a in argv]
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    assert rc == code
    assert message in capsys.readouterr().err
