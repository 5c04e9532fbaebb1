"""The README's notebook command (scripts/notebooks.sh) serves JupyterLab on notebooks/, headless."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is None,
                    reason="JupyterLab is not installed (scripts/test.sh installs the notebooks extra)")
def test_notebooks_script_serves_jupyterlab(tmp_path):
    from tools.snapshots import free_port

    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")}
    log = (tmp_path / "jupyter.log").open("w")
    proc = subprocess.Popen(["bash", "scripts/notebooks.sh", "--no-browser", "--port", str(port),
                             "--ServerApp.token=genenv-test"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, body = time.monotonic() + 240, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token=genenv-test",
                                            timeout=5) as resp:
                    body = json.loads(resp.read())
                break
            except OSError:
                time.sleep(1)
        assert body is not None, (tmp_path / "jupyter.log").read_text()[-3000:]
        names = {item["name"] for item in body["content"]}
        assert "06_co_evolution_loop.ipynb" in names  # served from notebooks/
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
