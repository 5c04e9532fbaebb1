"""The GenEnv lab: watch co-evolution runs, drill into generated tasks and agent attempts, start preset runs.

    python app.py [--runs DIR] [--host 127.0.0.1] [--port 7860] [--share]

It reads run directories (``docs/run_directory.md``) under ``--runs`` (default ``runs/`` beside this file) and
nothing else. This file only lays out components and wires events; everything it shows comes from the pure view
functions of ``genenv_lab.lab.views`` (tested without Gradio), runs are read by ``genenv_lab.lab.runs`` and started
by ``genenv_lab.lab.launcher``.

Per-user state lives in ``gr.State`` (the loaded runs and their fingerprints, the processes this user started);
nothing mutable is kept at module level. A ``gr.Timer`` polls every 2 s and redraws a view only when its run
directory changed on disk. Run names from the browser are validated and resolved inside the runs folder before any
file is opened (``genenv_lab.lab.runs.resolve_run``).

Comparisons (``genenv-lab compare --out runs/NAME``) sit in the same folder, recognised by their ``manifest.json``;
they are not runs (the runs table leaves them out) and the "Comparisons" tab shows them, refreshed by the same
timer while the comparison still runs (runs appear as they commit epochs; missing ones are named).

Public API endpoints (``gradio_client``): ``/list_runs`` (the runs table as records), ``/run_summary`` (the
Markdown card of one run) and ``/list_comparisons`` (the names of the comparison folders).
"""

from __future__ import annotations

import argparse
import functools
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pandas as pd

from genenv_lab.lab import comparisons, figures, launcher, views
from genenv_lab.lab.glance import glance_figure
from genenv_lab.lab.origin import SameOriginWrites
from genenv_lab.lab.widgets import Table
from genenv_lab.lab.comparisons import (ComparisonData, comparison_dirs, comparison_fingerprint,
                                        comparisons_fingerprint, load_comparison, resolve_comparison)
from genenv_lab.lab.names import LabError, resolve_run, shown_name
from genenv_lab.lab.runs import RunData, discover_runs, folder_fingerprint, is_comparison, load_run, with_attempts
from genenv_lab.lab.status import fingerprint
from genenv_lab.lab.story import FIXED_SET_VARIANT, pair_caption, pair_numbers, partner_name, story_figure

ROOT = Path(__file__).resolve().parent
DEFAULT_RUNS = ROOT / "runs"
NONE = "(none)"
REFRESH_S = 2.0
HIDDEN_STORY = (gr.update(visible=False), gr.update(visible=False))
"""The story figure and its caption, hidden (no run, or a run that could not be drawn)."""

CSS = """
.lab-header h1 {margin-bottom: 0; font-size: 1.7rem;}
.lab-header p {margin-top: 2px; color: var(--body-text-color-subdued);}
.run-card {padding: 4px 14px !important; background: var(--background-fill-secondary) !important;
           border-radius: 8px !important;}
.run-card blockquote {margin: 4px 0; color: #c92a2a;}
.story-caption {padding: 0 14px; color: var(--body-text-color-subdued);}
"""


def theme() -> gr.themes.Base:
    local = ["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"]
    return gr.themes.Soft(primary_hue="indigo", secondary_hue="teal", neutral_hue="slate", font=local,
                          font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])


