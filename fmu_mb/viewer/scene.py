"""The scene of the 3-D viewer: a model (and a result) as JSON for viewer.js, and the
self-contained HTML page or fragment that shows it (three.js inlined: no network).

The scene is computed here, in Python: every body as its shapes (the collision shapes of
`model.shapes` and the visual shapes and meshes of `model.visuals` when the model has them),
or, for a body without geometry, links between its attachment points with their true lengths
plus an ellipsoid of equivalent inertia; joints with their axes, contact planes and lines,
springs, dampers and cylinders between their points, the ground's attachment points, the
world frame and a scale grid in metres. Planar models are drawn in the plane z = 0. With a
result, the pose of every body per frame (position and quaternion) is embedded, decimated to
at most `max_frames` frames, with the chosen output columns for the linked plot and the
impacts (increments of the contacts' `.impacts` counters).

The assets (assets/): three.js 0.187.0 (MIT licence, LICENSE.three) bundled with
OrbitControls (README.md there says how), viewer.js and viewer.css.

Page options in the URL hash (for scripted screenshots and the tests): `#t=0.5` (time),
`cam=px,py,pz,tx,ty,tz` (camera position and target, metres), `up=ux,uy,uz`, `fov=40`
(vertical, degrees), `flat=1` (bodies only, in flat colours, on white: for pixel tests),
`ui=0` (no controls). The page writes its state into its element .fmu-mb-status (data-state
"ready" or "error", data-errors) and FmuMbViewer.current.setTime(t) sets the time.

fmu-mb view and fmu-mb animate are in fmu_mb.tools.view; the FMU's documentation/index.html
takes fragment(scene(model)) (fmu_mb.fmi.build).
"""
import colorsys
import html as _html
import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..mechanics.model import GROUND

ASSETS = Path(__file__).with_name("assets")
THREE = ASSETS / "three.bundle.min.js"
THREE_VERSION = "0.187.0"

#: flat colours of the bodies, in order (well apart in hue and lightness; the browser tests
#: find each body's pixels by its colour)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b",
           "#e377c2", "#bcbd22", "#7f7f7f", "#393b79", "#637939")


# ----------------------------------------------------------------------- small helpers
def _v3(p):
    p = [float(v) for v in p]
    return p + [0.0] * (3 - len(p))


def _r(x, digits=6):
    """Round for JSON (floats only; keeps the file small)."""
    return np.round(np.asarray(x, float), digits).tolist()


def _quat_planar(phi):
    phi = np.asarray(phi, float)
    z = np.zeros_like(phi)
    return np.stack([z, z, np.sin(phi / 2), np.cos(phi / 2)], axis=-1)


