"""A robot description (links with inertials, joints between them) turned into a spatial Model.

The URDF and MJCF importers (urdf.py, mjcf.py) parse a file into a description: plain data
(dicts, lists, floats) that a generated model file can hold as a literal, so that the model
file defines build(**overrides) like a hand-written one and goes through the same FMU build
and parameter compiler. build_robot(description, overrides, ...) is that build():

- every link is a body placed at its pose at q = 0 (centre of mass, link axes); links joined
  by fixed joints are merged into one composite body (fixed="merge") or kept as bodies
  welded together (fixed="weld"), the motion identical;
- revolute and continuous joints are revolute joints, prismatic joints prismatic ones
  (coordinates `J.angle` / `J.position` positive about / along the joint axis), ball joints
  spherical ones; a planar joint is two prismatic joints and a revolute joint through two
  massless bodies; a floating (free) joint leaves its child a free body;
- a fixed base welds the root link to the ground (it becomes the ground), a floating base
  leaves it free;
- an actuated joint gets the input `<joint>.h`: the generalised force along its coordinate
  (a torque element with its reaction on the parent for a revolute joint, a force along the
  axis for a prismatic one), times the joint's gear;
- viscous joint damping is an RSDA (revolute) or a TSDA along the axis (prismatic) with
  damping = damping_scale * d; Coulomb joint friction (URDF `<dynamics friction>`, MJCF
  `frictionloss`) is the joint's friction bound (ModelBuilder.joint_friction); joint limits
  are joint-limit contacts with restitution
  `limit_restitution`;
- parameters `<joint>.q0`, `<joint>.qd0` (initial coordinate and rate), `gravity` (its
  magnitude, along the description's gravity direction), `payload` (a point mass at the
  origin of `payload_link`), `limit_restitution`, `damping_scale`;
- an FMU declares the joint reactions only of the joints named in `reactions` (default
  none; the model computes every joint's, Model.undeclared_outputs lists the others), and
  the Coulomb friction outputs of every joint with friction.
"""
import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError

_IDENT = re.compile(r"[^A-Za-z0-9_]")
RESERVED = {"time", "energy", "constraint", "ground", "solver"}


@dataclass(frozen=True)
class Visual:
    """A shape carried for the viewer (and collision shapes later), attached to a body.

    link : the link (URDF) or body (MJCF) name in the source file; body : the model's body
    that carries it (after merging fixed joints); role : "visual" or "collision"; kind :
    "box" (dims = full edge lengths x, y, z), "sphere" (radius,), "cylinder" (radius,
    length; axis z), "capsule" (radius, length of the cylindrical part; axis z),
    "ellipsoid" (semi-axes), "plane" (half sizes x, y), "mesh" (dims = scale x, y, z);
    mesh : absolute path of the mesh file (kind "mesh"), else None; position (3,),
    orientation (e0, e1, e2, e3): the shape's pose in body axes relative to the body's
    reference point, which is its centre of mass (the body's coordinates r, p);
    rgba : colour or None; name : the shape's name in the file or "".
    """

    link: str
    body: str
    role: str
    kind: str
    dims: tuple
    mesh: object
    position: tuple
    orientation: tuple
    rgba: object = None
    name: str = ""


