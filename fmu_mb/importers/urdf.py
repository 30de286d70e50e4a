"""URDF import: parse_urdf(path) -> a robot description (importers.robot), parsed by yourdfpy
(the `import` extra); the XML's line numbers (lxml) name the element of a refusal.

Imported: links (mass, centre of mass, inertia in any inertial frame rotation), joints
revolute, continuous, prismatic, fixed, floating and planar with their origin and axis,
limits, <dynamics damping> (viscous) and <dynamics friction> (Coulomb joint friction),
<mimic> (a coupler constraint; see `mimic`), visual and collision shapes
(box, cylinder, sphere, mesh; mesh paths resolved: package://, file://, relative).
Refused with the file line: any other joint type, a mimic joint with mimic="refuse", a zero
axis, a negative mass; refused by the builder: a link that is the child of two joints
(closed loops), a joint naming a link that does not exist, an inertia that is not
physical. Ignored with one warning listing them: every other top-level element
(<transmission>, <gazebo>, <sensor>, <ros2_control>...), <calibration>, <safety_controller>.
"""
import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError

KINDS = {"revolute": "revolute", "continuous": "continuous", "prismatic": "prismatic",
         "fixed": "fixed", "floating": "floating", "planar": "planar"}


def _need_yourdfpy():
    try:
        import yourdfpy
    except ImportError as exc:
        raise ModelError("URDF import needs yourdfpy: pip install 'fmu_mb[import]' "
                         f"({exc})") from None
    return yourdfpy


def _lines(path):
    """{(tag, name): source line} of the URDF's link and joint elements (lxml)."""
    try:
        from lxml import etree
        root = etree.parse(str(path)).getroot()
    except Exception:                       # yourdfpy reports the XML error itself
        return {}, None
    out = {}
    for el in root.iter():
        if isinstance(el.tag, str):
            out.setdefault((el.tag, el.get("name")), el.sourceline)
    return out, root


def _resolve_mesh(filename, base):
    """Absolute path of a mesh reference (package://pkg/rest is searched for in the folders
    above the URDF: a folder named pkg, or rest relative to an ancestor)."""
    if filename.startswith("file://"):
        return str(Path(filename[7:]))
    if filename.startswith("package://"):
        rest = filename[len("package://"):]
        pkg, _, sub = rest.partition("/")
        for folder in [base] + list(base.parents):
            for cand in (folder / pkg / sub, folder / sub, folder / rest):
                if cand.exists():
                    return str(cand.resolve())
            if folder.name == pkg and (folder / sub).exists():
                return str((folder / sub).resolve())
        return filename                     # unresolved: kept as written
    p = Path(filename)
    return str(p if p.is_absolute() else (base / p).resolve())


def _shape(geom, origin, role, base, rgba=None, name=None):
    T = np.eye(4) if origin is None else np.asarray(origin, float)
    d = {"role": role, "xyz": [float(v) for v in T[:3, 3]],
         "R": [[float(v) for v in r] for r in T[:3, :3]], "rgba": rgba, "name": name or "",
         "mesh": None}
    if geom.box is not None:
        d.update(kind="box", dims=[float(v) for v in geom.box.size])
    elif geom.cylinder is not None:
        d.update(kind="cylinder", dims=[float(geom.cylinder.radius),
                                        float(geom.cylinder.length)])
    elif geom.sphere is not None:
        d.update(kind="sphere", dims=[float(geom.sphere.radius)])
    elif geom.mesh is not None:
        s = geom.mesh.scale
        scale = [1.0, 1.0, 1.0] if s is None else (
            [float(s)] * 3 if np.ndim(s) == 0 else [float(v) for v in s])
        d.update(kind="mesh", dims=scale, mesh=_resolve_mesh(geom.mesh.filename, base))
    else:
        return None
    return d


