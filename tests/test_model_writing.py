"""What a new user stumbles on when writing models: one-line errors with file and
line, the docstring as the description, assembly warnings and the joint that does not fit,
plots with units, animate refusing data of other parameters, the README's commands."""
import math
import re
import shlex
import warnings

import numpy as np
import pytest

from fmu_mb import (AssemblyError, AssemblyWarning, ModelBuilder, ModelError, load_model,
                    rod_inertia)
from fmu_mb.tools.cli import main

from conftest import MODELS, ROOT

BAD = {
    "keyword": ('b = mb.body("b", mas=1.0, inertia=0.1)',
                r"bad\.py:7: TypeError: .*unexpected keyword argument 'mas'"),
    "syntax": ('b = mb.body("b", mass=1.0 inertia=0.1)', r"bad\.py:7: SyntaxError: "),
    "builder": ('b = mb.body("b", mass=-1.0, inertia=0.1)',
                r"bad\.py:7: body 'b': mass must be >= 0"),
    "name": ('b = mb.body("b", mass=1.0, inertia=rod_inertia(1.0))',
             r"bad\.py:7: TypeError: rod_inertia\(\) missing"),
}


def bad_file(tmp_path, line):
    path = tmp_path / "bad.py"
    path.write_text(f'''"""A model with a mistake."""
from fmu_mb import ModelBuilder, rod_inertia


def build(**overrides):
    mb = ModelBuilder("bad", overrides)
    {line}
    mb.revolute("A", mb.ground, "b")
    return mb.build()
''')
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_model_file_error_is_one_line_with_file_and_line(tmp_path, capsys, case):
    line, pattern = BAD[case]
    path = bad_file(tmp_path, line)
    with pytest.raises(ModelError, match=pattern):
        load_model(path)
    for argv in (["info", str(path)], ["simulate", str(path), "--stop-time", "0.1"],
                 ["build", str(path), "-o", str(tmp_path / "out"), "--quiet"]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        assert re.search(pattern, err), err
        assert "Traceback" not in err


def test_docstring_is_the_default_description(tmp_path):
    path = bad_file(tmp_path, 'b = mb.body("b", mass=1.0, inertia=0.1)')
    assert load_model(path).description == "A model with a mistake."
    assert "20 t class" in load_model(MODELS / "excavator.py").description
    # an explicit description wins; a builder outside a model file has none by default
    assert ModelBuilder("m", {}, description="given").description == "given"
    assert ModelBuilder("m", {}).description == ""


def test_fmu_build_takes_the_docstring_as_description(tmp_path):
    pytest.importorskip("pythonfmu")
    from fmpy import read_model_description

    from fmu_mb.fmi.build import build_fmu
    path = bad_file(tmp_path, 'b = mb.body("b", mass=1.0, inertia=0.1)')
    fmu = build_fmu(path, tmp_path)
    assert read_model_description(str(fmu)).description == "A model with a mistake."


# ------------------------------------------------------------------ assembly
def four_bar(coupler=1.0, crank_value=1.0, guess=None):
    """Crank 0.5, coupler, rocker 0.8, ground pivots 1.0 apart."""
    mb = ModelBuilder("fb", {}, gravity=(0.0, 0.0))
    a = mb.body("crank", mass=1.0, inertia=0.1)
    b = mb.body("coupler", mass=1.0, inertia=0.1)
    c = mb.body("rocker", mass=1.0, inertia=0.1)
    mb.revolute("O", mb.ground, a, child_point=(-0.25, 0.0))
    mb.revolute("A", a, b, parent_point=(0.25, 0.0), child_point=(-coupler / 2, 0.0))
    mb.revolute("B", b, c, parent_point=(coupler / 2, 0.0), child_point=(-0.4, 0.0))
    mb.revolute("C", mb.ground, c, parent_point=(1.0, 0.0), child_point=(0.4, 0.0))
    if crank_value is not None:
        mb.initial("O", value=crank_value)
    if guess is not None:
        mb.initial("A", guess=guess)
    return mb.build()


def test_assembly_error_names_the_joint_that_does_not_fit_with_its_gap():
    # coupler 3.0 > 0.5 + 1.0 + 0.8: the best pose leaves B open by 3.0 - 2.3 = 0.7 m
    with pytest.raises(AssemblyError) as exc:
        four_bar(coupler=3.0, crank_value=None)
    msg = str(exc.value)
    assert "joint 'B'" in msg and "does not fit" in msg
    gap = float(re.search(r"stay ([0-9.e-]+) m apart", msg).group(1))
    assert gap == pytest.approx(0.7, rel=2e-3)
    assert "joint 'A'" not in msg and "joint 'O'" not in msg      # not every joint listed
    # with the crank held at 1 rad: the crank tip to the rocker pivot, closed form
    tip = 0.5 * np.array([math.cos(1.0), math.sin(1.0)])
    best = 3.0 - (np.linalg.norm(tip - [1.0, 0.0]) + 0.8)
    with pytest.raises(AssemblyError) as exc:
        four_bar(coupler=3.0)
    gap = float(re.search(r"stay ([0-9.e-]+) m apart", str(exc.value)).group(1))
    assert gap == pytest.approx(best, rel=2e-3)


def test_assembly_warns_for_a_branch_far_from_the_guess():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        near = four_bar(guess=-0.6)                     # the branch at A = -0.64 rad
    with pytest.warns(AssemblyWarning, match="joint 'A' assembled at .* far from its guess"):
        four_bar(guess=1.2)
    q = [j for j in near.joints]
    assert q                                            # built without a warning


def test_assembly_closes_from_a_start_newton_alone_does_not():
    """Newton-Raphson from this guess does not converge; the least-squares retry closes the
    loop (and the body angles stay on their placement's turn)."""
    from fmu_mb.mechanics import constraints
    m = four_bar(guess=-0.5)
    phi, _, _, _ = constraints.evaluate(m, m.x0, m.xd0, 0.0, need_conv=False)
    assert np.abs(phi).max() < 1e-10
    assert np.all(np.abs(m.x0[2::3]) < 2 * math.pi)


def cylinder_arm(angle):
    mb = ModelBuilder("arm", {})
    b = mb.body("arm", mass=10.0, inertia=rod_inertia(10.0, 1.0))
    mb.revolute("A", mb.ground, b, child_point=(-0.5, 0.0))
    mb.cylinder("cyl", mb.ground, b, a_point=(0.3, -0.6), b_point=(0.0, 0.0),
                min_length=0.6, max_length=0.9)
    mb.joint_limit("stop", "A", lower=-0.5, upper=0.5)
    mb.initial("A", value=angle)
    return mb.build()


def test_assembly_warns_for_a_cylinder_or_joint_outside_its_range():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cylinder_arm(0.2)
    with pytest.warns(AssemblyWarning) as rec:
        cylinder_arm(1.2)
    text = " ".join(str(w.message) for w in rec)
    # the pin distance at 1.2 rad, from the geometry: outside [0.6, 0.9]
    eye = np.array([math.cos(1.2), math.sin(1.2)]) * 0.5
    length = np.linalg.norm(eye - [0.3, -0.6])
    assert length > 0.9
    assert f"cylinder 'cyl' assembled at length {length:.4g} m" in text and "[0.6, 0.9]" in text
    assert "joint 'A' assembled beyond its limit 'stop_upper'" in text


# ------------------------------------------------------------------ plots, animate, README
def test_plot_labels_units_and_drops_zero_panels(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from fmu_mb import simulate
    from fmu_mb.tools import viz
    m = load_model(MODELS / "double_pendulum.py")
    r = simulate(m, 0.2, 0.01)
    seen = {}
    real_savefig = plt.Figure.savefig

    def spy(fig, *a, **k):
        seen["labels"] = [ax.get_ylabel() for ax in fig.axes]
        seen["title"] = fig._suptitle.get_text() if fig._suptitle else ""
        return real_savefig(fig, *a, **k)

    plt.Figure.savefig = spy
    try:
        shown = viz.plot_outputs(r, ["rod1.phi", "rod2.omega", "actuator_B.torque",
                                     "energy.total", "A.rate"], tmp_path / "p.png", model=m)
    finally:
        plt.Figure.savefig = real_savefig
    assert "actuator_B.torque" not in shown              # identically zero: no input
    assert seen["labels"] == ["rod1.phi [rad]", "rod2.omega [rad/s]", "energy.total [J]",
                              "A.rate [rad/s]"]
    assert "identically zero: actuator_B.torque" in seen["title"]
    # without the model the name decides the unit where it can
    assert viz.column_units(["rod1.phi", "A.rate", "x.fx"]) == {"rod1.phi": "rad",
                                                               "x.fx": "N"}


def test_readme_animate_matches_its_simulate_line(tmp_path):
    text = (ROOT / "README.md").read_text()
    sim = next(ln for ln in text.splitlines() if ln.startswith("fmu-mb simulate"))
    sim += " " + text.splitlines()[text.splitlines().index(sim) + 1]
    anim = next(ln for ln in text.splitlines() if ln.startswith("fmu-mb animate"))

    def sets(line):
        args = shlex.split(line.split("#")[0].replace("\\", " "))
        return sorted(args[i + 1] for i, a in enumerate(args) if a == "--set")

    assert sets(anim) == sets(sim) and sets(sim)
    model = shlex.split(sim)[2]
    assert shlex.split(anim)[2] == model


def test_animate_refuses_a_result_of_other_parameters(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    csv = tmp_path / "dp.csv"
    dp = str(MODELS / "double_pendulum.py")
    assert main(["simulate", dp, "--stop-time", "0.05", "--output-interval", "0.01",
                 "--set", "l1=0.6", "-o", str(csv), "--quiet"]) == 0
    assert main(["animate", dp, str(csv), "-o", str(tmp_path / "a.gif"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "joint 'A'" in err or "joint 'B'" in err
    assert "--set" in err
    assert main(["animate", dp, str(csv), "--set", "l1=0.6", "-o", str(tmp_path / "a.gif"),
                 "--quiet"]) == 0
