"""The ``online_filter`` baseline in the loop, with the scripted fake backend: static's fixed set, each epoch's
candidates screened by G agent rollouts (no update), only informative tasks trained on (topped up to the budget),
tasks screened at p̂ = 1 used up for good, the screening counted as agent rollouts; and --resume equal to an
uninterrupted run."""

from __future__ import annotations

import json

import pytest

from genenv_lab.config import ConfigError
from genenv_lab.coevolution.session import run
from genenv_lab.rundir.read import read_epochs, read_table


G = 4


@pytest.fixture
def recording(scripted_backend):
    class _Recording(scripted_backend):
        """Records the prompts of every agent ``generate`` call (here: the screening's; no reference set, no eval)."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.screened: list[list[str]] = []

        def generate(self, adapter, prompts, **kw):
            if adapter == "agent":
                self.screened.append([m[-1]["content"] for m in prompts])
            return super().generate(adapter, prompts, **kw)

    return _Recording


@pytest.fixture
def stuck(scripted_backend):
    class _Stuck(scripted_backend):
        """An agent that never learns: its update leaves the skill where it was."""

        def train_agent(self, trainer, prompts, reward_fn):
            out = super().train_agent(trainer, prompts, reward_fn)
            self.skill -= 1
            return out

    return _Stuck


@pytest.fixture
def cfg(tiny_cfg):
    return tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": G},
                            env={"static_variations": 4}, loop={"variant": "online_filter", "epochs": 5})


def test_online_filter_trains_on_informative_tasks_and_uses_up_solved_ones(cfg, tmp_path, recording):
    backend = recording(num_generations=G)
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    budget, cap = cfg.budget, cfg.budget * cfg.loop.screen_factor
    tasks, attempts = read_table(tmp_path / "r", "tasks"), read_table(tmp_path / "r", "attempts")
    fixed = tasks[tasks["valid"]]
    # static's fixed set, written once by the untrained simulator; the simulator is never updated
    assert records[0].n_generated == len(tasks) and [r.n_generated for r in records[1:]] == [0] * 4
    assert backend.calls["generate"] == 1 and backend.calls["rwr"] == 0
    assert all(r.env_version == 0 and r.extra["rwr/steps"] == 0 for r in records)
    gone: set[str] = set()
    rollouts = 0
    # every agent generation of this run is screening (no reference set, no held-out evaluation)
    assert sum(len(call) for call in backend.screened) == sum(r.extra["screen/screened"] for r in records)
    for rec in records:
        e = rec.extra
        n = e["screen/screened"]
        assert n <= cap and e["screen/rollouts"] == n * G
        assert e["screen/kept"] + e["screen/fill"] == e["fresh/tasks"] <= budget
        assert e["screen/fill"] == 0 or e["screen/kept"] < budget  # fill-up only when short of informative tasks
        assert e["screen/solved"] == len(e["screen/used_up"]) and e["screen/unsolved"] + e["screen/solved"] <= n
        assert e["screen/fill"] <= e["screen/unsolved"] + e["screen/solved"]
        ep = attempts[attempts["epoch"] == rec.epoch]
        trained = list(dict.fromkeys(ep.loc[ep["source"].isin(["fixed", "replay"]), "task_id"]))
        assert not gone & set(trained)  # a used-up task is never drawn again, fresh or replayed
        assert not gone & set(e["screen/used_up"])  # nor screened again
        fresh = list(dict.fromkeys(ep.loc[ep["source"] == "fixed", "task_id"]))
        kept = fresh[:e["screen/kept"]]  # the batch is the kept tasks, then the fill-up
        # the scripted agent's skill moves only in the GRPO step, so a kept task's GRPO p̂ is its screened p̂
        p_hat = ep.groupby("task_id")["success"].mean()
        assert all(0 < p_hat[t] < 1 for t in kept)
        assert all(p_hat[t] in (0.0, 1.0) for t in fresh[e["screen/kept"]:])
        gone |= set(e["screen/used_up"])
        assert rec.pool_size == len(fixed) - len(gone)  # used-up tasks left the pool
        rollouts += len(ep) + n * G
        assert e["cumulative/agent_rollouts"] == rollouts  # GRPO rollouts and screening rollouts
    assert gone, "the scripted agent improves every epoch: some tasks must have been used up"
    # both paths ran: epochs that found the whole budget informative, and epochs topped up
    assert any(r.extra["screen/kept"] == budget for r in records) and any(r.extra["screen/fill"] for r in records)


def test_the_cap_bounds_the_screening(cfg, tmp_path, stuck):
    """A hard fixed set (the scripted agent solves nothing): every epoch screens exactly the cap, finds nothing
    informative, and trains on the budget of unsolved tasks topped up."""
    cfg = cfg.replace(loop={"epochs": 2, "screen_factor": 2})
    records = list(run(cfg, tmp_path / "r", backend=stuck(num_generations=G, skill=0), progress=False))
    for rec in records:
        assert rec.extra["screen/screened"] == 2 * cfg.budget and rec.extra["screen/kept"] == 0
        assert rec.extra["screen/fill"] == rec.extra["fresh/tasks"] == cfg.budget
        assert rec.extra["screen/unsolved"] == 2 * cfg.budget and rec.extra["screen/used_up"] == []
    with pytest.raises(ConfigError, match="screen_factor"):
        cfg.replace(loop={"screen_factor": 0})


def _content(out):
    """Everything a run wrote that must not depend on being interrupted (timings aside)."""
    records = []
    for r in read_epochs(out):
        records.append({k: v for k, v in r.to_dict().items() if k not in ("wall_s", "phase_s")})
    tasks = read_table(out, "tasks")
    attempts = read_table(out, "attempts")
    return (records,
            json.loads(tasks.drop(columns=["features"]).to_json(orient="records")),
            json.loads(attempts.to_json(orient="records")))


@pytest.mark.parametrize("stop_after", [1, 2, 3])
def test_an_interrupted_and_resumed_online_filter_run_equals_an_uninterrupted_one(cfg, tmp_path, stop_after,
                                                                                   scripted_backend):
    """Stopped after an epoch, with the next epoch's commit torn (rows written, record half-written), then resumed
    with a fresh backend: the pool less its used-up tasks, the screening and the cumulative counts are rebuilt from
    the run directory, and every record, task and attempt equals an uninterrupted run's."""
    list(run(cfg, tmp_path / "whole", backend=scripted_backend(num_generations=G), progress=False))
    out = tmp_path / "resumed"
    gen = run(cfg, out, backend=scripted_backend(num_generations=G), progress=False)
    for _ in range(stop_after):
        next(gen)
    gen.close()
    attempts = read_table(out, "attempts")
    torn = attempts[attempts["epoch"] == stop_after].copy()
    torn["epoch"] = stop_after + 1
    torn.to_parquet(out / "attempts" / f"epoch_{stop_after + 1:03d}.parquet", index=False)
    with open(out / "epochs.jsonl", "a") as fh:
        fh.write('{"epoch": %d, "extra": {"screen/used_up": ["e001-s00-v00"' % (stop_after + 1))
    rest = list(run(cfg, out, resume=True, backend=scripted_backend(num_generations=G), progress=False))
    assert [r.epoch for r in rest] == list(range(stop_after + 1, cfg.loop.epochs + 1))
    assert _content(out) == _content(tmp_path / "whole")


