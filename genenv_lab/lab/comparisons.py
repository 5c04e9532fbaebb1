"""Comparison folders in the lab (``genenv-lab compare --out``, recognised by their ``manifest.json``): a lenient
reader, :func:`load_comparison` (a comparison still running, with runs missing or half-written, shows what
exists), and its views, :class:`ComparisonData` in: a card, the state of each expected run,
:func:`genenv_lab.compare.report_figure` (held-out score against cumulative agent rollouts and the rollouts genenv
needs to reach each baseline), the last epoch's summary and the band residence. As for runs, nothing here raises for
what a folder holds: a bad part is a sentence in :attr:`ComparisonData.problems`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from genenv_lab.rundir.layout import STATE
from genenv_lab.rundir.read import read_json_object
from genenv_lab.lab.figures import FONT, message_figure
from genenv_lab.lab.runs import (ATTEMPT_COLUMNS, MANIFEST, MANIFEST_LIMIT, folders_under, lenient_baseline, read_frame,
    read_records, folder_of, is_comparison, summarize)
from genenv_lab.lab.names import LabError, resolve_run
from genenv_lab.lab.status import last_committed, fingerprint
from genenv_lab.lab.safety import unsafe_files
from genenv_lab.lab.views import STATUS_BADGE

# ------------------------------------------------------------------------------------------------------ reading

COMPARISON_STATUSES = ("running", "finished", "incomplete", "unreadable", "missing")
"""``running``: one of its runs is being written. ``finished``: every run of the manifest finished all its epochs.
``incomplete``: runs are missing or stopped and none is running (not started yet, killed, or deleted).
``unreadable``: ``manifest.json`` is corrupt. ``missing``: the folder is gone."""


COMPARISON_RUNS = 2_000
"""The most runs (labels × seeds) the lab reads for one comparison; a manifest naming more is cut, and says so."""


def _resolved(path: Path) -> Path | None:
    """``path`` with every symlink resolved, ``None`` where that cannot be done (a symlink loop)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def comparison_dirs(runs_root: str | Path) -> list[tuple[str, Path]]:
    """``(name, resolved path)`` of the comparison folders directly under ``runs_root`` (same name and symlink
    rules as :func:`run_dirs`)."""
    return folders_under(runs_root, comparisons=True)


def resolve_comparison(runs_root: str | Path, name: Any) -> Path:
    """The folder of comparison ``name`` under ``runs_root`` (:func:`resolve_run`'s checks), or :class:`LabError`
    when the name is refused or the folder holds no ``manifest.json``."""
    path = resolve_run(runs_root, name)
    if path.is_dir() and not is_comparison(path):
        raise LabError(f"{name!r} is not a comparison folder (no {MANIFEST}); make one with `genenv-lab compare "
                       f"--out {path}`")
    return path


def comparisons_fingerprint(runs_root: str | Path) -> tuple:
    """Changes whenever a comparison folder is added or removed under ``runs_root`` (or its manifest rewritten)."""
    parts = []
    for name, path in comparison_dirs(runs_root):
        try:
            st = (path / MANIFEST).stat()
            parts.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            parts.append((name, None, None))
    return tuple(parts)


def comparison_fingerprint(path: str | Path) -> tuple:
    """Changes whenever the comparison ``path`` changes: its manifest, a run directory appearing, going or being
    written (:func:`fingerprint` of each)."""
    path = Path(path)
    try:
        st = (path / MANIFEST).stat()
        parts: list[Any] = [(st.st_mtime_ns, st.st_size)]
    except OSError:
        parts = [None]
    try:
        dirs = sorted(p for p in (path / "runs").iterdir() if p.is_dir())
    except OSError:
        dirs = []
    parts += [(d.name, fingerprint(d)) for d in dirs]
    return tuple(parts)


@dataclass(frozen=True)
class ComparisonRun:
    """One (label, seed) run that the manifest of a comparison expects."""

    label: str
    seed: int
    name: str
    """The run directory's name under the comparison's ``runs/``."""
    status: str
    epochs_done: int = 0
    epochs_planned: int | None = None
    problem: str = ""


