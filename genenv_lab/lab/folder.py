"""What the lab reads over one runs folder, with no Gradio: :class:`RunsFolder` loads runs and comparisons by the names
the browser sends (a refused name becomes a run that shows why), fingerprints them so that a view is redrawn only when
its run changed on disk, composes the page's first view and a run's story, and answers the lab's API endpoints
(``/list_runs``, ``/run_summary``, ``/list_comparisons``). ``genenv_lab.lab.callbacks`` builds the Gradio callbacks
on it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from genenv_lab.lab import comparisons, figures, views
from genenv_lab.lab.comparisons import (ComparisonData, comparison_dirs, comparison_fingerprint, load_comparison,
                                        resolve_comparison)
from genenv_lab.lab.glance import glance_figure
from genenv_lab.lab.names import LabError, resolve_run, shown_name
from genenv_lab.lab.runs import RunData, discover_runs, is_comparison, load_run, with_attempts
from genenv_lab.lab.status import fingerprint
from genenv_lab.lab.story import FIXED_SET_VARIANT, fixed_set_partner, pair_caption, pair_numbers, story_figure

NONE = "(none)"
"""The choice of the "Compare with" list that compares with nothing."""


def unnamed(name: Any) -> bool:
    """Whether ``name`` picks no run (nothing chosen, or :data:`NONE`)."""
    return name in (None, "", NONE)


class RunsFolder:
    """The runs folder ``root`` as the lab reads it: runs and comparisons by name, their fingerprints, the first view
    and the API endpoints."""

    def __init__(self, root: Path):
        self.root = root
        # empty tables carry their own column names from the first render (never gradio's placeholder "1 2 3")
        self.no_run = RunData(name="", path=root, status="empty")
        self.no_cmp = ComparisonData(name="", path=root, status="empty")
        # a run's attempts are read when a task of it is picked, once per loaded run (a few kept, by identity)
        self.with_attempts = functools.lru_cache(maxsize=4)(with_attempts)

    def load(self, name: Any) -> RunData | None:
        """The run called ``name``, or None; a refused name becomes a run that shows why."""
        if unnamed(name):
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
        if unnamed(name):
            return None
        try:
            path = resolve_comparison(self.root, name)
        except LabError as exc:
            return ComparisonData(name=shown_name(name), path=self.root, status="missing", problems=(str(exc),))
        return load_comparison(path, str(name))

    def cmp_key_of(self, name: Any) -> tuple:
        """``name`` and the fingerprint of its comparison folder (None when it names none)."""
        try:
            return (name, comparison_fingerprint(resolve_comparison(self.root, name)) if not unnamed(name) else None)
        except LabError:
            return (name, None)

    def key_of(self, run: Any, compare: Any) -> tuple:
        """The two names shown and the fingerprint of each run folder: the view is redrawn when this changes."""
        parts: list[Any] = [run, compare]
        for name in (run, compare):
            try:
                parts.append(fingerprint(resolve_run(self.root, name)) if not unnamed(name) else None)
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
        paired = [s.name for s in summaries if fixed_set_partner(s, summaries) is not None]
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
        """The story figure of ``run`` beside its fixed set's run (the same world and seed by their configurations,
        arm ``static``: :func:`fixed_set_partner`) and its caption, or (None, "") when the run is the fixed set's or
        has no such partner in the runs folder."""
        if run.variant == FIXED_SET_VARIANT:
            return None, ""
        summaries = discover_runs(self.root)
        me = next((s for s in summaries if s.name == run.name), None)
        partner = fixed_set_partner(me, summaries) if me is not None else None
        if partner is None:
            return None, ""
        try:
            fixed = self.load(partner)
        except LabError:
            return None, ""
        if fixed is None or not fixed.records or not run.records:
            return None, ""
        return story_figure(run, fixed), pair_caption(pair_numbers(run, fixed))

    def empty_cmp_tables(self):
        """The three comparison tables with their column names and no rows."""
        return (comparisons.comparison_summary_frame(self.no_cmp), comparisons.band_residence_frame(self.no_cmp),
                comparisons.comparison_runs_frame(self.no_cmp))

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
