"""The niche penalty in the loop (scripted fake backend on ``count``): its memory is the run's valid generations per
niche, the RWR weights it gives are those the pure function gives, the placebo reweighs without the memory, and a run
killed at any commit step of an epoch and resumed weighs exactly as the uninterrupted run did."""

from __future__ import annotations

import os
import re
from collections import Counter

import pytest

from genenv_lab.coevolution.resolve import for_domain
from genenv_lab.coevolution.session import run
from genenv_lab.core.niches import niche_weights
from genenv_lab.domains import get_domain
from genenv_lab.core.curriculum import rwr_weights
from genenv_lab.core.metrics import DIVERSITY_ENTROPY
from genenv_lab.core.types import TaskSpec
from genenv_lab.rundir.read import read_epochs, read_table
from fakes import ScriptedCounter
from test_crash_points import _fork

EPOCHS = 3


class SpreadCounter(ScriptedCounter):
    """The scripted counter whose agent half-solves every count ending up to 8 above its skill, so that an epoch's
    in-band tasks span several niches with different counts."""

    def _solve(self, messages, n):
        a, b = (int(x) for x in re.findall(r"\d+", next(m["content"] for m in messages if m["role"] == "user")))
        right = " " + " ".join(str(x) for x in range(a + 1, b + 1))
        wrong = " " + " ".join(str(x) for x in range(a + 1, b + 1) if x != b - 1)
        k = n if b < self.skill else (n // 2 if b <= self.skill + 8 else 0)
        return [right if i < k else wrong for i in range(n)]


def _cfg(tiny_cfg, variant="genenv", gamma=1.0):
    return for_domain(tiny_cfg, "count").replace(
        loop={"epochs": EPOCHS, "variant": variant}, eval={"every": 0}, agent={"num_generations": 4},
        curriculum={"k_min": 0.25}, env={"niche_gamma": gamma, "seeds_per_epoch": 3, "n_variations": 4})


def _run(cfg, out, backend_cls):
    return [r.to_dict() for r in run(cfg, out, backend=backend_cls(num_generations=4), progress=False)]


def _weights(out):
    tasks = read_table(out, "tasks")
    return sorted(zip(tasks["task_id"], tasks["weight"].round(12)))


def test_the_memory_counts_every_valid_generation_and_sets_the_weights(tiny_cfg, tmp_path):
    cfg = _cfg(tiny_cfg)
    records = _run(cfg, tmp_path / "on", SpreadCounter)
    tasks = read_table(tmp_path / "on", "tasks")
    domain = get_domain("count")
    seen: Counter = Counter()
    for r in records:
        e = r["epoch"]
        part = tasks[tasks["epoch"] == e]
        valid = part[part["valid"]]
        niches = {row.task_id: domain.niche(TaskSpec(row.question, row.answer, row.text, dict(row.features)))
                  for row in valid.itertuples()}
        seen.update(niches.values())
        assert r["extra"]["diversity/niches"] == len(seen)
        assert r["extra"]["diversity/top_share"] == pytest.approx(max(seen.values()) / sum(seen.values()))
        kept = part[part["weight"] > 0]
        if len(kept):
            expected = niche_weights(list(kept["env_reward"]), [niches[t] for t in kept["task_id"]], seen,
                                     cfg.curriculum.rwr_lambda, 1.0)
            assert list(kept["weight"]) == pytest.approx(expected)
    kept = tasks[tasks["weight"] > 0]
    assert kept["weight"].round(9).nunique() > 1  # the penalty tells niches apart
    # the paper's RWR on the same preset: the same runs but for the weights
    paper = _run(cfg.replace(loop={"variant": "genenv_paper"}), tmp_path / "paper", SpreadCounter)
    assert [r["extra"]["diversity/niches"] for r in paper][0] == records[0]["extra"]["diversity/niches"]
    first = read_table(tmp_path / "paper", "tasks")
    first = first[(first["epoch"] == 1) & (first["weight"] > 0)]
    assert list(first["weight"]) == pytest.approx(rwr_weights(list(first["env_reward"]), cfg.curriculum.rwr_lambda))


def test_the_placebo_shuffles_the_multipliers(tiny_cfg, tmp_path):
    """The placebo's weights are the penalty's per-niche multipliers exchanged among the epoch's niches: the same
    set of values, not tied to the counts."""
    real = _run(_cfg(tiny_cfg), tmp_path / "real", SpreadCounter)
    _run(_cfg(tiny_cfg, "genenv_placebo"), tmp_path / "placebo", SpreadCounter)
    assert len(real) == EPOCHS
    a, b = read_table(tmp_path / "real", "tasks"), read_table(tmp_path / "placebo", "tasks")
    # the scripted simulator's update ignores the weights, so both runs write and measure the same tasks
    assert list(a["task_id"]) == list(b["task_id"]) and list(a["in_band"]) == list(b["in_band"])
    moved = 0
    for e in range(1, EPOCHS + 1):
        ka, kb = a[(a["epoch"] == e) & (a["weight"] > 0)], b[(b["epoch"] == e) & (b["weight"] > 0)]
        multipliers = [dict(zip(k["task_id"], k["weight"].round(9))) for k in (ka, kb)]
        assert set(multipliers[0]) == set(multipliers[1])
        moved += multipliers[0] != multipliers[1]
    assert moved  # in some epoch the placebo gave a niche another niche's multiplier


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_memory_survives_a_kill_at_every_commit_step_and_a_resume(tiny_cfg, tmp_path):
    cfg = _cfg(tiny_cfg)
    code = _fork(cfg, tmp_path / "reference", 0, SpreadCounter)
    assert code > 100, code
    reference = (_weights(tmp_path / "reference"),
                 [r.extra["diversity/niches"] for r in read_epochs(tmp_path / "reference")])
    assert any(w > 0 for _, w in reference[0]) and len(set(w for _, w in reference[0] if w > 0)) > 1
    for n in range(1, code - 100 + 1, 2):
        out = tmp_path / f"kill-{n:02d}"
        assert _fork(cfg, out, n, SpreadCounter) == 137
        assert _fork(cfg, out, 0, SpreadCounter) > 100, f"resume after a kill at step {n} failed"
        got = (_weights(out), [r.extra["diversity/niches"] for r in read_epochs(out)])
        assert got == reference, f"kill at commit step {n}"


def test_compare_runs_the_extension_its_placebo_and_the_papers_rwr_side_by_side(tmp_path):
    """The preset whose genenv carries the niche penalty runs in compare beside genenv_paper and genenv_placebo; the
    table carries each arm's task entropy, and a preset without the penalty refuses the placebo in one line."""
    from genenv_lab.compare import compare_grid, variant_entries
    from genenv_lab.config import ConfigError

    entries = variant_entries(["cpu-dry-hint-band-niche"], ["genenv", "genenv_paper", "genenv_placebo"], epochs=2,
                              domain="count")
    assert [cfg.niche_gamma for _, cfg in entries] == [1.0, 0.0, 1.0]
    table = compare_grid(entries, 1, tmp_path / "cmp", progress=False,
                         backend_factory=lambda cfg: SpreadCounter(num_generations=cfg.agent.num_generations))
    done = table[table["epoch"] > 0]
    assert set(done["variant"]) == {"genenv", "genenv_paper", "genenv_placebo"}
    assert done[DIVERSITY_ENTROPY].notna().all()
    with pytest.raises(ConfigError, match="niche_gamma"):
        variant_entries(["cpu-dry-hint-band"], ["genenv_placebo"], epochs=2, domain="count")
