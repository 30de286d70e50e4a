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

class BrowserError(InputError):
    """The browser could not be started, did not answer, or the page failed in it."""


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
        raise BrowserError("no Chromium found (looked for " + ", ".join(NAMES) + " and "
                         "FMU_MB_BROWSER); install one, e.g. apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="fmu_mb_chromium_") as profile:
        cmd = [*wrapper, browser, *FLAGS, f"--user-data-dir={profile}", *args]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                 env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:"))
        except subprocess.TimeoutExpired:
            raise BrowserError(f"{Path(browser).name} did not finish within {timeout} s") from None
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
        raise BrowserError(f"the browser wrote no screenshot (exit {out.returncode}): "
                         f"{out.stderr[-600:]}")
    return console_messages(out.stderr)


def dump_dom(html, fragment="", size=(800, 600), timeout=90, budget_ms=3000, browser=None,
             wrapper=()):
    """(the page's DOM after load as HTML text, its console messages)."""
    out = _run([f"--window-size={int(size[0])},{int(size[1])}",
                f"--virtual-time-budget={int(budget_ms)}", "--dump-dom", _url(html, fragment)],
               timeout, browser, wrapper)
    return out.stdout, console_messages(out.stderr)


class Session:
    """One headless Chromium driven through the DevTools protocol over a pipe
    (--remote-debugging-pipe: JSON messages ended by a NUL byte on file descriptors 3 and 4;
    no port, no websocket); wrapper: a command prefix (["unshare", "-n"]: no network). Used
    as a context manager:

        with Session(size=(800, 600)) as s:
            s.open("page.html", "ui=0")
            s.evaluate("FmuMbViewer.current.setTime(0.5)")
            png = s.screenshot()
    """

    def __init__(self, size=(800, 600), browser=None, timeout=60, wrapper=()):
        import fcntl
        import json

        self._json = json
        self.size, self.timeout = (int(size[0]), int(size[1])), timeout
        browser = browser or find_browser()
        if browser is None:
            raise BrowserError("no Chromium found (looked for " + ", ".join(NAMES) + " and "
                               "FMU_MB_BROWSER)")
        self._profile = tempfile.TemporaryDirectory(prefix="fmu_mb_chromium_")
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()
        # above 10, so that the child's dup2 to 3 and 4 cannot overwrite one of them
        hi_in = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
        hi_out = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)

        def child_fds():
            os.dup2(hi_in, 3)
            os.dup2(hi_out, 4)

        self._proc = subprocess.Popen(
            [*wrapper, browser, *FLAGS, f"--user-data-dir={self._profile.name}",
             "--remote-debugging-pipe", f"--window-size={self.size[0]},{self.size[1]}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=child_fds,
            close_fds=False, env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:"))
        for fd in (to_child, from_child, hi_in, hi_out):
            os.close(fd)
        self._buf, self._id, self.session = b"", 0, None
        self.events = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._proc.poll() is None:
            try:
                self._send("Browser.close", session=False, wait=False)
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._proc.stderr:
            self._proc.stderr.close()
        self._profile.cleanup()

    def _read_message(self):
        import select
        import time

        end = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise BrowserError(f"the browser did not answer within {self.timeout} s")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return self._json.loads(msg)

    def _send(self, method, params=None, session=True, wait=True):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, self._json.dumps(msg).encode() + b"\0")
        if not wait:
            return None
        while True:
            reply = self._read_message()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"browser: {method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method):
        for k, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(k)
        while True:
            ev = self._read_message()
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def open(self, html, fragment=""):
        """Open the page `html` in a new tab of the given size and wait for its load."""
        target = self._send("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self._send("Target.attachToTarget",
                                  {"targetId": target["targetId"], "flatten": True},
                                  session=False)["sessionId"]
        self._send("Page.enable")
        self._send("Runtime.enable")
        self._send("Emulation.setDeviceMetricsOverride",
                   {"width": self.size[0], "height": self.size[1], "deviceScaleFactor": 1,
                    "mobile": False})
        self._send("Page.navigate", {"url": _url(html, fragment)})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression):
        """Value of a JavaScript expression in the page (a thrown error raises BrowserError)."""
        out = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in out:
            d = out["exceptionDetails"]
            raise BrowserError(f"browser: {expression[:60]}: "
                             f"{d.get('exception', {}).get('description') or d.get('text')}")
        return out.get("result", {}).get("value")

    def console_errors(self):
        """Console errors and uncaught exceptions the page reported so far."""
        out = []
        for ev in self.events:
            if ev.get("method") == "Runtime.exceptionThrown":
                out.append(str(ev["params"]["exceptionDetails"].get("text")))
            elif ev.get("method") == "Runtime.consoleAPICalled" and \
                    ev["params"].get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description")))
                                    for a in ev["params"].get("args", [])))
        return out

    def screenshot(self):
        """PNG bytes of the tab."""
        import base64

        data = self._send("Page.captureScreenshot", {"format": "png"})["data"]
        return base64.b64decode(data)