@dataclass(frozen=True, eq=False)
class ComparisonData:
    """A comparison folder as the lab shows it, read once: what the manifest asks for, the state of each run, and
    the table of :func:`genenv_lab.compare.collect` built from the runs (and committed epochs) that exist so far."""

    name: str
    path: Path
    status: str
    labels: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    runs: tuple[ComparisonRun, ...] = ()
    table: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(_compare_columns())))
    bands: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Label → (α, k_min) of its curriculum config."""
    problems: tuple[str, ...] = ()

    @property
    def missing(self) -> tuple[ComparisonRun, ...]:
        """Runs of the manifest whose directory does not exist (not started yet, or deleted)."""
        return tuple(r for r in self.runs if r.status == "missing")


def _compare_columns() -> tuple[str, ...]:
    from genenv_lab.compare import COLUMNS

    return COLUMNS


def _band_of(config: dict[str, Any]) -> tuple[float, float]:
    from genenv_lab.config import CurriculumConfig

    section = config.get("curriculum") if isinstance(config.get("curriculum"), dict) else {}
    out = []
    for key in ("alpha", "k_min"):
        value = section.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        out.append(float(value) if ok else float(getattr(CurriculumConfig(), key)))
    return out[0], out[1]


def _comparison_rows(run_dir: Path, label: str, variant: str, seed: int, problems: list[str]) -> list[dict]:
    """The rows :func:`genenv_lab.compare.collect` makes for one run, read leniently: committed epochs only, a
    corrupt file becomes a sentence in ``problems``."""
    from genenv_lab.compare import attempt_rollouts_by_epoch, table_rows, tasks_consumed_by_epoch

    own: list[str] = []
    unsafe = unsafe_files(run_dir)
    if unsafe:
        problems.extend(f"{run_dir.name}: {p}" for p in unsafe)
        return []
    records = read_records(run_dir, own)
    state = read_json_object(run_dir / STATE, own)
    last = last_committed(state)
    if last is not None:
        records = [r for r in records if r["epoch"] <= last]
    attempts = read_frame(run_dir, "attempts", ATTEMPT_COLUMNS, own, last=last)
    try:
        consumed, rollouts = tasks_consumed_by_epoch(attempts), attempt_rollouts_by_epoch(attempts)
    except Exception as exc:  # noqa: BLE001 - a table with odd values only loses these columns
        own.append(f"tasks consumed unknown ({type(exc).__name__}: {exc}).")
        consumed, rollouts = {}, {}
    baseline = lenient_baseline(run_dir, own)
    problems.extend(f"{run_dir.name}: {p}" for p in own)
    return table_rows(label, variant, seed, records, consumed, baseline, rollouts)


def load_comparison(path: str | Path, name: str | None = None) -> ComparisonData:
    """Read comparison folder ``path`` for the lab; never raises for its contents.

    Unlike :func:`genenv_lab.compare.collect` it renders a half-finished comparison: runs of the manifest that do
    not exist yet are listed in :attr:`ComparisonData.missing`, a run in progress contributes its committed epochs,
    and a corrupt manifest or run file becomes a sentence in ``problems``.
    """
    from genenv_lab.compare import COLUMNS, METRICS, run_dir_for

    path, name, gone = folder_of(ComparisonData, path, name)
    if gone is not None:
        return gone
    problems: list[str] = []
    unsafe = unsafe_files(path, {MANIFEST: MANIFEST_LIMIT})
    if unsafe:
        return ComparisonData(name=name, path=path, status="unreadable", problems=tuple(unsafe))
    manifest = read_json_object(path / MANIFEST, problems, MANIFEST_LIMIT)
    if not (path / MANIFEST).is_file():
        problems.append(f"No {MANIFEST}: not a comparison folder.")
    entries, seeds = manifest.get("entries"), manifest.get("seeds")
    if manifest and (not isinstance(entries, list) or not isinstance(seeds, list)):
        problems.append(f"{MANIFEST} lacks its 'entries' or 'seeds' list.")
    if not manifest or not isinstance(entries, list) or not isinstance(seeds, list):
        return ComparisonData(name=name, path=path, status="unreadable", problems=tuple(problems))
    good_seeds = [s for s in seeds if isinstance(s, int) and not isinstance(s, bool)]
    if len(good_seeds) != len(seeds):
        problems.append(f"{len(seeds) - len(good_seeds)} seed(s) of {MANIFEST} are not integers; skipped.")
    labelled: list[tuple[str, dict[str, Any]]] = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("label"), str) and entry["label"]:
            config = entry.get("config")
            labelled.append((entry["label"], config if isinstance(config, dict) else {}))
        else:
            problems.append(f"an entry of {MANIFEST} has no label; skipped.")
    if len(labelled) * len(good_seeds) > COMPARISON_RUNS:  # a manifest naming 480,000 runs cost 25 s a page load
        named = len(labelled) * len(good_seeds)
        labelled = labelled[:max(1, COMPARISON_RUNS // max(len(good_seeds), 1))]
        good_seeds = good_seeds[:max(1, COMPARISON_RUNS // len(labelled))]
        problems.append(f"{MANIFEST} names {named:,} runs, more than the {COMPARISON_RUNS:,} the lab reads for one "
                        f"comparison; shown: {len(labelled)} label(s) × {len(good_seeds)} seed(s).")
    runs_folder = _resolved(path / "runs")
    runs, rows, bands = [], [], {}
    for label, config in labelled:
        bands[label] = _band_of(config)
        loop = config.get("loop") if isinstance(config.get("loop"), dict) else {}
        variant = str(loop.get("variant", "?"))
        for seed in good_seeds:
            run_dir = run_dir_for(path, label, seed)
            resolved = _resolved(run_dir)
            if resolved is None or resolved.parent != runs_folder:  # a symlinked run must stay inside the folder
                runs.append(ComparisonRun(label, seed, run_dir.name, "missing", problem="leads outside the "
                                          "comparison folder (or into a symlink loop); refused"))
                continue
            summary = summarize(run_dir, run_dir.name)
            planned = summary.epochs_planned
            if planned is None and isinstance(loop.get("epochs"), int) and not isinstance(loop["epochs"], bool):
                planned = loop["epochs"]
            note = "not started yet, or deleted" if summary.status == "missing" else summary.problem
            runs.append(ComparisonRun(label, seed, run_dir.name, summary.status, summary.epochs_done, planned, note))
            if summary.status != "missing":
                rows += _comparison_rows(run_dir, label, variant, seed, problems)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for metric in METRICS:
        table[metric] = pd.to_numeric(table[metric], errors="coerce").astype(float)
    statuses = [r.status for r in runs]
    if any(s == "running" for s in statuses):
        status = "running"
    elif runs and all(r.status == "finished" and (r.epochs_planned is None or r.epochs_done >= r.epochs_planned)
                      for r in runs):
        status = "finished"
    else:
        status = "incomplete"
    return ComparisonData(name=name, path=path, status=status, labels=tuple(label for label, _ in labelled),
                          seeds=tuple(good_seeds), runs=tuple(runs), table=table, bands=bands,
                          problems=tuple(problems))


# ------------------------------------------------------------------------------------------------------- views

COMPARISON_BADGE = {"running": "● running", "finished": "✔ finished", "incomplete": "‖ incomplete",
                    "unreadable": "⚠ unreadable", "missing": "? missing"}
COMPARISON_RUNS_COLUMNS = ["label", "seed", "run", "status", "epochs", "note"]
RESIDENCE_COLUMNS = ["label", "seed", "band", "epochs", "entered at epoch", "stayed", "epochs in band"]


def _inline(text: Any) -> str:
    """``text`` as inline Markdown code (a backtick in it cannot end the span)."""
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def comparison_card(cmp: ComparisonData) -> str:
    """Markdown header of a comparison: status, what it compares, how many of its runs exist, which are missing."""
    lines = [f"### {cmp.name} · {COMPARISON_BADGE.get(cmp.status, cmp.status)}"]
    if cmp.labels:
        counts: dict[str, int] = {}
        for r in cmp.runs:
            counts[r.status] = counts.get(r.status, 0) + 1
        done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        lines.append(f"{len(cmp.labels)} configuration(s) × {len(cmp.seeds)} seed(s) = **{len(cmp.runs)} runs**: "
                     f"{done or 'none yet'} · {len(cmp.table)} epoch row(s) so far")
        lines.append("compares " + ", ".join(_inline(label) for label in cmp.labels) + " · seeds "
                     + ", ".join(str(s) for s in cmp.seeds))
        bands = sorted(set(cmp.bands.values()))
        if bands:
            lines.append(" · ".join(f"α = {a:g}, band ±{k:g}" for a, k in bands))
    if cmp.missing:
        names = ", ".join(f"{_inline(r.label)} seed {r.seed} ({_inline('runs/' + r.name)})" for r in cmp.missing)
        why = "not started yet" if cmp.status == "running" else "not started yet, stopped before it began, or deleted"
        lines.append(f"> {len(cmp.missing)} run(s) missing ({why}): {names}. The figures show the others.")
    for problem in cmp.problems:
        lines.append(f"> ⚠ {problem}")
    return "\n\n".join(lines)


def comparison_runs_frame(cmp: ComparisonData) -> pd.DataFrame:
    """The runs a comparison's manifest expects, one row each: label, seed, run directory, status, epochs."""
    rows = [{"label": r.label, "seed": r.seed, "run": r.name, "status": STATUS_BADGE.get(r.status, r.status),
             "epochs": f"{r.epochs_done} / {'?' if r.epochs_planned is None else r.epochs_planned}",
             "note": r.problem}
            for r in cmp.runs]
    return pd.DataFrame(rows, columns=COMPARISON_RUNS_COLUMNS)


