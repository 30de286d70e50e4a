"""MJCF import (fmu_mb.importers.mjcf, MuJoCo's own compiler): the imported model's
accelerations against MuJoCo's mj_forward qacc with contacts and limit constraints disabled
(hinge, slide, ball and free joints, a joint chain in one body, ref, damping, motors with
gear, gravity); refusals naming the element."""
import warnings
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="MJCF import needs mujoco (the import extra)")

from fmu_mb import ModelError, tree_coordinates                      # noqa: E402
from fmu_mb.dynamics.formulations import get_formulation             # noqa: E402
from fmu_mb.importers.mjcf import load_mjcf, parse_mjcf               # noqa: E402
from fmu_mb.importers.robot import build_robot, identifier, quat_matrix   # noqa: E402

REC = get_formulation("recursive")
DATA = Path(__file__).parent / "data" / "mjcf"


def G(e):
    e0, e1, e2, e3 = e
    return np.array([[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]])

def qmul(a, b):
    a0, av, b0, bv = a[0], a[1:], b[0], b[1:]
    return np.concatenate([[a0 * b0 - av @ bv], a0 * bv + b0 * av + np.cross(av, bv)])

def conj(a): return np.array([a[0], -a[1], -a[2], -a[3]])

def compare(mj, path, n=20, seed=0, **kw):
    mj.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT
                            | mujoco.mjtDisableBit.mjDSBL_LIMIT
                            | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        desc = parse_mjcf(path, model=mj, **kw)
        m = build_robot(desc, limits=False)
    d = mujoco.MjData(mj)
    names = [c.rsplit(".", 1)[0] for c in tree_coordinates(m)]
    inputs = list(m.input_names)
    rng = np.random.default_rng(seed)
    worst = 0.0
    OBJ = mujoco.mjtObj
    for _ in range(n):
        q, qd = np.zeros(len(names)), np.zeros(len(names))
        qpos = mj.qpos0.copy(); qvel = rng.normal(size=mj.nv)
        ctrl = rng.normal(size=mj.nu)
        plan = []
        for j in range(mj.njnt):
            jn = identifier(mujoco.mj_id2name(mj, OBJ.mjOBJ_JOINT, j) or f"joint{j}", set())
            pa, va, t = mj.jnt_qposadr[j], mj.jnt_dofadr[j], mj.jnt_type[j]
            if t in (2, 3):
                th = rng.uniform(-1.5, 1.5)
                qpos[pa] = mj.qpos0[pa] + th
                k = names.index(jn); q[k] = th; qd[k] = qvel[va]
                plan.append(("1", k, va, None))
            elif t == 1:
                e = rng.normal(size=4); e /= np.linalg.norm(e); qpos[pa:pa+4] = e
                b = mj.jnt_bodyid[j]
                bname = identifier(mujoco.mj_id2name(mj, OBJ.mjOBJ_BODY, b), set())
                c0 = np.array(m.body(bname).orientation)
                Ac0 = quat_matrix(c0)
                prel = qmul(qmul(c0, e), conj(c0))
                k = names.index(jn)
                q[k:k+4] = prel
                qd[k:k+4] = 0.5 * G(prel).T @ (Ac0 @ qvel[va:va+3])
                plan.append(("ball", k, va, (prel, Ac0)))
            else:
                b = mj.jnt_bodyid[j]
                bname = identifier(mujoco.mj_id2name(mj, OBJ.mjOBJ_BODY, b), set())
                e = rng.normal(size=4); e /= np.linalg.norm(e)
                pos = rng.normal(size=3)
                qpos[pa:pa+3] = pos; qpos[pa+3:pa+7] = e
                R = quat_matrix(e); c = mj.body_ipos[b]
                v, w = qvel[va:va+3], qvel[va+3:va+6]
                k = names.index(bname)
                q[k:k+3] = pos + R @ c; q[k+3:k+7] = e
                qd[k:k+3] = v + R @ np.cross(w, c); qd[k+3:k+7] = 0.5 * G(e).T @ w
                plan.append(("free", k, va, (R, c, w, e)))
        u = np.zeros(len(inputs))
        for a in range(mj.nu):
            j = mj.actuator_trnid[a, 0]
            jn = identifier(mujoco.mj_id2name(mj, OBJ.mjOBJ_JOINT, j), set())
            u[inputs.index(jn + ".h")] = ctrl[a]
        d.qpos[:] = qpos; d.qvel[:] = qvel; d.ctrl[:] = ctrl
        mujoco.mj_forward(mj, d)
        a_ref = d.qacc.copy()
        qdd = REC.accelerations(m, q, qd, 0.0, u).qdd
        ours = np.zeros(mj.nv)
        for kind, k, va, extra in plan:
            if kind == "1": ours[va] = qdd[k]
            elif kind == "ball":
                prel, Ac0 = extra
                ours[va:va+3] = Ac0.T @ (2 * G(prel) @ qdd[k:k+4])
            else:
                R, c, w, e = extra
                wd = 2 * G(e) @ qdd[k+3:k+7]
                ours[va:va+3] = qdd[k:k+3] - R @ (np.cross(wd, c) + np.cross(w, np.cross(w, c)))
                ours[va+3:va+6] = wd
        worst = max(worst, np.abs(ours - a_ref).max() / max(1.0, np.abs(a_ref).max()))
    return worst