def test_random_env_select_curates_the_untrained_simulators_oversampled_tasks_at_counted_cost(cfg, tmp_path,
                                                                                                recording):
    """``random_env_select``: the untrained simulator writes ``screen_factor`` × its usual number of tasks each epoch,
    the agent's rollouts screen them (no update), the in-band ones train (topped up nearest α), the simulator is
    never updated, and every rollout is counted: each epoch's ``cumulative/agent_rollouts`` grows by G × (the GRPO
    batch + the screened candidates), the same ledger every arm is compared on."""
    cfg = cfg.replace(loop={"variant": "random_env_select", "screen_factor": 3}, env={"n_variations": 2})
    backend = recording(num_generations=G)
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    tasks = read_table(tmp_path / "r", "tasks")
    before = 0
    assert sum(len(s) for s in backend.screened) == sum(r["screen/screened"] for r in records)
    for r in records:
        assert r.n_generated == cfg.env.seeds_per_epoch * cfg.env.n_variations * 3  # oversampled
        assert r["screen/screened"] <= min(r.n_valid, cfg.budget * 3)
        assert r["fresh/tasks"] == min(cfg.budget, r["screen/screened"])
        assert r["cumulative/agent_rollouts"] - before == G * (r.n_agent_prompts + r["screen/screened"])
        before = r["cumulative/agent_rollouts"]
        assert r["rwr/ran"] == 0 and r.env_version == 0
        epoch = tasks[tasks["epoch"] == r.epoch]
        assert len(epoch) == r.n_generated and epoch["p_hat"].notna().sum() == r["fresh/tasks"]
    with pytest.raises(ConfigError, match="random_env_select"):
        cfg.replace(loop={"variant": "random_env_selekt"})