def _first_band(cmp: ComparisonData) -> tuple[float, float]:
    from genenv_lab.config import CurriculumConfig

    default = (CurriculumConfig().alpha, CurriculumConfig().k_min)
    return next((cmp.bands[label] for label in cmp.labels if label in cmp.bands), default)


def comparison_figure(cmp: ComparisonData, *, height: int = 1700) -> go.Figure:
    """:func:`genenv_lab.compare.report_figure` of the runs that exist so far (held-out score, training tasks
    consumed, data efficiency, p̂ on the simulator's and on the untrained simulator's tasks, valid fraction,
    held-out score against cumulative agent rollouts and completion tokens, the share of GRPO steps without an
    informative group, the mean level of the simulator's tasks; mean ± std over seeds; the table of the rollouts
    genenv needs to reach each baseline's final held-out score and the data-efficiency table paired by seed), or a
    figure that says why there is nothing to draw."""
    from genenv_lab.compare import REPORT_PANELS, report_figure

    if not len(cmp.table):
        if cmp.status in ("unreadable", "missing"):
            why = cmp.problems[0] if cmp.problems else f"the comparison is {cmp.status}"
        elif cmp.runs:
            why = (f"None of its {len(cmp.runs)} runs has committed an epoch yet "
                   f"({len(cmp.missing)} not started).")
        else:
            why = "Its manifest lists no run."
        return message_figure(f"{cmp.name}: nothing to compare yet.\n{why}", height=height)
    alpha, k_min = _first_band(cmp)
    fig = report_figure(cmp.table, alpha=alpha, k_min=k_min)
    runs_seen = cmp.table.groupby(["label", "seed"]).ngroups
    title = f"{html.escape(cmp.name)} · GenEnv and baselines (mean ± std over seeds)"
    if runs_seen < len(cmp.runs):
        title += f" · {runs_seen} of {len(cmp.runs)} runs so far"
    if len(set(cmp.bands.values())) > 1:
        title += f" · band shaded for α = {alpha:g} ± {k_min:g}"
    fig.update_layout(font=FONT, height=height, title=dict(text=title, x=0.01, xanchor="left", font=dict(size=16)),
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.06, yanchor="bottom"),
                      margin=dict(l=60, r=30, t=110, b=50))
    for _, x, _, row, col in REPORT_PANELS:
        if x == "epoch":
            fig.update_xaxes(dtick=1, tick0=0, row=row, col=col)
    fig.update_annotations(font_size=12)
    return fig


