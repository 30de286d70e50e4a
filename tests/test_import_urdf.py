"""URDF import (fmu_mb.importers): the imported model's joint accelerations against Pinocchio's
ABA on the same file (example-robot-data's robots), fixed and floating base; fixed joints
merged or welded; parameters; refusals with the file line; shapes kept for the viewer."""
import importlib.metadata
import warnings
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio", reason="the reference dynamics are Pinocchio's (pip pin)")
pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")

from fmu_mb import ModelError, tree_coordinates                      # noqa: E402
from fmu_mb.dynamics.formulations import get_formulation             # noqa: E402
from fmu_mb.importers.robot import identifier                        # noqa: E402
from fmu_mb.importers.urdf import load_urdf                          # noqa: E402

REC = get_formulation("recursive")


def robots_dir():
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    d = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return d if d.is_dir() else None


ROBOTS = robots_dir()
ALL = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.glob("*/*/*.urdf")) if ROBOTS else []

#: URDFs of example-robot-data that are not a rigid tree fmu_mb or Pinocchio can run, and why
#: (the package ships no xacro-only robot: every robot has its .urdf expanded)
SKIPPED = {
    "ur_description/urdf/ur3.urdf": "no robot name: not a valid URDF (yourdfpy and "
                                    "Pinocchio's urdfdom both refuse it)",
    "hector_description/robots/quadrotor_base.urdf": "fixed base: a single link, no joint "
                                                     "(nothing moves); floating base tested",
    "iris_description/robots/iris_simple.urdf": "fixed base: only fixed joints (nothing "
                                                "moves); floating base tested",
    "romeo_description/urdf/romeo.urdf": "massless links at the end of revolute joints (the "
                                         "mimic fingers): the articulated inertia is singular",
    "romeo_description/urdf/romeo_small.urdf": "inertia tensors that violate the triangle "
                                               "inequality (the builder refuses them)",
    "romeo_description/urdf/romeo_laas_small.urdf": "inertia tensors that are not positive "
                                                    "semi-definite (the builder refuses them)",
}
FLOATING_ONLY = {"hector_description/robots/quadrotor_base.urdf",
                 "iris_description/robots/iris_simple.urdf"}
FAST = ["panda_description/urdf/panda.urdf", "ur_description/urdf/ur5_robot.urdf",
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
        "allegro_hand_description/urdf/allegro_left_hand.urdf",
        "so_arm_description/urdf/so100.urdf", "tiago_description/robots/tiago_no_hand.urdf"]

needs_robots = pytest.mark.skipif(ROBOTS is None, reason="pip example-robot-data is not "
                                                          "installed")


def G(e):
    e0, e1, e2, e3 = e
    return np.array([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])


