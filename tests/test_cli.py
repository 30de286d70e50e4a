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
    (["simulate", "MODEL", "--stop-time", "1", "--set", "L1=3"], 2,
     "unknown parameter(s) ['L1']"),
    (["info", "MODEL", "--set", "L1=3"], 2, "unknown parameter(s) ['L1']"),
    (["simulate", "MODEL", "--stop-time", "1", "--set", "oops"], 2, "expected NAME=VALUE"),
    (["simulate", "MODEL", "--stop-time", "1", "--input", "actuator_A.h=x"], 2,
     "expected a number, received 'x'"),
    (["simulate", "MODEL", "--stop-time", "1", "--input", "nope=1"], 2,
     "unknown input(s) ['nope']"),
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


# ---------------------------------------------------------------------- the info command's errors
NO_RETURN = """\"\"\"A pendulum whose build() forgets to return the model.\"\"\"
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("no_return", overrides)
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
    mb.build()
"""


@pytest.mark.parametrize("command", ["info", "build"])
def test_a_build_without_return_is_one_line(tmp_path, capsys, command):
    """It was a traceback ('NoneType' object has no attribute 'topology')."""
    path = tmp_path / "no_return.py"
    path.write_text(NO_RETURN)
    argv = [command, str(path)] + (["-o", str(tmp_path), "--quiet"] if command == "build"
                                   else [])
    if command == "build":
        pytest.importorskip("pythonfmu")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "return mb.build()" in err and "returned None" in err


def test_info_shows_the_whole_first_paragraph_of_the_description(capsys):
    """The model line held the docstring's first line, cut mid-sentence."""
    assert main(["info", str(MODELS / "singular_pendulum.py")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("model singular_pendulum: Ball on a string (seed 002, Drenovac)")
    assert first.endswith("restitution k).")


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    """A log file got ~110 kB of carriage returns: the bar shows only on a terminal."""
    import fmu_mb.dynamics.simulate as sim

    init = sim._Progress.__init__

    def started_early(self, total):         # as if the run had taken 5 s already
        init(self, total)
        self.start -= 5.0

    monkeypatch.setattr(sim._Progress, "__init__", started_early)
    out = tmp_path / "dp.csv"
    assert main(["simulate", str(MODELS / "double_pendulum.py"), "--stop-time", "0.1",
                 "--output-interval", "0.01", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "%" not in err
    monkeypatch.setattr(sim.sys.stderr, "isatty", lambda: True, raising=False)
    assert main(["simulate", str(MODELS / "double_pendulum.py"), "--stop-time", "0.1",
                 "--output-interval", "0.01", "-o", str(out)]) == 0
    assert "100.0%" in capsys.readouterr().err


def test_a_declared_pose_places_a_tree_joint_body_and_an_unreachable_one_warns():
    """A body given position= (and angle=) and placed by a revolute joint without mb.initial
    starts at its declared pose (the joint's coordinate that puts it there); a declared
    position the joint cannot reach gives an AssemblyWarning naming the joint; with
    mb.initial the given value wins."""
    import math
    import warnings

    from fmu_mb import AssemblyWarning, ModelBuilder

    def pendulum(initial=None, position=(0.0, -0.5), angle=-math.pi / 2):
        mb = ModelBuilder("p", {})
        b = mb.body("b", mass=1.0, inertia=0.1, position=position, angle=angle)
        mb.revolute("O", mb.ground, b, child_point=(-0.5, 0.0))
        if initial is not None:
            mb.initial("O", value=initial)
        return mb.build()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for kw in ({}, {"angle": None}, {"initial": -math.pi / 2}):
            m = pendulum(**kw)
            assert m.x0[:3] == pytest.approx([0.0, -0.5, -math.pi / 2], abs=1e-12), kw
    with pytest.warns(AssemblyWarning, match=r"body 'b' is placed by joint 'O' at \(\S+, -0\.5\)"
                      r".*mb\.initial\('O', value=\.\.\.\)"):
        m = pendulum(position=(0.0, -0.8), angle=None)       # out of the rod's reach
    assert m.x0[:2] == pytest.approx([0.0, -0.5], abs=1e-12)
    m = pendulum(initial=0.0)                                # the given value wins
    assert m.x0[:2] == pytest.approx([0.5, 0.0], abs=1e-12)


def test_readme_examples_write_under_out_and_no_stray_log():
    """The README's commands wrote dp.csv, dp.png, fmus/, table.csv... into the repository
    root; they write under out/ (ignored by git), whose folders the CLI creates. MuJoCo's
    MUJOCO_LOG.TXT (a bench run's) is not in the repository and is ignored."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    commands = "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S))
    commands += "\n" + "\n".join(re.findall(r"`(python examples/[^`]*)`", text))
    targets = re.findall(r"(?:^|\s)(?:-o|--output|--output-dir)\s+(\S+)", commands)
    assert len(targets) >= 6
    assert [t for t in targets if not t.startswith("out/")] == []
    assert "out/" in (root / ".gitignore").read_text().split()
    assert not (root / "MUJOCO_LOG.TXT").exists()
    assert "MUJOCO_LOG.TXT" in (root / ".gitignore").read_text().split()


def test_output_folders_are_created(tmp_path):
    out = tmp_path / "new" / "folder" / "dp.csv"
    assert main(["simulate", str(MODELS / "double_pendulum.py"), "--stop-time", "0.02",
                 "--output-interval", "0.01", "--quiet", "-o", str(out)]) == 0
    assert out.read_text().startswith("time,")