def _quat_from_matrix(R):
    """(x, y, z, w) of a rotation matrix."""
    R = np.asarray(R, float)
    w = np.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = np.copysign(np.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    q = np.array([x, y, z, w])
    return q / np.linalg.norm(q)


def _rotate(q, p):
    """Rotate points p (..., 3) by quaternions q (..., 4) = (x, y, z, w)."""
    u, w = q[..., :3], q[..., 3:]
    t = 2 * np.cross(u, p)
    return p + w * t + np.cross(u, t)


def _inertia_matrix(body):
    J = np.asarray(body.inertia, float)
    if J.ndim == 0:
        return None
    return np.diag(J) if J.shape == (3,) else J.reshape(3, 3)


def _color(k):
    if k < len(PALETTE):
        return PALETTE[k]
    r, g, b = colorsys.hsv_to_rgb((0.13 * k) % 1.0, 0.75, 0.8)
    return "#%02x%02x%02x" % (int(255 * r), int(255 * g), int(255 * b))


# ----------------------------------------------------------------------- poses
def start_poses(model):
    """(positions (nb, 3), quaternions (nb, 4) as x, y, z, w) of the model's start pose."""
    n = len(model.bodies)
    x = np.asarray(model.x0, float)
    if model.spatial:
        q = x.reshape(n, 7)
        return q[:, :3].copy(), q[:, [4, 5, 6, 3]].copy()
    q = x.reshape(n, 3)
    pos = np.column_stack([q[:, 0], q[:, 1], np.zeros(n)])
    return pos, _quat_planar(q[:, 2])


def result_poses(model, data):
    """Body poses from a result (structured array with the columns of `fmu-mb simulate`):
    planar B.x, B.y, B.phi; spatial B.x, B.y, B.z, B.e0 ... B.e3 (Euler parameters, e0 the
    scalar part). Returns (time (n,), positions (n, nb, 3), quaternions (n, nb, 4) x, y, z, w).
    """
    names = data.dtype.names or ()
    cols = ("x", "y", "z", "e0", "e1", "e2", "e3") if model.spatial else ("x", "y", "phi")
    missing = [f"{b.name}.{c}" for b in model.bodies for c in cols
               if f"{b.name}.{c}" not in names]
    if "time" not in names:
        missing.insert(0, "time")
    if missing:
        raise InputError(f"the result lacks the body coordinates {missing[:6]} of model "
                         f"'{model.name}'; expected a result of this model (fmu-mb simulate)")
    t = np.asarray(data["time"], float)
    col = lambda b, c: np.asarray(data[f"{b.name}.{c}"], float)   # noqa: E731
    if model.spatial:
        pos = np.stack([np.column_stack([col(b, c) for c in "xyz"]) for b in model.bodies], 1)
        quat = np.stack([np.column_stack([col(b, c) for c in ("e1", "e2", "e3", "e0")])
                         for b in model.bodies], 1)
        quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    else:
        pos = np.stack([np.column_stack([col(b, "x"), col(b, "y"), np.zeros(len(t))])
                        for b in model.bodies], 1)
        quat = np.stack([_quat_planar(col(b, "phi")) for b in model.bodies], 1)
    if not (np.isfinite(pos).all() and np.isfinite(quat).all() and np.isfinite(t).all()):
        raise InputError("the result has non-finite body coordinates or times")
    return t, pos, quat


# ----------------------------------------------------------------------- geometry
def _attachments(model, elements=True):
    """Per body: local points (3,) where joints, elements (unless elements=False), markers
    and contacts attach."""
    pts = {b.name: [] for b in model.bodies}
    pts[GROUND] = []

    def add(body, p):
        if body in pts:
            pts[body].append(_v3(p))

    for j in model.joints:
        add(j.parent, j.parent_point)
        add(j.child, j.child_point)
    for e in model.elements if elements else ():
        if e.kind in ("tsda", "bushing", "cylinder"):
            add(e.a, e.a_point)
            add(e.b, e.b_point)
        elif e.kind == "force":
            add(e.b, e.b_point)
    for m in model.markers:
        add(m.body, m.point)
    for c in model.contacts:
        if c.kind in ("point_line", "point_plane", "point_point"):
            add(c.body, c.point)
            add(c.other, c.other_point)
    return pts


def _unique(points, tol=1e-9):
    out = []
    for p in points:
        if all(np.linalg.norm(np.subtract(p, q)) > tol for q in out):
            out.append(p)
    return out


def _rotation_quat(R):
    """(x, y, z, w) of a rotation given as the shape axes (columns) in body axes, (3, 3) or
    planar (2, 2)."""
    R = np.asarray(R, float)
    if R.shape == (2, 2):
        R3 = np.eye(3)
        R3[:2, :2] = R
        R = R3
    return _quat_from_matrix(R.reshape(3, 3))


def _shape_entry(s, where):
    """One collision shape of model.shapes (mechanics.shapes.ShapeItem: kind, size in the
    order of its SIZE_FIELDS, position and rotation (columns: the shape axes) in body axes)
    as a scene entry in its body's frame."""
    kind = str(s.kind)
    size = [float(v) for v in s.size]
    c, q = _v3(s.position), _rotation_quat(s.rotation)
    base = {"c": _r(c), "q": _r(q)}
    if kind in ("sphere", "capsule", "cylinder", "box", "plane"):
        return _primitive(kind, size, base)
    if kind == "circle":                       # a planar disc: a thin cylinder along z
        return {"type": "cylinder", **base, "r": size[0], "h": 0.2 * size[0]}
    if kind == "rectangle":
        return {"type": "box", **base, "size": _r(size + [0.1 * min(size)])}
    if kind == "segment":                      # along the shape's x, thickened by radius
        R = _quat_matrix(q)
        half = R @ np.array([size[0] / 2, 0.0, 0.0])
        return {"type": "link", "a": _r(np.array(c) - half), "b": _r(np.array(c) + half),
                "r": size[1], "cap": 1.0}
    if kind == "line":                         # the free side along the shape's y
        return {"type": kind, **base}
    raise InputError(f"{where}: unknown shape kind {kind!r}")


def _primitive(kind, dims, base):
    """Scene entry of a sphere (radius,), capsule or cylinder (radius, length; axis z), box
    (edges a, b, c), ellipsoid (semi-axes) or plane (free side along z)."""
    if kind == "sphere":
        return {"type": "sphere", **base, "r": dims[0]}
    if kind in ("capsule", "cylinder"):
        return {"type": kind, **base, "r": dims[0], "h": dims[1]}
    if kind == "box":
        return {"type": "box", **base, "size": _r(dims)}
    if kind == "ellipsoid":
        return {"type": "ellipsoid", **base, "axes": _r(dims)}
    return {"type": "plane", **base}


def _quat_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _visual_entry(v, where, max_faces, embed_limit, meshes=None):
    """A shape of model.visuals (importers.robot.Visual: kind, dims, mesh path, position and
    orientation (Euler parameters) in body axes, rgba). A mesh file (STL, OBJ, DAE) is read
    with trimesh, decimated to max_faces; one that stays above embed_limit faces (or that
    cannot be read without trimesh) is referenced by its path and drawn as a marker.
    meshes: a dict {mesh path: its rounded positions and indices} shared by the visuals of
    one scene, so that a file several visuals show (a gripper's two fingers) is read once."""
    kind, dims = str(v.kind), [float(x) for x in (v.dims or ())]
    e = v.orientation or (1.0, 0.0, 0.0, 0.0)
    base = {"c": _r(_v3(v.position)), "q": _r([e[1], e[2], e[3], e[0]])}
    if v.rgba is not None:
        rgb = np.clip(np.asarray(v.rgba, float)[:3], 0, 1)
        base["color"] = "#%02x%02x%02x" % tuple(int(round(255 * x)) for x in rgb)
    if kind in ("sphere", "capsule", "cylinder", "box", "ellipsoid", "plane"):
        return _primitive(kind, dims, base)
    if kind != "mesh":
        raise InputError(f"{where}: unknown visual kind {kind!r}")
    entry = {"type": "mesh", **base, "scale": _r(dims or (1.0, 1.0, 1.0)), "url": str(v.mesh)}
    meshes = {} if meshes is None else meshes
    if str(v.mesh) not in meshes:
        meshes[str(v.mesh)] = _mesh_arrays(v.mesh, where, max_faces, embed_limit)
    arrays = meshes[str(v.mesh)]
    if arrays is None:
        return entry
    del entry["url"]
    entry["positions"], entry["indices"] = arrays
    return entry


def _mesh_arrays(path, where, max_faces, embed_limit):
    """(positions, indices) of the mesh file at `path` for a scene (read with trimesh,
    decimated to max_faces, positions rounded to its size), or None when it cannot be read
    without trimesh or stays above embed_limit faces."""
    try:
        import trimesh
    except ImportError:
        return None
    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as exc:                      # trimesh raises many kinds
        raise InputError(f"{where}: cannot read the mesh {str(path)!r}: {exc}") from None
    vertices, faces = np.asarray(mesh.vertices, float), np.asarray(mesh.faces, int)
    if len(faces) > max_faces:
        try:
            small = mesh.simplify_quadric_decimation(face_count=max_faces)
            vertices, faces = np.asarray(small.vertices, float), np.asarray(small.faces, int)
        except Exception:                         # no decimation backend installed
            vertices, faces = cluster_decimate(vertices, faces, max_faces)
    if len(faces) > embed_limit or not len(faces):
        return None
    digits = int(np.clip(4 - np.floor(np.log10(np.ptp(vertices, axis=0).max() + 1e-12)), 3, 9))
    return _r(vertices.reshape(-1), digits), faces.reshape(-1).tolist()


def cluster_decimate(vertices, faces, max_faces):
    """A mesh with at most about max_faces faces by vertex clustering: the vertices of each
    cell of a grid are merged into their mean, faces that collapse are dropped; the grid is
    made coarser until the mesh is small enough."""
    vertices, faces = np.asarray(vertices, float), np.asarray(faces, int)
    lo, extent = vertices.min(axis=0), np.ptp(vertices, axis=0).max() + 1e-12
    n = 128
    while len(faces) > max_faces and n >= 2:
        cell = np.floor((vertices - lo) / extent * n).astype(np.int64)   # in [0, n]
        # one integer per cell, in the rows' lexicographic order (a 1-D unique: faster than
        # unique(axis=0), the same cells in the same order)
        key = (cell[:, 0] * (n + 1) + cell[:, 1]) * (n + 1) + cell[:, 2]
        _, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        # each cell's sum of its vertices, added in the vertices' order (as np.add.at does)
        nc = int(inverse.max()) + 1
        merged = np.stack([np.bincount(inverse, weights=vertices[:, k], minlength=nc)
                           for k in range(3)], axis=1)
        merged /= np.bincount(inverse)[:, None]
        f = inverse[faces]
        keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
        fs, nv = np.sort(f[keep], axis=1), int(inverse.max()) + 1
        if nv ** 3 < 2 ** 62:        # the faces' rows as one integer each (the same order)
            f = np.unique((fs[:, 0] * nv + fs[:, 1]) * nv + fs[:, 2], return_index=True)[1]
        else:
            f = np.unique(fs, axis=0, return_index=True)[1]
        new_faces = inverse[faces][keep][np.sort(f)]
        if len(new_faces) <= max_faces:
            return merged, new_faces
        n //= 2
    return vertices, faces


def _default_shapes(body, points, spatial, size, free=False):
    """Links between the attachment points (true lengths) and an ellipsoid of equivalent
    inertia, in the body frame (origin: the centre of mass); a free body (no joint, no force
    element: its points are contacts or markers) as the box (spatial) or disc (planar) of
    equivalent inertia."""
    pts = [] if free else _unique([p for p in points])
    r_link = 0.015 * size
    shapes = []
    if len(pts) == 2:
        shapes.append({"type": "link", "a": _r(pts[0]), "b": _r(pts[1]), "r": r_link})
    else:
        for p in pts:
            if np.linalg.norm(p) > 1e-9:
                shapes.append({"type": "link", "a": [0.0, 0.0, 0.0], "b": _r(p), "r": r_link})
    J = _inertia_matrix(body)
    m = float(body.mass)
    if J is not None and m > 0:
        w, V = np.linalg.eigh(J)
        # a uniform solid ellipsoid: J_1 = m (b^2 + c^2) / 5, so a^2 = 5 (J_2 + J_3 - J_1) / 2m
        axes = np.sqrt(np.maximum(5.0 * (w.sum() - 2 * w) / (2 * m), 0.0))
        axes = np.maximum(axes, 0.01 * size)
        if np.linalg.det(V) < 0:
            V[:, 2] = -V[:, 2]
        kind = "box" if not pts else "ellipsoid"
        if kind == "box":                         # a free body: the box of equal inertia
            axes = np.sqrt(np.maximum(6.0 * (w.sum() - 2 * w) / m, 0.0))
            axes = np.maximum(axes, 0.02 * size)
            shapes.append({"type": "box", "c": [0.0, 0.0, 0.0], "q": _r(_quat_from_matrix(V)),
                           "size": _r(axes)})
        else:
            shapes.append({"type": "ellipsoid", "c": [0.0, 0.0, 0.0],
                           "q": _r(_quat_from_matrix(V)), "axes": _r(axes), "ghost": True})
    elif not spatial and m > 0 and float(body.inertia) > 0 and not pts:
        shapes.append({"type": "cylinder", "c": [0.0, 0.0, 0.0], "q": [0.0, 0.0, 0.0, 1.0],
                       "r": float(np.sqrt(2 * float(body.inertia) / m)),
                       "h": 0.02 * size})      # a disc of equal inertia, in the plane
    if not shapes or all(s.get("ghost") for s in shapes):
        shapes.append({"type": "sphere", "c": [0.0, 0.0, 0.0], "r": 2 * r_link})
    return shapes


def shape_points(shape):
    """Points (n, 3) in the body frame whose convex hull holds the shape (for bounds and for
    the tests' projections)."""
    t = shape["type"]
    if t == "link":
        a, b, r = np.array(shape["a"]), np.array(shape["b"]), shape["r"]
        off = r * np.array([[s1, s2, s3] for s1 in (-1, 1) for s2 in (-1, 1) for s3 in (-1, 1)])
        return np.vstack([a + off, b + off])
    c, q = np.array(shape["c"], float), np.array(shape.get("q", (0, 0, 0, 1)), float)
    if t == "sphere":
        half = np.full(3, shape["r"])
    elif t == "box":
        half = np.array(shape["size"]) / 2
    elif t == "ellipsoid":
        half = np.array(shape["axes"])
    elif t in ("cylinder", "capsule"):
        h = shape["h"] / 2 + (shape["r"] if t == "capsule" else 0.0)
        half = np.array([shape["r"], shape["r"], h])
    elif t in ("plane", "line"):
        return c[None, :]
    elif t == "mesh" and "positions" in shape:
        p = np.array(shape["positions"]).reshape(-1, 3) * np.array(shape["scale"])
        return c + _rotate(np.broadcast_to(q, p.shape[:-1] + (4,)), p)
    else:
        return c[None, :]
    corners = half * np.array([[s1, s2, s3] for s1 in (-1, 1) for s2 in (-1, 1)
                               for s3 in (-1, 1)])
    return c + _rotate(np.broadcast_to(q, corners.shape[:-1] + (4,)), corners)


# ----------------------------------------------------------------------- the scene
def _up(model):
    g = np.asarray(_v3(model.gravity), float)
    if np.linalg.norm(g) > 0:
        return -g / np.linalg.norm(g)
    return np.array([0.0, 1.0, 0.0]) if not model.spatial else np.array([0.0, 0.0, 1.0])


def _default_columns(names, model):
    cols = [n for n in names if n.endswith((".angle", ".position"))][:3]
    if not cols:
        cols = [n for n in names if n.endswith(".z" if model.spatial else ".y")][:3]
    cols += [n for n in ("energy.total",) if n in names]
    return cols


def _impacts(model, data):
    """[(time, contact or cylinder name, body, point in body axes, row)] where a contact's
    impact counter (or a cylinder's end-stop counter) rose."""
    names = data.dtype.names
    out = []
    for c in model.contacts:
        col = f"{c.name}.impacts"
        if col not in names:
            continue
        n = np.asarray(data[col], float)
        for k in np.nonzero(np.diff(n) > 0)[0] + 1:
            out.append((float(data["time"][k]), c.name, c.body, _v3(c.point), int(k)))
    for e in model.elements:
        col = f"{e.name}.end_stops"
        if e.kind == "cylinder" and col in names:
            n = np.asarray(data[col], float)
            for k in np.nonzero(np.diff(n) > 0)[0] + 1:
                out.append((float(data["time"][k]), e.name, e.b, _v3(e.b_point), int(k)))
    return out


def scene(model, result=None, *, max_frames=1500, columns=None, traces=None,
          mesh_faces=5000, total_faces=60000, embed_faces=20000):
    """The scene of `model` (and of `result`) as a JSON-able dict, read by viewer.js.

    result : structured array (simulate(), fmpy, read_csv) or None for the start pose.
    max_frames : the result is decimated to at most this many frames (its last row kept).
    columns : output columns of the linked plot (default: up to three joint coordinates and
        the total energy).
    traces : marker names whose paths are drawn (default: every marker of the model).
    mesh_faces, total_faces : visual meshes are decimated to at most mesh_faces faces each
        and total_faces together (trimesh's quadric decimation where its backend is
        installed, else cluster_decimate); one that stays above embed_faces is referenced by
        its path instead (drawn as a marker).
    """
    if int(max_frames) < 2:
        raise InputError(f"max_frames must be >= 2, received {max_frames}")
    spatial = bool(model.spatial)
    att = _attachments(model)
    pos0, quat0 = start_poses(model)
    if result is not None:
        if getattr(result, "dtype", None) is None or result.dtype.names is None:
            raise InputError(f"result: expected a structured array (simulate(), fmpy) or a "
                             f"CSV path, received {type(result).__name__}")
        result = np.atleast_1d(result)
        if len(result) == 0:
            raise InputError("result: the result has no rows")
        t, pos, quat = result_poses(model, result)
    else:
        t, pos, quat = np.array([float(model.t0)]), pos0[None], quat0[None]

    # extent of the mechanism (attachment points, all frames) for sizes and the camera; the
    # force elements' points only where they lie near the rest (an imported prismatic
    # damper may be a spring with a lever of 100 m)
    def world_points(points):
        out = [np.array(points[GROUND]).reshape(-1, 3)]
        for k, b in enumerate(model.bodies):
            for p in points[b.name]:
                out.append(pos[:, k] + _rotate(quat[:, k], np.broadcast_to(p, pos[:, k].shape)))
        return np.vstack(out)

    core = np.vstack([pos.reshape(-1, 3), world_points(_attachments(model, elements=False))])
    lo, hi = core.min(axis=0), core.max(axis=0)
    reach = 3.0 * max(np.linalg.norm(hi - lo), 1e-3)
    extra = world_points(att)
    extra = extra[np.linalg.norm(extra - (lo + hi) / 2, axis=1) <= reach]
    if len(extra):
        lo, hi = np.minimum(lo, extra.min(axis=0)), np.maximum(hi, extra.max(axis=0))
    size = float(max(np.linalg.norm(hi - lo), 1e-3))
    for b in model.bodies:                    # a free body's size from its inertia
        if b.mass > 0:
            size = max(size, 2 * float(np.sqrt(np.trace(np.atleast_2d(b.inertia)) / b.mass)))

    # a body's geometry: its visual shapes (imported robots), else its collision shapes
    # (model.visuals with role "collision", model.shapes), else the default below
    shapes_of = {name: [] for name in list(att)}
    visuals = getattr(model, "visuals", ()) or ()
    with_visual = {v.body for v in visuals if v.role == "visual"}
    n_mesh = sum(v.kind == "mesh" and (v.role == "visual" or v.body not in with_visual)
                 for v in visuals)
    mesh_faces = max(200, min(mesh_faces, total_faces // max(n_mesh, 1)))
    meshes = {}                               # a mesh file's arrays, read once per scene
    for i, v in enumerate(visuals):
        if v.body in shapes_of and (v.role == "visual" or v.body not in with_visual):
            shapes_of[v.body].append(_visual_entry(v, f"model.visuals[{i}]", mesh_faces,
                                                   embed_faces, meshes))
    for i, sh in enumerate(getattr(model, "shapes", ()) or ()):
        if sh.body in shapes_of and sh.body not in with_visual:
            shapes_of[sh.body].append(_shape_entry(sh, f"model.shapes[{i}]"))
    connected = {n for j in model.joints for n in (j.parent, j.child)}
    connected |= {n for e in model.elements for n in (e.a, e.b)}
    bodies = []
    for k, b in enumerate(model.bodies):
        shapes = shapes_of[b.name]
        for sh in shapes:
            if sh["type"] in ("plane", "line"):
                sh["extent"] = 0.3            # a plane on a body: a small square
        if all(sh["type"] in ("plane", "line") for sh in shapes):
            shapes = shapes + _default_shapes(b, att[b.name], spatial, size,
                                              free=b.name not in connected)
        bodies.append({"name": b.name, "color": _color(k), "shapes": shapes,
                       "mass": float(b.mass)})
    ground_shapes = shapes_of[GROUND]

    # the bounds hold the drawn shapes too (a ball's radius), over up to 200 frames
    sample = np.unique(np.linspace(0, len(t) - 1, min(len(t), 200)).round().astype(int))
    for k, b in enumerate(bodies):
        local = [shape_points(s) for s in b["shapes"] if not s.get("ghost")]
        if local:
            local = np.vstack(local)
            q = np.repeat(quat[sample, k][:, None, :], len(local), axis=1)
            w = pos[sample, k][:, None, :] + _rotate(q, np.broadcast_to(local, q.shape[:2] + (3,)))
            lo, hi = np.minimum(lo, w.min(axis=(0, 1))), np.maximum(hi, w.max(axis=(0, 1)))
    size = float(max(np.linalg.norm(hi - lo), size))

    joints = []
    for j in model.joints:
        if j.kind == "distance":
            joints.append({"name": j.name, "kind": "distance", "a": j.parent,
                           "pa": _r(_v3(j.parent_point)), "b": j.child,
                           "pb": _r(_v3(j.child_point))})
            continue
        if spatial:
            axis = np.asarray(j.frame_c, float).reshape(3, 3)[:, 2] if j.frame_c else None
            on, point = j.child, j.child_point
            if j.kind == "prismatic" and j.frame_p:
                axis = np.asarray(j.frame_p, float).reshape(3, 3)[:, 2]
                on, point = j.parent, j.parent_point
        else:
            axis = np.array([0.0, 0.0, 1.0])
            on, point = j.child, j.child_point
            if j.kind == "prismatic":
                axis, on, point = np.array(_v3(j.axis)), j.parent, j.parent_point
        joints.append({"name": j.name, "kind": j.kind, "body": on, "p": _r(_v3(point)),
                       "axis": _r(axis) if axis is not None else None,
                       "ground": GROUND in (j.parent, j.child),
                       "gp": _r(_v3(j.parent_point if j.parent == GROUND else j.child_point))})

    elements = []
    index = {b.name: k for k, b in enumerate(model.bodies)}

    def at_start(body, p):
        k = index.get(body)
        return np.asarray(p) if k is None else pos[0, k] + _rotate(quat[0, k], np.asarray(p))

    for e in model.elements:
        long = np.linalg.norm(at_start(e.b, _v3(e.b_point)) - at_start(e.a, _v3(e.a_point)))
        if e.kind in ("tsda", "cylinder", "bushing") and long <= 3 * size:  # (else a lever)
            elements.append({"name": e.name, "kind": e.kind, "a": e.a, "pa": _r(_v3(e.a_point)),
                             "b": e.b, "pb": _r(_v3(e.b_point)), "k": float(e.stiffness),
                             "c": float(e.damping)})

    contacts, seen = [], set()
    for c in model.contacts:
        if c.kind in ("point_line", "point_plane"):
            key = (c.other, tuple(np.round(_v3(c.other_point), 9)),
                   tuple(np.round(_v3(c.normal), 9)))
            if key not in seen and not shapes_of.get(c.other):   # else drawn as its shape
                seen.add(key)
                contacts.append({"kind": "line" if c.kind == "point_line" else "plane",
                                 "body": c.other, "p": _r(_v3(c.other_point)),
                                 "n": _r(_v3(c.normal))})
            if not shapes_of.get(c.body):     # a shape draws its own contact points
                contacts.append({"kind": "point", "name": c.name, "body": c.body,
                                 "p": _r(_v3(c.point)), "r": float(c.offset)})

    sc = {"name": model.name, "spatial": spatial, "up": _r(_up(model)),
          "bounds": [_r(lo), _r(hi)], "size": size, "bodies": bodies, "joints": joints,
          "elements": elements, "contacts": contacts, "ground": ground_shapes,
          "markers": [{"name": m.name, "body": m.body, "p": _r(_v3(m.point))}
                      for m in model.markers]}
    keep = np.arange(len(t))
    if len(t) > max_frames:
        keep = np.unique(np.append(np.linspace(0, len(t) - 1, max_frames).round().astype(int),
                                   len(t) - 1))
    digits = int(np.clip(5 - np.floor(np.log10(size)), 4, 9))
    sc["frames"] = {"t": _r(t[keep], 9), "pos": _r(pos[keep], digits),
                    "quat": _r(quat[keep], 6)}
    if result is not None:
        names = result.dtype.names
        cols = list(columns) if columns else _default_columns(names[1:], model)
        unknown = [c for c in cols if c not in names]
        if unknown:
            raise InputError(f"unknown plot column(s) {unknown}; columns are "
                             f"{list(names[1:])[:40]}")
        from ..dynamics.outputs import output_spec
        units = {v.name: v.unit for v in output_spec(model)}
        units.update({i.name: i.unit for i in model.inputs})
        sc["plot"] = [{"name": c, "unit": units.get(c, ""),
                       "values": _r(np.asarray(result[c], float)[keep], 6)} for c in cols]
        sc["impacts"] = [{"t": ti, "name": n, "body": body, "p": _r(p)}
                         for ti, n, body, p, _ in _impacts(model, result)][:2000]
        marker_names = [m.name for m in model.markers]
        chosen = marker_names if traces is None else list(traces)
        unknown = [m for m in chosen if m not in marker_names]
        if unknown:
            raise InputError(f"unknown trace point(s) {unknown}; the model's points are "
                             f"{marker_names}")
        sc["traces"] = chosen
    return sc


# ----------------------------------------------------------------------- HTML
def _script(text):
    """Text safe inside <script>: no closing tag."""
    return text.replace("</", "<\\/")


def fragment(sc, *, height=420, element_id="fmu-mb-viewer"):
    """An HTML fragment (a div and its inlined scripts) that shows the scene `sc` inside a
    page (the FMU's documentation/index.html)."""
    viewer = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    css = (ASSETS / "viewer.css").read_text(encoding="utf-8")
    data = _script(json.dumps(sc, separators=(",", ":")))
    return (f"<style>{css}</style>\n"
            f"<div id=\"{element_id}\" class=\"fmu-mb-viewer fmu-mb-embedded\" "
            f"style=\"height:{int(height)}px\"></div>\n"
            f"<script type=\"application/json\" id=\"{element_id}-scene\">{data}</script>\n"
            f"<script>{_script(THREE.read_text(encoding='utf-8'))}</script>\n"
            f"<script>{_script(viewer)}\nFmuMbViewer.start(document.getElementById("
            f"\"{element_id}\"), JSON.parse(document.getElementById(\"{element_id}-scene\")"
            f".textContent), {{embedded: true}});</script>\n")


def page(sc, title=None):
    """A complete self-contained HTML page of the scene `sc`."""
    title = title or f"{sc['name']}: fmu_mb viewer"
    viewer = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    css = (ASSETS / "viewer.css").read_text(encoding="utf-8")
    data = _script(json.dumps(sc, separators=(",", ":")))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_html.escape(title)}</title>\n<style>html,body{{margin:0;height:100%;"
            f"overflow:hidden}}{css}</style></head>\n<body>\n"
            "<div id=\"fmu-mb-viewer\" class=\"fmu-mb-viewer fmu-mb-page\"></div>\n"
            f"<script type=\"application/json\" id=\"fmu-mb-scene\">{data}</script>\n"
            f"<script>{_script(THREE.read_text(encoding='utf-8'))}</script>\n"
            f"<script>{_script(viewer)}\nFmuMbViewer.start(document.getElementById("
            f"\"fmu-mb-viewer\"), JSON.parse(document.getElementById(\"fmu-mb-scene\")"
            f".textContent), {{embedded: false}});</script>\n</body></html>\n")


def camera_fragment(sc, direction, up, fov=40.0, fill=0.6):
    """URL options (cam=, up=, fov=) of a camera looking at the scene's centre from
    `direction` (a vector from the centre towards the eye) with screen-up `up`, at a distance
    where the scene's size spans about 1 / fill of the view's height."""
    lo, hi = np.array(sc["bounds"][0]), np.array(sc["bounds"][1])
    c = (lo + hi) / 2
    d = np.asarray(direction, float)
    eye = c + d / np.linalg.norm(d) * sc["size"] * fill / np.tan(np.radians(fov) / 2)
    nums = lambda v: ",".join(f"{x:.9g}" for x in v)   # noqa: E731
    return f"cam={nums([*eye, *c])}&up={nums(up)}&fov={fov:g}"
