"""The in-band fraction the ``times`` world's teacher allows, measured through the real loop without any model.

    python benchmarks/teacher_ceiling.py                      # the times world as cpu-times pre-trains on it
    python benchmarks/teacher_ceiling.py --random-share 0 --similar-shifts 0 --harder-shifts 1
    python benchmarks/teacher_ceiling.py --agent-rate 0.1     # an agent that learns more slowly
    python benchmarks/teacher_ceiling.py --oracle             # every task at the agent's current frontier
    python benchmarks/teacher_ceiling.py --set env.stats_window=1 --set agent.num_generations=16

The simulator is the world's teacher itself (:meth:`genenv_lab.domains.times.TimesWorld.target_level`, reading the
context the loop built: its hint, the newest recent task's level, the seed's level), that is, a *perfect* imitation
of the corpus the world model is pre-trained on, and it is never updated (RWR is a no-op here). The agent is the
world's logistic mastery curve, answering right with probability ``1 / (1 + exp((level − m) / spread))``, whose
midpoint ``m`` rises by ``--agent-rate`` levels after every GRPO step (the real times agent's tasks rose by about
0.3–0.4 levels an epoch). Everything else is the real loop of ``--preset``: parents, pool, lineage statistics, G,
band, p̂. So the figure printed is what the teacher's *design* permits, separate from how well a model learns it:
``benchmarks`` rather than tests, because it prints a measurement (docs/research/curriculum_cpu.md, "Fourth round").
"""

from __future__ import annotations

import argparse
import math
import random
import re
import statistics
import tempfile
from pathlib import Path

from genenv_lab.backends.base import AgentUpdate, EnvUpdate
from genenv_lab.cli.flags import parse_setting
from genenv_lab.config import preset
from genenv_lab.core.readings import LAST_THIRD, SECOND_HALF, window_start
from genenv_lab.domains.times import HIGHEST, LOWEST, TimesWorld, level
from genenv_lab.coevolution.session import run

_PAIR = re.compile(r"(\d+) \* (\d+)")
_RATE = re.compile(r"success rate ([\d.]+); target band ([\d.]+)-([\d.]+)")
_RECENT = re.compile(r"level (\d+): (\d\.\d+)")


class TeacherBackend:
    """A Backend whose simulator is the world's teacher and whose agent is a logistic curve (see module doc)."""

    def __init__(self, world: TimesWorld, *, g: int, seed: int, agent_rate: float, oracle: bool = False):
        self.world, self.g, self.oracle = world, g, oracle
        self.rng = random.Random(seed)
        self.midpoint, self.agent_rate = world.midpoint, agent_rate

    def p_correct(self, lvl: int) -> float:
        return 1.0 / (1.0 + math.exp((lvl - self.midpoint) / self.world.spread))

    def _answers(self, messages, n: int) -> list[str]:
        a, b = map(int, _PAIR.findall(" ".join(m["content"] for m in messages))[-1])
        return [f" {a * b}" if self.rng.random() < self.p_correct(level(a, b)) else f" {self.world.slip(a, b)}"
                for _ in range(n)]

    def _target(self, user: str) -> int:
        if self.oracle:
            return min(max(round(self.midpoint), LOWEST), HIGHEST)
        seed_level = level(*map(int, _PAIR.search(user).groups()))
        recent = _RECENT.findall(user)
        anchor = int(recent[-1][0]) if recent else seed_level
        stats = _RATE.search(user)
        if stats is None:
            return self.world.target_level(self.rng, anchor, None, 0.5, 0.0)
        rate, lo, hi = map(float, stats.groups())
        return self.world.target_level(self.rng, anchor, rate, (lo + hi) / 2, (hi - lo) / 2)

    def generate(self, adapter, prompts, *, n, max_new_tokens, temperature, top_p=1.0, stop=(), alphabet=""):
        if adapter == "agent":
            return [self._answers(m, n) for m in prompts]
        out = []
        for messages in prompts:
            user = next(m["content"] for m in messages if m["role"] == "user")
            out.append([" " + self.world.task_at(self.rng, self._target(user))[len("Task: "):] for _ in range(n)])
        return out

    def train_agent(self, trainer, prompts, reward_fn) -> AgentUpdate:
        for p in prompts:
            reward_fn([p.task_id] * self.g, self._answers(p.messages, self.g))
        self.midpoint += self.agent_rate
        return AgentUpdate(loss=0.0, steps=len(prompts))

    def train_env(self, trainer, examples) -> EnvUpdate:
        return EnvUpdate(loss=0.0, kl=0.0, steps=0)

    def save_adapters(self, directory) -> None:
        for name in ("agent", "env"):
            (Path(directory) / name).mkdir(parents=True, exist_ok=True)

    def load_adapters(self, directory) -> None:
        pass

    def adapter_state(self, adapter):
        return {}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-times")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--agent-rate", type=float, default=0.25, help="levels the agent's midpoint rises per epoch")
    ap.add_argument("--random-share", type=float, default=None, help="teacher's random-level share (world default)")
    ap.add_argument("--similar-shifts", type=_ints, default=None, help="e.g. -1,0,0,1 (world default)")
    ap.add_argument("--harder-shifts", type=_ints, default=None, help="e.g. 0,1,1,2,2,3 (world default)")
    ap.add_argument("--oracle", action="store_true", help="every task at the level nearest the agent's midpoint")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                    help="a loop setting of the preset, as in `genenv-lab run --set`")
    args = ap.parse_args(argv)
    world_kwargs = {k: v for k, v in (("random_level_share", args.random_share),
                                      ("similar_shifts", args.similar_shifts),
                                      ("harder_shifts", args.harder_shifts)) if v is not None}
    base = preset(args.preset)
    for item in args.set:
        section, field, value = parse_setting(item)
        base = base.replace(**{section: {field: value}})
    if base.loop.domain != "times":
        ap.error(f"preset {args.preset!r} runs domain {base.loop.domain!r}; this benchmark needs 'times'")
    in_band, p_last = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            cfg = base.replace(loop={"seed": seed, "reference_tasks": 0}, eval={"every": 0})
            backend = TeacherBackend(TimesWorld(**world_kwargs), g=cfg.agent.num_generations, seed=seed,
                                     agent_rate=args.agent_rate, oracle=args.oracle)
            records = list(run(cfg, Path(tmp) / f"s{seed}", backend=backend, progress=False))
            last = records[-1].epoch
            in_band.append(statistics.mean(r.in_band_frac for r in records
                                           if r.epoch >= window_start(last, SECOND_HALF)))
            p_last.append(statistics.mean(r.p_hat_mean for r in records if r.epoch >= window_start(last, LAST_THIRD)))
            print(f"seed {seed}: in band (second half) {in_band[-1]:.2f}, mean p̂ (last third) {p_last[-1]:.2f}")
    sd = statistics.stdev(in_band) if len(in_band) > 1 else 0.0
    print(f"{args.preset}{''.join(' ' + x for x in args.set)}, teacher {world_kwargs or 'as pre-trained'}"
          f"{', oracle' if args.oracle else ''}, agent +"
          f"{args.agent_rate} levels/epoch: in band {statistics.mean(in_band):.2f} ± {sd:.2f}, "
          f"mean p̂ {statistics.mean(p_last):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
