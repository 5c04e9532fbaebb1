"""The lab in a real browser: Debian's headless chromium loads the page over a run made by the tiny preset.

The page is opened first, on an empty runs folder; then the run is made beside it (``genenv-lab run --preset tiny
--epochs 2``), so the test also sees the lab refresh by itself. It checks what a user sees: the run's card and
rendered plotly figures (``js-plotly-plot`` elements holding the figures' titles), and saves a screenshot
(``lab.png`` in the test's tmp dir, path printed).

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (NUL-terminated JSON on file
descriptors 3 and 4, no extra package): the test waits in real time until the page is complete, then reads the
DOM and takes the screenshot. (``--dump-dom`` with ``--virtual-time-budget`` also finds the figure, but its
virtual clock does not wait for the server, so a screenshot taken that way can show the page before the data
arrived.)
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="the browser test needs Debian's headless chromium "
                                                            "at /usr/bin/chromium (apt-get install -y chromium)")
pytest.importorskip("gradio", reason="the lab needs the app extra: pip install -e '.[app]'")

ROOT = Path(__file__).resolve().parent.parent
RUN = "tiny-e2e"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1400,1000"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            pytest.fail(f"app.py exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"the lab did not answer at {url} within {timeout:.0f} s")


class Chromium:
    """Headless chromium with one page, driven over ``--remote-debugging-pipe``."""

    def __init__(self, profile: Path):
        cmd_r, self._cmd_w = os.pipe()  # we write commands, chromium reads them on fd 3
        self._resp_r, resp_w = os.pipe()  # chromium writes replies on fd 4
        cmd_r, resp_w = (self._above_4(fd) for fd in (cmd_r, resp_w))
        shell = f'exec 3<&{cmd_r} 4>&{resp_w} {cmd_r}<&- {resp_w}>&-; exec "$@"'
        self.proc = subprocess.Popen(["bash", "-c", shell, "chromium", str(CHROMIUM), *FLAGS,
                                      f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                                     pass_fds=(cmd_r, resp_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buf, self._id = b"", 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False,
                  page=True)

    @staticmethod
    def _above_4(fd: int) -> int:
        """``fd`` moved to a number above 4, so that placing the pipes on fds 3 and 4 cannot clobber them."""
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def call(self, method: str, timeout: float = 60, page: bool = False, **params):
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

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True)["result"].get(
            "value")

    def close(self) -> None:
        os.close(self._cmd_w)
        os.close(self._resp_r)
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _card_and_figure(run: str, card_text: str) -> str:
    """JavaScript: is the card of ``run`` on the page with ``card_text``, and its difficulty figure drawn?"""
    return f"""(() => {{
  const card = [...document.querySelectorAll('.run-card')].some(
      e => e.textContent.includes('{run} ·') && e.textContent.includes('{card_text}'));
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return card && plots.some(p => p.textContent.includes('Difficulty of generated tasks · {run}'));
}})()"""


def _wait_for(browser: "Chromium", expression: str, timeout: float, alive=None) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if browser.evaluate(expression):
            return True
        if alive is not None and not alive():
            return bool(browser.evaluate(expression))
        time.sleep(0.5)
    return False


def test_the_lab_shows_a_tiny_run_live_in_chromium(tmp_path):
    """The page is opened on an empty runs folder; a tiny run started beside it appears, fills in and finishes
    on the page with no reload (``gr.Timer``)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = open(tmp_path / "app.log", "w")
    server = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--runs", str(runs), "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    browser = run = None
    try:
        _wait_http(url, server, timeout=120)
        browser = Chromium(tmp_path / "profile")
        browser.call("Page.navigate", page=True, url=url)
        assert _wait_for(browser, "document.body.textContent.includes('No run in')", 60), "the empty lab did not load"

        run = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "tiny", "--epochs", "2",
                                "--out", str(runs / RUN)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        _wait_for(browser, _card_and_figure(RUN, "2 / 2"), 300, alive=lambda: run.poll() is None)
        output = run.communicate(timeout=300)[0]
        assert run.returncode == 0, output[-3000:]
        finished = _wait_for(browser, _card_and_figure(RUN, "✔ finished"), 30)
        time.sleep(1.0)  # let plotly finish drawing before the screenshot
        dom = browser.evaluate("document.documentElement.outerHTML")
        (tmp_path / "dom.html").write_text(dom)
        shot = tmp_path / "lab.png"
        shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", page=True, format="png")["data"]))
        print(f"screenshot of the lab: {shot}")

        assert finished, f"the finished run did not show up live; DOM in {tmp_path / 'dom.html'}"
        assert f"{RUN} · " in dom and "epochs <strong>2 / 2</strong>" in dom
        assert re.search(r'class="[^"]*js-plotly-plot', dom), "no plotly figure was rendered"
        assert f"Difficulty of generated tasks · {RUN}" in dom and f"Per-epoch curves · {RUN}" in dom
        assert "Traceback" not in (tmp_path / "app.log").read_text()
        assert shot.stat().st_size > 20_000, "the screenshot is blank"
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        if browser is not None:
            browser.close()
        server.terminate()
        server.wait(timeout=30)
        log.close()