class Lab:
    """What the lab reads and computes over one runs folder, without any Gradio component: loading runs and
    comparisons by name, and the callbacks :func:`build_app` wires to its components (each returns the values of
    the components it updates)."""

    def __init__(self, root: Path):
        self.root = root
        # empty tables carry their own column names from the first render (never gradio's placeholder "1 2 3")
        self.no_run = RunData(name="", path=root, status="empty")
        self.no_cmp = ComparisonData(name="", path=root, status="empty")
        # a run's attempts are read when a task of it is picked, once per loaded run (a few kept, by identity)
        self.with_attempts = functools.lru_cache(maxsize=4)(with_attempts)

    # ------------------------------------------------------------------------------------------ data access
    def load(self, name: Any) -> RunData | None:
        """The run called ``name``, or None; a refused name becomes a run that shows why."""
        if name in (None, "", NONE):
            return None
        try:
            path = resolve_run(self.root, name)
        except LabError as exc:  # the card's heading shows the name escaped (no newline, no bidi override)
            return RunData(name=shown_name(name), path=self.root, status="missing", problems=(str(exc),))
        if is_comparison(path):
            return RunData(name=str(name), path=path, status="missing", problems=(
                f"{name!r} is a comparison, not a run: open it in the “Comparisons” tab.",))
        return load_run(path, str(name), attempts=False)  # read when a task is picked (with_attempts)

    def load_cmp(self, name: Any) -> ComparisonData | None:
        """The comparison called ``name``, or None; a refused name becomes a comparison that shows why."""
        if name in (None, "", NONE):
            return None
        try:
            path = resolve_comparison(self.root, name)
        except LabError as exc:
            return ComparisonData(name=shown_name(name), path=self.root, status="missing", problems=(str(exc),))
        return load_comparison(path, str(name))

    def cmp_key_of(self, name: Any) -> tuple:
        try:
            return (name, comparison_fingerprint(resolve_comparison(self.root, name))
                    if name not in (None, "", NONE) else None)
        except LabError:
            return (name, None)

    def key_of(self, run: Any, compare: Any) -> tuple:
        parts: list[Any] = [run, compare]
        for name in (run, compare):
            try:
                parts.append(fingerprint(resolve_run(self.root, name)) if name not in (None, "", NONE) else None)
            except LabError:
                parts.append(None)
        return tuple(parts)

    def first_view(self, run: str | None) -> dict[str, Any]:
        """What the page shows on its first render: the runs, the run shown (``run``, else the newest; a
        :class:`LabError` when ``run`` is not there), its card, histogram and curves."""
        summaries = discover_runs(self.root)
        names = [summary.name for summary in summaries]
        if run is not None and run not in names:
            raise LabError(f"--run {run!r}: no such run in {self.root} (runs: {', '.join(names) or 'none yet'})")
        paired = [n for n in names if partner_name(n) in names and partner_name(n) != n]
        first = run or (paired[0] if paired else names[0] if names else None)  # a run beside its fixed set first
        view = {"summaries": summaries, "names": names, "run": first, "card": "_No run selected._", "glance": None,
                "hist": None, "curves": None, "story": None, "story_caption": ""}
        if first is not None:
            try:
                shown = self.load(first)
                story, story_caption = self.story_of(shown)
                view.update(card=views.run_card(shown), glance=glance_figure(shown),
                            hist=figures.difficulty_figure(shown), curves=figures.curves_figure([shown]),
                            story=story, story_caption=story_caption)
            except Exception:  # noqa: BLE001 - the timer's first refresh draws it, or shows why it cannot
                pass
        return view

    def story_of(self, run: RunData) -> tuple[Any, str]:
        """The story figure of ``run`` beside its fixed set's run (same preset and seed, arm ``static``) and its
        caption, or (None, "") when the run is the fixed set's or has no such partner in the runs folder."""
        partner = partner_name(run.name)
        if run.variant == FIXED_SET_VARIANT or partner is None or partner == run.name:
            return None, ""
        try:
            fixed = self.load(partner)
        except LabError:
            return None, ""
        if fixed is None or not fixed.records or not run.records:
            return None, ""
        return story_figure(run, fixed), pair_caption(pair_numbers(run, fixed))

    # ------------------------------------------------------------------------------------- runs and tasks
    def refresh_runs(self, run: Any, compare: Any, last_key: Any, force: bool = False):
        key = folder_fingerprint(self.root)
        if key == last_key and not force:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        summaries = discover_runs(self.root)
        names = [s.name for s in summaries]
        frame = views.runs_frame(summaries)
        run = run if run in names else (names[0] if names else None)
        compare = compare if compare in names and compare != run else NONE
        return (frame, gr.update(choices=names, value=run), gr.update(choices=[NONE] + names, value=compare), key)

    def render(self, run_name: Any, compare_name: Any, epoch: str, band: str, validity: str, reason: str,
               search: str, task: Any, state: Any, force: bool):
        key = self.key_of(run_name, compare_name)
        if not force and state is not None and state[0] == key:
            return (gr.skip(),) * 18
        a, b = self.load(run_name), self.load(compare_name if compare_name != run_name else None)
        if a is None:
            empty = figures.message_figure(f"No run in {self.root} yet: start one in the “Start a run” tab, or run "
                                         f"`genenv-lab run --preset tiny --out {self.root}/tiny`.")
            return (*HIDDEN_STORY, "_No run selected._", gr.update(visible=False), empty, empty, empty, None,
                    gr.update(),
                    gr.update(), gr.update(choices=[], value=None), *self.detail(None, None), "", (key, None, None))
        try:
            return self.draw(a, b, epoch, band, validity, reason, search, task, key)
        except Exception as exc:  # noqa: BLE001 - a run no view foresaw must not take the lab down
            oops = figures.message_figure(f"{a.name}: could not draw this run ({type(exc).__name__}: {exc}).")
            return (*HIDDEN_STORY, f"### {a.name}\n\n> ⚠ Could not draw this run: `{type(exc).__name__}: {exc}`",
                    gr.update(visible=False), oops, oops, oops, None, gr.update(), gr.update(),
                    gr.update(choices=[], value=None), *self.detail(None, None), a.events, (key, None, None))

    def draw(self, a: RunData, b: RunData | None, epoch: str, band: str, validity: str, reason: str, search: str,
             task: Any, key: tuple):
        choices = views.task_filter_choices(a)
        epoch = epoch if epoch in choices["epochs"] else "all"
        reason = reason if reason in choices["reasons"] else "all"
        table = views.tasks_frame(a, epoch=epoch, band=band, validity=validity, reason=reason, search=search)
        ids = list(table["task_id"])  # the tasks the table shows (at most views.TASK_ROWS)
        task = task if task in ids else None
        shown = [r for r in (a, b) if r is not None]
        story, story_caption = self.story_of(a)
        return (gr.update(value=story, visible=story is not None),
                gr.update(value=story_caption, visible=story is not None), views.run_card(a),
                gr.update(value=views.run_card(b), visible=True) if b is not None else gr.update(visible=False),
                glance_figure(shown), figures.difficulty_figure(shown), figures.curves_figure(shown), table,
                gr.update(choices=choices["epochs"], value=epoch),
                gr.update(choices=choices["reasons"], value=reason),
                gr.update(choices=ids, value=task), *self.detail(a, task), a.events, (key, a, b))

    def detail(self, run: RunData | None, task: Any):
        if run is not None and task:
            run = self.with_attempts(run)
        if run is None or not task:
            return (views.lineage_figure(run, "") if run else figures.message_figure("No run selected."),
                    pd.DataFrame(columns=views.LINEAGE_COLUMNS),
                    "_Pick a generated task (click a row of the table) to see the env context it came from._",
                    "", pd.DataFrame(columns=views.ATTEMPTS_COLUMNS))
        return (views.lineage_figure(run, task), views.lineage_frame(run, task),
                views.context_markdown(run, task), views.attempts_markdown(run, task),
                views.attempts_frame(run, task))

    def show_task(self, state: Any, task: Any):
        return self.detail(state[1] if state else None, task)

    @staticmethod
    def filter_tasks(state: Any, epoch: str, band: str, validity: str, reason: str, search: str):
        run = state[1] if state else None
        if run is None:
            return None
        return views.tasks_frame(run, epoch=epoch, band=band, validity=validity, reason=reason, search=search)

    # ---------------------------------------------------------------------------------------- comparisons
    def refresh_comparisons(self, current: Any, last_key: Any, force: bool = False):
        key = comparisons_fingerprint(self.root)
        if key == last_key and not force:
            return gr.skip(), gr.skip()
        names = [name for name, _ in comparison_dirs(self.root)]
        current = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=current), key

    def empty_cmp_tables(self):
        """The three comparison tables with their column names and no rows."""
        return (comparisons.comparison_summary_frame(self.no_cmp), comparisons.band_residence_frame(self.no_cmp),
                comparisons.comparison_runs_frame(self.no_cmp))

    def render_comparison(self, name: Any, state: Any, force: bool):
        key = self.cmp_key_of(name)
        if not force and state is not None and state[0] == key:
            return (gr.skip(),) * 6
        cmp = self.load_cmp(name)
        if cmp is None:
            empty = figures.message_figure(f"No comparison in {self.root} yet: run `genenv-lab compare --presets tiny "
                                         f"--variants genenv random_env static --out {self.root}/cmp1`.")
            return ("_No comparison selected._", empty, *self.empty_cmp_tables(), (key, None))
        try:
            return (comparisons.comparison_card(cmp), comparisons.comparison_figure(cmp),
                    comparisons.comparison_summary_frame(cmp), comparisons.band_residence_frame(cmp),
                    comparisons.comparison_runs_frame(cmp), (key, cmp))
        except Exception as exc:  # noqa: BLE001 - a comparison no view foresaw must not take the lab down
            oops = figures.message_figure(f"{cmp.name}: could not draw this comparison "
                                        f"({type(exc).__name__}: {exc}).")
            return (f"### {cmp.name}\n\n> ⚠ Could not draw this comparison: `{type(exc).__name__}: {exc}`",
                    oops, *self.empty_cmp_tables(), (key, None))

    # ------------------------------------------------------------------------------------- starting runs
    def start(self, preset: str, domain: str, name: str, mine: dict):
        try:
            run = launcher.start_run(self.root, preset, domain, name)
        except LabError as exc:
            return (mine, f"⚠ {exc}", launcher.launched_frame(mine), gr.skip(), gr.skip(), gr.skip())
        mine = dict(mine, **{run.name: run})
        names = [s.name for s in discover_runs(self.root)]
        return (mine, f"Started **{run.name}** (pid {run.pid}): `{run.shown_command}`",
                launcher.launched_frame(mine), gr.update(choices=list(mine), value=run.name),
                gr.update(choices=names, value=run.name), launcher.log_tail(run))

    @staticmethod
    def stop(name: Any, mine: dict):
        run = mine.get(name) if name else None
        if run is None:
            return "⚠ Pick a run this session started.", launcher.launched_frame(mine), gr.skip()
        code = launcher.stop_run(run)
        return f"Stopped **{run.name}** (exit code {code}).", launcher.launched_frame(mine), launcher.log_tail(run)

    @staticmethod
    def poll_started(name: Any, mine: dict):
        if not mine:
            return gr.skip(), gr.skip()
        run = mine.get(name)
        return launcher.launched_frame(mine), launcher.log_tail(run) if run else ""

    # ---------------------------------------------------------------------------------- API endpoints
    def list_runs(self) -> list[dict]:
        """Every run under the runs folder: name, status, preset, model, domain, epochs done / planned."""
        frame = views.runs_frame(discover_runs(self.root)).astype(object)
        return frame.where(frame.notna(), None).to_dict("records")

    def run_summary(self, name: str) -> str:
        """The Markdown card of run ``name`` (status, settings, last epoch, problems found)."""
        run = self.load(name)
        return views.run_card(run) if run is not None else "_No run selected._"

    def list_comparisons(self) -> list[str]:
        """The names of the comparison folders (``manifest.json``) under the runs folder."""
        return [name for name, _ in comparison_dirs(self.root)]