def parse_urdf(path, *, mimic="couple"):
    """The robot description of the URDF file at `path` (see importers.robot).

    mimic : "couple" (default: a mimic joint follows its master through a coupler
        constraint, q = multiplier q_master + offset; ModelBuilder.coupler), "free" (an
        independent joint, with a warning; Pinocchio's buildModelFromUrdf default) or
        "refuse".
    """
    if mimic not in ("couple", "free", "refuse"):
        raise ModelError(f"mimic must be 'couple', 'free' or 'refuse', received {mimic!r}")
    yourdfpy = _need_yourdfpy()
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"URDF file {str(path)!r} does not exist")
    lines, root = _lines(path)

    def where(tag, name):
        line = lines.get((tag, name))
        return f"{path}:{line}" if line else str(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            u = yourdfpy.URDF.load(str(path), load_meshes=False, build_scene_graph=False,
                                   build_collision_scene_graph=False,
                                   load_collision_meshes=False)
    except Exception as exc:
        raise ModelError(f"{path}: not a URDF that yourdfpy reads: {type(exc).__name__}: "
                         f"{exc}") from None
    robot = u.robot
    if root is not None:
        ignored = sorted({el.tag for el in root if isinstance(el.tag, str)}
                         - {"link", "joint", "material"})
        sub = sorted({el.tag for j in root.iter("joint") for el in j
                      if isinstance(el.tag, str)} & {"calibration", "safety_controller"})
        if ignored or sub:
            warnings.warn(f"{path}: not imported (no effect on the dynamics in fmu_mb): "
                          f"{', '.join('<' + t + '>' for t in ignored + sub)}", stacklevel=3)
    base = path.parent.resolve()
    materials = {m.name: m for m in (robot.materials or [])}
    links = []
    for ln in robot.links:
        it = ln.inertial
        if it is None:
            mass, com, J = 0.0, [0.0, 0.0, 0.0], np.zeros((3, 3))
        else:
            T = np.eye(4) if it.origin is None else np.asarray(it.origin, float)
            mass = float(it.mass or 0.0)
            Ri = T[:3, :3]
            J = Ri @ np.asarray(it.inertia if it.inertia is not None else np.zeros((3, 3)),
                                float) @ Ri.T
            com = [float(v) for v in T[:3, 3]]
            if mass < 0:
                raise ModelError(f"{where('link', ln.name)}: link '{ln.name}': negative mass "
                                 f"{mass}")
        shapes = []
        for role, items in (("visual", ln.visuals), ("collision", ln.collisions)):
            for v in items or ():
                rgba = None
                mat = getattr(v, "material", None)
                if mat is not None:
                    m = materials.get(mat.name, mat) if mat.color is None else mat
                    if m is not None and m.color is not None:
                        rgba = [float(c) for c in m.color.rgba]
                s = _shape(v.geometry, v.origin, role, base, rgba, v.name)
                if s is not None:
                    shapes.append(s)
        links.append({"name": ln.name, "mass": mass, "com": com,
                      "inertia": [[float(v) for v in r] for r in J], "shapes": shapes})
    joints = []
    for j in robot.joints:
        kind = KINDS.get(j.type)
        if kind is None:
            raise ModelError(f"{where('joint', j.name)}: joint '{j.name}': type {j.type!r} is "
                             f"not imported; URDF joint types are {sorted(KINDS)}")
        if j.mimic is not None:
            if mimic == "refuse":
                raise ModelError(f"{where('joint', j.name)}: joint '{j.name}' mimics "
                                 f"'{j.mimic.joint}': mimic joints are refused "
                                 f"(mimic='refuse')")
            if mimic == "free":
                warnings.warn(f"{where('joint', j.name)}: joint '{j.name}' mimics "
                              f"'{j.mimic.joint}': imported as an independent joint "
                              f"(mimic='free')", stacklevel=3)
        T = np.eye(4) if j.origin is None else np.asarray(j.origin, float)
        axis = np.array([1.0, 0.0, 0.0]) if j.axis is None else np.asarray(j.axis, float)
        if kind in ("revolute", "continuous", "prismatic", "planar"):
            n = np.linalg.norm(axis)
            if n < 1e-12:
                raise ModelError(f"{where('joint', j.name)}: joint '{j.name}': zero axis")
            axis = axis / n
        lim, dyn = j.limit, j.dynamics
        lo = hi = None
        if lim is not None and kind in ("revolute", "prismatic"):
            lo = None if lim.lower is None else float(lim.lower)
            hi = None if lim.upper is None else float(lim.upper)
        joints.append({
            "name": j.name, "kind": kind, "parent": j.parent, "child": j.child,
            "xyz": [float(v) for v in T[:3, 3]],
            "R": [[float(v) for v in r] for r in T[:3, :3]],
            "axis": [float(v) for v in axis], "anchor": [0.0, 0.0, 0.0],
            "lower": lo, "upper": hi,
            "damping": float(dyn.damping or 0.0) if dyn is not None else 0.0,
            "friction": float(dyn.friction or 0.0) if dyn is not None else 0.0,
            "actuated": kind in ("revolute", "continuous", "prismatic"),
            "gear": 1.0, "line": lines.get(("joint", j.name)),
            "mimic": None if j.mimic is None or mimic == "free" else [j.mimic.joint,
                                                    float(j.mimic.multiplier or 1.0),
                                                    float(j.mimic.offset or 0.0)]})
    return {"name": robot.name, "source": path.name, "format": "urdf",
            "gravity": [0.0, 0.0, -9.81], "links": links, "joints": joints,
            "description": f"{robot.name} imported from {path.name} (URDF) by fmu_mb"}


def load_urdf(path, *, overrides=None, base="fixed", fixed="merge", limits=True,
              damping=True, links=(), payload_link=None, mimic="couple", name=None,
              reactions=None, friction=True):
    """The Model of the URDF file at `path` (importers.robot.build_robot's options).

    base : "fixed" (the root link is the ground) or "floating" (the root link is a free body:
        coordinates `<root>.x .y .z .e0 .. .e3`, its centre of mass and Euler parameters).
    fixed : "merge" or "weld" for fixed joints (the same motion).
    limits, damping : joint limits as contacts, viscous damping as elements.
    friction : <dynamics friction> as the joints' Coulomb friction bounds [N.m or N].
    links : link names whose origin is a marker `<link>_origin`.
    payload_link : the link carrying the parameter `payload` [kg] at its origin.
    reactions : joints whose reactions an FMU declares as outputs: None (default: none), a
        list of joint names, or True / "all" (every joint's).
    """
    from .robot import build_robot
    desc = parse_urdf(path, mimic=mimic)
    return build_robot(desc, overrides, base=base, fixed=fixed, limits=limits,
                       damping=damping, links=links, payload_link=payload_link, name=name,
                       reactions=reactions, friction=friction)
