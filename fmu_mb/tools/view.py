"""fmu-mb view and fmu-mb animate: the 3-D viewer of fmu_mb.viewer written to an HTML file,
or played in headless Chromium (fmu_mb.tools.browser) into a GIF or MP4.

    fmu-mb view MODEL.py [OUT.csv] -o out/NAME.html
    fmu_mb.view(model, result=None, path="out/NAME.html")
    fmu-mb animate MODEL.py OUT.csv -o out/NAME.gif
"""
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..viewer.scene import (camera_fragment, cluster_decimate, fragment, page,  # noqa: F401
                            result_poses, scene, shape_points, start_poses)


def view(model, result=None, path=None, *, max_frames=1500, columns=None, traces=None,
         overrides=None):
    """Write the 3-D viewer of `model` (a Model, a model file, a URDF or an MJCF file) and its `result` (a
    structured array, a CSV path or None: the start pose) to `path` (an .html file, its
    folder created; default out/<model>.html). Returns the path."""
    if isinstance(model, (str, Path)):              # a model file, a URDF or an MJCF file
        from ..importers import load
        model = load(str(model), overrides)
    if isinstance(result, (str, Path)):
        from .viz import read_csv
        result = read_csv(result)
    if result is not None and getattr(result, "dtype", None) is not None and \
            result.dtype.names and not model.spatial:
        from .viz import _check_geometry
        result_poses(model, np.atleast_1d(result))   # the body coordinates are there
        _check_geometry(model, np.atleast_1d(result))
    sc = scene(model, result, max_frames=max_frames, columns=columns, traces=traces)
    path = Path(path or Path("out") / f"{model.name}.html")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(sc), encoding="utf-8")
    return path


def animate(model, data, path, every=1, fps=25.0, size=(640, 480), progress=False,
            browser=None, view="iso"):
    """Write a GIF (or, with ffmpeg, an MP4) of the 3-D scene of `model` moving as in `data`:
    the viewer's page in headless Chromium (fmu_mb.tools.browser.Session), one picture per
    `every` rows of data, labelled with the time. A spatial model is seen from `view` (as in
    viz.projection: "iso", "front", "side", "top" or "AZ,EL" in degrees), a planar one from
    +z. Returns the number of frames written."""
    import base64
    import io
    import tempfile

    from PIL import Image, ImageDraw

    from .browser import BrowserError, Session

    if every < 1:
        raise InputError(f"every must be >= 1, received {every}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise InputError(f"{path}: expected a .gif or .mp4 file")
    data = np.atleast_1d(data)
    result_poses(model, data)                  # the body coordinates are there
    if not model.spatial:
        from .viz import _check_geometry
        _check_geometry(model, data)
    fragment_ = "ui=0"
    if model.spatial:
        from .viz import projection
        P = projection(model, view)
        sc = scene(model, data, max_frames=max(len(data), 2))
        fragment_ += "&" + camera_fragment(sc, np.cross(P[0], P[1]), P[1])
    else:
        sc = scene(model, data, max_frames=max(len(data), 2))
    times = np.asarray(data["time"], float)[::every]
    bar = None
    if progress:
        from ..dynamics.simulate import _Progress
        bar = _Progress(len(times))
    images = []
    with tempfile.TemporaryDirectory(prefix="fmu_mb_animate_") as tmp:
        page_path = Path(tmp) / "scene.html"
        page_path.write_text(page(sc), encoding="utf-8")
        with Session(size=size, browser=browser) as s:
            s.open(page_path, fragment_)
            for k, t in enumerate(times):
                state = s.evaluate(f"FmuMbViewer.current.setTime({float(t)!r})")
                if state != "ready":
                    why = s.evaluate("document.querySelector('.fmu-mb-status').dataset.errors")
                    raise BrowserError(f"the 3-D viewer failed in the browser: {why}")
                url = s.evaluate("FmuMbViewer.current.renderer.domElement"
                                 ".toDataURL('image/png')")
                img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
                img = img.convert("RGB")
                ImageDraw.Draw(img).text((8, img.height - 18), f"{model.name}   t = {t:.3f} s",
                                         fill=(20, 20, 20))
                images.append(img)
                if bar:
                    bar.update(k + 1)
            errors = s.console_errors()
    if bar:
        bar.close()
    if errors:
        raise BrowserError(f"the 3-D viewer reported errors in the browser: {errors[:3]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        images[0].save(path, save_all=True, append_images=images[1:],
                       duration=max(int(round(1000.0 / fps)), 10), loop=0, optimize=False)
    else:
        _mp4(images, path, fps)
    return len(images)


def _mp4(images, path, fps):
    import shutil
    import subprocess

    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise InputError(f"{path}: an MP4 needs ffmpeg (not found); write a .gif instead")
    w, h = images[0].size
    proc = subprocess.Popen([ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo",
                             "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", f"{fps:g}", "-i", "-",
                             "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p",
                             str(path)], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    for img in images:
        proc.stdin.write(img.tobytes())
    _, err = proc.communicate()
    if proc.returncode:
        raise InputError(f"ffmpeg failed: {err.decode(errors='replace')[-400:]}")