def pick_first_cell(evt: gr.SelectData):
    """The first cell (the name or id) of the table row the user clicked."""
    row = getattr(evt, "row_value", None)
    return gr.update(value=str(row[0])) if row else gr.skip()


def build_app(runs_root: str | Path = DEFAULT_RUNS, run: str | None = None) -> gr.Blocks:
    """The lab over the runs folder ``runs_root``: layout (one function per part of the page), then the wiring.

    The page's first render already shows a run: ``run`` when given (:class:`LabError` when the folder has no such
    run), else the newest one; a screenshot or a slow machine never starts on an empty page."""
    lab = Lab(Path(runs_root).expanduser().resolve())
    first = lab.first_view(run)
    with gr.Blocks(title="GenEnv lab", fill_width=True, analytics_enabled=False) as demo:
        ui = SimpleNamespace(
            loaded=gr.State(None),  # (key, RunData | None, RunData | None) of this user's current view
            runs_key=gr.State(None),  # fingerprint of the runs folder last listed for this user
            started=gr.State({}),  # name -> launcher.LaunchedRun: the processes this user started
            cmp_loaded=gr.State(None),  # (key, ComparisonData | None) of this user's comparison view
            cmps_key=gr.State(None),  # fingerprint of the comparison folders last listed for this user
        )
        header(ui, lab.root, first)
        with gr.Tabs():
            with gr.Tab("Curriculum"):
                ui.story = gr.Plot(first["story"], show_label=False, visible=first["story"] is not None)
                ui.story_md = gr.Markdown(first["story_caption"], visible=first["story"] is not None,
                                          elem_classes="story-caption")
                ui.glance = gr.Plot(first["glance"], show_label=False)
                ui.hist = gr.Plot(first["hist"], show_label=False)
                ui.curves = gr.Plot(first["curves"], show_label=False)
            with gr.Tab("Tasks & attempts"):
                tasks_tab(ui, lab.no_run)
            with gr.Tab("Events"):
                ui.events = gr.Code(label="events.log (last lines)", language=None, interactive=False,
                                    wrap_lines=True)
            with gr.Tab("Comparisons"):
                comparisons_tab(ui, lab.no_cmp)
            with gr.Tab("Start a run"):
                start_tab(ui)
        ui.timer = gr.Timer(REFRESH_S)
        wire_runs(demo, ui, lab)
        wire_comparisons(demo, ui, lab)
        wire_launcher(ui, lab)
        gr.api(lab.list_runs, api_name="list_runs")
        gr.api(lab.run_summary, api_name="run_summary")
        gr.api(lab.list_comparisons, api_name="list_comparisons")
    return demo


