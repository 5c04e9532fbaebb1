"""PNG snapshots of what a user sees: a comparison report and the lab's difficulty histogram of one run.

    python -m tools.snapshots --compare runs/cmp-demo --run cpu-demo_genenv-s0 --out docs/figures
    python -m tools.snapshots --compare runs/demo --run cpu-dry-hint-long_genenv-s0 --story --out docs/figures

``--story`` writes ``<out>/<run>-story.png``, the lab's first screen for a genenv run beside its fixed-set twin
(:mod:`genenv_lab.lab.story`; both runs served together), and ``<out>/<run>-story.md``, its caption computed from
the two runs (the README shows both).

writes ``<out>/<compare>-report.png`` (the whole report) and ``<out>/<run>-glance.png``,
``<out>/<run>-difficulty.png`` and ``<out>/<run>-curves.png`` (the lab's "Curriculum at a glance", "Difficulty of
generated tasks" and "Per-epoch curves" figures, taken from ``app.py`` serving a copy of the run in a temporary runs
folder), with ``<out>/<run>-glance.md``: the glance figure's caption, its numbers computed from the same run
(:func:`genenv_lab.lab.glance.caption`; the README quotes it). Both are drawn by headless Chromium
(:mod:`tools.browser`), so the PNG is the page a browser shows, not a re-rendering; plotly's own PNG export
(kaleido) would need a second browser download. The docs' figures are made this way (docs/research/curriculum_cpu.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

from .browser import Chromium
from genenv_lab.lab.glance import GLANCE_TITLE, caption, story_numbers
from genenv_lab.lab.runs import load_run
from genenv_lab.lab.story import STORY_TITLE, fixed_set_partner, pair_caption, pair_numbers

APP = Path(__file__).resolve().parent.parent / "app.py"


def _plot_with(title: str) -> str:
    """JavaScript: the first rendered plotly figure whose text holds ``title`` (or null)."""
    return (f"[...document.querySelectorAll('.js-plotly-plot')].find(p => p.textContent.includes({json.dumps(title)}))"
            " || null")


def report_png(report_html: Path, out: Path, *, width: int = 1500, timeout: float = 120) -> Path:
    """A PNG of a comparison's ``report.html`` (its figure, whole)."""
    report_html = Path(report_html).resolve()
    if not report_html.is_file():
        raise FileNotFoundError(f"{report_html} is missing: run `genenv-lab compare --out DIR` first")
    with tempfile.TemporaryDirectory(prefix="genenv-snap-", ignore_cleanup_errors=True) as tmp:
        browser = Chromium(Path(tmp) / "profile", width=width, height=900)
        try:
            browser.navigate(report_html.as_uri())
            if not browser.wait_for("document.querySelectorAll('.js-plotly-plot .main-svg').length > 0", timeout):
                raise TimeoutError(f"{report_html} did not render its figure within {timeout:.0f} s")
            time.sleep(1.0)  # plotly lays out its subplots after the first SVG appears
            return browser.screenshot_element("document.querySelector('.js-plotly-plot')", Path(out))
        finally:
            browser.close()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for the lab's server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, server: subprocess.Popen, timeout: float) -> None:
    """Wait until ``url`` answers 200; fail if ``server`` exits first or ``timeout`` s pass."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"app.py exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the lab did not answer at {url} within {timeout:.0f} s")


@contextlib.contextmanager
def served_lab(runs: Path, tmp: Path, *, run: str | None = None, width: int = 1400, height: int = 1000,
               timeout: float = 180, compact: bool = False) -> Iterator[Chromium]:
    """``app.py`` serving the runs folder ``runs`` (showing ``run`` first, when given) on a free port, with its log in
    ``tmp/app.log``, and headless Chromium (profile in ``tmp``) at ``width`` × ``height`` on its page; yields the
    browser, then closes browser and server (``compact``: the inline lab's layout)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    command = ([sys.executable, str(APP), "--runs", str(runs), "--port", str(port)] + (["--run", run] if run else [])
               + (["--compact"] if compact else []))
    browser = None
    with open(Path(tmp) / "app.log", "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        try:
            wait_http(url, server, timeout)
            browser = Chromium(Path(tmp) / "profile", width=width, height=height)
            browser.navigate(url)
            yield browser
        finally:
            if browser is not None:
                browser.close()
            server.terminate()
            server.wait(timeout=30)


def shoot(browser: Chromium, title: str, path: Path, timeout: float, log: Path) -> Path:
    """A PNG of the first plotly figure whose text holds ``title``, once the lab has drawn it."""
    if not browser.wait_for(f"({_plot_with(title)}) !== null", timeout):
        raise TimeoutError(f"the lab did not draw '{title}' within {timeout:.0f} s (log: {log})")
    time.sleep(1.0)  # plotly's transitions
    return browser.screenshot_element(_plot_with(title), path)


@contextlib.contextmanager
def served_copies(sources: list[Path], *, run: str | None = None, width: int = 1400,
                  timeout: float = 180) -> Iterator[tuple[Chromium, Path, Path]]:
    """The lab serving copies of the run folders ``sources`` (their adapters left out) in a temporary runs folder,
    ``run`` shown first: yields the browser on its page, that runs folder and the server's log."""
    with tempfile.TemporaryDirectory(prefix="genenv-snap-", ignore_cleanup_errors=True) as tmp:
        runs = Path(tmp) / "runs"
        for source in sources:
            shutil.copytree(source, runs / source.name, ignore=shutil.ignore_patterns("adapters"))
        with served_lab(runs, Path(tmp), run=run, width=width, timeout=timeout) as browser:
            yield browser, runs, Path(tmp) / "app.log"


def _written(path: Path, text: str) -> Path:
    path.write_text(text + "\n", encoding="utf-8")
    return path


def lab_pngs(run_dir: Path, out_dir: Path, *, width: int = 1400, timeout: float = 180) -> list[Path]:
    """PNGs of the lab's glance figure, difficulty histogram and per-epoch curves of ``run_dir`` (served from a copy,
    so the lab sees this run alone and selects it), and the glance figure's caption (``<run>-glance.md``)."""
    run_dir = Path(run_dir).resolve()
    if not (run_dir / "epochs.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory with committed epochs (no epochs.jsonl)")
    out_dir, name = Path(out_dir), run_dir.name
    out_dir.mkdir(parents=True, exist_ok=True)
    with served_copies([run_dir], width=width, timeout=timeout) as (browser, runs, log):
        shots = [shoot(browser, f"{title} · {name}", out_dir / f"{name}-{suffix}.png", timeout, log)
                 for title, suffix in ((GLANCE_TITLE, "glance"), ("Difficulty of generated tasks", "difficulty"),
                                       ("Per-epoch curves", "curves"))]
        return shots + [_written(out_dir / f"{name}-glance.md", caption(story_numbers(load_run(runs / name))))]


def story_png(run_dir: Path, out_dir: Path, *, width: int = 1400, timeout: float = 180) -> list[Path]:
    """The lab's story figure of ``run_dir`` beside its fixed-set twin (the same folder's ``static`` run of its world
    and seed, by configuration: :func:`genenv_lab.lab.story.fixed_set_partner`), served together from a copy, and
    its caption (``<run>-story.md``)."""
    from genenv_lab.lab.runs import discover_runs

    run_dir = Path(run_dir).resolve()
    summaries = discover_runs(run_dir.parent)
    me = next((s for s in summaries if s.name == run_dir.name), None)
    partner = fixed_set_partner(me, summaries) if me is not None else None
    if partner is None or not (run_dir.parent / partner / "epochs.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir.name} has no fixed-set twin with committed epochs beside it ({partner})")
    out_dir, name = Path(out_dir), run_dir.name
    out_dir.mkdir(parents=True, exist_ok=True)
    with served_copies([run_dir, run_dir.parent / partner], run=name, width=width, timeout=timeout) as (
            browser, runs, log):
        shots = [shoot(browser, f"{STORY_TITLE} · {name}", out_dir / f"{name}-story.png", timeout, log)]
        text = pair_caption(pair_numbers(load_run(runs / name), load_run(runs / partner)))
        return shots + [_written(out_dir / f"{name}-story.md", text)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="PNG snapshots of a comparison report and of the lab on one run.")
    parser.add_argument("--compare", help="comparison folder (genenv-lab compare --out DIR): its report.html")
    parser.add_argument("--run", help="run directory, or a run's name inside --compare's runs/")
    parser.add_argument("--out", required=True, help="folder of the PNGs")
    parser.add_argument("--story", action="store_true",
                        help="the lab's story figure of --run beside its fixed-set twin instead of the run's figures")
    args = parser.parse_args(argv)
    if not args.compare and not args.run:
        parser.error("give --compare, --run or both")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if args.compare:
        compare = Path(args.compare)
        written.append(report_png(compare / "report.html", out / f"{compare.resolve().name}-report.png"))
    if args.run:
        run = Path(args.run)
        if not run.is_dir() and args.compare:
            run = Path(args.compare) / "runs" / args.run
        written.extend(story_png(run, out) if args.story else lab_pngs(run, out))
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