def quat_matrix(e):
    w, x, y, z = e
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def load(path, floating, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw.setdefault("mimic", "free")           # Pinocchio's default: mimic joints free
        m = load_urdf(path, base="floating" if floating else "fixed", limits=False, **kw)
        pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    return m, pm


def worst_difference(m, pm, floating, n=20, seed=0):
    """Largest |qdd - ABA| / max(1, |ABA|) over n random (q, qd, tau): Pinocchio's q, v, a
    mapped to the model's coordinates (a continuous joint's (cos, sin); the free flyer's
    origin, quaternion (x, y, z, w), local velocity and spatial acceleration against the root
    body's centre of mass and Euler parameters (e0, e1, e2, e3) and their derivatives).
    Pinocchio's ABA has no joint damping: it gets tau - damping * v."""
    pd = pm.createData()
    names = [c.rsplit(".", 1)[0] for c in tree_coordinates(m)]
    inputs = list(m.input_names)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        q, qd = np.zeros(len(names)), np.zeros(len(names))
        qp, v = pin.neutral(pm), rng.normal(size=pm.nv)
        tau, u = 5.0 * rng.normal(size=pm.nv), np.zeros(len(inputs))
        slots = []
        for i in range(1, pm.njoints):
            jm = pm.joints[i]
            if jm.nq == 7:
                continue
            th = rng.uniform(-2.0, 2.0)
            if jm.nq == 1:
                qp[jm.idx_q] = th
            else:
                qp[jm.idx_q:jm.idx_q + 2] = np.cos(th), np.sin(th)
            name = identifier(pm.names[i], set())
            k = names.index(name)
            q[k], qd[k] = th, v[jm.idx_v]
            u[inputs.index(name + ".h")] = tau[jm.idx_v]
            slots.append((k, jm.idx_v))
        if floating:
            c = np.array(m.body(names[-1]).position)   # the root's centre of mass, link axes
            e = rng.normal(size=4)
            e /= np.linalg.norm(e)
            pos, R = rng.normal(size=3), quat_matrix(e)
            qp[0:3], qp[3:7] = pos, (e[1], e[2], e[3], e[0])
            vl, wl = v[0:3], v[3:6]
            tau[:6] = 0.0
            q[-7:-4], q[-4:] = pos + R @ c, e
            qd[-7:-4], qd[-4:] = R @ (vl + np.cross(wl, c)), 0.5 * G(e).T @ wl
        a = pin.aba(pm, pd, qp, v, tau - pm.damping * v)
        qdd = REC.accelerations(m, q, qd, 0.0, u).qdd
        ours = np.zeros(pm.nv)
        for k, iv in slots:
            ours[iv] = qdd[k]
        if floating:
            wd = 2.0 * G(e) @ qdd[-4:]
            pdd = qdd[-7:-4] - R @ (np.cross(wd, c) + np.cross(wl, np.cross(wl, c)))
            ours[0:3], ours[3:6] = R.T @ pdd - np.cross(wl, vl), wd
        worst = max(worst, np.abs(ours - a).max() / max(1.0, np.abs(a).max()))
    return worst


def _cases(files):
    out = []
    for f in files:
        for floating in (False, True):
            reason = SKIPPED.get(f) if not (floating and f in FLOATING_ONLY) else None
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            out.append(pytest.param(f, floating, marks=marks,
                                    id=f"{Path(f).stem}-{'floating' if floating else 'fixed'}"))
    return out


@needs_robots
@pytest.mark.parametrize("f, floating", _cases(FAST))
def test_accelerations_equal_pinocchio_aba(f, floating):
    m, pm = load(ROBOTS / f, floating)
    assert worst_difference(m, pm, floating) < 1e-9


@needs_robots
@pytest.mark.slow
@pytest.mark.parametrize("f, floating", _cases([f for f in ALL if f not in FAST]))
def test_every_example_robot_equals_pinocchio_aba(f, floating):
    m, pm = load(ROBOTS / f, floating)
    assert worst_difference(m, pm, floating) < 1e-9


@needs_robots
def test_every_urdf_of_the_package_is_tested_or_skipped_with_a_reason():
    assert len(ALL) > 60 and set(SKIPPED) <= set(ALL)


@needs_robots
@pytest.mark.parametrize("floating", [False, True])
def test_fixed_joints_merged_or_welded_give_the_same_motion(floating):
    f = ROBOTS / "panda_description/urdf/panda.urdf"           # hand and link8: fixed joints
    merged, pm = load(f, floating, fixed="merge")
    welded, _ = load(f, floating, fixed="weld")
    assert len(welded.bodies) > len(merged.bodies)
    assert worst_difference(merged, pm, floating, n=5) < 1e-9
    assert worst_difference(welded, pm, floating, n=5) < 1e-9


@needs_robots
def test_payload_gravity_and_damping_parameters_act_as_pinocchio_says():
    f = ROBOTS / "ur_description/urdf/ur5_robot.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(f, limits=False, payload_link="wrist_3_link",
                      overrides={"payload": 2.5, "gravity": 3.0})
    pm = pin.buildModelFromUrdf(str(f))
    jid = pm.getJointId("wrist_3_joint")                        # wrist_3_link's joint frame
    pm.inertias[jid] = pm.inertias[jid] + pin.Inertia(2.5, np.zeros(3), np.zeros((3, 3)))
    pm.gravity.linear = np.array([0.0, 0.0, -3.0])
    assert worst_difference(m, pm, False, n=5) < 1e-9


@needs_robots
def test_panda_damping_scale_scales_the_joint_damping():
    f = ROBOTS / "panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(f, limits=False, mimic="free", overrides={"damping_scale": 40.0})
    pm = pin.buildModelFromUrdf(str(f))
    pm.damping = 40.0 * pm.damping
    assert worst_difference(m, pm, False, n=5) < 1e-9


URDF_HEAD = '<?xml version="1.0"?>\n<robot name="r">\n'
LINK = ('<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
        'ixy="0" ixz="0" iyz="0"/></inertial></link>\n')


def write(tmp_path, body):
    p = tmp_path / "r.urdf"
    p.write_text(URDF_HEAD + LINK.format(n="a") + LINK.format(n="b") + body + "</robot>\n")
    return p


