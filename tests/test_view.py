"""The 3-D viewer (fmu_mb.viewer, fmu_mb.tools.view): the scene computed in Python, and the
page in a real browser (headless Chromium, no network): each body's pixels where the camera
set in the URL projects its shapes, after load and at two times of a result; no console
error."""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import MODELS, model
from fmu_mb import InputError, simulate
from fmu_mb.tools import browser as br
from fmu_mb.tools import view as vw

RUNS = {   # model: (stop time, output interval, inputs)
    "double_pendulum": (1.0, 0.01, None),
    "double_wishbone": (0.3, 0.005, {"tyre.h": -0.04 * 357859.232809}),   # a 4 cm road step
    "tumbling_box": (0.8, 0.005, None),
}


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, (stop, dt, inputs) in RUNS.items():
        m = model(name)
        out[name] = (m, simulate(m, stop, dt, inputs=inputs))
    return out


def _write_csv(path, data):
    """The result as `fmu-mb simulate` writes it."""
    with open(path, "w") as f:
        f.write(",".join(data.dtype.names) + "\n")
        np.savetxt(f, data.view((float, len(data.dtype.names))), delimiter=",", fmt="%.17g")
    return path


# ------------------------------------------------------------------ the scene, in Python
def _quat_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def test_planar_poses_rotate_points_as_the_body_angle(results):
    m, data = results["double_pendulum"]
    t, pos, quat = vw.result_poses(m, data)
    k = 37
    for i, b in enumerate(m.bodies):
        phi = data[f"{b.name}.phi"][k]
        R = np.array([[np.cos(phi), -np.sin(phi), 0], [np.sin(phi), np.cos(phi), 0], [0, 0, 1]])
        assert np.allclose(_quat_matrix(quat[k, i]), R, atol=1e-12)
        assert np.allclose(pos[k, i], [data[f"{b.name}.x"][k], data[f"{b.name}.y"][k], 0.0])
    # the tip of rod 2 (marker) from the pose equals the simulated marker output
    tip = m.markers[0]
    p = pos[k, 1] + _quat_matrix(quat[k, 1]) @ np.array([*tip.point, 0.0])
    assert np.allclose(p[:2], [data["tip.x"][k], data["tip.y"][k]], atol=1e-12)


def test_spatial_poses_put_the_marker_where_the_result_has_it(results):
    m, data = results["double_wishbone"]
    t, pos, quat = vw.result_poses(m, data)
    k, i = len(t) - 1, m.body("carrier").index
    wc = m.markers[0]
    p = pos[k, i] + _quat_matrix(quat[k, i]) @ np.array(wc.point)
    assert np.allclose(p, [data[f"wheel_centre.{c}"][k] for c in "xyz"], atol=1e-9)


def test_start_pose_is_the_models_assembled_pose():
    m = model("double_wishbone")
    pos, quat = vw.start_poses(m)
    x0 = np.asarray(m.x0).reshape(-1, 7)
    assert np.allclose(pos, x0[:, :3]) and np.allclose(quat[:, 3], x0[:, 3])


def test_default_links_have_the_true_lengths():
    m = model("double_pendulum", l1=0.7, l2=0.4)
    sc = vw.scene(m)
    for body, length in (("rod1", 0.7), ("rod2", 0.4)):
        links = [s for s in sc["bodies"][m.body(body).index]["shapes"] if s["type"] == "link"]
        total = sum(np.linalg.norm(np.subtract(s["a"], s["b"])) for s in links)
        assert total == pytest.approx(length, rel=1e-6)


def test_free_body_is_the_box_of_its_inertia():
    m = model("tumbling_box", a=0.5, b=0.3, c=0.1)
    (box,) = [s for s in vw.scene(m)["bodies"][0]["shapes"] if s["type"] == "box"]
    R = _quat_matrix(box["q"])
    extent = np.abs(R) @ np.array(box["size"])        # the box's size along the body axes
    assert np.allclose(extent, [0.5, 0.3, 0.1], atol=1e-5)


def test_decimation_keeps_the_last_frame_and_the_impacts(results):
    m, data = results["tumbling_box"]
    sc = vw.scene(m, data, max_frames=50)
    assert len(sc["frames"]["t"]) <= 51
    assert sc["frames"]["t"][-1] == pytest.approx(data["time"][-1])
    n = sum(int(data[f"{c.name}.impacts"][-1] - data[f"{c.name}.impacts"][0]) > 0
            for c in m.contacts)
    assert n > 0 and {i["name"] for i in sc["impacts"]} <= {c.name for c in m.contacts}
    assert len({i["name"] for i in sc["impacts"]}) == n


