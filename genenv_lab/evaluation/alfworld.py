"""ALFWorld ``valid_unseen`` (134 games): game listing, expert next-action decompositions and their scorer.

Official metric: success rate of full episodes (the TextWorld PDDL engine reports ``won``) within a step cap.
Playing episodes needs the ``alfworld`` package (``pip install alfworld``, which pulls ``textworld[pddl]``); this
module does not depend on it. What it offers:

- :func:`load_games`: every ``game.tw-pddl`` with its task type (directory prefix), goal text ("Your task is to:
  ..." from the game grammar) and expert walkthrough.
- category ``plan_steps`` (always available; 788 items): one item per walkthrough step, posed as *goal + the
  expert actions so far* -> the expert's next action. The offline files hold no observations or admissible-action
  lists (those come from the engine), so this is a plan-following proxy, not the paper's single-step task and not
  the official metric.
- category ``observed_steps`` (only when ``textworld`` and ``alfworld`` are importable, and scored only when asked
  for by name): the same steps with the engine's real observation history and admissible actions, obtained by
  replaying each walkthrough (~1-5 s per game the first time, then cached).
- :func:`play_episodes` (only with those packages): the official success rate of a policy over full episodes.

Scoring of a step: the action is extracted from the raw output (text after the last ``Action:``/``>``, else the
last non-empty line) and compared with the expert action after normalisation (lowercase, collapsed whitespace,
trailing period dropped, ``put X in/on Y`` read as the engine's ``move X to Y``).

>>> normalize_action("  Put Mug 1 in/on CoffeeMachine 1. "), normalize_action("> go to desk 2")
('move mug 1 to coffeemachine 1', 'go to desk 2')
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from genenv_lab.evaluation.calls import strip_reasoning
from genenv_lab.evaluation.common import BenchmarkSpec, ItemResult, accuracy
from genenv_lab.safe_io import read_text

SOURCES = ("alfworld/alfworld: the 'alfworld-download' script fetches json_2.1.1 game files from the project's "
           "GitHub release assets (json_2.1.1_json.zip / json_2.1.3_tw-pddl.zip)")
TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place")
_GOAL = re.compile(r'"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"(.*?)"', re.DOTALL)
_PUT = re.compile(r"^put (.+?) (?:in/on|in|on|into|onto) (.+)$")
_ACTION_CUE = re.compile(r"(?:^|\n)\s*(?:action|act)\s*:\s*(.*)", re.IGNORECASE)


@dataclass(frozen=True)
class AlfworldGame:
    id: str
    """``<task folder>/<trial folder>``."""
    task_type: str
    goal: str
    walkthrough: tuple[str, ...]
    path: str


@dataclass(frozen=True)
class AlfworldStep:
    id: str
    """``<category>/<game id>#<step index>``."""
    category: str
    game_id: str
    task_type: str
    goal: str
    history: tuple[str, ...]
    """Expert actions taken before this step (``plan_steps``) or the observation/action transcript
    (``observed_steps``: alternating observation and action texts, starting with the initial observation)."""
    action: str
    """The expert's next action (the gold)."""
    admissible: tuple[str, ...] = ()


def _split_dir(data_dir: Path) -> Path:
    for candidate in (data_dir / "json_2.1.1" / "valid_unseen", data_dir / "valid_unseen", data_dir):
        if candidate.is_dir() and any(candidate.glob("*/*/game.tw-pddl")):
            return candidate
    raise FileNotFoundError(f"no valid_unseen game files under {data_dir}")


def task_type_of(folder: str) -> str:
    for t in TASK_TYPES:
        if folder.startswith(t + "-"):
            return t
    return folder.split("-", 1)[0]


def load_games(data_dir: Path) -> list[AlfworldGame]:
    root = _split_dir(data_dir)
    games = []
    for path in sorted(root.glob("*/*/game.tw-pddl")):
        data = json.loads(read_text(path, "ALFWorld file"))
        m = _GOAL.search(data.get("grammar", ""))
        goal = json.loads(f'"{m.group(1)}"') if m else ""
        game_id = f"{path.parent.parent.name}/{path.parent.name}"
        games.append(AlfworldGame(id=game_id, task_type=task_type_of(path.parent.parent.name), goal=goal,
                                  walkthrough=tuple(data.get("walkthrough", [])), path=str(path)))
    return games


def engine_available() -> bool:
    """Whether ``alfworld`` and ``textworld`` are importable (needed for ``observed_steps`` and play)."""
    return all(importlib.util.find_spec(m) is not None for m in ("textworld", "alfworld"))


def available_categories(data_dir: Path) -> list[str]:
    try:
        _split_dir(data_dir)
    except FileNotFoundError:
        return []
    return ["plan_steps"] + (["observed_steps"] if engine_available() else [])


def plan_steps(games: list[AlfworldGame]) -> list[AlfworldStep]:
    return [AlfworldStep(id=f"plan_steps/{g.id}#{k}", category="plan_steps", game_id=g.id, task_type=g.task_type,
                         goal=g.goal, history=g.walkthrough[:k], action=a)
            for g in games for k, a in enumerate(g.walkthrough)]