def test_an_unsupported_joint_type_is_refused_naming_the_line(tmp_path):
    p = write(tmp_path, '<joint name="j" type="screw">\n<parent link="a"/><child link="b"/>'
                        '</joint>\n')
    with pytest.raises(ModelError, match=r"r\.urdf:5: joint 'j': type 'screw' is not "
                                         r"imported"):
        load_urdf(p)


def test_a_mimic_joint_is_coupled_by_default_freed_with_a_warning_or_refused(tmp_path):
    p = write(tmp_path, LINK.format(n="c") +
              '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
              '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n'
              '<joint name="k" type="revolute"><parent link="b"/><child link="c"/>'
              '<mimic joint="j"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'
              '</joint>\n')
    with pytest.raises(ModelError, match=r"r\.urdf:7: joint 'k' mimics 'j'"):
        load_urdf(p, mimic="refuse")
    with pytest.warns(UserWarning, match="imported as an independent joint"):
        m = load_urdf(p, mimic="free")
    assert tree_coordinates(m) == ("j.angle", "k.angle") and m.couplers == ()
    m = load_urdf(p)
    assert [(c.joint, c.master, c.ratio, c.offset) for c in m.couplers] == [("k", "j", 1.0,
                                                                              0.0)]
    assert m.input_names == ("j.h",) and "k.q0" not in m.parameter_values


def test_ignored_elements_are_named_in_one_warning(tmp_path):
    p = write(tmp_path, '<joint name="j" type="continuous"><parent link="a"/><child link="b"/>'
                        '<dynamics damping="0.1" friction="0.5"/></joint>\n'
                        '<transmission name="t"/><gazebo/>\n')
    with pytest.warns(UserWarning) as rec:
        m = load_urdf(p)
    text = " | ".join(str(w.message) for w in rec)
    assert "<gazebo>, <transmission>" in text
    assert "friction" not in text                 # imported: the joint's Coulomb bound
    assert m.joint("j").friction == 0.5
    assert [e.name for e in m.elements] == ["j_damping", "j_drive"]


