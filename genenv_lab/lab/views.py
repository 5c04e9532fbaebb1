"""Pure view functions of the lab: a :class:`~genenv_lab.lab.runs.RunData` in, a DataFrame, Markdown or a plotly
figure out: the runs list and a run's card, the generated tasks with their filters, a task's lineage and context,
its attempts. No Gradio, no file access, no state: ``app.py`` lays these out and wires them to events, and the tests
call them directly.

A view never raises for a run that lacks what it shows (no epoch yet, a corrupt table): it returns an empty table
or :func:`message_figure`, a blank figure carrying a sentence that says why.

Figures follow the paper's notation: p̂ is the agent's empirical success rate on a task over G rollouts, α the
target success rate, and the band |p̂ − α| ≤ k_min the filter that selects the env update's training tasks
(``docs/run_directory.md``).

The run's figures (difficulty histogram, epoch curves) are in :mod:`genenv_lab.lab.figures`, the curriculum at a
glance in :mod:`genenv_lab.lab.glance`; comparisons (``genenv-lab compare``) have their own reader and views in
:mod:`genenv_lab.lab.comparisons`.
"""

from __future__ import annotations

import html
import json
import re
import time
from typing import Any, Iterable

import pandas as pd
import plotly.graph_objects as go

from genenv_lab.rundir.write import fmt_num
from genenv_lab.lab.figures import message_figure, number, style, valid_mask
from genenv_lab.lab.runs import RunData, RunSummary
from genenv_lab.core.metrics import RWR_KL

STATUS_BADGE = {"running": "● running", "finished": "✔ finished", "killed": "✖ killed",
                "interrupted": "‖ interrupted", "failed": "✖ failed", "starting": "… starting",
                "empty": "○ empty",
                "unreadable": "⚠ unreadable", "missing": "? missing"}
"""Status as shown (symbols that common fonts, DejaVu included, have; no emoji font needed)."""


# ------------------------------------------------------------------------------------------------------- helpers


def _fence(text: str, lang: str = "text") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _short(text: Any, limit: int = 90) -> str:
    text = "" if text is None else str(text).replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------------- runs

RUNS_COLUMN_WIDTHS = ["17%", "11%", "8%", "7%", "8%", "8%", "7%", "6%", "9%", "10%", "9%"]
"""The runs table's column widths, in its columns' order: at a notebook's 980 px every header fits on one line."""


def runs_frame(summaries: Iterable[RunSummary]) -> pd.DataFrame:
    """The runs list: one row per run directory (short headers and times, so that the table fits a notebook's
    980 px frame without wrapping a header)."""
    rows = []
    for s in summaries:
        planned = "?" if s.epochs_planned is None else str(s.epochs_planned)
        rows.append({
            "run": s.name, "status": STATUS_BADGE.get(s.status, s.status), "preset": s.preset, "model": s.model,
            "domain": s.domain, "epochs": f"{s.epochs_done} / {planned}", "procs": s.processes,
            "p̂": fmt_num(s.p_hat_mean, 2), "in band": fmt_num(s.in_band_frac, 2),
            "updated": time.strftime("%m-%d %H:%M", time.localtime(s.updated_at)) if s.updated_at else "",
            "note": s.problem,
        })
    frame = pd.DataFrame(rows, columns=["run", "status", "preset", "model", "domain", "epochs", "procs",
                                        "p̂", "in band", "updated", "note"])
    return frame