def load_category(data_dir: Path, category: str) -> list[AlfworldStep]:
    games = load_games(data_dir)
    if category == "plan_steps":
        return plan_steps(games)
    if category == "observed_steps":
        if not engine_available():
            raise RuntimeError("observed_steps needs the 'alfworld' package (pip install alfworld)")
        from genenv_lab.evaluation._alfworld_engine import observed_steps
        return [AlfworldStep(**fields) for fields in observed_steps(games)]
    raise ValueError(f"ALFWorld category {category!r} is not covered; covered: ['plan_steps', 'observed_steps']")


def normalize_action(text: str) -> str:
    text = " ".join(text.strip().strip("`\"'").lstrip(">").split()).lower().rstrip(".").strip()
    m = _PUT.match(text)
    if m:
        text = f"move {m.group(1)} to {m.group(2)}"
    return text


def extract_action(output: str) -> str:
    text = strip_reasoning(output or "")
    cues = list(_ACTION_CUE.finditer(text))
    if cues:
        return cues[-1].group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(">"):
            return line[1:].strip()
    return lines[-1] if lines else ""


def score_item(item: AlfworldStep, prediction: str) -> ItemResult:
    got = extract_action(prediction)
    ok = normalize_action(got) == normalize_action(item.action)
    reason = "ok" if ok else (f"predicted {got!r}, expert {item.action!r}" if got else "no action found")
    extra: dict[str, Any] = {"task_type": item.task_type, "extracted": got}
    if item.admissible:
        extra["admissible"] = normalize_action(got) in {normalize_action(a) for a in item.admissible}
    return ItemResult(item.id, item.category, ok, float(ok), reason, extra)


def gold_prediction(item: AlfworldStep) -> str:
    return f"Action: {item.action}"


SYSTEM_PROMPT = ("You are acting in a household text game. Given the goal and what happened so far, reply with the "
                 "next action only, as 'Action: <command>' (commands look like 'go to desk 1', 'open drawer 2', "
                 "'take mug 1 from desk 1', 'move mug 1 to shelf 1', 'heat/cool/clean X with Y', 'use desklamp 1').")


def prompt_messages(item: AlfworldStep) -> list[dict[str, str]]:
    if item.category == "observed_steps":
        transcript = "\n".join(item.history)
        user = f"{transcript}\n\nAdmissible actions: {', '.join(item.admissible)}"
    else:
        done = "\n".join(f"> {a}" for a in item.history) or "(nothing yet)"
        user = f"{item.goal}\nActions so far:\n{done}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def summarize(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    cats: dict[str, Any] = {}
    for c, rs in results.items():
        by_type: dict[str, list[ItemResult]] = {}
        for r in rs:
            by_type.setdefault(r.extra.get("task_type", "?"), []).append(r)
        cats[c] = {"metric": "next_action_accuracy", "value": accuracy(rs), "n": len(rs),
                   "by_task_type": {t: {"value": accuracy(v), "n": len(v)} for t, v in sorted(by_type.items())}}
    rs = [r for v in results.values() for r in v]
    name = ("next_action_accuracy (expert single-step proxy; NOT the official episode success rate)")
    return {
        "metric": name, "value": accuracy(rs), "n": len(rs), "categories": cats,
        "covered": [f"{c}: expert next-action accuracy" for c in results],
        "not_covered": ["episode success rate (the official metric): not scorable from a predictions file; it "
                        "needs an interactive policy and the 'alfworld' package: "
                        "genenv_lab.evaluation.alfworld.play_episodes"]
        + ([] if "observed_steps" in results else
           ["observed_steps (engine observations + admissible actions): needs the 'alfworld' package"]),
        "approximated": (["plan_steps: the state is the goal plus the expert's previous actions; no observations or "
                          "admissible actions (not in the offline files)"] if "plan_steps" in results else [])
        + ["'put X in/on Y' is read as the engine's 'move X to Y'"],
    }


def play_episodes(policy: Callable[[str, list[str]], str], data_dir: Path, max_steps: int = 50,
                  limit: int | None = None) -> dict[str, Any]:
    """The official success rate of ``policy(transcript, admissible_actions) -> action`` over the games.

    Needs the ``alfworld`` package; raises :class:`RuntimeError` otherwise.
    """
    if not engine_available():
        raise RuntimeError("episode play needs the 'alfworld' package (pip install alfworld)")
    from genenv_lab.evaluation._alfworld_engine import play
    games = load_games(data_dir)[:limit] if limit else load_games(data_dir)
    return play(policy, games, max_steps=max_steps)


SPEC = BenchmarkSpec(name="alfworld", folder="alfworld", markers=("json_2.1.1", "valid_unseen"), sources=SOURCES,
                     categories=available_categories, load=load_category, score=score_item, gold=gold_prediction,
                     summarize=summarize, explicit_only=("observed_steps",))
