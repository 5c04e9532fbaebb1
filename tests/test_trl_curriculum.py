"""GenEnv in a TRL user's own script (docs/trl.md): an unmodified ``trl.GRPOTrainer``, built as a user builds it, on
the tiny model with :class:`genenv_lab.GenEnvCurriculum`; the loop's epoch and the curriculum's held to the same
tasks, p̂ and RWR batch; SIGKILL at each window of the commit protocol and at a random moment, then resume; the
doc page's script as written; the Unsloth venv's TRL when that venv exists."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "trl_curriculum_driver.py"
UNSLOTH_PY = Path(os.environ.get("GENENV_LAB_UNSLOTH_PY", ROOT / ".venv-unsloth" / "bin" / "python"))


def _user_trainer(out: Path, *, epochs: int = 2, reward_funcs=None, resume: bool = False, **config):
    """What a user writes (docs/trl.md), on the tiny model: their peft model, GRPOConfig and GRPOTrainer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from genenv_lab import GenEnvCurriculum
    from genenv_lab.trl import tiny_model

    model_dir = tiny_model("arith")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    args = GRPOConfig(output_dir=str(out / "trainer"), num_generations=4, per_device_train_batch_size=8,
                      max_completion_length=12, num_train_epochs=epochs, learning_rate=1e-3, logging_steps=1,
                      report_to="none", use_cpu=True, **config)
    curriculum = GenEnvCurriculum(model, tokenizer, args, domain="arith", run_dir=out / "runs" / "run",
                                  config="tiny", resume=resume)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                          reward_funcs=curriculum.reward_funcs(*(reward_funcs or ())),
                          train_dataset=curriculum.dataset, callbacks=[curriculum])
    return trainer, curriculum, model