# ---------------------------------------------------------------------------------------------------- layout
def header(ui: SimpleNamespace, root: Path, first: dict[str, Any]) -> None:
    gr.Markdown(f"# GenEnv lab\nCo-evolution of an agent and an environment simulator (two LoRA adapters). "
                f"Runs folder: `{root}`", elem_classes="lab-header")
    # the runs table spans the page (at 1280 px beside the controls it was cut), the controls sit in one row above
    with gr.Row(equal_height=True):
        ui.run_dd = gr.Dropdown(label="Run", choices=first["names"], value=first["run"], interactive=True, scale=3)
        ui.compare_dd = gr.Dropdown(label="Compare with", choices=[NONE], value=NONE, interactive=True, scale=3)
        ui.live = gr.Checkbox(value=True, label=f"Live: refresh every {REFRESH_S:g} s", scale=1, min_width=200)
    ui.runs_table = Table(views.runs_frame(first["summaries"]), label="Runs (click one to show it)",
                          interactive=False, max_height=190, wrap=True)
    with gr.Row(equal_height=False):
        ui.card = gr.Markdown(first["card"], elem_classes="run-card")
        ui.card_b = gr.Markdown(visible=False, elem_classes="run-card")


def tasks_tab(ui: SimpleNamespace, no_run: RunData) -> None:
    with gr.Row():
        ui.f_epoch = gr.Dropdown(label="Epoch", choices=["all"], value="all", min_width=110)
        ui.f_band = gr.Radio(label="Band", choices=list(views.BAND_FILTERS), value="all")
        ui.f_valid = gr.Radio(label="Validity", choices=list(views.VALIDITY_FILTERS), value="all")
        ui.f_reason = gr.Dropdown(label="Reject reason", choices=["all"], value="all")
        ui.f_search = gr.Textbox(label="Search", placeholder="text in id, question, answer, output")
    ui.tasks_df = Table(views.tasks_frame(no_run), label=f"Generated tasks (click a row for its lineage and attempts; "
                                                         f"the newest {views.TASK_ROWS:,} that match)",
                        interactive=False, max_height=330, wrap=False)
    ui.task_dd = gr.Dropdown(label="Task", choices=[], value=None, interactive=True)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            ui.lineage_plot = gr.Plot(show_label=False)
        with gr.Column(scale=2):
            ui.context_md = gr.Markdown("_Pick a generated task._")
    ui.lineage_df = Table(views.lineage_frame(no_run, ""), label="Lineage: seed → … → task", interactive=False,
                          max_height=240, wrap=True,
                          column_widths=["5%", "11%", "5%", "5%", "5%", "5%", "6%", "6%", "52%"])
    with gr.Row(equal_height=False):
        with gr.Column(scale=2):
            ui.attempts_md = gr.Markdown()
        with gr.Column(scale=3):
            ui.attempts_df = Table(views.attempts_frame(no_run, ""), label="Agent completions (G per epoch attempted)",
                                   interactive=False, max_height=330, wrap=True)


