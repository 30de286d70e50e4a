"""A robot of example-robot-data whose URDF declares <dynamics friction> on its joints (the
Unitree Z1 arm: seven revolute joints, F_c 1 to 2 N.m, with damping and limits), imported
with its friction, built by the default `fmu-mb build` path as a native FMI 2.0 FMU
(linux64; not the Python FMU it falls back to when the compiled engine cannot run a model)
and run in fmpy: every output at every point equals the Python event loop of formulation
newton_euler (absolute coordinates: the other formulation of the same law) to 1e-9, from a
pose where some joints slip, some stick and some switch between the two."""
import warnings
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")
fmpy = pytest.importorskip("fmpy")

from test_import_urdf import ROBOTS, needs_robots                  # noqa: E402

from fmu_mb import simulate                                          # noqa: E402
from fmu_mb.dynamics.integrate import Settings                      # noqa: E402

Z1 = "z1_description/urdf/z1.urdf"
#: the start: the shoulder and elbow off their limits (joint2 >= 0, joint3 <= 0), the gripper
#: off its stops, the base and the wrist turning
START = {"joint2.q0": 1.0, "joint3.q0": -1.0, "jointGripper.q0": -0.8,
         "joint1.qd0": 1.0, "joint4.qd0": 2.0}
RTOL, ATOL = 1e-11, 1e-13
T_END, DT = 0.3, 0.01


def declared_friction(path):
    """{joint name: friction} of the URDF's moving joints, read from the XML directly."""
    out = {}
    for j in ET.parse(path).getroot().iter("joint"):
        dyn = j.find("dynamics")
        if j.get("type") != "fixed" and dyn is not None and float(dyn.get("friction", 0)):
            out[j.get("name")] = float(dyn.get("friction"))
    return out


@needs_robots
def test_the_z1_declares_its_joint_friction_outputs_but_no_reactions():
    """An imported robot's FMU declares the friction outputs of every joint with friction
    (its joint reactions only when asked for: build_robot's `reactions`)."""
    from fmu_mb.dynamics.outputs import declared_outputs, output_spec
    from fmu_mb.importers.urdf import load_urdf

    path = ROBOTS / Z1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(path)
        asked = load_urdf(path, reactions=("joint2",))
    friction = {f"{j}.{s}" for j in declared_friction(path)
                for s in ("friction", "friction_state", "friction_loss")}
    reactions = {f"{j.name}.{c}" for j in model.joints for c in
                 ("fx", "fy", "fz", "tx", "ty", "tz")}
    every = {v.name for v in output_spec(model)}
    assert friction <= every and reactions <= every
    names = {v.name for _, v in declared_outputs(model)}
    assert friction <= names and not names & reactions
    assert names == every - reactions
    names = {v.name for _, v in declared_outputs(asked)}
    assert friction <= names and names & reactions == {f"joint2.{c}" for c in
                                                       ("fx", "fy", "fz", "tx", "ty", "tz")}


@needs_robots
@pytest.mark.slow
def test_the_z1_with_joint_friction_as_a_native_fmu_equals_the_python_loop(tmp_path):
    from fmu_mb.engine.data import supported
    from fmu_mb.fmi.native_build import build_model_fmu
    from fmu_mb.importers import model_file
    from fmu_mb.importers.urdf import load_urdf

    path = ROBOTS / Z1
    declared = declared_friction(path)
    assert len(declared) == 7 and set(declared.values()) == {1.0, 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(path, overrides=START)
    assert {j.name: j.friction for j in model.joints if j.friction} == declared
    assert supported(model) is None

    # the default build of `fmu-mb build z1.urdf` (kind None: native when the compiled
    # engine starts the model, else the Python FMU): the robot's model file, then the FMU
    (tmp_path / "robot").mkdir()
    source = model_file(path, tmp_path / "robot")
    fmu, kind, why = build_model_fmu(source, tmp_path, START, platforms="linux64")
    assert kind == "native", why
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
        xml = z.read("modelDescription.xml").decode()
    assert "binaries/linux64/z1_description.so" in names
    assert "sources/fmu_model.h" in names and "resources/model.py" not in names
    assert not any(n.startswith("binaries/") and not n.startswith("binaries/linux64/")
                   for n in names)
    assert "native FMU" in xml
    for j in declared:
        for suffix in ("friction", "friction_state", "friction_loss"):
            assert f'name="{j}.{suffix}"' in xml

    ref = simulate(model, T_END, DT, settings=Settings(formulation="newton_euler",
                                                       rtol=RTOL, atol=ATOL))
    md = fmpy.read_model_description(str(fmu))
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    assert len(outputs) > 100 and set(outputs) <= set(ref.dtype.names)
    r = fmpy.simulate_fmu(str(fmu), stop_time=T_END, output_interval=DT, output=outputs,
                          start_values={"solver.rtol": RTOL, "solver.atol": ATOL})
    assert len(r) == len(ref) and np.abs(r["time"] - ref["time"]).max() < 1e-12
    worst = {n: np.abs(r[n] - ref[n]).max() / max(1.0, np.abs(ref[n]).max()) for n in outputs}
    bad = {n: e for n, e in worst.items() if not e <= 1e-9}
    assert not bad, bad

    # the run passes through both states and switches: joints that slip throughout, joints
    # that stick throughout, joints that go slip -> stick and stick -> slip
    states = {j: ref[f"{j}.friction_state"] for j in declared}
    assert set(states["joint3"]) == {2.0}                           # slips throughout
    assert set(states["joint6"]) == {1.0}                           # sticks throughout
    assert states["joint1"][0] == 2.0 and states["joint1"][-1] == 1.0  # stops, sticks
    s2 = states["joint2"]
    assert (np.diff(s2) < 0).any() and (np.diff(s2) > 0).any()      # stick, then slip again
    assert all(np.all(np.diff(ref[f"{j}.friction_loss"]) >= -1e-12) for j in declared)
