"""Small defects that need no FMI host: numbers in messages written
plainly under numpy 2, and each warning of `fmu-mb build` shown once."""
import re
import subprocess
import sys

import numpy as np
import pytest

from fmu_mb import ModelBuilder, ModelError, load_model
from fmu_mb.errors import plain

from conftest import MODELS


def test_plain_writes_numpy_values_as_python_numbers():
    assert plain((np.float64(0.0), np.float64(1.5), 2)) == "(0.0, 1.5, 2)"
    assert plain(np.array([1.0, np.nan])) == "[1.0, nan]"
    assert plain(np.int64(3)) == "3" and plain("x") == "'x'"


@pytest.mark.parametrize("make", [
    lambda mb, a, b: mb.universal("U", a, b, at=(0.0, 0.0, 0.0), axis=np.array([0.0, 0.0, 1.0]),
                                  axis2=np.array([0.0, 1.0, 1.0])),
    lambda mb, a, b: mb.body("d", mass=1.0, inertia=(1.0, 1.0, 1.0),
                             position=(np.float64(1.0), np.float64(np.nan), 0.0)),
])
def test_messages_hold_no_numpy_reprs(make):
    """numpy 2 writes np.float64(0.0) for its scalars: messages convert them (def1338: a
    universal joint's axes were shown as axis=(np.float64(0.0), ...))."""
    mb = ModelBuilder("u", {}, gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=1.0, inertia=(1.0, 1.0, 1.0))
    b = mb.body("b", mass=1.0, inertia=(1.0, 1.0, 1.0))
    mb.spherical("s", mb.ground, a, at=(0.0, 0.0, 0.0))
    with pytest.raises(ModelError) as info:
        make(mb, a, b)
    assert "np." not in str(info.value) and re.search(r"\(0\.0, |\(1\.0, nan", str(info.value))


def test_a_parameter_set_from_numpy_is_echoed_plainly():
    with pytest.raises(ModelError, match=r"received -1\.0$"):
        load_model(MODELS / "double_pendulum.py", l1=np.float64(-1.0))


def test_fmu_mb_build_shows_each_assembly_warning_once(tmp_path):
    """A four-bar whose guesses pick the other branch: each joint's AssemblyWarning once on
    stderr (def1338: twice, the model being built more than once)."""
    text = (MODELS / "four_bar.py").read_text()
    text = text.replace('mb.initial("B0", guess=deg(80.0))', 'mb.initial("B0", guess=deg(280.0))')
    text = text.replace('mb.initial("A", guess=deg(-60.0))', 'mb.initial("A", guess=deg(140.0))')
    assert "deg(280.0)" in text and "deg(140.0)" in text
    model = tmp_path / "four_bar_branch.py"
    model.write_text(text)
    res = subprocess.run([sys.executable, "-m", "fmu_mb", "build", "--quiet", "--native",
                          str(model), "-o", str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if "AssemblyWarning" in ln]
    assert len(lines) == 2 and "joint 'A'" in lines[0] + lines[1], res.stderr
    assert len(set(lines)) == 2
