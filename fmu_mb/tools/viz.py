"""Plots of outputs over time and animations of a mechanism from its body coordinates.

    fmu-mb plot OUT.csv [--columns NAME ...] -o plot.png
    fmu-mb animate MODEL.py OUT.csv -o anim.gif [--every N] [--fps F]

A body is drawn as the lines from its centre of mass to every point where something is
attached to it (joints, force elements, named points), so a rod appears as a rod; joints as
small circles, the ground's attachment points as triangles, translational spring-dampers as
zig-zags. Needs matplotlib (the `fmu` extra); GIFs are written with Pillow, which matplotlib
installs. These line drawings are `fmu-mb animate --renderer matplotlib`, and its fallback
where no Chromium is found; the 3-D scene is in fmu_mb.tools.view (fmu_mb.viewer).
"""
import numpy as np

from ..errors import InputError
from ..mechanics.model import GROUND


def read_csv(path):
    """A CSV written by `fmu-mb simulate` or the main job as a structured array."""
    try:
        data = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
    except OSError as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc}") from None
    if data.dtype.names is None or "time" not in data.dtype.names:
        raise InputError(f"{str(path)!r}: expected a CSV with a header whose first column is "
                         f"'time'")
    return np.atleast_1d(data)


# units of output names by their last part, where the name alone decides it (a '.rate' or an
# '.effort' is m/s or rad/s, N or N.m depending on the joint: those need the model)
SUFFIX_UNITS = {"x": "m", "y": "m", "phi": "rad", "vx": "m/s", "vy": "m/s", "omega": "rad/s",
                "angle": "rad", "position": "m", "fx": "N", "fy": "N", "tension": "N",
                "force": "N", "length": "m", "stroke": "m", "stroke_rate": "m/s",
                "kinetic": "J", "potential": "J", "total": "J", "energy_loss": "J",
                "last_time": "s", "impacts": "1", "end_stops": "1", "active": "1",
                "h": None}


def column_units(columns, model=None):
    """{column: unit} from the model's output spec when given, else from SUFFIX_UNITS (a
    column whose unit the name does not decide gets none)."""
    spec = {}
    if model is not None:
        from ..dynamics.outputs import output_spec

        spec = {v.name: v.unit for v in output_spec(model)}
        spec.update({i.name: i.unit for i in model.inputs})
    out = {}
    for c in columns:
        unit = spec.get(c) or SUFFIX_UNITS.get(c.rsplit(".", 1)[-1])
        if c == "time":
            unit = "s"
        if unit:
            out[c] = unit
    return out


