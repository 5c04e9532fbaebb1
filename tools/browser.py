"""Headless Chromium driven over the DevTools protocol, for screenshots of the lab and of comparison reports.

Used by the browser test (``tests/test_app_browser.py``) and by :mod:`tools.snapshots` (the docs'
figures). Chromium is started with ``--remote-debugging-pipe``:
NUL-terminated JSON messages on file descriptors 3 (commands) and 4 (replies), so no extra package (selenium,
playwright) is needed. Written by hand because the DevTools client libraries all bring a browser download or an
async framework, and the few calls used here are small.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's chromium (``apt-get install -y chromium``)."""
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


class Chromium:
    """Headless chromium with one page of ``width`` x ``height`` pixels."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 1000, binary: Path = CHROMIUM):
        if not Path(binary).exists():
            raise FileNotFoundError(f"no chromium at {binary}: apt-get install -y chromium")
        cmd_r, self._cmd_w = os.pipe()  # we write commands, chromium reads them on fd 3
        self._resp_r, resp_w = os.pipe()  # chromium writes replies on fd 4
        cmd_r, resp_w = (self._above_4(fd) for fd in (cmd_r, resp_w))
        shell = f'exec 3<&{cmd_r} 4>&{resp_w} {cmd_r}<&- {resp_w}>&-; exec "$@"'
        self.proc = subprocess.Popen(["bash", "-c", shell, "chromium", str(binary), *FLAGS,
                                      f"--window-size={width},{height}", f"--user-data-dir={profile}",
                                      "--remote-debugging-pipe", "about:blank"],
                                     pass_fds=(cmd_r, resp_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buf, self._id = b"", 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False, page=True)

    @staticmethod
    def _above_4(fd: int) -> int:
        """``fd`` moved to a number above 4, so that placing the pipes on fds 3 and 4 cannot clobber them."""
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def call(self, method: str, timeout: float = 60, page: bool = False, **params):
        """Send one DevTools command and return its result (``page``: to the page's session)."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if page:
            message["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            ready, _, _ = select.select([self._resp_r], [], [], max(0.0, deadline - time.time()))
            if not ready:
                raise TimeoutError(f"chromium did not answer {method} within {timeout} s")
            chunk = os.read(self._resp_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buf += chunk

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", page=True, url=url)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression on the page."""
        return self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True)["result"].get(
            "value")

    def click(self, x: float, y: float) -> None:
        """A real left click (press and release) at viewport point (x, y), as a user's mouse gives it: some widgets
        (gradio's table cells) listen to pointer events that a scripted ``element.click()`` does not send."""
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", page=True, type=kind, x=x, y=y, button="left", clickCount=1)

    def wait_for(self, expression: str, timeout: float, alive=None) -> bool:
        """Poll ``expression`` until it is true (True), ``timeout`` s pass or ``alive()`` turns false (False)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.evaluate(expression):
                return True
            if alive is not None and not alive():
                return bool(self.evaluate(expression))
            time.sleep(0.5)
        return False

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (``full_page``: of the whole page)."""
        params = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics", page=True)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", page=True, **params)["data"]))
        return Path(path)

    def screenshot_element(self, element: str, path: Path, margin: int = 8) -> Path:
        """Save a PNG of one element, given as a JavaScript expression that evaluates to it (scrolled into view;
        the clip is in page coordinates, so an element below the fold is taken whole)."""
        rect = self.evaluate(f"""(() => {{
  const el = {element};
  if (!el) return null;
  el.scrollIntoView({{block: 'start'}});
  const r = el.getBoundingClientRect();
  return {{x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height}};
}})()""")
        if not rect or rect["width"] <= 0 or rect["height"] <= 0:
            raise RuntimeError(f"no visible element for {element!r}")
        clip = {"x": max(rect["x"] - margin, 0), "y": max(rect["y"] - margin, 0),
                "width": rect["width"] + 2 * margin, "height": rect["height"] + 2 * margin, "scale": 1}
        data = self.call("Page.captureScreenshot", page=True, format="png", captureBeyondViewport=True, clip=clip)
        Path(path).write_bytes(base64.b64decode(data["data"]))
        return Path(path)

    def close(self) -> None:
        os.close(self._cmd_w)
        os.close(self._resp_r)
        self.proc.terminate()
        self.proc.wait(timeout=30)