def comparisons_tab(ui: SimpleNamespace, no_cmp: ComparisonData) -> None:
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=260):
            ui.cmp_dd = gr.Dropdown(label="Comparison", choices=[], value=None, interactive=True,
                                    info="folders with a manifest.json (genenv-lab compare --out runs/NAME)")
        with gr.Column(scale=4):
            ui.cmp_card = gr.Markdown("_No comparison selected._", elem_classes="run-card")
    ui.cmp_plot = gr.Plot(show_label=False)
    ui.cmp_summary = Table(comparisons.comparison_summary_frame(no_cmp),
                           label="Last epoch of each configuration (mean and std over seeds)", interactive=False,
                           wrap=False)
    with gr.Row(equal_height=False):
        with gr.Column(scale=1):
            ui.cmp_band = Table(comparisons.band_residence_frame(no_cmp),
                                label="Band residence: first epoch with p̂ in the band, and whether it stayed",
                                interactive=False, max_height=300)
        with gr.Column(scale=1):
            ui.cmp_runs = Table(comparisons.comparison_runs_frame(no_cmp), label="Runs of the comparison",
                                interactive=False, max_height=300)


def start_tab(ui: SimpleNamespace) -> None:
    gr.Markdown("Start a preset run as a separate process; it appears in the runs list and fills in live. Only the "
                "CPU presets can be started here. **Stop** interrupts it (the run marks itself interrupted; "
                "`genenv-lab run … --resume` continues it).")
    with gr.Row():
        ui.l_preset = gr.Dropdown(label="Preset", choices=list(launcher.LAUNCH_PRESETS),
                                  value=launcher.LAUNCH_PRESETS[0])
        ui.l_domain = gr.Dropdown(label="Domain", choices=launcher.domain_names(),
                                  value=launcher.preset_domain(launcher.LAUNCH_PRESETS[0]))
        ui.l_name = gr.Textbox(label="Run name (optional)", placeholder="<preset>-<domain>-<time>")
        ui.start_btn = gr.Button("Start", variant="primary")
    with gr.Row():
        ui.stop_dd = gr.Dropdown(label="My run to stop", choices=[], value=None)
        ui.stop_btn = gr.Button("Stop", variant="stop")
    ui.launch_msg = gr.Markdown()
    ui.started_df = Table(launcher.launched_frame({}), label="Runs started in this session", interactive=False)
    ui.launch_log = gr.Code(label="Output of the selected run (last lines)", language=None, wrap_lines=True,
                            interactive=False)