def test_arm_accelerations_equal_mujoco():
    """tests/data/mjcf/arm.xml: every joint kind, a two-joint body, ref, default damping,
    motors with gear, a tilted gravity, a full inertia; qacc of mj_forward."""
    p = DATA / "arm.xml"
    assert compare(mujoco.MjModel.from_xml_path(str(p)), p) < 1e-8


def test_motors_are_inputs_times_gear_and_the_file_decides_the_base():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_mjcf(DATA / "arm.xml")
    assert m.input_names == ("yaw.h", "pitch.h", "slide.h")
    assert tree_coordinates(m)[-7:] == ("free.x", "free.y", "free.z", "free.e0", "free.e1",
                                        "free.e2", "free.e3")
    kinds = {v.kind for v in m.visuals}
    assert kinds == {"cylinder", "capsule", "box", "ellipsoid"}


@pytest.mark.parametrize("snippet, message", [
    ('<tendon><fixed name="t"><joint joint="yaw" coef="1"/></fixed></tendon>',
     r"tendon 't': tendons are not imported"),
    ('<equality><joint name="eq" joint1="yaw" joint2="pitch"/></equality>',
     r"equality constraint 'eq'"),
    ('<actuator><position name="servo" joint="roll" kp="10"/></actuator>',
     r"arm\.xml:\d+: actuator 'servo': only motors"),
])
def test_unsupported_elements_are_refused_naming_them(tmp_path, snippet, message):
    text = (DATA / "arm.xml").read_text().replace("</mujoco>", snippet + "\n</mujoco>")
    p = tmp_path / "arm.xml"
    p.write_text(text)
    with pytest.raises(ModelError, match=message):
        parse_mjcf(p)


def test_armature_of_a_ball_joint_is_refused(tmp_path):
    text = (DATA / "arm.xml").read_text().replace('name="ball" type="ball" damping="0"',
                                                  'name="ball" type="ball" armature="0.1"')
    p = tmp_path / "arm.xml"
    p.write_text(text)
    with pytest.raises(ModelError, match=r"arm\.xml:\d+: joint 'ball': armature 0.1 on a "
                                         r"ball joint is not imported"):
        parse_mjcf(p)


def random_joint_state(m, seed):
    """(q, qd, u) near the initial state, Euler-parameter sets normalised, their rates
    tangent."""
    rec = get_formulation("recursive")
    s = rec.initial_state(m)
    rng = np.random.default_rng(seed)
    q, qd = s.q + 0.3 * rng.normal(size=s.q.shape), rng.normal(size=s.q.shape)
    names = tree_coordinates(m)
    for k, n in enumerate(names):
        if n.endswith(".e0"):
            q[k:k + 4] /= np.linalg.norm(q[k:k + 4])
            qd[k:k + 4] -= q[k:k + 4] * (q[k:k + 4] @ qd[k:k + 4])
    return q, qd, rng.normal(size=len(m.inputs))


def test_armature_is_the_same_in_the_kernel_tmt_and_lagrange_and_refused_by_newton_euler():
    """Mbar + diag(armature): the compiled articulated-body kernel (D = S' I^A S + a), tmt
    and lagrange agree; newton_euler (absolute coordinates) refuses it, naming the joints."""
    from fmu_mb import InputError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_mjcf(DATA / "arm.xml")
    assert {j.name: j.armature for j in m.joints if j.armature} == pytest.approx(
        {"yaw": 0.05, "roll": 0.02, "slide": 0.3})
    for seed in range(3):
        q, qd, u = random_joint_state(m, seed)
        a = REC.accelerations(m, q, qd, 0.0, u).qdd
        for name in ("tmt", "lagrange"):
            b = get_formulation(name).accelerations(m, q, qd, 0.0, u).qdd
            assert np.abs(a - b).max() < 1e-10 * max(1.0, np.abs(a).max()), name
    x, xd = REC.absolute(m, q, qd)
    with pytest.raises(InputError, match=r"newton_euler cannot run it: joints \['yaw', "
                                         r"'roll', 'slide'\] have armature"):
        get_formulation("newton_euler").accelerations(m, x, xd, 0.0, u)


