"""``check_domain``: what a domain must satisfy before the loop can train on it, checked on its own tasks.

The loop trusts a domain for four things: its seed (and held-out) tasks parse; :meth:`~.base.Domain.parse` of a
task's own text gives the task back (the simulator writes text, the loop parses it); the reference solution of every
task scores 1.0 (so a right answer is reachable) and an empty or garbage answer scores in [0, 1] without raising; and
the prompts it builds are chat messages. ``genenv-lab check-domain NAME`` and the test of docs/domains.md run it.
"""

from __future__ import annotations

import time

from genenv_lab.domains.base import Domain, LineageStats

SLOW_SCORE_S = 0.5
"""A score() call slower than this is a problem: the loop scores G completions of every task every epoch."""

GARBAGE = ("", " ", "Task:", "Task: " + "9" * 400, "{" * 200, "\x00\ud800", "Answer: 42\n" * 50)
"""Texts a simulator or an agent may write; parsing and scoring them must not raise."""


def _messages_problem(messages, what: str) -> str | None:
    ok = isinstance(messages, list) and messages and all(
        isinstance(m, dict) and m.get("role") in ("system", "user", "assistant") and isinstance(m.get("content"), str)
        for m in messages)
    return None if ok else f"{what} is not a list of {{'role', 'content'}} chat messages: {messages!r:.120}"


def check_domain(domain: Domain) -> list[str]:
    """Every way ``domain`` breaks the loop's assumptions, one sentence each; ``[]`` when it passes."""
    problems: list[str] = []
    try:
        seeds = domain.seed_tasks()
        heldout = domain.heldout_tasks()
    except Exception as exc:  # noqa: BLE001 - the report is the point
        return [f"its tasks do not load: {type(exc).__name__}: {exc}"]
    if not seeds:
        problems.append("it has no seed tasks (data/<name>_seeds.jsonl, or --loop.seeds FILE.jsonl)")
    for kind, tasks in (("seed", seeds), ("held-out", heldout)):
        for task in tasks:
            spec, name = task.spec, f"{kind} task {task.seed_id!r}"
            if kind == "seed":
                again = domain.safe_parse(spec.text)
                if not again.valid or again.spec.question != spec.question or again.spec.answer != spec.answer:
                    problems.append(f"{name}: parse(its own text) does not give it back ({again.reason or 'differs'})")
            try:
                solution = domain.reference_solution(spec)
            except NotImplementedError:
                problems.append("reference_solution is not implemented (the tests and the format warm-up need it)")
                return problems
            reward, error = domain.safe_score(spec, solution)
            if reward != 1.0:
                problems.append(f"{name}: its reference solution scores {reward} ({error or 'not 1.0'})")
            for garbage in GARBAGE:
                start = time.perf_counter()
                try:
                    value = float(domain.score(spec, garbage))
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - a scorer's sys.exit() is a problem too
                    problems.append(f"{name}: score() raises {type(exc).__name__} on {garbage[:20]!r}")
                    break
                took = time.perf_counter() - start
                if took > SLOW_SCORE_S:
                    problems.append(f"{name}: score() took {took:.1f} s on {garbage[:20]!r} (the loop scores G "
                                    f"completions of every task every epoch; keep a call under {SLOW_SCORE_S} s)")
                    break
                if not 0.0 <= value <= 1.0:
                    problems.append(f"{name}: score() gives {value} on {garbage[:20]!r}, outside [0, 1]")
                    break
            problem = _messages_problem(domain.agent_messages(spec), f"{name}: agent_messages")
            problems += [problem] if problem else []
    if seeds:
        problem = _messages_problem(domain.env_messages(seeds[0].spec, LineageStats(), 0.5), "env_messages")
        problems += [problem] if problem else []
        problems += [f"seed task {t.seed_id!r}: features is a {type(t.spec.features).__name__}, not a dict of names "
                     "to numbers or strings" for t in seeds if not isinstance(t.spec.features, dict)][:1]
    seed_questions = {t.spec.question for t in seeds}
    problems += [f"held-out task {t.seed_id!r} is also a seed task (it would be trained on)" for t in heldout
                 if t.spec.question in seed_questions]
    for garbage in GARBAGE:
        try:
            domain.parse(garbage)
        except Exception as exc:  # noqa: BLE001 - safe_parse would count it, but a parser should reject, not raise
            problems.append(f"parse() raises {type(exc).__name__} on {garbage[:20]!r} (return a ParseResult with a "
                            "reason instead)")
            break
    return problems