def test_shapes_of_the_model_replace_the_default():
    """model.shapes (the fields of mechanics.shapes.ShapeItem: kind, size, position, rotation
    with the shape axes as columns) in the body frame; ground shapes apart."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class ShapeItem:
        name: str
        body: str
        kind: str
        size: tuple
        position: tuple
        rotation: tuple

    turn = ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))      # 90 deg about z
    m = model("tumbling_box")
    object.__setattr__(m, "shapes", (
        ShapeItem("hull", "box", "box", (0.4, 0.25, 0.15), (0.0, 0.0, 0.0), turn),
        ShapeItem("floor", "ground", "plane", (), (0.0, 0.0, 0.0), np.eye(3))))
    sc = vw.scene(m)
    (box,) = sc["bodies"][0]["shapes"]
    assert box["type"] == "box" and box["size"] == [0.4, 0.25, 0.15]
    x = _quat_matrix(box["q"]) @ np.array([1.0, 0.0, 0.0])
    assert np.allclose(x, [0.0, 1.0, 0.0], atol=1e-5)   # shape x along body y (q: 6 digits)
    assert [g["type"] for g in sc["ground"]] == ["plane"]


def test_visual_meshes_are_embedded(tmp_path):
    """model.visuals (importers.robot.Visual): a mesh file read with trimesh and embedded
    with its scale, pose and colour; the visual shapes replace the default geometry."""
    trimesh = pytest.importorskip("trimesh", reason="meshes are read with trimesh")
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Visual:
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

    stl = tmp_path / "part.stl"
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(stl)
    m = model("double_pendulum")
    object.__setattr__(m, "visuals", (
        Visual("l1", "rod1", "visual", "mesh", (2.0, 2.0, 2.0), str(stl), (0.1, 0.0, 0.0),
               (1.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 1.0)),
        Visual("l1", "rod1", "collision", "sphere", (0.05,), None, (0.0, 0.0, 0.0),
               (1.0, 0.0, 0.0, 0.0))))
    sc = vw.scene(m)
    (mesh,) = sc["bodies"][0]["shapes"]
    assert mesh["type"] == "mesh" and mesh["color"] == "#ff0000" and "url" not in mesh
    pts = vw.shape_points(mesh)
    assert np.allclose(pts.max(axis=0) - pts.min(axis=0), [0.2, 0.4, 0.6])
    assert np.allclose(pts.mean(axis=0), [0.1, 0.0, 0.0])
    assert sc["bodies"][1]["shapes"][0]["type"] == "link"    # rod2: the default


def test_wrong_result_and_columns_are_refused(results):
    m, data = results["double_pendulum"]
    other, _ = results["tumbling_box"]
    with pytest.raises(InputError, match=r"lacks the body coordinates \['box.x'"):
        vw.scene(other, data)
    with pytest.raises(InputError, match="unknown plot column"):
        vw.scene(m, data, columns=["nope"])
    with pytest.raises(InputError, match="unknown trace point"):
        vw.scene(m, data, traces=["nope"])


def test_cli_writes_one_self_contained_file(tmp_path, results):
    from fmu_mb.tools.cli import main

    m, data = results["double_pendulum"]
    csv = _write_csv(tmp_path / "dp.csv", data)
    out = tmp_path / "sub" / "dp.html"
    assert main(["view", str(MODELS / "double_pendulum.py"), str(csv), "-o", str(out)]) == 0
    text = out.read_text()
    # nothing loaded from elsewhere: no src/href attribute, no import, no fetch
    assert not re.search(r"<(script|link|img)[^>]*(src|href)=", text)
    assert "fetch(" not in text and "import(" not in text
    sc = json.loads(re.search(r'id="fmu-mb-scene">(.*?)</script>', text, re.S).group(1))
    assert len(sc["frames"]["t"]) == len(data) and sc["name"] == "double_pendulum"
    assert out.stat().st_size < 900_000


# ------------------------------------------------------------------ in the browser
needs_browser = pytest.mark.skipif(br.find_browser() is None,
                                   reason="no Chromium (apt-get install chromium)")
SIZE = (640, 480)


def _offline_wrapper():
    """`unshare -n` (a network namespace with no interface up) when we may use it, else ()
    (the page is then kept off the network by --host-resolver-rules alone)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return ()
    ok = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return ("unshare", "-n") if ok else ()


