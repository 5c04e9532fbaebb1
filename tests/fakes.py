"""A scripted fake backend: the loop's component tests run without any model.

Its simulator rewrites the seed's expression (adding operands as its version grows) and writes a malformed reply
every fourth time; its agent solves a task when the task has fewer operands than its skill, half the rollouts at
equal skill, none above; every agent update raises the skill, every env (RWR) update with examples raises the
version. A token is a whitespace-separated word. The tests take these classes from the fixtures of tests/conftest.py
(``scripted_backend``, ``scripted_counter``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from genenv_lab.backends.base import AgentUpdate, EnvUpdate, cut_at_stop
from genenv_lab.domains.arith import evaluate


class ScriptedBackend:
    def __init__(self, num_generations: int = 4, skill: int = 2):
        self.g = num_generations
        self.skill = skill
        self.version = 0
        self.calls = {"generate": 0, "grpo": 0, "rwr": 0}
        self.trainers: list[str] = []  # the name of the trainer each agent update was taken from
        self.env_trainers: list[str] = []  # the name of the trainer each env update was taken from
        self.rwr_batches: list[list] = []
        self._count = 0

    def _solve(self, messages, n):
        expr = messages[-1]["content"].rstrip("= ")
        value, feats = evaluate(expr)
        n_ops = feats["n_operands"]
        k = n if n_ops < self.skill else (n // 2 if n_ops == self.skill else 0)
        return [f" {value if i < k else value + 1}" for i in range(n)]

    def generate(self, adapter, prompts, *, n, max_new_tokens, temperature, top_p=1.0, stop=(), alphabet=""):
        if adapter == "agent":
            return [self._solve(m, n) for m in prompts]
        self.calls["generate"] += 1
        out = []
        for messages in prompts:
            user = next(m["content"] for m in messages if m["role"] == "user")
            expr = next(line for line in user.splitlines() if line.startswith("Expression:")).split(":", 1)[1].strip()
            gens = []
            for j in range(n):
                self._count += 1
                if self._count % 4 == 0:
                    gens.append("I cannot write that task.")
                else:
                    extra = " + 1" * ((self.version + j) % 3)
                    gens.append(f" {expr}{extra}\nQuestion: scripted variation {j}")
            out.append([cut_at_stop(g, stop) for g in gens])
        return out

    def train_agent(self, trainer, prompts, reward_fn):
        self.calls["grpo"] += 1
        self.trainers.append(trainer.name)
        for p in prompts:
            reward_fn([p.task_id] * self.g, self._solve(p.messages, self.g))
        self.skill += 1
        return AgentUpdate(loss=0.0, steps=len(prompts))

    def completion_tokens(self, texts):
        """The scripted world's tokens: whitespace-separated words (a completion " 42" is one token)."""
        return [len(t.split()) for t in texts]

    def train_env(self, trainer, examples):
        self.calls["rwr"] += 1
        self.env_trainers.append(trainer.name)
        self.rwr_batches.append(list(examples))
        self.version += 1
        return EnvUpdate(loss=1.0, kl=0.01 * self.version, steps=1)

    def save_adapters(self, directory):
        for name in ("agent", "env"):
            (Path(directory) / name).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "scripted.json").write_text(json.dumps({"skill": self.skill, "version": self.version,
                                                                   "count": self._count}))

    def load_adapters(self, directory):
        state = json.loads((Path(directory) / "scripted.json").read_text())
        self.skill, self.version, self._count = state["skill"], state["version"], state.get("count", 0)

    def adapter_state(self, adapter):
        return {"skill": self.skill} if adapter == "agent" else {"version": self.version}


class ScriptedCounter(ScriptedBackend):
    """The scripted backend on the ``count`` domain (tasks ``Task: a to b`` of level b): its agent counts right to
    any end below its skill, on half the rollouts at its skill (greedy: never) and never above it (it skips the
    end's predecessor), so the held-out frontier is its skill; every GRPO step raises the skill. Its simulator
    writes the seed's count one level further per env version and per variation (ends capped at 24), every fourth
    reply malformed."""

    def __init__(self, num_generations: int = 4, skill: int = 6):
        super().__init__(num_generations, skill)

    def _solve(self, messages, n):
        a, b = (int(x) for x in re.findall(r"\d+", next(m["content"] for m in messages if m["role"] == "user")))
        right = " " + " ".join(str(x) for x in range(a + 1, b + 1))
        wrong = " " + " ".join(str(x) for x in range(a + 1, b + 1) if x != b - 1)
        k = n if b < self.skill else (n // 2 if b == self.skill else 0)
        return [right if i < k else wrong for i in range(n)]

    def generate(self, adapter, prompts, *, n, max_new_tokens, temperature, top_p=1.0, stop=(), alphabet=""):
        if adapter == "agent":
            return [self._solve(m, n) for m in prompts]
        self.calls["generate"] += 1
        out = []
        for messages in prompts:
            user = next(m["content"] for m in messages if m["role"] == "user")
            a, b = (int(x) for x in re.search(r"Task: (\d+) to (\d+)", user).groups())
            gens = []
            for j in range(n):
                self._count += 1
                end = min(b + self.version + j % 2, 24)
                gens.append("no task here" if self._count % 4 == 0 else f" {a} to {end}")
            out.append([cut_at_stop(g, stop) for g in gens])
        return out