# ---------------------------------------------------------------------------------------------------- wiring
QUIET = dict(show_progress="hidden", api_visibility="private")
VIEW_SLOTS = 4
MAX_UPLOAD = "1mb"
"""The most Gradio's upload route takes (the lab itself uploads nothing)."""
"""Views of runs (and of comparisons) drawn at once, across every user of the lab: one slow view (a huge or
hostile run) holds one slot, the others go on (with one slot, every user's view waited behind it). The callbacks
only read the runs folder, so they may run side by side."""


def wire_runs(demo: gr.Blocks, ui: SimpleNamespace, lab: Lab) -> None:
    """The runs list, the run (and run to compare) shown, the task filters and the task detail."""
    view_inputs = [ui.run_dd, ui.compare_dd, ui.f_epoch, ui.f_band, ui.f_valid, ui.f_reason, ui.f_search, ui.task_dd,
                   ui.loaded]
    view_outputs = [ui.story, ui.story_md, ui.card, ui.card_b, ui.glance, ui.hist, ui.curves, ui.tasks_df, ui.f_epoch,
                    ui.f_reason, ui.task_dd,
                    ui.lineage_plot, ui.lineage_df, ui.context_md, ui.attempts_md, ui.attempts_df, ui.events,
                    ui.loaded]
    detail_outputs = [ui.lineage_plot, ui.lineage_df, ui.context_md, ui.attempts_md, ui.attempts_df]
    runs_outputs = [ui.runs_table, ui.run_dd, ui.compare_dd, ui.runs_key]
    one_view = dict(concurrency_id="view", concurrency_limit=VIEW_SLOTS, **QUIET)

    def forced(*args):
        return lab.render(*args, force=True)

    def polled(*args):
        return lab.render(*args, force=False)

    demo.load(lambda r, c: lab.refresh_runs(r, c, None, force=True), [ui.run_dd, ui.compare_dd], runs_outputs,
              **QUIET)
    for trigger in (ui.run_dd.change, ui.compare_dd.change):
        trigger(forced, view_inputs, view_outputs, **one_view)
    ui.timer.tick(lab.refresh_runs, [ui.run_dd, ui.compare_dd, ui.runs_key], runs_outputs, **QUIET)
    ui.timer.tick(polled, view_inputs, view_outputs, **one_view)
    ui.live.change(lambda on: gr.Timer(active=on), ui.live, ui.timer, **QUIET)
    ui.runs_table.select(pick_first_cell, None, ui.run_dd, **QUIET)
    filters = [ui.loaded, ui.f_epoch, ui.f_band, ui.f_valid, ui.f_reason, ui.f_search]
    for f in (ui.f_epoch, ui.f_band, ui.f_valid, ui.f_reason):
        f.input(lab.filter_tasks, filters, ui.tasks_df, **QUIET)
    ui.f_search.submit(lab.filter_tasks, filters, ui.tasks_df, **QUIET)
    ui.tasks_df.select(pick_first_cell, None, ui.task_dd, **QUIET)
    ui.task_dd.change(lab.show_task, [ui.loaded, ui.task_dd], detail_outputs, **QUIET)