def run_card(run: RunData) -> str:
    """Markdown header of one run: status, what it is, its curriculum settings, and any problem found."""
    planned = "?" if run.epochs_planned is None else run.epochs_planned
    esc = lambda value: html.escape(str(value))  # noqa: E731 - names and config strings come from run folders
    parts = [f"preset **{esc(run.preset)}**", f"model **{esc(run.model)}**", f"domain **{esc(run.domain)}**",
             f"variant {esc(run.variant)}", f"epochs **{esc(run.epochs_done)} / {esc(planned)}**",
             f"{run.processes} process{'es' if run.processes > 1 else ''}"]
    if run.alpha is not None:
        parts.append(f"α = {run.alpha:g}")
    if run.k_min is not None:
        parts.append(f"k_min = {run.k_min:g}")
    if run.num_generations is not None:
        parts.append(f"G = {run.num_generations}")
    if isinstance(run.state.get("env_version"), int):
        parts.append(f"env updates {run.state['env_version']}")
    lines = [f"### {esc(run.name)} · {STATUS_BADGE.get(run.status, esc(run.status))}", " · ".join(parts)]
    if run.records:
        last = run.records[-1]
        env_kl = last.get(RWR_KL)
        lines.append(f"last epoch {last.epoch}: valid {last.n_valid}/{last.n_generated}, "
                     f"p̂ mean {fmt_num(last.p_hat_mean)}, in band {fmt_num(last.in_band_frac)}, "
                     f"agent reward {fmt_num(last.agent_reward_mean)}, env KL {fmt_num(env_kl, 4)}, "
                     f"{fmt_num(last.wall_s, 1)} s")
    if run.sampled:
        lines.append(f"> ℹ {esc(run.sampled)}")
    for problem in run.problems:
        lines.append(f"> ⚠ {esc(problem)}")
    return "\n\n".join(lines)


# ------------------------------------------------------------------------------------------ difficulty histogram


# ------------------------------------------------------------------------------------------------ epoch curves


# --------------------------------------------------------------------------------------------- generated tasks

BAND_FILTERS = ("all", "in band", "out of band")
VALIDITY_FILTERS = ("all", "valid", "rejected")


def task_filter_choices(run: RunData) -> dict[str, list]:
    """Choices of the tasks table's filters: ``epochs`` (``all`` then each epoch) and ``reasons`` (``all`` then
    each reject reason seen)."""
    tasks = run.tasks
    epochs = sorted(int(e) for e in pd.to_numeric(tasks["epoch"], errors="coerce").dropna().unique())
    reasons = sorted({str(r) for r in tasks["reject_reason"].dropna() if str(r)})
    return {"epochs": ["all"] + [str(e) for e in epochs], "reasons": ["all"] + reasons}


