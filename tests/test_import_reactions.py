"""Joint reactions of an imported robot as FMU outputs only on request (reactions= of
load_urdf / load_mjcf, fmu-mb build --reactions JOINT | all): the declared outputs differ
from the default build exactly by the requested reactions, the requested reactions equal
Pinocchio's joint forces (rnea's data.f, the spatial force of the parent on the child's
subtree at the joint), the FMUs pass fmpy validate and every output they share is the same
number in both builds."""
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")

from conftest import ROOT                                              # noqa: E402

from fmu_mb import initial_state, load_urdf, output_values              # noqa: E402
from fmu_mb.dynamics.outputs import declared_outputs, output_spec      # noqa: E402
from fmu_mb.errors import ModelError                                   # noqa: E402

#: a fixed-base arm: revolute, prismatic and continuous joints with rotated origins and
#: inertial frames, and a fixed joint (merged into its parent's body, or a weld)
ARM = """<robot name="arm">
  <link name="base"><inertial><mass value="2"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0.1 0.02 0.3" rpy="0.2 0.1 -0.3"/>
    <mass value="1.5"/>
    <inertia ixx="0.03" iyy="0.04" izz="0.02" ixy="0.001" ixz="0.002" iyz="-0.001"/>
  </inertial></link>
  <link name="slider"><inertial><origin xyz="0.0 0.05 0.1"/><mass value="0.8"/>
    <inertia ixx="0.01" iyy="0.012" izz="0.008" ixy="0" ixz="0.0005" iyz="0"/>
  </inertial></link>
  <link name="tool"><inertial><origin xyz="0.02 0 0.04"/><mass value="0.3"/>
    <inertia ixx="0.002" iyy="0.003" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0 0.03 0.02"/><mass value="0.4"/>
    <inertia ixx="0.002" iyy="0.002" izz="0.003" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.2" rpy="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="elbow-slide" type="prismatic"><parent link="upper"/><child link="slider"/>
    <origin xyz="0.2 0 0.5" rpy="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  <joint name="wrist" type="continuous"><parent link="slider"/><child link="tool"/>
    <origin xyz="0 0.1 0.2" rpy="0 0.5 0"/><axis xyz="1 0 0"/></joint>
  <joint name="flange" type="fixed"><parent link="tool"/><child link="hand"/>
    <origin xyz="0.05 0 0.1" rpy="0.1 0.2 0.3"/></joint>
</robot>
"""
COMPONENTS = ("fx", "fy", "fz", "tx", "ty", "tz")
#: the model's joint names (the file's, made identifiers)
JOINTS = ("shoulder", "elbow_slide", "wrist")


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    return path


def reaction_names(*joints):
    return {f"{j}.{c}" for j in joints for c in COMPONENTS}


def declared(model):
    return {v.name for _, v in declared_outputs(model)}


def test_reactions_are_declared_exactly_as_requested(arm):
    every = {v.name for v in output_spec(load_urdf(arm))}
    none = load_urdf(arm)
    assert declared(none) == every - reaction_names(*JOINTS)
    assert none.undeclared_outputs == frozenset(reaction_names(*JOINTS))
    # file names ("elbow-slide") or the model's ("elbow_slide") name the joint
    some = load_urdf(arm, reactions=["wrist", "elbow-slide"])
    assert declared(some) - declared(none) == reaction_names("wrist", "elbow_slide")
    assert declared(load_urdf(arm, reactions=["elbow_slide"])) - declared(none) == \
        reaction_names("elbow_slide")
    for everything in (True, "all", ["all"]):
        assert declared(load_urdf(arm, reactions=everything)) == every
    # a weld (fixed="weld") has reactions too; merged, the fixed joint is no joint
    welded = load_urdf(arm, fixed="weld", reactions=["flange"])
    assert declared(welded) - declared(load_urdf(arm, fixed="weld")) == reaction_names("flange")
    # the outputs themselves (simulate() columns) are the same in every case
    assert [v.name for v in output_spec(some)] == [v.name for v in output_spec(none)]


def test_hand_written_models_declare_every_output():
    from fmu_mb import load_model
    m = load_model(ROOT / "examples" / "models" / "cart_pole.py")
    assert m.undeclared_outputs == frozenset()
    assert [v for _, v in declared_outputs(m)] == list(output_spec(m))
    assert any(v.name.endswith(".fx") for v in output_spec(m))


@pytest.mark.parametrize("bad, message", [
    (["nope"], "unknown joint 'nope'; joints with reactions are ['elbow-slide', 'shoulder', "
               "'wrist']"),
    (["flange"], "joint 'flange' has no reaction output: it is a fixed joint merged"),
    ([3], "reactions must be None, True, 'all' or a list of joint names, received [3]"),
    (["all", "wrist"], "'all' with joint names"),
    (7, "reactions must be None, True, 'all' or a list of joint names, received 7"),
])
def test_a_bad_reaction_request_is_refused_naming_it(arm, bad, message):
    with pytest.raises(ModelError) as err:
        load_urdf(arm, reactions=bad)
    assert message in str(err.value)