def plot_outputs(data, columns, path, title="", units=None, model=None):
    """Plot `columns` of a result (structured array) over time into `path` (PNG, PDF...).

    Each panel's axis is labelled with the column's name and unit (`units` {name: unit}, or
    from `model`'s outputs, or guessed from the name: column_units); columns that are
    identically zero are left out (named in the title). Returns the columns plotted.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = data.dtype.names
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InputError(f"unknown column(s) {unknown}; columns are {list(names[1:])}")
    units = dict(column_units(columns, model), **(units or {}))
    zero = [c for c in columns if not np.any(np.asarray(data[c], float) != 0.0)]
    shown = [c for c in columns if c not in zero] or list(columns[:1])
    fig, axes = plt.subplots(len(shown), 1, figsize=(7, 1.9 * len(shown) + 0.3),
                             sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], shown):
        ax.plot(data["time"], data[name])
        unit = units.get(name)
        ax.set_ylabel(f"{name} [{unit}]" if unit else name, fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time [s]")
    left_out = [c for c in zero if c not in shown]
    if left_out:
        title = (title + "\n" if title else "") + "identically zero: " + ", ".join(left_out)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return shown


def attachment_points(model):
    """Per body name (and the ground): local points where joints and elements attach (the
    centre of mass first)."""
    zero = (0.0, 0.0, 0.0) if getattr(model, "spatial", False) else (0.0, 0.0)
    pts = {b.name: [zero] for b in model.bodies}
    pts[GROUND] = []
    for j in model.joints:
        pts[j.parent].append(j.parent_point)
        pts[j.child].append(j.child_point)
    for e in model.elements:
        if e.kind in ("tsda", "bushing", "cylinder"):
            pts[e.a].append(e.a_point)
            pts[e.b].append(e.b_point)
        elif e.kind == "force":
            pts[e.b].append(e.b_point)
    for m in model.markers:
        pts[m.body].append(m.point)
    return pts


def _check_geometry(model, data, tol=1e-6):
    """Refuse data whose body coordinates violate the model's joints (a result simulated
    with other parameters: the drawing would show links of the wrong length)."""
    from ..mechanics import constraints

    if not model.compiled.n_rows or not len(data):
        return
    x = np.array([data[f"{b.name}.{c}"][0] for b in model.bodies for c in ("x", "y", "phi")])
    phi, _, _, _ = constraints.evaluate(model, x, np.zeros_like(x), float(data["time"][0]),
                                        need_conv=False)
    worst = float(np.abs(phi).max(initial=0.0))
    scale = 1.0 + float(np.abs(x).max(initial=0.0))
    if worst > tol * scale:
        k = int(np.argmax(np.abs(phi)))
        joint = next((j.name for j, rows in zip(model.joints, model.compiled.joint_rows)
                      if k in rows), "a drive")
        raise InputError(f"the data does not fit model '{model.name}' as built: joint "
                         f"'{joint}' is violated by {worst:.3g} at t = {data['time'][0]:g}; "
                         f"was the result simulated with other parameters? Give animate the "
                         f"same --set values as simulate")


def _world(data, k, body, point):
    if body == GROUND:
        return np.asarray(point, float)
    x, y, phi = (data[f"{body}.{c}"][k] for c in ("x", "y", "phi"))
    c, s = np.cos(phi), np.sin(phi)
    return np.array([x + c * point[0] - s * point[1], y + s * point[0] + c * point[1]])


def _zigzag(a, b, n=8, width=0.04):
    d = b - a
    length = np.hypot(*d)
    if length < 1e-12:
        return np.array([a, b])
    u, v = d / length, np.array([-d[1], d[0]]) / length
    s = np.linspace(0, 1, 2 * n + 1)
    off = np.zeros_like(s)
    off[1:-1:2], off[2:-1:2] = width, -width
    return a + np.outer(s * length, u) + np.outer(off * min(1.0, length), v)


def animate(model, data, path, every=1, fps=25, progress=False, view="iso"):
    """Write an animation of `model` moving as in `data` (needs <body>.x/.y/.phi columns;
    spatial models <body>.x/.y/.z/.e0.../.e3, drawn in the projection `view`, see
    `projection`).

    Returns the number of frames written (one per `every` rows of data).
    progress : print a progress bar (per frame) to stderr once the run takes over a second.
    """
    if getattr(model, "spatial", False):
        return _animate_spatial(model, data, path, every, fps, progress, view)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    missing = [f"{b.name}.{c}" for b in model.bodies for c in ("x", "y", "phi")
               if f"{b.name}.{c}" not in data.dtype.names]
    if missing:
        raise InputError(f"the data lacks the body coordinates {missing[:6]} of model "
                         f"'{model.name}'; expected a result of this model")
    if every < 1:
        raise InputError(f"every must be >= 1, received {every}")
    _check_geometry(model, data)
    pts = attachment_points(model)
    frames = list(range(0, len(data), every))
    allxy = np.array([_world(data, k, b, p) for k in frames for b, ps in pts.items()
                      for p in ps] or [[0.0, 0.0]])
    lo, hi = allxy.min(axis=0), allxy.max(axis=0)
    pad = 0.08 * max(hi - lo) + 1e-3
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.set_aspect("equal")
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.grid(True, alpha=0.25)
    body_lines = {b.name: ax.plot([], [], "-", lw=3, color="tab:blue")[0] for b in model.bodies}
    joint_dots = ax.plot([], [], "o", ms=6, mfc="white", mec="k")[0]
    ground_marks = ax.plot([], [], "^", ms=9, color="0.3")[0]
    springs = {e.name: ax.plot([], [], "-", lw=1, color="tab:red")[0]
               for e in model.elements if e.kind == "tsda"}
    cylinders = {e.name: ax.plot([], [], "-", lw=5, color="tab:orange",
                                 solid_capstyle="butt")[0]
                 for e in model.elements if e.kind == "cylinder"}
    label = ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top")
    ax.set_title(model.name)

    def draw(k):
        for b in model.bodies:
            c = _world(data, k, b.name, (0.0, 0.0))
            seg = []
            for p in pts[b.name][1:] or [(0.0, 0.0)]:
                seg += [c, _world(data, k, b.name, p), [np.nan, np.nan]]
            seg = np.array(seg)
            body_lines[b.name].set_data(seg[:, 0], seg[:, 1])
        jp = np.array([_world(data, k, j.child, j.child_point) for j in model.joints]
                      or np.zeros((0, 2)))
        joint_dots.set_data(jp[:, 0] if len(jp) else [], jp[:, 1] if len(jp) else [])
        gp = np.array([_world(data, k, j.parent, j.parent_point) for j in model.joints
                       if j.parent == GROUND] or np.zeros((0, 2)))
        ground_marks.set_data(gp[:, 0] if len(gp) else [], gp[:, 1] if len(gp) else [])
        for e in model.elements:
            if e.kind == "tsda":
                z = _zigzag(_world(data, k, e.a, e.a_point), _world(data, k, e.b, e.b_point))
                springs[e.name].set_data(z[:, 0], z[:, 1])
            elif e.kind == "cylinder":
                a, b = _world(data, k, e.a, e.a_point), _world(data, k, e.b, e.b_point)
                cylinders[e.name].set_data([a[0], b[0]], [a[1], b[1]])
        label.set_text(f"t = {data['time'][k]:.3f} s")
        return []

    return _save(fig, draw, frames, path, fps, progress)


def _save(fig, draw, frames, path, fps, progress):
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter

    anim = FuncAnimation(fig, draw, frames=frames, blit=False)
    bar = None
    if progress:
        from ..dynamics.simulate import _Progress

        bar = _Progress(len(frames))
    callback = (lambda i, n: bar.update(i + 1)) if bar else None
    try:
        if str(path).lower().endswith(".gif"):
            anim.save(str(path), writer=PillowWriter(fps=fps), progress_callback=callback)
        else:
            anim.save(str(path), writer="ffmpeg", fps=fps, progress_callback=callback)
    finally:
        if bar:
            bar.close()
        plt.close(fig)
    return len(frames)


# ---------------------------------------------------------------- spatial models
VIEWS = {"iso": (45.0, 35.264), "front": (0.0, 0.0), "side": (90.0, 0.0), "top": (0.0, 90.0)}


def projection(model, view="iso"):
    """2 x 3 matrix of an orthographic projection onto the screen (right, up).

    The screen's up is the model's up, against gravity (z when there is none). `view` names a
    camera direction: "iso" (azimuth 45, elevation 35.264 deg), "front" (from the first
    horizontal axis, x for a z-up model), "side" (from the second), "top", or "AZ,EL" in
    degrees: azimuth about the up axis from the first horizontal axis, elevation above the
    horizontal plane."""
    if isinstance(view, str) and view in VIEWS:
        az, el = VIEWS[view]
    else:
        try:
            az, el = (float(v) for v in str(view).split(","))
        except ValueError:
            raise InputError(f"view must be one of {list(VIEWS)} or 'AZ,EL' in degrees, "
                             f"received {view!r}") from None
        if not (np.isfinite(az) and np.isfinite(el) and -90.0 <= el <= 90.0):
            raise InputError(f"view 'AZ,EL': expected finite angles with -90 <= EL <= 90, "
                             f"received {view!r}")
    g = np.asarray(model.gravity, float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    axes = np.eye(3)
    h1 = axes[int(np.argmin(np.abs(axes @ up)))]           # the axis least along up
    h1 = h1 - (h1 @ up) * up
    h1 /= np.linalg.norm(h1)
    h2 = np.cross(up, h1)
    a, e = np.radians(az), np.radians(el)
    cam = np.cos(e) * (np.cos(a) * h1 + np.sin(a) * h2) + np.sin(e) * up
    right = np.cross(up, cam)
    if np.linalg.norm(right) < 1e-9:                        # looking along up: keep h2 right
        right = h2
    right /= np.linalg.norm(right)
    return np.stack([right, np.cross(cam, right)])


def _rotations(data, k, body):
    from ..mechanics.spatial.rotations import matrix

    e = np.array([[data[f"{body}.e{i}"][k] for i in range(4)]])
    return matrix(e)[0]


def _world3(data, k, body, point):
    """Global position of `point` (body axes) of `body` in row k of a spatial result."""
    if body == GROUND:
        return np.asarray(point, float)
    r = np.array([data[f"{body}.{c}"][k] for c in "xyz"])
    return r + _rotations(data, k, body) @ np.asarray(point, float)


def _zigzag3(a, b, normal, n=8, width=0.04):
    d = b - a
    length = np.linalg.norm(d)
    if length < 1e-12:
        return np.array([a, b])
    u = d / length
    v = np.cross(u, normal)
    if np.linalg.norm(v) < 1e-9:
        v = np.cross(u, np.eye(3)[int(np.argmin(np.abs(u)))])
    v /= np.linalg.norm(v)
    s = np.linspace(0, 1, 2 * n + 1)
    off = np.zeros_like(s)
    off[1:-1:2], off[2:-1:2] = width, -width
    return a + np.outer(s * length, u) + np.outer(off * min(1.0, length), v)


def spatial_frame(model, data, k, pts=None):
    """The drawing of row k of a spatial result, in global coordinates: {"bodies": {name:
    polyline (n, 3), nan-separated segments from the centre of mass to each attachment
    point}, "joints": (n, 3), "ground": (n, 3), "links": distance joints as nan-separated
    segments, "springs": {name: (end a, end b)}}."""
    pts = pts or attachment_points(model)
    nan = np.full(3, np.nan)
    bodies = {}
    for b in model.bodies:
        c = _world3(data, k, b.name, (0.0, 0.0, 0.0))
        seg = []
        for p in pts[b.name][1:] or [(0.0, 0.0, 0.0)]:
            seg += [c, _world3(data, k, b.name, p), nan]
        bodies[b.name] = np.array(seg)
    joints = np.array([_world3(data, k, j.child, j.child_point) for j in model.joints]
                      or np.zeros((0, 3)))
    ground = np.array([_world3(data, k, GROUND, j.parent_point if j.parent == GROUND
                               else j.child_point) for j in model.joints
                       if GROUND in (j.parent, j.child)] or np.zeros((0, 3)))
    links = [[_world3(data, k, j.parent, j.parent_point),
              _world3(data, k, j.child, j.child_point), nan]
             for j in model.joints if j.kind == "distance"]
    return {"bodies": bodies, "joints": joints, "ground": ground,
            "links": np.array(links).reshape(-1, 3),
            "springs": {e.name: (_world3(data, k, e.a, e.a_point),
                                 _world3(data, k, e.b, e.b_point))
                        for e in model.elements if e.kind == "tsda"}}


def _animate_spatial(model, data, path, every, fps, progress, view):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    needed = [f"{b.name}.{c}" for b in model.bodies for c in ("x", "y", "z", "e0", "e1",
                                                                "e2", "e3")]
    missing = [c for c in needed if c not in data.dtype.names]
    if missing:
        raise InputError(f"the data lacks the body coordinates {missing[:6]} of model "
                         f"'{model.name}'; expected a result of this model")
    if every < 1:
        raise InputError(f"every must be >= 1, received {every}")
    P = projection(model, view)
    pts = attachment_points(model)
    frames = list(range(0, len(data), every))
    drawn = [spatial_frame(model, data, k, pts) for k in frames]
    allp = np.vstack([np.vstack(list(d["bodies"].values()) + [d["joints"], d["ground"],
                                                                d["links"]]
                                + [np.array(s) for s in d["springs"].values()])
                      for d in drawn])
    xy = allp[np.all(np.isfinite(allp), axis=1)] @ P.T
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    pad = 0.08 * max(hi - lo) + 1e-3
    width = float(max(hi - lo)) * 0.015
    cam = np.cross(P[0], P[1])
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.set_aspect("equal")
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.grid(True, alpha=0.25)
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    # the global axes as a small tripod in the lower left corner
    for e, name in zip(np.eye(3), "xyz"):
        v = P @ e * 0.08 * max(hi - lo)
        o = lo - 0.5 * pad + 0.1 * (hi - lo)
        ax.annotate("", xy=o + v, xytext=o, arrowprops=dict(arrowstyle="->", color="0.4"))
        ax.text(*(o + 1.15 * v), name, color="0.4", fontsize=8)
    body_lines = {b.name: ax.plot([], [], "-", lw=3, color="tab:blue")[0] for b in model.bodies}
    link_lines = ax.plot([], [], "-", lw=1.5, color="0.2")[0]
    joint_dots = ax.plot([], [], "o", ms=6, mfc="white", mec="k")[0]
    ground_marks = ax.plot([], [], "^", ms=9, color="0.3")[0]
    springs = {e.name: ax.plot([], [], "-", lw=1, color="tab:red")[0]
               for e in model.elements if e.kind == "tsda"}
    label = ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top")
    ax.set_title(f"{model.name} (view {view})")

    def draw(i):
        d = drawn[i]
        for name, line in body_lines.items():
            q = d["bodies"][name] @ P.T
            line.set_data(q[:, 0], q[:, 1])
        for art, pts_ in ((joint_dots, d["joints"]), (ground_marks, d["ground"]),
                          (link_lines, d["links"])):
            q = pts_ @ P.T if len(pts_) else np.zeros((0, 2))
            art.set_data(q[:, 0], q[:, 1])
        for name, (a, b) in d["springs"].items():
            q = _zigzag3(a, b, cam, width=width) @ P.T
            springs[name].set_data(q[:, 0], q[:, 1])
        label.set_text(f"t = {data['time'][frames[i]]:.3f} s")
        return []

    return _save(fig, draw, list(range(len(frames))), path, fps, progress)