def _features_columns(features: pd.Series) -> pd.DataFrame:
    def flat(f: Any) -> dict[str, Any]:
        if isinstance(f, str):
            try:
                f = json.loads(f)
            except json.JSONDecodeError:
                return {}
        if not isinstance(f, dict):
            return {}
        return {f"f.{k}": (", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in f.items()}

    return pd.DataFrame([flat(f) for f in features], index=features.index)


TASK_ROWS = 2000
"""The most rows of the generated-tasks table sent to a browser (the newest that match the filters): a long run
holds hundreds of thousands, which no one scrolls and which took minutes to serialise; the filters reach the rest."""


def tasks_frame(run: RunData, *, epoch: str | int = "all", band: str = "all", validity: str = "all",
                reason: str = "all", search: str = "", limit: int | None = TASK_ROWS) -> pd.DataFrame:
    """The generated tasks, filtered: by ``epoch``, ``band`` (:data:`BAND_FILTERS`), ``validity``
    (:data:`VALIDITY_FILTERS`), reject ``reason`` and a case-insensitive ``search`` in the task's id, question,
    answer and raw output; the newest ``limit`` rows that match (None: all). Difficulty features are columns
    ``f.<name>``."""
    tasks = run.tasks
    cols = ["task_id", "epoch", "question", "answer", "p̂", "in_band", "R_env", "valid", "reject_reason", "weight",
            "env_v", "parent_id"]  # what a reader scans first comes first: readable at 1280 px
    if not len(tasks):
        return pd.DataFrame(columns=cols)
    keep = pd.Series(True, index=tasks.index)
    if str(epoch) != "all":
        keep &= pd.to_numeric(tasks["epoch"], errors="coerce") == int(epoch)
    valid = valid_mask(tasks)
    if validity == "valid":
        keep &= valid
    elif validity == "rejected":
        keep &= ~valid
    in_band = tasks["in_band"].map(lambda v: bool(v) if v is not None and v == v else False)
    if band == "in band":
        keep &= in_band
    elif band == "out of band":
        keep &= valid & ~in_band
    if reason and reason != "all":
        keep &= tasks["reject_reason"].astype(str) == reason
    if search and search.strip():
        needle = search.strip().lower()
        hay = (tasks["task_id"].astype(str) + "\n" + tasks["question"].astype(str) + "\n"
               + tasks["answer"].astype(str) + "\n" + tasks["raw"].astype(str)).str.lower()
        keep &= hay.str.contains(needle, regex=False)
    sub = tasks[keep]
    if limit is not None:
        sub = sub.tail(limit)
    out = pd.DataFrame({
        "task_id": sub["task_id"].astype(str), "epoch": sub["epoch"], "question": sub["question"].map(_short),
        "answer": sub["answer"], "p̂": pd.to_numeric(sub["p_hat"], errors="coerce").round(3),
        "in_band": in_band[sub.index], "R_env": pd.to_numeric(sub["env_reward"], errors="coerce").round(3),
        "valid": valid[sub.index], "reject_reason": sub["reject_reason"],
        "weight": pd.to_numeric(sub["weight"], errors="coerce").round(3), "env_v": sub["env_version"],
        "parent_id": sub["parent_id"].astype(str),
    })[cols]
    feats = _features_columns(sub["features"])
    return pd.concat([out, feats], axis=1).reset_index(drop=True)


def _task_row(run: RunData, task_id: str) -> pd.Series | None:
    tasks = run.tasks
    if not task_id or not len(tasks):
        return None
    match = tasks[tasks["task_id"].astype(str) == str(task_id)]
    return None if match.empty else match.iloc[-1]


def lineage_ids(run: RunData, task_id: str) -> list[str]:
    """The ids from the base seed down to ``task_id`` along ``parent_id`` (the seed first)."""
    tasks = run.tasks
    parents = dict(zip(tasks["task_id"].astype(str), tasks["parent_id"].astype(str))) if len(tasks) else {}
    if task_id not in parents:
        return []
    chain = [task_id]
    while chain[-1] in parents and len(chain) <= len(parents):  # the bound guards against a corrupt cycle
        chain.append(parents[chain[-1]])
    return chain[::-1]


LINEAGE_COLUMNS = ["step", "task_id", "epoch", "env_v", "valid", "p̂", "in_band", "weight", "task"]
ATTEMPTS_COLUMNS = ["epoch", "source", "#", "completion", "reward", "success", "advantage"]


def lineage_frame(run: RunData, task_id: str) -> pd.DataFrame:
    """One row per step from the base seed to ``task_id``: epoch, env version, validity, p̂, band, task text."""
    cols = LINEAGE_COLUMNS
    chain = lineage_ids(run, task_id)
    rows = []
    for i, tid in enumerate(chain):
        row = _task_row(run, tid)
        if row is None:
            rows.append({"step": i, "task_id": tid, "epoch": 0, "env_v": None, "valid": True, "p̂": None,
                         "in_band": None, "weight": None, "task": _short(run.seeds.get(tid, "(base seed)"), 200)})
            continue
        valid = bool(row["valid"]) if row["valid"] is not None else False
        rows.append({"step": i, "task_id": tid, "epoch": row["epoch"], "env_v": row["env_version"], "valid": valid,
                     "p̂": round(number(row["p_hat"]), 3), "in_band": bool(row["in_band"]) if valid else False,
                     "weight": round(number(row["weight"]), 3),
                     "task": _short(row["text"] if valid else f"[rejected: {row['reject_reason']}] {row['raw']}",
                                    200)})
    return pd.DataFrame(rows, columns=cols)


def lineage_figure(run: RunData, task_id: str, *, height: int = 380) -> go.Figure:
    """The family of ``task_id``'s base seed as a tree over epochs: every variation generated from it (x = epoch,
    color = p̂, ✕ = rejected), with the path from the seed to ``task_id`` highlighted."""
    row = _task_row(run, task_id)
    if row is None:
        return message_figure("Pick a generated task (click a row of the table) to see its lineage.", height=height)
    tasks = run.tasks
    root = str(row["root_id"])
    family = tasks[tasks["root_id"].astype(str) == root]
    parent = dict(zip(family["task_id"].astype(str), family["parent_id"].astype(str)))
    children: dict[str, list[str]] = {}
    for child, par in parent.items():
        children.setdefault(par, []).append(child)
    for kids in children.values():
        kids.sort()
    # Tidy layout: leaves on consecutive rows, each parent at the mean of its children (iterative post-order).
    ypos: dict[str, float] = {}
    next_leaf = 0
    stack: list[tuple[str, bool]] = [(root, False)]
    seen: set[str] = set()
    while stack:
        node, done = stack.pop()
        kids = [k for k in children.get(node, []) if k not in seen]
        if done or not kids:
            if node in ypos:
                continue
            placed = [ypos[k] for k in children.get(node, []) if k in ypos]
            if placed:
                ypos[node] = sum(placed) / len(placed)
            else:
                ypos[node] = next_leaf
                next_leaf += 1
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(kids))
    info = {str(r.task_id): r for r in family.itertuples(index=False)}
    xpos = {tid: int(info[tid].epoch) if tid in info else 0 for tid in ypos}
    path = set(lineage_ids(run, str(task_id)))
    fig = go.Figure()
    for highlight in (False, True):
        xs: list[Any] = []
        ys: list[Any] = []
        for child, par in parent.items():
            if child in ypos and par in ypos and ((child in path and par in path) == highlight):
                xs += [xpos[par], xpos[child], None]
                ys += [ypos[par], ypos[child], None]
        fig.add_scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                        line=dict(color="#f76707" if highlight else "#ced4da", width=3.5 if highlight else 1.2))
    nodes = list(ypos)
    valid_nodes = [t for t in nodes if t in info and info[t].valid]
    bad_nodes = [t for t in nodes if t in info and not info[t].valid]

    def hover(tid: str) -> str:
        if tid not in info:
            return f"<b>{html.escape(tid)}</b> (base seed)<br>{html.escape(_short(run.seeds.get(tid, ''), 80))}"
        r = info[tid]
        what = html.escape(_short(r.question, 80)) if r.valid else "rejected: " + html.escape(str(r.reject_reason))
        return (f"<b>{html.escape(tid)}</b> · epoch {r.epoch} · env v{r.env_version}<br>p̂ = {fmt_num(r.p_hat, 2)} · "
                f"{'in band' if r.in_band else 'out of band'} · weight {fmt_num(r.weight, 2)}<br>{what}")

    fig.add_scatter(x=[0], y=[ypos[root]], mode="markers+text", text=[root], textposition="middle left",
                    marker=dict(size=16, color="#495057", symbol="diamond"), name="seed",
                    hovertext=[hover(root)], hoverinfo="text", showlegend=False)
    fig.add_scatter(x=[xpos[t] for t in valid_nodes], y=[ypos[t] for t in valid_nodes], mode="markers",
                    marker=dict(size=[18 if t == str(task_id) else 12 for t in valid_nodes],
                                color=[number(info[t].p_hat) for t in valid_nodes], cmin=0, cmax=1,
                                colorscale="RdYlGn", showscale=True, line=dict(color="#212529", width=[
                                    3 if t == str(task_id) else 0.5 for t in valid_nodes]),
                                colorbar=dict(title=dict(text="p̂"), thickness=12, len=0.8)),
                    hovertext=[hover(t) for t in valid_nodes], hoverinfo="text", name="valid", showlegend=False)
    if bad_nodes:
        fig.add_scatter(x=[xpos[t] for t in bad_nodes], y=[ypos[t] for t in bad_nodes], mode="markers",
                        marker=dict(size=[16 if t == str(task_id) else 10 for t in bad_nodes], color="#adb5bd",
                                    symbol="x"),
                        hovertext=[hover(t) for t in bad_nodes], hoverinfo="text", name="rejected", showlegend=False)
    max_epoch = max(xpos.values(), default=1)
    fig.update_xaxes(title_text="epoch (0 = base seed)", dtick=1, range=[-1.2, max_epoch + 0.5], zeroline=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return style(fig, height=height, title=f"Lineage of {task_id} · family of {root} ({len(family)} generations)")


def context_markdown(run: RunData, task_id: str) -> str:
    """The env context ``task_id`` was generated from (its chat messages) and the simulator's raw output."""
    row = _task_row(run, task_id)
    if row is None:
        return "_Pick a generated task to see the env context it came from._"
    parts = [f"#### Env context of `{task_id}` (epoch {row['epoch']}, env version {row['env_version']})"]
    try:
        messages = json.loads(row["context"])
        if not isinstance(messages, list):
            raise ValueError("not a list")
        for m in messages:
            role = m.get("role", "?") if isinstance(m, dict) else "?"
            content = m.get("content", "") if isinstance(m, dict) else str(m)
            parts.append(f"**{html.escape(str(role))}**\n\n{_fence(str(content))}")
    except (TypeError, ValueError):
        parts.append("_The context is not JSON chat messages; shown as stored:_\n\n" + _fence(str(row["context"])))
    verdict = ("valid" if bool(row["valid"]) else f"rejected: {row['reject_reason']}")
    parts.append(f"**simulator output** ({verdict})\n\n{_fence(str(row['raw']))}")
    if bool(row["valid"]):
        parts.append(f"**parsed task**: gold answer `{row['answer']}`\n\n{_fence(str(row['text']))}")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------------- attempts

def attempts_frame(run: RunData, task_id: str) -> pd.DataFrame:
    """The agent's completions of ``task_id`` (its G rollouts in each epoch it was attempted) with reward,
    success and group-relative advantage."""
    cols = ATTEMPTS_COLUMNS
    attempts = run.attempts
    if not task_id or not len(attempts):
        return pd.DataFrame(columns=cols)
    sub = attempts[attempts["task_id"].astype(str) == str(task_id)]
    out = pd.DataFrame({
        "epoch": sub["epoch"], "source": sub["source"],
        "#": sub.groupby("epoch").cumcount() + 1 if len(sub) else pd.Series(dtype=int),
        "completion": sub["completion"].astype(str),
        "reward": pd.to_numeric(sub["reward"], errors="coerce").round(3), "success": sub["success"],
        "advantage": pd.to_numeric(sub["advantage"], errors="coerce").round(3),
    })
    return out.sort_values(["epoch", "#"], kind="stable").reset_index(drop=True)


def attempts_markdown(run: RunData, task_id: str) -> str:
    """The prompt the agent saw for ``task_id`` and, per epoch, its success rate and reward spread."""
    frame = attempts_frame(run, task_id)
    if not len(frame):
        if _task_row(run, task_id) is not None:
            return f"_No agent attempt of `{task_id}` (a rejected generation is never attempted)._"
        return "_Pick a generated task to see the agent's attempts._"
    attempts = run.attempts
    prompt = attempts[attempts["task_id"].astype(str) == str(task_id)]["prompt"].iloc[0]
    lines = [f"#### Agent attempts of `{task_id}`", f"**prompt**\n\n{_fence(str(prompt))}"]
    for epoch, group in frame.groupby("epoch"):
        rewards = group["reward"]
        lines.append(f"- epoch {epoch} ({group['source'].iloc[0]}): G = {len(group)}, p̂ = "
                     f"{group['success'].astype(bool).mean():.2f}, reward mean {rewards.mean():.3f}, "
                     f"std {rewards.std(ddof=0):.3f}" + (" (all equal: no GRPO signal)" if rewards.nunique() <= 1
                                                         else ""))
    return "\n\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])