def test_requested_reactions_equal_pinocchio_joint_forces(arm):
    """At random states with zero joint torque: each joint's reaction (force and torque of
    the parent on the child at the joint point, global axes) is Pinocchio's data.f of RNEA at
    ABA's accelerations, turned into global axes (its axial torque, the joint torque, is 0)."""
    pin = pytest.importorskip("pinocchio", reason="the reference is Pinocchio's RNEA")
    pm = pin.buildModelFromUrdf(str(arm))
    pd = pm.createData()
    rng = np.random.default_rng(29)
    for _ in range(5):
        qp, v = pin.neutral(pm), rng.uniform(-2.0, 2.0, pm.nv)
        overrides = {}
        for i in range(1, pm.njoints):
            jm, th = pm.joints[i], rng.uniform(-1.5, 1.5)
            if jm.nq == 1:
                qp[jm.idx_q] = th
            else:                                      # continuous: (cos, sin)
                qp[jm.idx_q:jm.idx_q + 2] = np.cos(th), np.sin(th)
            name = pm.names[i].replace("-", "_")
            overrides[f"{name}.q0"], overrides[f"{name}.qd0"] = th, float(v[jm.idx_v])
        m = load_urdf(arm, overrides=overrides, limits=False, reactions=["shoulder",
                                                                          "elbow-slide", "wrist"])
        y = dict(zip([o.name for o in output_spec(m)],
                     output_values(m, initial_state(m), np.zeros(len(m.inputs)))))
        a = pin.aba(pm, pd, qp, v, np.zeros(pm.nv))
        pin.rnea(pm, pd, qp, v, a)
        pin.forwardKinematics(pm, pd, qp)
        for i in range(1, pm.njoints):
            name = pm.names[i].replace("-", "_")
            R = pd.oMi[i].rotation
            ref = np.concatenate([R @ pd.f[i].linear, R @ pd.f[i].angular])
            ours = np.array([y[f"{name}.{c}"] for c in COMPONENTS])
            assert np.abs(ours - ref).max() < 1e-12 * max(1.0, np.abs(ref).max()), name


def _variables(fmu):
    """(names of the output variables, number of ModelStructure Outputs) of an FMU."""
    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    outs = [sv.get("name") for sv in root.iter("ScalarVariable")
            if sv.get("causality") == "output"]
    return outs, len(root.find("ModelStructure").find("Outputs").findall("Unknown"))


def _build(arm, out, *extra):
    out.mkdir()
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "build", str(arm), "-o", str(out),
                        "--quiet", "--set", "shoulder.q0=0.4", "--set", "wrist.q0=-0.7",
                        *extra], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return out / "arm.fmu"


@pytest.mark.fmu
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["--native", "--python"])
def test_fmus_declare_the_requested_reactions_and_share_every_other_output(arm, tmp_path,
                                                                            kind):
    from fmpy import simulate_fmu
    from fmpy.validation import validate_fmu

    fmus = {"none": _build(arm, tmp_path / "none", kind),
            "some": _build(arm, tmp_path / "some", kind, "--reactions", "wrist",
                           "--reactions", "elbow-slide"),
            "all": _build(arm, tmp_path / "all", kind, "--reactions", "all")}
    names = {}
    for key, fmu in fmus.items():
        assert validate_fmu(str(fmu)) == [], key
        outs, n_structure = _variables(fmu)
        assert n_structure == len(outs), key
        names[key] = set(outs)
    assert names["some"] - names["none"] == reaction_names("wrist", "elbow_slide")
    assert names["all"] - names["none"] == reaction_names(*JOINTS)
    assert names["none"] <= names["some"] <= names["all"]
    inp = np.array([(0.0, 0.5, -0.2, 0.1), (1.0, 0.5, -0.2, 0.1)],
                   dtype=[("time", float), ("shoulder.h", float), ("elbow_slide.h", float),
                          ("wrist.h", float)])
    res = {key: simulate_fmu(str(fmu), stop_time=0.3, output_interval=0.05, input=inp,
                             output=sorted(names[key]))
           for key, fmu in fmus.items()}
    for key in ("none", "some"):             # the same numbers as the all-reactions build
        for n in names[key]:
            assert np.array_equal(res[key][n], res["all"][n]), (key, n)
    assert np.abs(res["all"]["wrist.fz"]).max() > 0.1      # a reaction that is not nothing


def test_cli_info_names_the_undeclared_reactions(arm):
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "info", str(arm), "--reactions",
                        "wrist"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "wrist.fx [N]" in r.stdout and "shoulder.fx" not in r.stdout
    assert "12 joint reaction outputs not declared" in r.stdout
    r = subprocess.run([sys.executable, "-m", "fmu_mb", "info", str(arm), "--reactions",
                        "elbow"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "unknown joint 'elbow'" in r.stderr
