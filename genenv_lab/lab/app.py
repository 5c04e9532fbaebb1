"""The GenEnv lab: watch co-evolution runs, drill into generated tasks and agent attempts, start preset runs.

    genenv-lab lab [--runs DIR] [--host 127.0.0.1] [--port 7860] [--share]     # from any install, the wheel's too
    python app.py [--runs DIR] ...                                             # the repository's launcher

The layout lives in the package, so that an installed wheel serves it (``genenv_lab.lab.inline.show`` in a notebook,
``genenv-lab lab`` in a terminal); the repository's root ``app.py`` is a few-line launcher of :func:`main`. It reads
run directories (``docs/run_directory.md``) under ``--runs`` (default ``runs/`` in the working folder; the root
launcher's: ``runs/`` beside it) and nothing else. This module only lays out components and wires events: the
callbacks are ``genenv_lab.lab.callbacks.Lab`` (over ``genenv_lab.lab.folder.RunsFolder``, which reads the runs
folder without Gradio), everything they show comes from the pure view functions of ``genenv_lab.lab.views`` and the
figures of ``genenv_lab.lab.figures`` (tested without Gradio), runs are read by ``genenv_lab.lab.runs`` and started
by ``genenv_lab.lab.launcher``, and ``genenv_lab.lab.serving`` launches the page.

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
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr

from genenv_lab.lab import comparisons, launcher, views
from genenv_lab.lab.callbacks import Lab, pick_first_cell
from genenv_lab.lab.comparisons import ComparisonData
from genenv_lab.lab.folder import NONE
from genenv_lab.lab.names import LabError, lab_arguments
from genenv_lab.lab.runs import RunData
from genenv_lab.lab.serving import exposed, launch, served_url
from genenv_lab.lab.widgets import Table

__all__ = ["Lab", "build_app", "exposed", "launch", "main", "serve", "served_url"]

DEFAULT_RUNS = Path("runs")
REFRESH_S = 2.0


def build_app(runs_root: str | Path = DEFAULT_RUNS, run: str | None = None, *, compact: bool = False) -> gr.Blocks:
    """The lab over the runs folder ``runs_root``: layout (one function per part of the page), then the wiring.

    The page's first render already shows a run: ``run`` when given (:class:`LabError` when the folder has no such
    run), else the newest one; a screenshot or a slow machine never starts on an empty page. ``compact`` (the
    inline lab, in a notebook's 980 × 900 px frame): a one-line title and the runs table folded away, so that the
    run's figures start above the frame's fold."""
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
        header(ui, lab.root, first, compact=compact)
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
def header(ui: SimpleNamespace, root: Path, first: dict[str, Any], compact: bool = False) -> None:
    if compact:
        gr.Markdown(f"**GenEnv lab** · runs folder `{root}`", elem_classes="lab-header")
    else:
        gr.Markdown(f"# GenEnv lab\nCo-evolution of an agent and an environment simulator (two LoRA adapters). "
                    f"Runs folder: `{root}`", elem_classes="lab-header")
    # the runs table spans the page (at 1280 px beside the controls it was cut), the controls sit in one row above
    with gr.Row(equal_height=True):
        ui.run_dd = gr.Dropdown(label="Run", choices=first["names"], value=first["run"], interactive=True, scale=3)
        ui.compare_dd = gr.Dropdown(label="Compare with", choices=[NONE], value=NONE, interactive=True, scale=3)
        ui.live = gr.Checkbox(value=True, label=f"Live: refresh every {REFRESH_S:g} s", scale=1, min_width=200)
    with gr.Accordion("Runs", open=not compact):
        ui.runs_table = Table(views.runs_frame(first["summaries"]), label="Runs (click one to show it)",
                              interactive=False, max_height=190, wrap=True, elem_classes="runs-table",
                              column_widths=views.RUNS_COLUMN_WIDTHS)
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


def main(argv: list[str] | None = None, default_runs: str | Path = DEFAULT_RUNS, prog: str | None = None) -> None:
    """Serve the lab until Ctrl-C (``argv``: the command line; ``default_runs``: ``--runs`` when not given)."""
    parser = argparse.ArgumentParser(prog=prog, description="The GenEnv lab (Gradio).")
    lab_arguments(parser, default_runs)
    serve(parser.parse_args(argv), parser)


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Serve the lab with the options of :func:`genenv_lab.lab.names.lab_arguments` until Ctrl-C."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background (`&`, nohup), the lab ignores SIGINT and the runs it starts would inherit that,
        # so Stop could not interrupt them cleanly. A handled signal is reset to the default in a child at exec.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        app = build_app(args.runs, run=args.run, compact=args.compact)
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
          "public link: none (--share opens one through gradio.live)", flush=True)
    app.block_thread()


if __name__ == "__main__":
    main()