def _camera(sc):
    """A camera the test chooses: eye, target, up, vertical field of view [deg]."""
    lo, hi = np.array(sc["bounds"][0]), np.array(sc["bounds"][1])
    c, size = (lo + hi) / 2, sc["size"]
    if sc["spatial"]:
        up = np.array(sc["up"])
        d = np.array([0.8, -0.45, 0.0])
        d = d - (d @ up) * up
        d = d / np.linalg.norm(d) + 0.55 * up
        eye = c + 1.5 * size * d / np.linalg.norm(d)
    else:
        up, eye = np.array([0.0, 1.0, 0.0]), c + np.array([0.0, 0.0, 1.6 * size])
    return eye, c, up, 45.0


def _project(points, eye, target, up, fov, size):
    f = (target - eye) / np.linalg.norm(target - eye)
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    d = points - eye
    x, y, z = d @ s, d @ u, d @ f
    t = np.tan(np.radians(fov) / 2)
    w, h = size
    return np.column_stack([(x / (z * t * w / h) + 1) / 2 * w, (1 - y / (z * t)) / 2 * h])


def _body_points(sc, k, frame):
    """World points of body k's drawn shapes at a frame of the scene."""
    pts = np.vstack([vw.shape_points(s) for s in sc["bodies"][k]["shapes"] if not s.get("ghost")])
    pos, q = np.array(sc["frames"]["pos"][frame][k]), np.array(sc["frames"]["quat"][frame][k])
    return pos + pts @ _quat_matrix(q).T


def _interior_points(shape):
    """Points inside a shape (body frame): they project inside its silhouette."""
    t = shape["type"]
    if t == "link":
        return np.linspace(shape["a"], shape["b"], 9)
    c = np.array(shape.get("c", (0, 0, 0)), float)
    if t == "sphere":
        return c[None, :]
    half = {"box": lambda: np.array(shape["size"]) / 2,
            "ellipsoid": lambda: np.array(shape["axes"]),
            "cylinder": lambda: np.array([shape["r"], shape["r"], shape["h"] / 2]),
            "capsule": lambda: np.array([shape["r"], shape["r"], shape["h"] / 2])}.get(t)
    if half is None:
        return np.zeros((0, 3))
    corners = 0.5 * half() * np.array([[a, b, d] for a in (-1, 1) for b in (-1, 1)
                                       for d in (-1, 1)])
    return np.vstack([c, c + corners @ _quat_matrix(shape["q"]).T])


def _check_pixels(png, sc, frame, cam, margin=4.0):
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert img.shape[:2] == (SIZE[1], SIZE[0])
    centres = {}
    for k, b in enumerate(sc["bodies"]):
        rgb = np.array([int(b["color"][i:i + 2], 16) for i in (1, 3, 5)])
        mask = np.abs(img - rgb).max(axis=2) <= 6
        ys, xs = np.nonzero(mask)
        assert len(xs) >= 25, f"body {b['name']}: {len(xs)} pixels of its colour {b['color']}"
        box = _project(_body_points(sc, k, frame), *cam, SIZE)
        lo, hi = box.min(axis=0) - margin, box.max(axis=0) + margin
        inside = (xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])
        assert inside.mean() > 0.98, (f"body {b['name']}: {inside.mean():.3f} of its pixels in "
                                      f"its projected box {lo.round(1)}..{hi.round(1)}")
        centres[b["name"]] = (np.array([xs.mean(), ys.mean()]), (lo + hi) / 2)
        # and the other way round: inside the body's projection, the body's colour (or, where
        # another body is in front, that one's)
        inner = np.vstack([_interior_points(s) for s in b["shapes"] if not s.get("ghost")])
        pos = np.array(sc["frames"]["pos"][frame][k])
        R = _quat_matrix(sc["frames"]["quat"][frame][k])
        uv = np.round(_project(pos + inner @ R.T, *cam, SIZE)).astype(int)
        own = covered = 0
        for u, v in uv:
            patch = img[max(v - 1, 0):v + 2, max(u - 1, 0):u + 2].reshape(-1, 3)
            own += bool((np.abs(patch - rgb).max(axis=1) <= 6).any())
            covered += bool((patch.min(axis=1) < 240).any())
        assert covered == len(uv) and own >= 0.5 * len(uv), (
            f"body {b['name']}: {own} of {len(uv)} points inside its projection show its "
            f"colour, {covered} are not background")
    return centres


