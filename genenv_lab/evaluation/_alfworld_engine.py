"""ALFWorld through the TextWorld engine (needs ``pip install alfworld``): replayed expert steps and episode play.

Each ``game.tw-pddl`` is registered directly with TextWorld (the stock ``AlfredTWEnv`` loader wants ALFRED's
``traj_data.json`` next to each game, which the offline copy lacks), with ALFWorld's ``AlfredDemangler`` and
``AlfredInfos`` wrappers, requesting ``won`` and ``admissible_commands``. Replays are cached per game file (by
content hash) under ``~/.cache/genenv_lab/benchmarks/alfworld-observed/`` because compiling a game takes ~2 s.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from genenv_lab.evaluation.common import cache_root
from genenv_lab.safe_io import read_text


def _make_env(game_file: str, max_steps: int):
    import textworld
    import textworld.gym
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    from textworld import EnvInfos

    infos = EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    env_id = textworld.gym.register_games([game_file], infos, batch_size=1, asynchronous=False,
                                          max_episode_steps=max_steps, wrappers=[AlfredDemangler(), AlfredInfos])
    return textworld.gym.make(env_id)


def _replay(game) -> dict[str, Any]:
    """Observations and admissible actions before each expert action, and whether the walkthrough wins."""
    env = _make_env(game.path, max_steps=len(game.walkthrough) + 5)
    try:
        obs, info = env.reset()
        observations, admissible = [obs[0]], [list(info["admissible_commands"][0])]
        won = False
        for action in game.walkthrough:
            obs, _, dones, info = env.step([action])
            observations.append(obs[0])
            admissible.append(list(info["admissible_commands"][0]))
            won = bool(info["won"][0])
    finally:
        env.close()
    return {"observations": observations, "admissible": admissible, "won": won}


def replay_cached(game) -> dict[str, Any]:
    digest = hashlib.sha1(Path(game.path).read_bytes()).hexdigest()
    path = cache_root() / "alfworld-observed" / f"{digest}.json"
    if path.exists():
        return json.loads(read_text(path, "ALFWorld file"))
    data = _replay(game)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return data


def observed_steps(games) -> list[dict[str, Any]]:
    """The fields of one ``observed_steps`` item per expert action of each game (``alfworld.AlfworldStep``'s
    fields; the caller builds the items, so this module does not import it back)."""
    items = []
    for g in games:
        data = replay_cached(g)
        transcript: list[str] = [data["observations"][0]]
        for k, action in enumerate(g.walkthrough):
            items.append(dict(id=f"observed_steps/{g.id}#{k}", category="observed_steps", game_id=g.id,
                              task_type=g.task_type, goal=g.goal, history=tuple(transcript), action=action,
                              admissible=tuple(data["admissible"][k])))
            transcript += [f"> {action}", data["observations"][k + 1]]
    return items


def play(policy: Callable[[str, list[str]], str], games, max_steps: int = 50) -> dict[str, Any]:
    """Run ``policy(transcript, admissible) -> action`` on every game; success = the engine reports ``won``."""
    per_game = []
    for g in games:
        env = _make_env(g.path, max_steps=max_steps)
        try:
            obs, info = env.reset()
            transcript = [obs[0]]
            won, steps = False, 0
            for step in range(1, max_steps + 1):
                steps = step
                action = policy("\n".join(transcript), list(info["admissible_commands"][0]))
                obs, _, dones, info = env.step([action])
                transcript += [f"> {action}", obs[0]]
                won = bool(info["won"][0])
                if won or dones[0]:
                    break
        finally:
            env.close()
        per_game.append({"id": g.id, "task_type": g.task_type, "won": won, "steps": steps})
    by_type: dict[str, list[bool]] = {}
    for r in per_game:
        by_type.setdefault(r["task_type"], []).append(r["won"])
    n = len(per_game)
    return {"metric": "success_rate", "value": sum(r["won"] for r in per_game) / n if n else float("nan"), "n": n,
            "max_steps": max_steps, "by_task_type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())},
            "per_game": per_game}
