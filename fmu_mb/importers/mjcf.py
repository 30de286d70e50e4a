"""MJCF import: parse_mjcf(path) -> a robot description (importers.robot), compiled by
MuJoCo's own compiler (mujoco.MjModel.from_xml_path; the `import` extra) and read from its
arrays, so that defaults, classes, includes, inertia from geoms, frames and orientations
(euler, axisangle, xyaxes, zaxis) mean what MuJoCo makes of them.

Imported: bodies (body_pos, body_quat, body_ipos, body_iquat, body_inertia, body_mass),
hinge, slide, ball and free joints (jnt_pos, jnt_axis; several joints in one body become a
chain through massless bodies, in MuJoCo's order), joint damping (dof_damping), hinge and
slide frictionloss (dof_frictionloss: the joints' Coulomb friction bounds), limits
(jnt_range of limited hinge and slide joints), motors on joints (input `<joint>.h`, times
actuator_gear), gravity (opt.gravity), geoms as shapes (visual: contype = conaffinity = 0;
else collision).
Refused naming the element (and its line in the main file where found): tendons, equality
constraints, mocap bodies, flexes, actuators other than a motor on a joint (position,
velocity, general with bias or dynamics, tendon or site transmissions), two actuators on one
joint, joint stiffness, armature of ball and free joints. Hinge and slide armature
(dof_armature) is the joints' armature (ModelBuilder.armature). Ignored with one warning:
contacts (no collision between geoms is imported), frictionloss of ball and free joints,
ball-joint limits, sensors,
keyframes.
"""
import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .robot import quat_matrix

GEOM_KINDS = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder",
              6: "box", 7: "mesh"}


def _need_mujoco():
    try:
        import mujoco
    except ImportError as exc:
        raise ModelError("MJCF import needs mujoco: pip install 'fmu_mb[import]' "
                         f"({exc})") from None
    return mujoco


def _line_finder(path):
    try:
        from lxml import etree
        root = etree.parse(str(path)).getroot()
    except Exception:
        return lambda tag, name=None: None

    def find(tag, name=None):
        for el in root.iter(tag):
            if name is None or el.get("name") == name:
                return el.sourceline
        if name is not None:                 # another tag of the same kind (<position>)
            for el in root.iter():
                if isinstance(el.tag, str) and el.get("name") == name:
                    return el.sourceline
        return None
    return find