def _page(tmp_path, sc, name):
    path = tmp_path / f"{name}.html"
    path.write_text(vw.page(sc))
    return path


def _no_errors(path, fragment, wrapper):
    dom, console = br.dump_dom(path, fragment, size=SIZE, wrapper=wrapper)
    m = re.search(r'<div class="fmu-mb-status"[^>]*data-state="(\w+)"[^>]*data-errors="([^"]*)"',
                  dom)
    assert m, "the page wrote no status element"
    assert m.group(1) == "ready" and m.group(2) == "", f"status {m.group(1)}: {m.group(2)}"
    bad = [c for c in console if re.search(r"error|uncaught|failed", c, re.I)]
    assert not bad, bad


def _fragment(cam, t=None):
    eye, target, up, fov = cam
    f = (f"flat=1&cam={','.join(f'{v:.9g}' for v in (*eye, *target))}"
         f"&up={','.join(f'{v:.9g}' for v in up)}&fov={fov}")
    return f + (f"&t={t!r}" if t is not None else "")


@needs_browser
@pytest.mark.parametrize("name", list(RUNS))
def test_start_pose_in_the_browser(tmp_path, name):
    sc = vw.scene(model(name))
    path = _page(tmp_path, sc, name)
    cam = _camera(sc)
    wrapper = _offline_wrapper()
    _no_errors(path, _fragment(cam), wrapper)
    console = br.screenshot(path, tmp_path / "start.png", _fragment(cam), size=SIZE,
                            wrapper=wrapper)
    assert not [c for c in console if re.search(r"error|uncaught", c, re.I)], console
    _check_pixels(tmp_path / "start.png", sc, 0, cam)