# ------------------------------------------------------------------ small rigid-body helpers
def rpy_matrix(rpy):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (URDF's fixed-axis roll, pitch, yaw)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def quat_matrix(q):
    """Rotation matrix of a quaternion (w, x, y, z) (normalised here)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def matrix_quat(R):
    """(w, x, y, z), w >= 0, of a rotation matrix."""
    from ..mechanics.spatial.rotations import from_matrix
    return tuple(float(v) for v in from_matrix(np.asarray(R, float)))


def identifier(name, taken):
    """`name` made an identifier [A-Za-z_][A-Za-z0-9_]* unique among `taken` (added)."""
    s = _IDENT.sub("_", str(name)) or "_"
    if s[0].isdigit():
        s = "_" + s
    if s in RESERVED:
        s = s + "_"
    base, k = s, 1
    while s in taken:
        k += 1
        s = f"{base}_{k}"
    taken.add(s)
    return s


# ------------------------------------------------------------------ the description's checks
JOINT_KINDS = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar",
               "spherical")


def _check(desc):
    links = {ln["name"] for ln in desc["links"]}
    children = {}
    for j in desc["joints"]:
        if j["kind"] not in JOINT_KINDS:
            raise ModelError(f"{desc['source']}: joint '{j['name']}': kind {j['kind']!r} is not "
                             f"imported; kinds are {list(JOINT_KINDS)}")
        for side in ("parent", "child"):
            if j[side] not in links:
                raise ModelError(f"{desc['source']}: joint '{j['name']}': unknown {side} link "
                                 f"{j[side]!r}")
        if j["child"] in children:
            raise ModelError(f"{desc['source']}: link '{j['child']}' is the child of two joints "
                             f"('{children[j['child']]}' and '{j['name']}'): not a tree "
                             f"(closed loops are not imported)")
        children[j["child"]] = j["name"]
    roots = [n["name"] for n in desc["links"] if n["name"] not in children]
    if len(roots) != 1:
        raise ModelError(f"{desc['source']}: expected one root link, found {roots}")
    return roots[0]


# ------------------------------------------------------------------ composite bodies
class _Inertial:
    """Mass m, centre of mass c (3,) and inertia J (3, 3) about c, in one frame; plain
    Python arithmetic so that parameters (a payload) trace through it."""

    def __init__(self, m, c, J):
        self.m, self.c, self.J = m, list(c), [list(r) for r in J]

    @staticmethod
    def of_link(link, T):
        """The link's inertial seen in the frame where the link's pose is T = (p, R)."""
        p, R = T
        c = p + R @ np.asarray(link["com"], float)
        J = R @ np.asarray(link["inertia"], float) @ R.T
        return _Inertial(float(link["mass"]), [float(v) for v in c],
                         [[float(v) for v in r] for r in J])

    def add(self, other):
        m = self.m + other.m
        if isinstance(m, float) and m == 0.0:
            return _Inertial(0.0, self.c, [[0.0] * 3 for _ in range(3)])
        c = [(self.m * a + other.m * b) / m for a, b in zip(self.c, other.c)]
        J = [[self.J[i][k] + other.J[i][k] for k in range(3)] for i in range(3)]
        for part in (self, other):
            d = [part.c[i] - c[i] for i in range(3)]
            dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            for i in range(3):
                for k in range(3):
                    J[i][k] = J[i][k] + part.m * ((dd if i == k else 0.0) - d[i] * d[k])
        return _Inertial(m, c, J)


# ------------------------------------------------------------------ the build
def build_robot(desc, overrides=None, *, base="fixed", fixed="merge", limits=True,
                damping=True, links=(), payload_link=None, name=None, description=None,
                reactions=None, friction=True):
    """The Model of a robot description (see the module docstring).

    Parameters
    ----------
    desc : the description of urdf.parse_urdf or mjcf.parse_mjcf.
    overrides : parameter values (names as declared: `<joint>.q0`, `gravity`, ...).
    base : "fixed" (the root link is welded to the ground) or "floating" (a free body).
    fixed : "merge" (links joined by fixed joints become one composite body) or "weld".
    limits : joint limits as joint-limit contacts (False: none).
    damping : joint damping as RSDA/TSDA elements (False: none; the parameter
        damping_scale scales it).
    friction : Coulomb joint friction as the joints' friction bounds (False: none). A model
        with joint friction runs in formulations newton_euler (the Python event loop) and
        recursive (the compiled one) and in the native FMUs.
    links : names of links whose origin becomes a marker `<link>_origin` (outputs .x .y .z
        .vx .vy .vz); every body's pose is an output anyway.
    payload_link : link carrying the point mass `payload` [kg] at its origin (parameter).
    reactions : the joints whose reactions (`<joint>.fx .fy .fz .tx .ty .tz`: force and
        torque of the parent on the child at the joint point, global axes) an FMU declares
        as outputs: None or () (default: none), a list of joint names, or True or "all"
        (every joint's). The model computes them all the same (simulate() columns); the
        others are its undeclared_outputs.
    """
    from ..mechanics.builder import ModelBuilder

    if base not in ("fixed", "floating"):
        raise ModelError(f"base must be 'fixed' or 'floating', received {base!r}")
    if fixed not in ("merge", "weld"):
        raise ModelError(f"fixed must be 'merge' or 'weld', received {fixed!r}")
    root = _check(desc)
    src = desc["source"]
    reactions = _reaction_request(reactions, src)
    link_of = {ln["name"]: ln for ln in desc["links"]}
    joints = list(desc["joints"])
    by_parent = {}
    for j in joints:
        by_parent.setdefault(j["parent"], []).append(j)
    for name_ in list(links) + ([payload_link] if payload_link else []):
        if name_ not in link_of:
            raise ModelError(f"{src}: unknown link {name_!r}; links are {sorted(link_of)}")

    # poses at q = 0 and the tree order (depth first, the file's joint order)
    pose = {root: (np.zeros(3), np.eye(3))}
    order = []

    def walk(link):
        for j in by_parent.get(link, ()):
            p, R = pose[link]
            Rj = np.asarray(j["R"], float)
            pose[j["child"]] = (p + R @ np.asarray(j["xyz"], float), R @ Rj)
            order.append(j)
            walk(j["child"])
    walk(root)

    # which body carries each link: the root group is the ground (fixed base) or one body
    owner = {root: root}
    for j in order:
        merge = j["kind"] == "fixed" and (fixed == "merge" or owner[j["parent"]] is None
                                          or (base == "fixed" and owner[j["parent"]] == root))
        owner[j["child"]] = owner[j["parent"]] if merge else j["child"]
    ground_links = {n for n, o in owner.items() if o == root} if base == "fixed" else set()

    taken = set()
    model_name = identifier(name or desc["name"], set())
    mb_overrides = dict(overrides or {})
    g = desc.get("gravity", (0.0, 0.0, -9.81))
    gnorm = float(np.linalg.norm(g))
    mb = ModelBuilder(model_name, mb_overrides, gravity=(0.0, 0.0, -9.81) if gnorm == 0
                      else tuple(g), description=description or desc.get("description", ""))
    # parameters (declared first so the builder sees them; the builder is remade with the
    # traced gravity below)
    gmag = mb.param("gravity", gnorm, "m/s2", "magnitude of gravity (direction "
                    f"{tuple(round(v / gnorm, 12) for v in g) if gnorm else (0, 0, -1)})",
                    min=0.0)
    direction = [v / gnorm for v in g] if gnorm else [0.0, 0.0, -1.0]
    mb.gravity = tuple(float(d) * gmag if d != 0.0 else 0.0 for d in direction)
    restitution = mb.param("limit_restitution", 0.0, "1", "Newton restitution of the joint "
                           "limits", min=0.0, max=1.0) if limits else 0.0
    dscale = mb.param("damping_scale", 1.0, "1", "factor on every joint's viscous damping",
                      min=0.0) if damping else 0.0
    payload = mb.param("payload", 0.0, "kg", f"point mass at the origin of link "
                       f"'{payload_link}'", min=0.0) if payload_link else 0.0

    # bodies: composite inertials in the owner link's axes
    inertial = {}
    for lname in [root] + [j["child"] for j in order]:
        o = owner[lname]
        if lname in ground_links:
            continue
        po, Ro = pose[o]
        pl, Rl = pose[lname]
        T = (Ro.T @ (pl - po), Ro.T @ Rl)
        part = _Inertial.of_link(link_of[lname], T)
        inertial[o] = part if o not in inertial else inertial[o].add(part)
        if lname == payload_link:
            pm = _Inertial(payload, [float(v) for v in T[0]], [[0.0] * 3 for _ in range(3)])
            inertial[o] = inertial[o].add(pm)
    jid = {}                 # joints first: their names are the FMU's inputs and outputs
    for j in order:
        if not (owner[j["child"]] == owner[j["parent"]] or j["child"] in ground_links):
            jid[j["name"]] = identifier(j["name"], taken)
    body_name = {}
    for o, it in inertial.items():
        body_name[o] = identifier(o, taken)
    com_world = {}
    for o, it in inertial.items():
        po, Ro = pose[o]
        c = np.array([float(v) for v in it.c])
        com_world[o] = po + Ro @ c
        mass = it.m
        J = it.J
        if isinstance(mass, float) and mass <= 0.0:
            mass, J = 0.0, [[0.0] * 3 for _ in range(3)]
        mb.body(body_name[o], mass=mass, inertia=J,
                position=tuple(po[i] + sum(Ro[i][k] * it.c[k] for k in range(3))
                               for i in range(3)),
                orientation=Ro)

    def body_of(link):
        return mb.ground if link in ground_links else body_name[owner[link]]

    # joints in tree order
    coords = []
    for j in order:
        parent, child = body_of(j["parent"]), body_of(j["child"])
        if owner[j["child"]] == owner[j["parent"]] or child == mb.ground:
            continue                                  # merged into one body
        jn = jid[j["name"]]
        pc, Rc = pose[j["child"]]
        at = pc + Rc @ np.asarray(j.get("anchor", (0.0, 0.0, 0.0)), float)
        axis = Rc @ np.asarray(j.get("axis", (1.0, 0.0, 0.0)), float)
        kind = j["kind"]
        if kind in ("revolute", "continuous"):
            mb.revolute(jn, parent, child, at=at, axis=axis)
            coords.append((j, jn, "revolute"))
        elif kind == "prismatic":
            mb.prismatic(jn, parent, child, at=at, axis=axis)
            coords.append((j, jn, "prismatic"))
        elif kind == "fixed":
            mb.weld(jn, parent, child, at=at)
        elif kind == "spherical":
            mb.spherical(jn, parent, child, at=at)
        elif kind == "floating":
            pass                                      # the child stays a free body
        elif kind == "planar":
            # normal = axis; two prismatic joints along x, y of the joint plane, then a
            # revolute about the normal, through two massless bodies
            F = _plane_frame(axis)
            b1 = mb.body(identifier(f"{jn}_x", taken), mass=0.0, inertia=(0, 0, 0),
                         position=tuple(at), orientation=Rc)
            b2 = mb.body(identifier(f"{jn}_y", taken), mass=0.0, inertia=(0, 0, 0),
                         position=tuple(at), orientation=Rc)
            jx, jy = identifier(f"{jn}_x_slide", taken), identifier(f"{jn}_y_slide", taken)
            mb.prismatic(jx, parent, b1, at=at, axis=F[:, 0])
            mb.prismatic(jy, b1, b2, at=at, axis=F[:, 1])
            mb.revolute(jn, b2, child, at=at, axis=axis)
            coords += [(j, jx, "prismatic"), (j, jy, "prismatic"), (j, jn, "revolute")]
    # free bodies: the floating base, children of floating joints; nothing to add

    # mimic joints last: their initial state follows their master's
    mimic = {j["name"]: j["mimic"] for j, jn, _ in coords
             if jn == jid[j["name"]] and j.get("mimic")}
    kinds = {j["name"]: kind for j, jn, kind in coords if jn == jid[j["name"]]}
    depth = {}
    for name_ in mimic:                     # a mimic joint after its master (chains allowed)
        seen, k = [name_], name_
        while k in mimic:
            k = mimic[k][0]
            if k not in kinds:
                raise ModelError(f"{src}: joint '{seen[-1]}' mimics {k!r}, which is not a "
                                 f"revolute, continuous or prismatic joint; such joints are "
                                 f"{sorted(kinds)}")
            if k in seen:
                raise ModelError(f"{src}: mimic joints {seen} mimic each other in a cycle")
            seen.append(k)
        depth[name_] = len(seen) - 1
    coords.sort(key=lambda c: depth.get(c[0]["name"], 0) if c[1] == jid[c[0]["name"]] else 0)
    initial = {}
    for j, jn, kind in coords:
        lo, hi = j.get("lower"), j.get("upper")
        if j["name"] in mimic and jn == jid[j["name"]]:
            master, ratio, offset = mimic[j["name"]]
            q0m, qd0m = initial[master]
            q0, qd0 = ratio * q0m + offset, ratio * qd0m
            mb.initial(jn, value=q0, rate=qd0)
            mb.coupler(identifier(f"{jn}_mimic", taken), jn, jid[master], ratio, offset)
        else:
            start = float(j.get("q0", 0.0))
            if jn == jid[j["name"]] and lo is not None and hi is not None and lo < hi \
                    and not lo <= start <= hi:
                start = 0.5 * (lo + hi)             # 0 is outside the limits: their middle
            # structural: the tree's Euler-parameter signs (engine data DSRQ) branch on the
            # initial angles, which the native FMU's parameter program cannot follow; fixed
            # at build time (fmu-mb build --set <joint>.q0=...), the other parameters free
            q0 = mb.param(f"{jn}.q0", start, "rad" if kind == "revolute"
                          else "m", f"initial {'angle' if kind == 'revolute' else 'position'} "
                          f"of joint {jn}", structural=True)
            qd0 = mb.param(f"{jn}.qd0", 0.0, "rad/s" if kind == "revolute" else "m/s",
                           f"initial rate of joint {jn}")
            mb.initial(jn, value=q0, rate=qd0)
        initial[j["name"]] = (q0, qd0)
        if jn != jid[j["name"]]:
            continue                                  # the slides of a planar joint
        unit = "N.m" if kind == "revolute" else "N"
        parent, child = body_of(j["parent"]), body_of(j["child"])
        pc, Rc = pose[j["child"]]
        at = pc + Rc @ np.asarray(j.get("anchor", (0.0, 0.0, 0.0)), float)
        axis = Rc @ np.asarray(j.get("axis", (1.0, 0.0, 0.0)), float)
        c_damp = float(j.get("damping", 0.0) or 0.0)
        if float(j.get("armature", 0.0) or 0.0) > 0.0:
            mb.armature(jn, float(j["armature"]))
        if c_damp and damping:
            _damper(mb, taken, jn, kind, parent, child, at, axis, c_damp * dscale)
        if j.get("actuated", True) and j["name"] not in mimic:
            _actuator(mb, taken, jn, kind, parent, child, at, axis,
                      float(j.get("gear", 1.0)), unit)
        if limits and j["kind"] != "continuous" and lo is not None and hi is not None \
                and lo < hi and j["name"] not in mimic:   # (a mimic joint: its master's)
            mb.joint_limit(identifier(f"{jn}_limit", taken), jn, lower=lo, upper=hi,
                           restitution=restitution)
        if friction and float(j.get("friction", 0.0) or 0.0) > 0.0:
            mb.joint_friction(jn, float(j["friction"]))
    for lname in links:
        body = body_of(lname)
        if body == mb.ground:
            raise ModelError(f"{src}: link {lname!r} is fixed to the ground; its pose is "
                             f"constant")
        po = com_world[owner[lname]]
        mb.point(identifier(f"{lname}_origin", taken), body, at=tuple(pose[lname][0]))
    keep = None if reactions is True else _reaction_joints(
        reactions, src, order, jid, owner, ground_links)
    model = mb.build()
    from ..mechanics.loader import engine_data_only_build
    if engine_data_only_build():             # a probe build: no pictures, no output table
        return model
    from dataclasses import replace
    return replace(model, visuals=_visuals(desc, owner, pose, com_world, body_name,
                                           ground_links),
                   undeclared_outputs=frozenset() if keep is None
                   else _hidden_reactions(model, keep))


def _reaction_request(reactions, src):
    """build_robot's `reactions` as True (every joint's) or a tuple of joint names."""
    if reactions is None or reactions is False:
        return ()
    if reactions is True or (isinstance(reactions, str) and reactions == "all"):
        return True
    if isinstance(reactions, str):
        reactions = (reactions,)
    try:
        names = tuple(reactions)
    except TypeError:
        names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise ModelError(f"{src}: reactions must be None, True, 'all' or a list of joint "
                         f"names, received {reactions!r}")
    if "all" in names and len(names) > 1:
        raise ModelError(f"{src}: reactions: 'all' with joint names {list(names)}; give "
                         f"either 'all' or joint names")
    return True if names == ("all",) else names


def _reaction_joints(names, src, order, jid, owner, ground_links):
    """The model joint names of the description joints `names` (their names in the file or
    as the model spells them), checked: each must be a joint of the model."""
    have = {}                     # file name -> model joint name, for joints with reactions
    why = {}
    for j in order:
        n = j["name"]
        if j["kind"] == "floating":
            why[n] = "a floating joint (its child is a free body, no joint)"
        elif owner[j["child"]] == owner[j["parent"]] or j["child"] in ground_links:
            why[n] = ("a fixed joint merged into one body (fixed='weld', --fixed-joints "
                      "weld, keeps it a weld with reactions)"
                      if j["child"] not in ground_links else
                      "a fixed joint welding its link to the fixed base (the ground)")
        else:
            have[n] = jid[n]
    by_model = {v: v for v in have.values()}
    keep = set()
    for n in names:
        if n in have or n in by_model:
            keep.add(have.get(n, n))
        elif n in why:
            raise ModelError(f"{src}: reactions: joint {n!r} has no reaction output: it is "
                             f"{why[n]}")
        else:
            raise ModelError(f"{src}: reactions: unknown joint {n!r}; joints with reactions "
                             f"are {sorted(have)}")
    return keep


#: the components of a joint's reaction outputs (dynamics.outputs: spatial fx .. tz, a
#: distance link's tension); a joint's other dynamics outputs (its Coulomb friction's
#: .friction, .friction_state, .friction_loss) are always declared
REACTION_COMPONENTS = frozenset({"fx", "fy", "fz", "tx", "ty", "tz", "torque", "tension"})


def _hidden_reactions(model, keep):
    """The reaction outputs of every joint of `model` but those named in `keep`."""
    from ..dynamics.outputs import output_groups, output_names

    names = output_names(model)
    joints = {j.name for j in model.joints}
    hidden = set()
    for i in output_groups(model).get("dynamics", ()):
        entity, component = names[i].rsplit(".", 1)
        if entity in joints and entity not in keep and component in REACTION_COMPONENTS:
            hidden.add(names[i])
    return frozenset(hidden)


def _plane_frame(n):
    from ..mechanics.spatial.rotations import frame_from_axis
    return frame_from_axis(n)


def _damper(mb, taken, jn, kind, parent, child, at, axis, c):
    name = identifier(f"{jn}_damping", taken)
    if kind == "revolute":
        mb.rsda(name, joint=jn, damping=c, input=False)
    else:
        _axial_tsda(mb, name, parent, child, at, axis, damping=c, input=False)


def _actuator(mb, taken, jn, kind, parent, child, at, axis, gear, unit):
    """Input `<joint>.h`: gear * h along the joint's coordinate (on the child, the reaction
    on the parent)."""
    name = identifier(f"{jn}_drive", taken)
    iname = f"{jn}.h"
    if kind == "revolute":
        R = _pose(mb, child)[1]
        local = R.T @ np.asarray(axis, float)
        mb.torque(name, child, axis=tuple(local), frame="body", reaction=parent,
                  input=iname)
        if gear != 1.0:                   # torque = (value + h) * direction, not normalised
            from dataclasses import replace
            k = next(i for i, e in enumerate(mb._elements) if e.name == name)
            e = mb._elements[k]
            mb._elements[k] = replace(e, direction=tuple(gear * v for v in e.direction))
    else:
        _axial_tsda(mb, name, parent, child, at, axis, damping=0.0, input=iname,
                    gain=-gear)


#: the TSDA of a prismatic joint: from a point AXIAL m behind the joint point on the parent
#: to the joint point on the child, so that its length is AXIAL + q along the axis exactly
AXIAL = 100.0


def _axial_tsda(mb, name, parent, child, at, axis, damping, input, gain=1.0):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    rp, Rp = _pose(mb, parent)
    rc, Rc = _pose(mb, child)
    a_point = tuple(Rp.T @ (np.asarray(at) - AXIAL * axis - rp))
    b_point = tuple(Rc.T @ (np.asarray(at) - rc))
    mb.tsda(name, parent, child, a_point=a_point, b_point=b_point, stiffness=0.0,
            free_length=AXIAL, damping=damping, input=input)
    if input and gain != 1.0:
        _scale_input(mb, name, gain)


def _scale_input(mb, name, gain):
    """The element's input enters multiplied by `gain` (Element.gains)."""
    from dataclasses import replace
    k = next(i for i, e in enumerate(mb._elements) if e.name == name)
    e = mb._elements[k]
    mb._elements[k] = replace(e, gains=((e.input, float(gain)),))


def _pose(mb, body):
    return mb._pose(body)


def _visuals(desc, owner, pose, com_world, body_name, ground_links):
    out = []
    for ln in desc["links"]:
        lname = ln["name"]
        if lname not in owner:
            continue
        if lname in ground_links:
            body, ro, Ro = "ground", np.zeros(3), np.eye(3)
        else:
            o = owner[lname]
            body, ro, Ro = body_name[o], com_world[o], pose[o][1]
        pl, Rl = pose[lname]
        for v in ln.get("shapes", ()):
            p = Ro.T @ (pl + Rl @ np.asarray(v["xyz"], float) - ro)
            R = Ro.T @ Rl @ np.asarray(v["R"], float)
            out.append(Visual(lname, body, v["role"], v["kind"], tuple(v["dims"]),
                              v.get("mesh"), tuple(float(x) for x in p), matrix_quat(R),
                              tuple(v["rgba"]) if v.get("rgba") is not None else None,
                              v.get("name", "")))
    return tuple(out)
