"""The lab's Gradio callbacks (needs the ``app`` extra): :class:`Lab` is a :class:`~genenv_lab.lab.folder.RunsFolder`
whose methods ``app.py`` wires to its components, each returning the values of the components it updates, in the
order ``app.py`` lists them (``gr.skip()`` where nothing changed, so a poll of an unchanged run redraws nothing)."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from genenv_lab.lab import comparisons, figures, launcher, views
from genenv_lab.lab.comparisons import comparison_dirs, comparisons_fingerprint
from genenv_lab.lab.folder import NONE, RunsFolder
from genenv_lab.lab.glance import glance_figure
from genenv_lab.lab.names import LabError
from genenv_lab.lab.runs import RunData, discover_runs, folder_fingerprint

HIDDEN_STORY = (gr.update(visible=False), gr.update(visible=False))
"""The story figure and its caption, hidden (no run, or a run that could not be drawn)."""
VIEW_OUTPUTS = 18
"""The components a view of a run updates (``app.py``'s ``view_outputs``)."""


def pick_first_cell(evt: gr.SelectData):
    """The first cell (the name or id) of the table row the user clicked."""
    row = getattr(evt, "row_value", None)
    return gr.update(value=str(row[0])) if row else gr.skip()


class Lab(RunsFolder):
    """The callbacks of the lab over one runs folder (see the module docstring)."""

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
            return (gr.skip(),) * VIEW_OUTPUTS
        a, b = self.load(run_name), self.load(compare_name if compare_name != run_name else None)
        if a is None:
            empty = figures.message_figure(f"No run in {self.root} yet: start one in the “Start a run” tab, or run "
                                           f"`genenv-lab run --preset tiny --out {self.root}/tiny`.")
            return (*HIDDEN_STORY, "_No run selected._", gr.update(visible=False), empty, empty, empty, None,
                    gr.update(), gr.update(), gr.update(choices=[], value=None), *self.detail(None, None), "",
                    (key, None, None))
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