@needs_browser
@pytest.mark.parametrize("name", list(RUNS))
def test_result_playback_in_the_browser(tmp_path, results, name):
    m, data = results[name]
    sc = vw.scene(m, data)
    path = _page(tmp_path, sc, name)
    cam = _camera(sc)
    t = sc["frames"]["t"]
    shots = {0: None, len(t) // 2: t[len(t) // 2], len(t) - 1: t[-1]}   # after load, 2 times
    centres = {}
    with br.Session(size=SIZE, wrapper=_offline_wrapper()) as s:    # one browser, no network
        s.open(path, _fragment(cam))
        for frame, time in shots.items():
            if time is not None:
                assert s.evaluate(f"FmuMbViewer.current.setTime({time!r})") == "ready"
            png = tmp_path / f"frame{frame}.png"
            png.write_bytes(s.screenshot())
            centres[frame] = _check_pixels(png, sc, frame, cam)
        assert s.evaluate("document.querySelector('.fmu-mb-status').dataset.errors") == ""
        assert s.console_errors() == []
    # the picture moves with the result: where a body's projection moved by more than 6 px
    # between two shots, its pixels moved alike
    moved = 0
    frames = list(shots)
    for a, b in zip(frames, frames[1:]):
        for body in centres[a]:
            (pix_a, proj_a), (pix_b, proj_b) = centres[a][body], centres[b][body]
            d = np.linalg.norm(proj_b - proj_a)
            if d > 6:
                moved += 1
                err = np.linalg.norm((pix_b - pix_a) - (proj_b - proj_a))
                assert err < 0.35 * d + 3, (body, pix_b - pix_a, proj_b - proj_a)
    assert moved > 0, "no body moved on the screen: the test shows nothing"


# ------------------------------------------------------------------ in every FMU
def test_fmu_documentation_shows_the_model_in_3d(tmp_path):
    """A built FMU's documentation/index.html has the viewer (start pose) above the
    parameter table, under 1 MB compressed, and it runs in the browser without network."""
    import zipfile

    pytest.importorskip("pythonfmu", reason="building FMUs needs pythonfmu")
    from fmu_mb.fmi.native_build import build_model_fmu

    path, kind, _ = build_model_fmu(MODELS / "double_pendulum.py", tmp_path, {})
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("documentation/index.html")
        doc = z.read(info).decode()
        assert not [n for n in z.namelist() if "three.bundle" in n]
    assert info.compress_size < 1_000_000
    assert 0 < doc.index('id="fmu-mb-viewer-scene"') < doc.index("<th>parameter</th>")
    sc = json.loads(re.search(r'id="fmu-mb-viewer-scene">(.*?)</script>', doc, re.S).group(1))
    assert sc["name"] == "double_pendulum" and len(sc["frames"]["t"]) == 1
    if br.find_browser() is None:
        pytest.skip("no Chromium (apt-get install chromium): the page was not opened")
    page = tmp_path / "index.html"
    page.write_text(doc)
    wrapper = _offline_wrapper()
    dom, console = br.dump_dom(page, size=SIZE, wrapper=wrapper)
    m = re.search(r'<div class="fmu-mb-status"[^>]*data-state="(\w+)"[^>]*data-errors="([^"]*)"',
                  dom)
    assert m and m.group(1) == "ready" and m.group(2) == "", m and m.groups()
    assert not [c for c in console if re.search(r"error|uncaught", c, re.I)], console


def test_python_fmu_resources_leave_the_viewer_out(tmp_path, monkeypatch):
    """The Python FMU's copy of fmu_mb has no viewer scripts (they are in its documentation)."""
    from fmu_mb.fmi import build

    copied = {}

    def fake_package_fmu(text, module_name, files, dest, **kw):
        copied["files"] = sorted(str(p.relative_to(files[0].parent))
                                 for p in files[0].rglob("*"))
        copied["doc"] = kw.get("documentation")
        return dest

    monkeypatch.setattr(build, "package_fmu", fake_package_fmu)
    monkeypatch.setattr(build, "_add_kernel", lambda d: None)
    build._package("", "m", [], tmp_path / "m.fmu", {}, False, documentation="x")
    assert "fmu_mb/tools/view.py" in copied["files"] and "fmu_mb/mechanics" in copied["files"]
    assert not [f for f in copied["files"] if "viewer" in f.split("/")]


# ------------------------------------------------------------------ fmu-mb animate
@needs_browser
def test_animate_writes_the_3d_scene_as_a_gif(tmp_path, results):
    from PIL import Image

    from fmu_mb.tools.cli import main

    m, data = results["double_pendulum"]
    csv = _write_csv(tmp_path / "dp.csv", data)
    gif = tmp_path / "dp.gif"
    assert main(["animate", str(MODELS / "double_pendulum.py"), str(csv), "-o", str(gif),
                 "--every", "20", "--size", "320x240", "--renderer", "browser",
                 "--quiet"]) == 0
    im = Image.open(gif)
    n = len(range(0, len(data), 20))
    assert im.n_frames == n and im.size == (320, 240)
    first = np.asarray(im.convert("RGB"), int)
    im.seek(n - 1)
    last = np.asarray(im.convert("RGB"), int)
    assert (np.abs(first - last).max(axis=2) > 30).sum() > 100     # the pendulum moved
    # the rod colours are in the picture (shaded, so near their flat colours only)
    sc = vw.scene(m, data)
    for b in sc["bodies"]:
        rgb = np.array([int(b["color"][i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(first - rgb).max(axis=2) < 60).sum() > 20, b["name"]


def test_animate_matplotlib_renderer_is_kept(tmp_path, results):
    from fmu_mb.tools.cli import main

    pytest.importorskip("matplotlib", reason="the matplotlib renderer needs matplotlib")
    m, data = results["double_pendulum"]
    csv = _write_csv(tmp_path / "dp.csv", data)
    gif = tmp_path / "dp.gif"
    assert main(["animate", str(MODELS / "double_pendulum.py"), str(csv), "-o", str(gif),
                 "--every", "25", "--renderer", "matplotlib", "--quiet"]) == 0
    from PIL import Image
    assert Image.open(gif).n_frames == len(range(0, len(data), 25))


# ------------------------------------------------------------------ every model, and the docs
@needs_browser
@pytest.mark.slow
def test_every_model_opens_without_error(tmp_path):
    """The start pose of every model of models/ in one browser: the page is ready, no error."""
    from conftest import MODEL_FILES
    from fmu_mb import load_model

    with br.Session(size=SIZE) as s:
        for f in MODEL_FILES:
            m = load_model(f)
            page = tmp_path / f"{m.name}.html"
            page.write_text(vw.page(vw.scene(m)))
            s.open(page)
            state = s.evaluate("document.querySelector('.fmu-mb-status').dataset.state")
            assert state == "ready", (f.name, s.evaluate(
                "document.querySelector('.fmu-mb-status').dataset.errors"))
        assert s.console_errors() == []


@needs_browser
def test_docs_screenshot(tmp_path, results):
    """The screenshot of docs/viewer.md: the double wishbone half-way through its road step,
    with the controls and the linked plot. FMU_MB_WRITE_DOCS=1 writes it to docs/."""
    from PIL import Image

    m, data = results["double_wishbone"]
    sc = vw.scene(m, data, columns=["wheel_centre.z", "coil_over.force", "uca_pivot.angle"])
    page = _page(tmp_path, sc, "dw")
    direction = np.array([0.55, -1.0, 0.45])
    with br.Session(size=(900, 560)) as s:
        s.open(page, vw.camera_fragment(sc, direction, sc["up"], fill=0.42))
        assert s.evaluate("FmuMbViewer.current.setTime(0.03)") == "ready"
        png = s.screenshot()
        assert s.console_errors() == []
    out = tmp_path / "viewer.png"
    out.write_bytes(png)
    img = np.asarray(Image.open(out).convert("RGB"), int)
    assert img.shape == (560, 900, 3)
    for b in sc["bodies"]:                         # every body in view (shaded colours)
        rgb = np.array([int(b["color"][i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(img - rgb).max(axis=2) < 50).sum() > 20, b["name"]
    if os.environ.get("FMU_MB_WRITE_DOCS") == "1":
        from conftest import ROOT
        Image.open(out).convert("P", palette=Image.ADAPTIVE, colors=128).save(
            ROOT / "docs" / "viewer.png", optimize=True)


@needs_browser
def test_controls_play_follow_and_trace(tmp_path, results):
    """Play advances the time; following a body moves the camera by the body's displacement;
    a trace is drawn up to the current frame."""
    import time

    m, data = results["double_pendulum"]
    sc = vw.scene(m, data)
    path = _page(tmp_path, sc, "dp")
    t = sc["frames"]["t"]
    with br.Session(size=SIZE, wrapper=_offline_wrapper()) as s:
        s.open(path)
        assert s.evaluate("document.querySelector('.fmu-mb-plot canvas') !== null")
        s.evaluate("document.querySelector('.fmu-mb-bar button').click()")     # play
        time.sleep(1.0)
        played = s.evaluate("FmuMbViewer.current.state.t")
        s.evaluate("document.querySelector('.fmu-mb-bar button').click()")     # pause
        assert t[0] + 0.2 < played <= t[-1]
        cam = "FmuMbViewer.current.camera.position.toArray()"
        s.evaluate("FmuMbViewer.current.state.follow = 'rod2'")
        s.evaluate(f"FmuMbViewer.current.setTime({t[10]!r})")
        c0 = np.array(s.evaluate(cam))
        s.evaluate(f"FmuMbViewer.current.setTime({t[60]!r})")
        c1 = np.array(s.evaluate(cam))
        k = m.body("rod2").index
        moved = np.array(sc["frames"]["pos"][60][k]) - np.array(sc["frames"]["pos"][10][k])
        assert np.linalg.norm(moved) > 0.05
        assert np.allclose(c1 - c0, moved, atol=1e-5)
        drawn = s.evaluate("FmuMbViewer.current.scene.children.filter(o => o.type === 'Line'"
                           " && o.geometry.drawRange.count < 1e6).map(o => o.geometry"
                           ".drawRange.count)")
        assert drawn == [61]                         # the tip's path up to frame 60
        assert s.console_errors() == []


def test_cluster_decimation_keeps_the_outline():
    trimesh = pytest.importorskip("trimesh", reason="the test mesh is made with trimesh")
    sphere = trimesh.creation.icosphere(subdivisions=5, radius=0.3)      # 20480 faces
    v, f = vw.cluster_decimate(sphere.vertices, sphere.faces, 2000)
    assert 100 < len(f) <= 2000 and f.max() < len(v)
    r = np.linalg.norm(v, axis=1)
    assert np.all(np.abs(r - 0.3) < 0.3 * 0.1)      # merged points stay near the surface
    assert np.allclose(v.min(axis=0), -0.3, atol=0.03) and np.allclose(v.max(axis=0), 0.3,
                                                                           atol=0.03)


def test_cli_names_bad_input(tmp_path, results, capsys):
    from fmu_mb.tools.cli import main

    dp = str(MODELS / "double_pendulum.py")
    out = str(tmp_path / "x.html")
    assert main(["view", dp, str(tmp_path / "missing.csv"), "-o", out]) == 1
    assert "cannot read" in capsys.readouterr().err
    _, box = results["tumbling_box"]
    csv = _write_csv(tmp_path / "box.csv", box)
    assert main(["view", dp, str(csv), "-o", out]) == 1
    assert "lacks the body coordinates ['rod1.x'" in capsys.readouterr().err
    assert main(["view", dp, "--max-frames", "1", "-o", out]) == 2
    assert "--max-frames" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
