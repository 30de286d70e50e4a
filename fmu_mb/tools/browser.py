"""Headless Chromium for the 3-D viewer: screenshots of a page and its DOM after load.

A page is opened from its file with networking cut off (every host name resolves to nothing),
WebGL by SwiftShader (no GPU needed). Used by `fmu-mb animate` (frames of the 3-D scene) and
by the browser tests.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import InputError

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

FLAGS = ("--headless", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         "--hide-scrollbars", "--mute-audio", "--no-first-run", "--disable-extensions",
         "--disable-background-networking", "--disable-sync", "--disable-default-apps",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0")


def find_browser():
    """Path of a Chromium-like browser (the environment's FMU_MB_BROWSER first), or None."""
    env = os.environ.get("FMU_MB_BROWSER")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() else None)
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _url(path, fragment=""):
    url = Path(path).resolve().as_uri()
    return f"{url}#{fragment}" if fragment else url


def _run(args, timeout, browser=None, wrapper=()):
    browser = browser or find_browser()
    if browser is None:
        raise InputError("no Chromium found (looked for " + ", ".join(NAMES) + " and "
                         "FMU_MB_BROWSER); install one, e.g. apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="fmu_mb_chromium_") as profile:
        cmd = [*wrapper, browser, *FLAGS, f"--user-data-dir={profile}", *args]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                 env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:"))
        except subprocess.TimeoutExpired:
            raise InputError(f"{Path(browser).name} did not finish within {timeout} s") from None
    return out


def console_messages(stderr):
    """The console messages of pages opened from files, in Chromium's log (lines with
    ':CONSOLE'; the browser's own chrome:// pages left out)."""
    out = []
    for line in stderr.splitlines():
        if ":CONSOLE" in line and "] " in line and "source: chrome://" not in line:
            out.append(line.split("] ", 1)[1])
    return out


def screenshot(html, png, fragment="", size=(800, 600), timeout=90, budget_ms=3000,
               browser=None, wrapper=()):
    """Screenshot of the page `html` (#fragment in its URL) into `png`; returns the page's
    console messages. wrapper: a command prefix (e.g. ["unshare", "-n"]: no network)."""
    png = Path(png).resolve()
    out = _run([f"--window-size={int(size[0])},{int(size[1])}",
                f"--virtual-time-budget={int(budget_ms)}", f"--screenshot={png}",
                _url(html, fragment)], timeout, browser, wrapper)
    if not png.is_file():
        raise InputError(f"the browser wrote no screenshot (exit {out.returncode}): "
                         f"{out.stderr[-600:]}")
    return console_messages(out.stderr)


def dump_dom(html, fragment="", size=(800, 600), timeout=90, budget_ms=3000, browser=None,
             wrapper=()):
    """(the page's DOM after load as HTML text, its console messages)."""
    out = _run([f"--window-size={int(size[0])},{int(size[1])}",
                f"--virtual-time-budget={int(budget_ms)}", "--dump-dom", _url(html, fragment)],
               timeout, browser, wrapper)
    return out.stdout, console_messages(out.stderr)
