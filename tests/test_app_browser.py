"""The lab in a real browser: Debian's headless chromium loads the page over a run made by the tiny preset.

The page is opened first, on an empty runs folder; then the run is made beside it (``genenv-lab run --preset tiny
--epochs 2``), so the test also sees the lab refresh by itself. It checks what a user sees: the run's card and
rendered plotly figures (``js-plotly-plot`` elements holding the figures' titles), and saves a screenshot
(``lab.png`` in the test's tmp dir, path printed).

Chromium is driven over the DevTools protocol (``genenv_lab.lab.browser``): the test waits in real time until the
page is complete, then reads the DOM and takes the screenshot. (``--dump-dom`` with ``--virtual-time-budget`` also
finds the figure, but its virtual clock does not wait for the server, so a screenshot taken that way can show the
page before the data arrived.)
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genenv_lab.lab.browser import CHROMIUM, Chromium
from genenv_lab.lab.snapshots import free_port, wait_http

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="the browser test needs Debian's headless chromium "
                                                            "at /usr/bin/chromium (apt-get install -y chromium)")
pytest.importorskip("gradio", reason="the lab needs the app extra: pip install -e '.[app]'")

ROOT = Path(__file__).resolve().parent.parent
RUN = "tiny-e2e"


def _card_and_figure(run: str, card_text: str) -> str:
    """JavaScript: is the card of ``run`` on the page with ``card_text``, and its difficulty figure drawn?"""
    return f"""(() => {{
  const card = [...document.querySelectorAll('.run-card')].some(
      e => e.textContent.includes('{run} ·') && e.textContent.includes('{card_text}'));
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return card && plots.some(p => p.textContent.includes('Difficulty of generated tasks · {run}'));
}})()"""


def test_the_lab_shows_a_tiny_run_live_in_chromium(tmp_path):
    """The page is opened on an empty runs folder; a tiny run started beside it appears, fills in and finishes
    on the page with no reload (``gr.Timer``)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = open(tmp_path / "app.log", "w")
    server = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--runs", str(runs), "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    browser = run = None
    try:
        wait_http(url, server, timeout=120)
        browser = Chromium(tmp_path / "profile")
        browser.navigate(url)
        assert browser.wait_for("document.body.textContent.includes('No run in')", 60), "the empty lab did not load"

        run = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "tiny", "--epochs", "2",
                                "--out", str(runs / RUN)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        browser.wait_for(_card_and_figure(RUN, "2 / 2"), 300, alive=lambda: run.poll() is None)
        output = run.communicate(timeout=300)[0]
        assert run.returncode == 0, output[-3000:]
        finished = browser.wait_for(_card_and_figure(RUN, "✔ finished"), 30)
        time.sleep(1.0)  # let plotly finish drawing before the screenshot
        dom = browser.evaluate("document.documentElement.outerHTML")
        (tmp_path / "dom.html").write_text(dom)
        shot = tmp_path / "lab.png"
        browser.screenshot(shot)
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


def test_snapshots_of_a_comparison_report_and_of_the_lab(tmp_path):
    """``python -m genenv_lab.lab.snapshots`` (the docs' figures): the report's figure and the lab's difficulty
    histogram and curves of one run, as PNGs of what Chromium shows, on a comparison made with the scripted fake."""
    from PIL import Image

    from genenv_lab.compare import compare_grid, variant_entries
    from genenv_lab.lab.snapshots import main

    from fakes import ScriptedBackend

    cmp = tmp_path / "cmp"
    compare_grid(variant_entries(["tiny"], ["genenv"], epochs=2, reference_tasks=3), 1, cmp, progress=False,
                 backend_factory=lambda cfg: ScriptedBackend(num_generations=cfg.agent.num_generations))
    run_name = next((cmp / "runs").iterdir()).name
    assert main(["--compare", str(cmp), "--run", run_name, "--out", str(tmp_path / "png")]) == 0
    shots = {p.name: Image.open(p).size for p in (tmp_path / "png").glob("*.png")}
    assert set(shots) == {"cmp-report.png", f"{run_name}-difficulty.png", f"{run_name}-curves.png"}
    assert all(w > 600 and h > 300 for w, h in shots.values())  # whole figures, not a blank strip