def comparison_summary_frame(cmp: ComparisonData) -> pd.DataFrame:
    """The last epoch of each configuration: mean and std over seeds of every compared metric (``seeds``: how many
    runs reached that epoch)."""
    from genenv_lab.compare import METRICS, summarise

    columns = ["label", "epoch", "seeds"] + [f"{m}_{s}" for m in METRICS for s in ("mean", "std")]
    if not len(cmp.table):
        return pd.DataFrame(columns=columns)
    summary = summarise(cmp.table)
    last = summary.loc[summary.groupby("label")["epoch"].idxmax()]
    seeds = cmp.table.groupby(["label", "epoch"]).size().rename("seeds").reset_index()
    last = last.merge(seeds, on=["label", "epoch"], how="left")
    order = {label: i for i, label in enumerate(cmp.labels)}
    last = last.sort_values("label", key=lambda s: s.map(lambda v: order.get(v, len(order)))).reset_index(drop=True)
    return last[columns].round(3)


def band_residence_frame(cmp: ComparisonData) -> pd.DataFrame:
    """Per configuration and seed: the first epoch whose p̂ on generated tasks enters the configuration's own band
    [α − k_min, α + k_min], and whether it stayed there (:func:`genenv_lab.compare.band_residence`)."""
    from genenv_lab.compare import band_residence

    if not len(cmp.table):
        return pd.DataFrame(columns=RESIDENCE_COLUMNS)
    alpha0, k0 = _first_band(cmp)
    out = band_residence(cmp.table, alpha=alpha0, k_min=k0, bands=cmp.bands)
    if not len(out):
        return pd.DataFrame(columns=RESIDENCE_COLUMNS)
    out["band"] = [f"{max(0.0, a - k):.2f} – {min(1.0, a + k):.2f}" for a, k in zip(out["alpha"], out["k_min"])]
    out["entered at epoch"] = out["entered_at_epoch"].map(lambda e: "never" if e is None or e != e else str(int(e)))
    out["epochs in band"] = out["epochs_in_band"]
    order = {label: i for i, label in enumerate(cmp.labels)}
    out = out.sort_values(["label", "seed"], key=lambda s: s.map(lambda v: order.get(v, len(order)))
                          if s.name == "label" else s)
    return out[RESIDENCE_COLUMNS].reset_index(drop=True)