@pytest.mark.slow
def test_armature_in_the_contact_event_loop_equals_tmt():
    """The joint limits' impacts and persistent contacts with armature: the compiled event
    loop (recursive) follows tmt's Python loop."""
    from fmu_mb import Settings, simulate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_mjcf(DATA / "arm.xml")
    inputs = {"yaw.h": 0.5, "pitch.h": -0.3, "slide.h": 0.2}
    r = [simulate(m, 0.5, 0.05, inputs=inputs, settings=Settings(formulation=f, rtol=1e-11,
                                                                  atol=1e-13))
         for f in ("recursive", "tmt")]
    assert r[0]["yaw_limit_upper.impacts"][-1] == r[1]["yaw_limit_upper.impacts"][-1] == 1
    for n in ("pitch.angle", "roll.angle", "slide.position", "wrist.x"):
        assert abs(r[0][n][-1] - r[1][n][-1]) < 1e-9, n


# ---------------------------------------------------------------------- MuJoCo Menagerie
#: ten robots of the mujoco-menagerie package: arms, quadrupeds and a humanoid with a free base
MENAGERIE = ["franka_emika_panda", "universal_robots_ur5e", "kuka_iiwa_14", "unitree_go1",
             "unitree_a1", "unitree_z1", "ufactory_xarm7", "kinova_gen3", "unitree_h1",
             "dynamixel_2r"]


def dynamics_only(spec):
    """The Menagerie model's mechanism as the importer takes it: its servos, tendons and
    equality constraints (which the importer refuses, naming them) removed, a motor on every
    hinge and slide joint instead, keyframes, contact pairs and excludes removed, mesh geoms
    and mesh assets removed (the inertials are the file's own; a body without one keeps its
    geoms' inertia, computed by MuJoCo for both sides alike)."""
    for group in (spec.actuators, spec.tendons, spec.equalities, spec.keys, spec.excludes,
                  spec.pairs, spec.sensors):
        for item in list(group):
            spec.delete(item)
    for g in list(spec.geoms):
        if g.type == mujoco.mjtGeom.mjGEOM_MESH:
            spec.delete(g)
    for msh in list(spec.meshes):
        spec.delete(msh)
    for j in spec.joints:
        if j.type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            a = spec.add_actuator()
            a.trntype = mujoco.mjtTrn.mjTRN_JOINT
            a.target = j.name
            a.gear[0] = 1.0
            a.gainprm[0] = 1.0
            a.biastype = mujoco.mjtBias.mjBIAS_NONE
            a.ctrllimited = 0
    return spec


def menagerie_file(name):
    """The robot's MJCF file: from FMU_MB_MENAGERIE_DIR/<name>.xml when that folder is set (a
    copy of the Menagerie's files for a machine without network), else fetched by the
    mujoco-menagerie package (which downloads a robot on first use)."""
    import os
    folder = os.environ.get("FMU_MB_MENAGERIE_DIR")
    if folder and (Path(folder) / f"{name}.xml").is_file():
        return Path(folder) / f"{name}.xml"
    mm = pytest.importorskip("mujoco_menagerie", reason="pip mujoco-menagerie")
    if name in _UNREACHABLE or (_UNREACHABLE and not _UNREACHABLE.isdisjoint(MENAGERIE)):
        pytest.skip("mujoco-menagerie could not fetch a robot here (no network?); set "
                    "FMU_MB_MENAGERIE_DIR to a folder of the robots' files")
    try:
        return mm.get(name).xml()
    except Exception as exc:                       # a download that cannot happen here
        _UNREACHABLE.add(name)                     # (the others are not tried: each waits)
        pytest.skip(f"mujoco-menagerie cannot fetch {name} ({type(exc).__name__}); set "
                    f"FMU_MB_MENAGERIE_DIR to a folder of the robots' files")


_UNREACHABLE = set()


def menagerie_difference(path, n=20):
    spec = dynamics_only(mujoco.MjSpec.from_file(str(path)))
    mj = spec.compile()
    return compare(mj, Path(path), n=n)


@pytest.mark.parametrize("name", MENAGERIE)
def test_menagerie_robot_accelerations_equal_mujoco(name):
    assert menagerie_difference(menagerie_file(name)) < 1e-8


def test_actuators_joints_gives_every_hinge_and_slide_an_input_instead_of_servos(tmp_path):
    text = (DATA / "arm.xml").read_text().replace(
        "</actuator>", '<position name="servo" joint="roll" kp="10"/></actuator>')
    p = tmp_path / "servo.xml"
    p.write_text(text)
    with pytest.raises(ModelError, match="actuator 'servo': only motors"):
        load_mjcf(p)
    with pytest.warns(UserWarning, match="the file's 4 actuators"):
        m = load_mjcf(p, actuators="joints")
    assert m.input_names == ("yaw.h", "pitch.h", "roll.h", "slide.h")