def wire_comparisons(demo: gr.Blocks, ui: SimpleNamespace, lab: Lab) -> None:
    """The comparisons list and the comparison shown."""
    cmp_outputs = [ui.cmp_card, ui.cmp_plot, ui.cmp_summary, ui.cmp_band, ui.cmp_runs, ui.cmp_loaded]
    one_view = dict(concurrency_id="comparison", concurrency_limit=VIEW_SLOTS, **QUIET)
    demo.load(lambda c: lab.refresh_comparisons(c, None, force=True), ui.cmp_dd, [ui.cmp_dd, ui.cmps_key], **QUIET)
    ui.cmp_dd.change(lambda c, st: lab.render_comparison(c, st, True), [ui.cmp_dd, ui.cmp_loaded], cmp_outputs,
                     **one_view)
    ui.timer.tick(lab.refresh_comparisons, [ui.cmp_dd, ui.cmps_key], [ui.cmp_dd, ui.cmps_key], **QUIET)
    ui.timer.tick(lambda c, st: lab.render_comparison(c, st, False), [ui.cmp_dd, ui.cmp_loaded], cmp_outputs,
                  **one_view)


def wire_launcher(ui: SimpleNamespace, lab: Lab) -> None:
    """Starting and stopping runs from the "Start a run" tab."""
    mine = [ui.stop_dd, ui.started]
    ui.timer.tick(lab.poll_started, mine, [ui.started_df, ui.launch_log], **QUIET)
    ui.start_btn.click(lab.start, [ui.l_preset, ui.l_domain, ui.l_name, ui.started],
                       [ui.started, ui.launch_msg, ui.started_df, ui.stop_dd, ui.run_dd, ui.launch_log],
                       api_visibility="private")
    ui.stop_btn.click(lab.stop, mine, [ui.launch_msg, ui.started_df, ui.launch_log], api_visibility="private")
    ui.l_preset.change(launcher.preset_domain, ui.l_preset, ui.l_domain, **QUIET)  # the chosen preset's own domain
    ui.stop_dd.change(lab.poll_started, mine, [ui.started_df, ui.launch_log], **QUIET)