def parse_mjcf(path, *, model=None, actuators="file"):
    """The robot description of the MJCF file at `path` (see the module docstring); `model`
    an already compiled mujoco.MjModel of it (then `path` only names it in messages).
    actuators : "file" (the file's motors are the inputs; other actuators are refused) or
        "joints" (every hinge and slide joint gets an input `<joint>.h`, gear 1, and the
        file's actuators are left out with a warning: Menagerie's position servos)."""
    mujoco = _need_mujoco()
    path = Path(path)
    if model is None:
        if not path.is_file():
            raise ModelError(f"MJCF file {str(path)!r} does not exist")
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except Exception as exc:
            raise ModelError(f"{path}: MuJoCo's compiler refuses it: {exc}") from None
    m = model
    line = _line_finder(path)

    def name(obj, i, fallback):
        n = mujoco.mj_id2name(m, obj, i)
        return n if n else fallback

    def refuse(what, tag, nm, why):
        ln = line(tag, nm)
        raise ModelError(f"{path}{':' + str(ln) if ln else ''}: {what}: {why}")
    OBJ = mujoco.mjtObj
    if m.ntendon:
        refuse(f"tendon '{name(OBJ.mjOBJ_TENDON, 0, 'tendon0')}'", "tendon", None,
               "tendons are not imported")
    if m.neq:
        refuse(f"equality constraint '{name(OBJ.mjOBJ_EQUALITY, 0, 'equality0')}'",
               "equality", None, "equality constraints are not imported")
    if m.nmocap:
        refuse("a mocap body", "body", None, "mocap bodies are not imported")
    if getattr(m, "nflex", 0):
        refuse("a flex", "flex", None, "flexes are not imported")
    ignored = []
    if m.ngeom and not (m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT):
        ignored.append("contacts between geoms")
    if m.nsensor:
        ignored.append("sensors")
    if m.nkey:
        ignored.append("keyframes")

    # actuators: a motor on a joint
    if actuators not in ("file", "joints"):
        raise ModelError(f"actuators must be 'file' or 'joints', received {actuators!r}")
    act_of = {}
    if actuators == "joints":
        act_of = {j: 1.0 for j in range(m.njnt) if m.jnt_type[j] in (2, 3)}
        if m.nu:
            ignored.append(f"the file's {m.nu} actuators (actuators='joints': a motor input "
                           f"on every hinge and slide joint instead)")
    for a in range(m.nu if actuators == "file" else 0):
        an = name(OBJ.mjOBJ_ACTUATOR, a, f"actuator{a}")
        if m.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
            refuse(f"actuator '{an}'", "motor", an, "only actuators on joints are imported")
        if (m.actuator_dyntype[a] != 0 or m.actuator_gaintype[a] != 0
                or m.actuator_biastype[a] != 0):
            refuse(f"actuator '{an}'", "general", an, "only motors (no dynamics, fixed gain, "
                   "no bias: <motor>) are imported; position and velocity servos are not")
        j = int(m.actuator_trnid[a, 0])
        if j in act_of:
            refuse(f"actuator '{an}'", "motor", an, f"a second actuator on joint "
                   f"'{name(OBJ.mjOBJ_JOINT, j, '')}'")
        act_of[j] = float(m.actuator_gear[a, 0] * m.actuator_gainprm[a, 0])

    links = [{"name": name(OBJ.mjOBJ_BODY, 0, "world"), "mass": 0.0, "com": [0.0] * 3,
              "inertia": [[0.0] * 3 for _ in range(3)], "shapes": []}]
    joints = []
    body_link = {0: links[0]["name"]}
    for b in range(1, m.nbody):
        bname = name(OBJ.mjOBJ_BODY, b, f"body{b}")
        Ri = quat_matrix(m.body_iquat[b])
        J = Ri @ np.diag(m.body_inertia[b]) @ Ri.T
        parent = body_link[int(m.body_parentid[b])]
        jids = [j for j in range(m.njnt) if m.jnt_bodyid[j] == b]
        xyz = [float(v) for v in m.body_pos[b]]
        R = quat_matrix(m.body_quat[b]).tolist()
        chain = [bname] if len(jids) <= 1 else (
            [f"{bname}__{name(OBJ.mjOBJ_JOINT, j, f'joint{j}')}" for j in jids[:-1]]
            + [bname])
        for k, ln in enumerate(chain):
            last = k == len(chain) - 1
            links.append({"name": ln, "mass": float(m.body_mass[b]) if last else 0.0,
                          "com": [float(v) for v in m.body_ipos[b]] if last else [0.0] * 3,
                          "inertia": J.tolist() if last else [[0.0] * 3 for _ in range(3)],
                          "shapes": _shapes(mujoco, m, b, path) if last else []})
        if not jids:
            joints.append({"name": f"{bname}_fixed", "kind": "fixed", "parent": parent,
                           "child": bname, "xyz": xyz, "R": R, "axis": [0.0, 0.0, 1.0],
                           "anchor": [0.0] * 3})
        for k, j in enumerate(jids):
            jn = name(OBJ.mjOBJ_JOINT, j, f"joint{j}")
            jt = int(m.jnt_type[j])
            kind = {0: "floating", 1: "spherical", 2: "prismatic", 3: "revolute"}[jt]
            d = int(m.jnt_dofadr[j])
            arm = float(m.dof_armature[d:d + (6 if jt == 0 else 3 if jt == 1 else 1)].max())
            if arm > 0 and jt in (0, 1):
                refuse(f"joint '{jn}'", "joint", jn, f"armature {arm} on a "
                       f"{'free' if jt == 0 else 'ball'} joint is not imported (hinge and "
                       f"slide joints only)")
            if m.jnt_stiffness[j] != 0:
                refuse(f"joint '{jn}'", "joint", jn, "joint stiffness (a spring) is not "
                       "imported")
            limited = bool(m.jnt_limited[j]) if hasattr(m, "jnt_limited") else \
                bool(m.jnt_range[j, 0] < m.jnt_range[j, 1])
            if limited and jt == 1:
                ignored.append(f"the limit of ball joint '{jn}'")
            ref0 = float(m.qpos0[m.jnt_qposadr[j]]) if jt in (2, 3) else 0.0
            lo, hi = ((float(m.jnt_range[j, 0]) - ref0, float(m.jnt_range[j, 1]) - ref0)
                      if limited and jt in (2, 3) else (None, None))
            if jt == 0 and parent != links[0]["name"]:
                refuse(f"joint '{jn}'", "freejoint", jn, "a free joint below another body "
                       "is not imported (only on bodies of the world)")
            # the bodies' poses are MuJoCo's at qpos0: coordinate 0 is qpos = ref
            ref = float(m.qpos0[m.jnt_qposadr[j]]) if jt in (2, 3) else 0.0
            joints.append({
                "name": jn, "kind": kind, "parent": parent if k == 0 else chain[k - 1],
                "child": chain[k], "xyz": xyz if k == 0 else [0.0] * 3,
                "R": R if k == 0 else np.eye(3).tolist(),
                "axis": [float(v) for v in m.jnt_axis[j]],
                "anchor": [float(v) for v in m.jnt_pos[j]], "lower": lo, "upper": hi,
                "damping": float(m.dof_damping[d]) if jt in (2, 3) else 0.0,
                "friction": float(m.dof_frictionloss[d]) if jt in (2, 3) else 0.0,
                "actuated": j in act_of, "gear": act_of.get(j, 1.0),
                "armature": arm if jt in (2, 3) else 0.0,
                "q0": 0.0, "ref": ref, "line": line("joint", jn)})
            if jt in (0, 1) and np.any(m.dof_damping[d:d + (6 if jt == 0 else 3)] > 0):
                ignored.append(f"the damping of {kind} joint '{jn}'")
            if jt in (0, 1) and np.any(m.dof_frictionloss[d:d + (6 if jt == 0 else 3)] > 0):
                ignored.append(f"the frictionloss of {kind} joint '{jn}'")
            if jt in (0, 1) and j in act_of:
                refuse(f"joint '{jn}'", "joint", jn, "a motor on a ball or free joint is not "
                       "imported")
        body_link[b] = bname
    if ignored:
        warnings.warn(f"{path}: not imported: {', '.join(ignored)}", stacklevel=3)
    g = [float(v) for v in m.opt.gravity]
    mname = Path(path).stem
    return {"name": mname, "source": Path(path).name, "format": "mjcf", "gravity": g,
            "links": links, "joints": joints,
            "description": f"{mname} imported from {Path(path).name} (MJCF) by fmu_mb"}