def _adapter(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def test_an_unmodified_grpo_trainer_trains_on_the_curriculum_and_the_lab_reads_it(tmp_path):
    from peft import get_peft_model_state_dict
    from trl import GRPOTrainer

    from genenv_lab.lab.figures import curves_figure, difficulty_figure
    from genenv_lab.lab.glance import glance_figure
    from genenv_lab.lab.runs import discover_runs, load_run
    from genenv_lab.lab.views import run_card
    from genenv_lab.rundir.layout import RunDirError
    from genenv_lab.rundir.read import read_epochs, read_state, read_table

    trainer, curriculum, model = _user_trainer(tmp_path)
    assert type(trainer) is GRPOTrainer  # TRL's class itself, nothing overridden
    env0 = {k: v.clone() for k, v in get_peft_model_state_dict(model, adapter_name="env").items()}
    trainer.train(resume_from_checkpoint=curriculum.resume_from)

    run = tmp_path / "runs" / "run"
    records = read_epochs(run)
    assert [r["epoch"] for r in records] == [1, 2] and read_state(run)["status"] == "finished"
    for r in records:
        assert 0.0 <= r["p_hat_mean"] <= 1.0 and 0.0 <= r["in_band_frac"] <= 1.0
        assert r["extra"]["rwr/ran"] == 1.0 and r["extra"]["rwr/steps"] > 0 and r["extra"]["rwr/kl"] is not None
        assert r["n_agent_prompts"] == curriculum.size and r["extra"]["grpo/loss"] is not None
    assert [r["extra"]["trl/global_step"] for r in records] == [curriculum.steps_per_epoch * e for e in (1, 2)]
    doc = (ROOT / "docs" / "run_directory.md").read_text()  # the same keys as the loop's, each documented
    keys = [k for r in records for k in [*r, *r["extra"]]]
    assert not [k for k in keys if f"`{k}`" not in doc and f"`extra.{k}`" not in doc
                and not re.search(rf"{re.escape(k.split('/')[0])}/<\w+>", doc)]
    attempts = read_table(run, "attempts")  # every task of each epoch rolled out exactly G times
    assert set(attempts.groupby(["epoch", "task_id"]).size()) == {4}
    env_after = get_peft_model_state_dict(model, adapter_name="env")
    assert any(not torch.equal(env0[k], env_after[k]) for k in env0), "the simulator (env adapter) did not train"
    epoch1, epoch2 = _adapter(run / "adapters/epoch_001/env"), _adapter(run / "adapters/epoch_002/env")
    assert any(not torch.equal(epoch1[k], epoch2[k]) for k in epoch1)
    assert not (run / "trl_pending").exists()

    summaries = discover_runs(tmp_path / "runs")  # the lab's run list, its card and the Curriculum tab's figures
    assert [s.name for s in summaries] == ["run"]
    data = load_run(run)
    assert data.status == "finished" and data.epochs_done == 2 and len(data.tasks) and not data.problems
    assert data.domain == "arith" and data.num_generations == 4 and "arith" in run_card(data)
    for fig in (glance_figure(data), difficulty_figure(data), curves_figure([data])):
        assert len(fig.data) > 0

    # resuming the trainer from a checkpoint older than the last committed epoch is refused, nothing changed
    trainer, curriculum, _ = _user_trainer(tmp_path, epochs=3, resume=True)
    older = tmp_path / "trainer" / f"checkpoint-{curriculum.steps_per_epoch}"
    with pytest.raises(RunDirError, match="before the run's last committed epoch 2"):
        trainer.train(resume_from_checkpoint=str(older))
    assert [r["epoch"] for r in read_epochs(run)] == [1, 2]


def test_the_users_own_reward_functions_are_recorded_per_task(tmp_path):
    from genenv_lab.rundir.read import read_epochs, read_table

    def always(completions, **_):
        return [1.0] * len(completions)

    def half(completions, task_id, **_):
        return [0.5 if t else None for t in task_id]

    trainer, _, _ = _user_trainer(tmp_path, epochs=1, reward_funcs=(always, half), reward_weights=[0.5, 1.0])
    trainer.train()
    attempts = read_table(tmp_path / "runs" / "run", "attempts")
    assert set(attempts["reward"]) == {1.0} and attempts["success"].all()  # 0.5 · 1 + 1 · 0.5, TRL's total
    assert read_epochs(tmp_path / "runs" / "run")[0]["p_hat_mean"] == 1.0


def test_loop_epoch_and_curriculum_epoch_give_the_same_tasks_p_hat_and_rwr_batch(tmp_path):
    """One epoch of the loop (its own GRPO trainer) and one of the curriculum (the user's GRPOTrainer, configured as
    the loop configures its own), same tiny model, same seeds: the same named steps give the same generations, the
    same p̂ and band per task, and the same weighted RWR batch."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    import genenv_lab.trl.driver as driver
    from genenv_lab.trainers.grpo import grpo_settings
    from genenv_lab.backends.factory import make_backend, prepare_base
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain
    from genenv_lab.coevolution.loop import run_epoch
    from genenv_lab.core.seeds import trainer_seed
    from genenv_lab.trl import GenEnvCurriculum
    from genenv_lab.core.types import LoopState

    cfg = preset("tiny").replace(agent={"prompts_per_step": 8, "replay_size": 0}, model={"shared_prefix": False},
                                 loop={"epochs": 1})
    domain = get_domain("arith")
    batches = {}

    def capturing(engine, key):
        step = engine.train_env

        def train_env(trainer, examples):
            batches[key] = list(examples)
            return step(trainer, examples)
        engine.train_env = train_env

    backend = make_backend(cfg, domain)
    capturing(backend, "loop")
    _, loop_result = run_epoch(LoopState(), backend, domain, domain.seed_tasks(), cfg)

    path = prepare_base(cfg, domain)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(path),
                           LoraConfig(r=4, lora_alpha=8, target_modules=list(cfg.model.target_modules)))
    args = GRPOConfig(**grpo_settings(cfg, output_dir=str(tmp_path / "out"), seed=trainer_seed(cfg.loop.seed, 1)),
                      use_cpu=True)
    curriculum = GenEnvCurriculum(model, tokenizer, args, domain="arith", run_dir=tmp_path / "run", config=cfg)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer, reward_funcs=curriculum.reward_funcs(),
                          train_dataset=curriculum.dataset, callbacks=[curriculum])
    results = []
    finish = driver.finish_epoch

    def finish_and_keep(plan, engine, *args, **kwargs):
        capturing(engine, "curriculum")
        out = finish(plan, engine, *args, **kwargs)
        results.append(out[1])
        return out

    driver.finish_epoch = finish_and_keep
    try:
        trainer.train()
    finally:
        driver.finish_epoch = finish
    (mine,) = results

    def tasks(result):
        return [(t.task_id, t.raw, t.valid, t.question, t.answer) for t in result.tasks]

    def measured(result):
        return [(t.task_id, t.p_hat, t.env_reward, t.in_band, t.weight) for t in result.tasks]

    assert tasks(mine) == tasks(loop_result) and sum(t.valid for t in mine.tasks) > 0
    assert measured(mine) == measured(loop_result)
    assert batches["curriculum"] == batches["loop"] and batches["loop"]
    assert mine.record.p_hat_mean == loop_result.record.p_hat_mean
    assert mine.record.in_band_frac == loop_result.record.in_band_frac


def _driver(out: Path, *args: str, python: str = sys.executable, env_extra: dict | None = None,
            check_kill: bool | None = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env_extra or {})}
    proc = subprocess.run([python, str(DRIVER), str(out), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    if check_kill is not None:
        want = -signal.SIGKILL if check_kill else 0
        assert proc.returncode == want, f"{args}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    return proc


def _committed(run: Path) -> list[dict]:
    from genenv_lab.rundir.read import read_epochs, read_state

    if not (run / "state.json").is_file():
        return []
    last = read_state(run)["last_complete_epoch"]
    return [r for r in read_epochs(run) if r["epoch"] <= last]


def _check_finished(run: Path, before: list[dict], epochs: int = 3) -> None:
    from genenv_lab.rundir.read import read_state, read_table

    after = _committed(run)
    assert after[:len(before)] == before, "a committed epoch changed or was lost across the kill"
    assert [r["epoch"] for r in after] == list(range(1, epochs + 1)) and read_state(run)["status"] == "finished"
    assert not (run / "trl_pending").exists()
    attempts = read_table(run, "attempts")
    assert set(attempts.groupby(["epoch", "task_id"]).size()) == {4}, "a task of an epoch not rolled out G times"


def test_sigkill_at_each_window_of_the_commit_then_resume_loses_no_committed_epoch(tmp_path):
    """Killed after epoch 1's checkpoint before its commit (committed on the resume), after epoch 2 was staged
    before its checkpoint (discarded: the trainer resumes mid-epoch 2 from a step checkpoint and trains it again),
    and after step 11, mid-epoch 3 (its rollouts so far restored from checkpoint 10); the run completes."""
    run = tmp_path / "run"
    _driver(tmp_path, "--kill", "commit:1", check_kill=True)
    assert _committed(run) == [] and (run / "trl_pending").is_dir()
    _driver(tmp_path, "--resume", "--kill", "stage:2", check_kill=True)
    after_first = _committed(run)
    assert [r["epoch"] for r in after_first] == [1]
    _driver(tmp_path, "--resume", "--kill", "step:11", check_kill=True)
    assert _committed(run)[:1] == after_first and len(_committed(run)) == 2
    before = _committed(run)
    _driver(tmp_path, "--resume")
    _check_finished(run, before)
    assert "without its earlier rollouts" not in (run / "events.log").read_text()


def test_a_kill_while_finishing_an_epoch_whose_last_step_is_a_checkpoint_then_resume(tmp_path):
    """Round 6, T1: the trainer's step checkpoint at the end of epoch 2's pass exists when the kill lands in its
    finish_epoch; the resumed trainer counts the pass done and calls no on_epoch_end for it, so the curriculum
    finishes the epoch on resume. Every planned epoch is committed, each task rolled out exactly G times."""
    run = tmp_path / "run"
    _driver(tmp_path, "--kill", "finish:2", check_kill=True)
    before = _committed(run)
    assert [r["epoch"] for r in before] == [1]
    _driver(tmp_path, "--resume")
    _check_finished(run, before)
    assert "epoch 2 finished on resume" in (run / "events.log").read_text()


def test_a_checkpoint_names_its_run(tmp_path):
    """Round 6, T2: a fresh run into an output_dir that holds another run's curriculum checkpoints is refused, and so
    is a resume from another run's checkpoint; nothing of the other run is touched. T3: with the run's checkpoints
    gone, its resume is refused in words that say what to start from, and the finished run stays finished."""
    _driver(tmp_path, "--epochs", "1")
    trainer_dir = tmp_path / "trainer"
    snapshot = sorted((p.relative_to(trainer_dir), p.stat().st_mtime_ns) for p in trainer_dir.rglob("*"))
    fresh = _driver(tmp_path, "--epochs", "1", "--run", "other", check_kill=None)
    assert fresh.returncode != 0 and "holds a curriculum run's checkpoints" in fresh.stderr
    resumed = _driver(tmp_path, "--epochs", "2", "--run", "other", "--resume", check_kill=None)
    assert resumed.returncode != 0 and "is a checkpoint of another run" in resumed.stderr
    assert sorted((p.relative_to(trainer_dir), p.stat().st_mtime_ns) for p in trainer_dir.rglob("*")) == snapshot
    # T3: the run's own checkpoints deleted, a resume is refused naming what to start from; the run stays finished
    from genenv_lab.rundir.read import read_state

    shutil.rmtree(trainer_dir)
    gone = _driver(tmp_path, "--epochs", "2", "--resume", check_kill=None)
    assert gone.returncode != 0 and "that checkpoint is gone: start a new run from the agent adapter" in gone.stderr
    assert read_state(tmp_path / "run")["status"] == "finished"


def test_a_retry_in_the_same_process_after_the_trainer_raised(tmp_path):
    """Round 6, T4/T5: a trainer that raises (here a reward function's error) leaves the run marked failed with the
    error in events.log, and a new curriculum with resume=True in the same process (a notebook kernel) trains it
    on, through ``curriculum.train`` or after a bare ``trainer.train``."""
    from genenv_lab.rundir.read import read_epochs, read_state

    def broken(prompts=None, completions=None, **kwargs):
        raise ValueError("my reward function is broken")

    run = tmp_path / "runs" / "run"
    trainer, curriculum, _ = _user_trainer(tmp_path, epochs=1, reward_funcs=[broken])
    with pytest.raises(ValueError, match="broken"):
        curriculum.train(trainer)
    assert read_state(run)["status"] == "failed" and "my reward function is broken" in (run / "events.log").read_text()
    trainer, curriculum, _ = _user_trainer(tmp_path, epochs=1, reward_funcs=[broken], resume=True)
    with pytest.raises(ValueError, match="broken"):
        trainer.train(resume_from_checkpoint=curriculum.resume_from)  # no curriculum.train: nothing marks it
    trainer, curriculum, _ = _user_trainer(tmp_path, epochs=1, resume=True)
    curriculum.train(trainer)
    assert [r["epoch"] for r in read_epochs(run)] == [1] and read_state(run)["status"] == "finished"
    assert "lock taken over" in (run / "events.log").read_text()


def test_rollouts_given_no_finite_reward_are_counted_and_left_out_of_p_hat(tmp_path):
    """Round 6, T6: NaN, None and inf from a user's reward function are no reward: counted as score errors, never a
    failure or a success in p̂."""
    from genenv_lab.rundir.read import read_epochs, read_table

    def none_or_nan(prompts=None, completions=None, **kwargs):
        return [None if i % 3 == 0 else (math.nan if i % 3 == 1 else math.inf) for i in range(len(completions))]

    trainer, curriculum, _ = _user_trainer(tmp_path, epochs=1, reward_funcs=[none_or_nan])
    curriculum.train(trainer)
    run = tmp_path / "runs" / "run"
    (record,) = read_epochs(run)
    attempts = read_table(run, "attempts")
    assert record["extra"]["agent/score_errors"] == len(attempts) > 0
    assert all(record[k] is None or math.isnan(record[k]) for k in ("p_hat_mean", "in_band_frac"))
    assert attempts["reward"].isna().all() and not attempts["success"].any()


def test_sigkill_at_a_moment_in_the_middle_then_resume(tmp_path):
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, str(DRIVER), str(tmp_path)], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not (run / "epochs.jsonl").is_file() or not (run / "epochs.jsonl").read_text().strip():
            assert child.poll() is None and time.time() < deadline, "the run ended before its first commit"
            time.sleep(0.05)
        time.sleep(0.3)  # somewhere in epoch 2
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    before = _committed(run)
    assert len(before) >= 1
    _driver(tmp_path, "--resume")
    _check_finished(run, before)


def test_the_docs_script_runs_as_written(tmp_path):
    page = (ROOT / "docs" / "trl.md").read_text()
    (script,) = re.findall(r"## The script\n\n```python\n(.*?)```", page, re.S)
    assert len(script.strip().splitlines()) <= 18
    (tmp_path / "grpo_genenv.py").write_text(script)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "grpo_genenv.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    records = [json.loads(line) for line in (tmp_path / "runs/trl-arith/epochs.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2]


@pytest.mark.engines  # needs .venv-unsloth: runs with the engines tier, after scripts/test.sh's set-up of it
@pytest.mark.skipif(not UNSLOTH_PY.is_file(), reason=f"no Unsloth venv at {UNSLOTH_PY} (scripts/setup_unsloth_cpu.sh)")
def test_the_unsloth_venvs_trl_trains_kills_and_resumes(tmp_path):
    """The other TRL the project supports (the Unsloth venv's), Unsloth imported first as its users do: killed
    between epoch 1's checkpoint and its commit, then resumed to the end."""
    run = tmp_path / "run"
    env = {"PYTHONPATH": str(ROOT), "GENENV_LAB_CACHE": str(tmp_path / "cache")}
    _driver(tmp_path, "--unsloth", "--epochs", "2", "--kill", "commit:1", python=str(UNSLOTH_PY), env_extra=env,
            check_kill=True)
    _driver(tmp_path, "--unsloth", "--epochs", "2", "--resume", python=str(UNSLOTH_PY), env_extra=env)
    _check_finished(run, [], epochs=2)


def test_the_trainer_may_make_the_peft_model_and_another_domain_serves(tmp_path):
    """``peft_config`` given to the trainer instead of a peft model: the curriculum takes the trainer's model when
    training begins; the ``count`` domain brings its own verifier, seeds and simulator prompt; the simulator's
    weights never enter the trainer's optimiser."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from genenv_lab import GenEnvCurriculum
    from genenv_lab.rundir.read import read_epochs, read_table
    from genenv_lab.trl import tiny_model

    model_dir = tiny_model("count")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    args = GRPOConfig(output_dir=str(tmp_path / "trainer"), num_generations=4, per_device_train_batch_size=8,
                      max_completion_length=12, num_train_epochs=1, learning_rate=1e-3, report_to="none",
                      use_cpu=True)
    curriculum = GenEnvCurriculum(None, tokenizer, args, domain="count", run_dir=tmp_path / "run", config="tiny")
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args,
                          processing_class=tokenizer, reward_funcs=curriculum.reward_funcs(),
                          train_dataset=curriculum.dataset, callbacks=[curriculum],
                          peft_config=LoraConfig(r=4, target_modules="all-linear"))
    trainer.train()
    assert sorted(trainer.model.peft_config) == ["default", "env"]
    optimised = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert not [n for n, p in trainer.model.named_parameters() if ".env." in n and id(p) in optimised]
    assert read_epochs(tmp_path / "run")[0]["extra"]["rwr/steps"] > 0
    tasks = read_table(tmp_path / "run", "tasks")
    assert tasks["context"].str.contains("Seed task").all() and tasks["root_id"].str.startswith("count").all()


def test_what_the_curriculum_needs_of_the_trainers_configuration_is_refused_in_one_line():
    """A worker process for the data loader, the unused columns removed, and under several processes a GRPO group
    split across two of them: each refused, all in one line; a launch whose groups lie on one process passes."""
    from types import SimpleNamespace

    from genenv_lab.trl.callback import _check_args

    fine = dict(world_size=2, per_device_train_batch_size=4, steps_per_generation=1, num_generations=4,
                dataloader_num_workers=0, remove_unused_columns=False)
    _check_args(SimpleNamespace(**fine))
    bad = SimpleNamespace(**{**fine, "per_device_train_batch_size": 2, "dataloader_num_workers": 1})
    with pytest.raises(ValueError) as refused:
        _check_args(bad)
    message = str(refused.value)
    assert "\n" not in message and "dataloader_num_workers=0" in message
    assert "under 2 processes" in message and "(2) a multiple of num_generations (4)" in message
    _check_args(SimpleNamespace(**{**fine, "world_size": 1, "per_device_train_batch_size": 2}))  # one process