def launch(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int | None = 7860, share: bool = False,
           **kwargs: Any):
    """Launch ``demo`` with the lab's theme and CSS (Gradio 6 takes them at launch), refusing cross-site writes
    (:mod:`genenv_lab.lab.origin`: a page on another site could otherwise start runs through a visitor's browser)."""
    from starlette.middleware import Middleware

    guard = Middleware(SameOriginWrites, share=share, loopback_only=not exposed(host))
    app_kwargs = {"middleware": [guard], **kwargs.pop("app_kwargs", {})}
    # the lab has no upload component: Gradio's upload route still takes files, so bound it (round 4, failure 16)
    return demo.launch(server_name=host, server_port=port, share=share, theme=theme(), css=CSS,
                       ssr_mode=False, footer_links=["api"], max_file_size=MAX_UPLOAD, app_kwargs=app_kwargs,
                       **kwargs)


def exposed(host: str) -> bool:
    """Whether binding ``host`` lets other machines reach the lab (anything but a loopback address)."""
    import ipaddress

    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: whatever it resolves to, nothing says it is this machine only
        return True


def served_url(local_url: str, host: str) -> str:
    """The address to print: Gradio says ``localhost`` whatever was bound."""
    if host in ("0.0.0.0", "::"):
        return f"{local_url} (bound on every interface: {host})"
    return local_url.replace("localhost", host) if exposed(host) else local_url


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The GenEnv lab (Gradio).")
    parser.add_argument("--runs", default=str(DEFAULT_RUNS), help="folder of run directories (default: runs/)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine "
                                                            "only)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    parser.add_argument("--run", help="the run shown first (a folder name under --runs; default: the newest)")
    args = parser.parse_args(argv)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background (`&`, nohup), the lab ignores SIGINT and the runs it starts would inherit that,
        # so Stop could not interrupt them cleanly. A handled signal is reset to the default in a child at exec.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        app = build_app(args.runs, run=args.run)
    except LabError as exc:
        parser.error(str(exc))
    # gradio's own start-up lines say "set share=True in launch()", which a user of this script cannot do: quiet,
    # and the lab says where it is and how to share it in its own words.
    _, local_url, share_url = launch(app, host=args.host, port=args.port, share=args.share, quiet=True,
                                     prevent_thread_lock=True)
    print(f"GenEnv lab: {served_url(local_url, args.host)}  (runs folder: {args.runs}; Ctrl-C stops it)", flush=True)
    if exposed(args.host) or share_url:
        print(f"warning: the lab is reachable {'through the public link' if share_url else f'on {args.host}'}, "
              "with no login: anyone who reaches it can read every run under the runs folder and start or stop "
              "runs from its Start tab", flush=True)
    print(f"public link: {share_url}" if share_url else
          "public link: none (python app.py --share opens one through gradio.live)", flush=True)
    app.block_thread()


if __name__ == "__main__":
    main()