def test_a_missing_file_and_a_closed_loop_are_refused(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        load_urdf(tmp_path / "none.urdf")
    p = write(tmp_path, '<joint name="j" type="continuous"><parent link="a"/><child link="b"/>'
                        '</joint><joint name="k" type="continuous"><parent link="a"/>'
                        '<child link="b"/></joint>\n')
    with pytest.raises(ModelError):
        load_urdf(p)


@needs_robots
def test_shapes_are_kept_with_resolved_meshes_and_body_poses():
    f = ROBOTS / "panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(f)
    vis = [v for v in m.visuals if v.role == "visual"]
    assert {v.link for v in vis} >= {"panda_link0", "panda_link7", "panda_hand"}
    assert all(v.kind == "mesh" and Path(v.mesh).is_file() for v in vis)
    hand = next(v for v in vis if v.link == "panda_hand")
    assert hand.body == "panda_link7"                       # merged through fixed joints
    link7 = next(v for v in vis if v.link == "panda_link7")  # at link7's origin
    # panda_joint8 (fixed): 0.107 m along link7's z; panda_hand_joint: -pi/4 about z; body
    # axes are link7's, so the poses differ by exactly that
    np.testing.assert_allclose(np.subtract(hand.position, link7.position), [0, 0, 0.107],
                               atol=1e-12)
    assert link7.orientation == pytest.approx((1.0, 0.0, 0.0, 0.0), abs=1e-12)
    c, s_ = np.cos(-np.pi / 8), np.sin(-np.pi / 8)
    np.testing.assert_allclose(np.array(hand.orientation) * np.sign(hand.orientation[0]),
                               [c, 0, 0, s_], atol=1e-9)


def mimic_map(path):
    """Pinocchio's model with the mimic joints eliminated (buildModelFromUrdf(mimic=True)),
    the free one, and q_free = G q + offset (the multipliers and offsets of the file's <mimic>
    elements, read with xml.etree; chains followed); red, full: joint name -> velocity index
    in each."""
    import xml.etree.ElementTree as ET
    pr = pin.buildModelFromUrdf(str(path), mimic=True)
    pf = pin.buildModelFromUrdf(str(path))
    mim = {}
    for j in ET.parse(path).getroot().iter("joint"):
        e = j.find("mimic")
        if e is not None:
            mim[j.get("name")] = (e.get("joint"), float(e.get("multiplier", 1.0)),
                                  float(e.get("offset", 0.0)))
    red = {pr.names[i]: pr.joints[i].idx_v for i in range(1, pr.njoints) if pr.joints[i].nv}
    full = {pf.names[i]: pf.joints[i].idx_v for i in range(1, pf.njoints)}
    Gm, off = np.zeros((pf.nv, pr.nv)), np.zeros(pf.nv)

    def chain(name):                        # (reduced index, ratio, offset) of a joint
        if name in red:
            return red[name], 1.0, 0.0
        master, r, o = mim[name]
        k, r2, o2 = chain(master)
        return k, r * r2, r * o2 + o
    for name, iv in full.items():
        k, r, o = chain(name)
        Gm[iv, k], off[iv] = r, o
    return pr, pf, Gm, off, red, full


def pin_configuration(pr, red, qr):
    """Pinocchio's configuration of joint values qr (a continuous joint's (cos, sin))."""
    qp = pin.neutral(pr)
    for name, iv in red.items():
        jm = pr.joints[pr.getJointId(name)]
        if jm.nq == 1:
            qp[jm.idx_q] = qr[iv]
        else:
            qp[jm.idx_q:jm.idx_q + 2] = np.cos(qr[iv]), np.sin(qr[iv])
    return qp


def mimic_worst_difference(m, path, n=10, seed=0):
    """Largest |qdd - ref| / max(1, |ref|) of a fixed-base robot with mimic joints: the
    reference is Pinocchio's model with the mimic joints eliminated
    (buildModelFromUrdf(mimic=True): CRBA and RNEA in the independent coordinates), with the
    joint damping of every joint (the free model's) acting through q_f = G q + offset, a
    mimic joint's acceleration ratio times its master's; the multipliers and offsets read from
    the file's <mimic> elements (xml.etree)."""
    pr, pf, Gm, off, red, full = mimic_map(path)
    dr = pr.createData()
    names = [c.rsplit(".", 1)[0] for c in tree_coordinates(m)]
    inputs = list(m.input_names)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        qr, vr, tau = rng.uniform(-0.5, 0.5, pr.nv), rng.normal(size=pr.nv), rng.normal(
            size=pr.nv)
        qf, vf = Gm @ qr + off, Gm @ vr
        qp = pin_configuration(pr, red, qr)
        M = pin.crba(pr, dr, qp)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.rnea(pr, dr, qp, vr, np.zeros(pr.nv))
        ref = Gm @ np.linalg.solve(M, tau - b - Gm.T @ (pf.damping * vf))
        q, qd, u = np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(inputs))
        for name, iv in full.items():
            k = names.index(identifier(name, set()))
            q[k], qd[k] = qf[iv], vf[iv]
        for name, iv in red.items():
            u[inputs.index(identifier(name, set()) + ".h")] = tau[iv]
        qdd = REC.accelerations(m, q, qd, 0.0, u).qdd
        ours = np.array([qdd[names.index(identifier(nm, set()))] for nm in full])
        worst = max(worst, np.abs(ours - ref).max() / max(1.0, np.abs(ref).max()))
    return worst


@needs_robots
@pytest.mark.parametrize("rel", ["panda_description/urdf/panda.urdf",
                                 "pr2_description/urdf/pr2.urdf",
                                 "baxter_description/urdf/baxter.urdf"])
def test_mimic_joints_as_couplers_equal_pinocchio_with_the_mimic_joints_eliminated(rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(ROBOTS / rel, limits=False)
    assert m.couplers and all(c.name.endswith("_mimic") for c in m.couplers)
    assert not any(f"{c.joint}.h" in m.input_names for c in m.couplers)
    assert mimic_worst_difference(m, ROBOTS / rel) < 1e-9


@needs_robots
def test_a_build_for_engine_data_only_has_the_same_engine_data():
    """Within mechanics.loader.engine_data_only() (the parameter program's probe builds) an
    imported robot is built without its visuals and hidden-output table, with the same
    engine data (bytes) as the full build, at the build values and at other parameters."""
    from fmu_mb.engine.data import model_data
    from fmu_mb.mechanics.loader import engine_data_only

    f = ROBOTS / "panda_description/urdf/panda.urdf"
    for over in ({}, {"panda_joint2.q0": 0.4, "gravity": 3.0, "damping_scale": 2.0}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = load_urdf(f, overrides=over)
            with engine_data_only():
                probe = load_urdf(f, overrides=over)
        assert full.visuals and full.undeclared_outputs
        assert probe.visuals == () and probe.undeclared_outputs == frozenset()
        assert model_data(probe).to_bytes() == model_data(full).to_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_urdf(f).visuals                   # the flag ends with its block