def _shapes(mujoco, m, b, path):
    out = []
    for gi in np.flatnonzero(m.geom_bodyid == b):
        kind = GEOM_KINDS.get(int(m.geom_type[gi]))
        if kind is None:
            continue
        s = m.geom_size[gi]
        dims = {"plane": [s[0], s[1]], "sphere": [s[0]], "capsule": [s[0], 2 * s[1]],
                "cylinder": [s[0], 2 * s[1]], "ellipsoid": list(s),
                "box": [2 * s[0], 2 * s[1], 2 * s[2]], "mesh": [1.0, 1.0, 1.0]}[kind]
        mesh = None
        if kind == "mesh":
            mid = int(m.geom_dataid[gi])
            try:
                rel = m.paths[m.mesh_pathadr[mid]:].split(b"\0", 1)[0].decode() \
                    if isinstance(m.paths, bytes) else None
            except Exception:
                rel = None
            mesh = str((Path(path).parent / rel).resolve()) if rel else \
                mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MESH, mid)
        visual = m.geom_contype[gi] == 0 and m.geom_conaffinity[gi] == 0
        out.append({"role": "visual" if visual else "collision", "kind": kind,
                    "dims": [float(v) for v in dims], "mesh": mesh,
                    "xyz": [float(v) for v in m.geom_pos[gi]],
                    "R": quat_matrix(m.geom_quat[gi]).tolist(),
                    "rgba": [float(v) for v in m.geom_rgba[gi]],
                    "name": mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, gi) or ""})
    return out


def load_mjcf(path, *, overrides=None, fixed="merge", limits=True, damping=True, links=(),
              payload_link=None, name=None, actuators="file", reactions=None, friction=True):
    """The Model of the MJCF file at `path` (importers.robot.build_robot's options; the base
    is what the file says: a body with a free joint is free, the others hang from the
    world). actuators: see parse_mjcf. reactions: joints whose reactions an FMU declares as
    outputs (None: none, a list of joint names, True or "all": every joint's). friction:
    hinge and slide frictionloss as the joints' Coulomb friction bounds (False: none)."""
    from .robot import build_robot
    desc = parse_mjcf(path, actuators=actuators)
    return build_robot(desc, overrides, base="fixed", fixed=fixed, limits=limits,
                       damping=damping, links=links, payload_link=payload_link, name=name,
                       reactions=reactions, friction=friction)
