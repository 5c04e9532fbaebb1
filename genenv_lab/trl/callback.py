"""GenEnv's simulator as a curriculum for a plain ``trl.GRPOTrainer``: :class:`GenEnvCurriculum`.

The trainer stays the user's, unmodified. The curriculum reaches it through three things a ``GRPOTrainer`` already
takes: its ``train_dataset`` (:attr:`GenEnvCurriculum.dataset`, a map-style view whose rows are the curriculum's
current tasks, read when the trainer's data loader asks for them), its ``reward_funcs``
(:meth:`GenEnvCurriculum.reward_funcs`: the domain's verifier, or the user's functions, wrapped so that every
rollout's reward is kept under its task's id) and its ``callbacks`` (the curriculum itself). One curriculum epoch is
one pass of the trainer over the task batch; at its end the curriculum runs the loop's own
:func:`~genenv_lab.coevolution.loop.finish_epoch` (p̂, the α-Curriculum Reward, the band, the RWR batch and the ``env``
adapter's update with its KL anchor and cap), then the loop's :func:`~genenv_lab.coevolution.loop.plan_epoch` writes
the next
tasks. docs/trl.md says why these mechanics and not ``rollout_func`` or ``environment_factory``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from transformers import TrainerCallback

from genenv_lab.backends.base import AgentUpdate
from genenv_lab.backends.prefix import FULL
from genenv_lab.trainers.grpo import grpo_metrics
from genenv_lab.config import RunConfig, preset
from genenv_lab.domains import Domain, get_domain
from genenv_lab.coevolution.heldout import evaluate_epoch
from genenv_lab.coevolution.loop import EpochPlan, finish_epoch, plan_epoch
from genenv_lab.coevolution.session import interrupted, with_frontier
from genenv_lab.rundir.layout import BASELINE, RunDirError, adapter_dir
from genenv_lab.rundir.write import RunWriter
from genenv_lab.rundir.read import read_state
from genenv_lab.coevolution.state import restore_state
from genenv_lab.core.metrics import TRL_GLOBAL_STEP
from genenv_lab.core.types import LoopState
from genenv_lab.trl import resume as rs
from genenv_lab.trl.rewards import reward_functions
from genenv_lab.trl.tasks import EpochTasks
from genenv_lab.trl.engine import ModelEngine, agent_adapter_of, attach_env, curriculum_config, render_tokenizer
from genenv_lab.trl.engine import steps_per_epoch as _steps_per_epoch
from genenv_lab.core.metrics import AGENT_GRADIENT_CHECKPOINTING, AGENT_PREFIX_PATH, AGENT_ROLLOUTS, GRPO_LOSS


class GenEnvCurriculum(TrainerCallback):
    """GenEnv's trained simulator as the task curriculum of a user's own ``trl.GRPOTrainer``.

    The simulator is a second LoRA adapter (``env``) on the user's peft model. Its valid tasks are the trainer's
    prompts (:attr:`dataset`), each keyed by its task id so that a GRPO group's G rollouts attempt the same task;
    the rollouts' rewards (:meth:`reward_funcs`) give each task's p̂. At the end of each pass over its task batch
    the curriculum computes p̂ per task, the α-Curriculum Reward and the band, updates ``env`` by reward-weighted
    regression with the KL anchor and cap, writes the next epoch's tasks, and commits the epoch to a run directory
    that ``python app.py`` and ``genenv-lab compare`` read.

    Args:
        model (`peft.PeftModel` or `None`):
            The user's model with their LoRA adapter (the agent). The ``env`` adapter is added to it, with the same
            LoRA configuration unless ``env_lora`` is given. `None`: the trainer's model is taken when training
            begins (the user passed ``peft_config`` to ``GRPOTrainer``).
        processing_class (`PreTrainedTokenizerBase`):
            The user's tokenizer; a copy renders the prompts (a pad token, left padding, ChatML when the tokenizer
            has no chat template).
        args (`trl.GRPOConfig`):
            The trainer's configuration: the curriculum reads G, the generation batch, the learning rate, the
            objective, ``num_train_epochs`` (one curriculum epoch per pass) and ``output_dir`` (its checkpoints).
        domain (`str` or `Domain`, defaults to ``"arith"``):
            The task family: its verifier, seed tasks and the simulator's prompt (``arith``, ``count``, ``tools``, a
            ``package.module:Class``, or a :class:`~genenv_lab.domains.Domain` instance).
        run_dir (`str` or `Path`):
            The run directory it writes (``config.json``, ``epochs.jsonl``, ``tasks/``, ``attempts/``,
            ``adapters/``): the one ``genenv-lab run`` writes.
        config (`RunConfig`, `str` or `None`):
            The simulator's and the curriculum's settings (``env.*``, ``curriculum.*``, ``agent.replay_size``,
            ``agent.base_seeds``, ``agent.success_threshold``, ``loop.seed``...): a configuration, a preset's name,
            or `None` for the defaults. Agent fields that ``args`` sets are taken from ``args``.
        env_lora (`peft.LoraConfig`, *optional*):
            The simulator adapter's LoRA configuration (default: the agent's).
        resume (`bool`, defaults to `False`):
            Continue the run in ``run_dir``; pass :attr:`resume_from` to ``trainer.train(resume_from_checkpoint=...)``.
    """

    def __init__(self, model, processing_class, args, *, domain: str | Domain = "arith", run_dir: str | Path,
                 config: RunConfig | str | None = None, env_lora=None, resume: bool = False):
        _check_args(args)
        self.args = args
        self.domain = domain if isinstance(domain, Domain) else get_domain(domain)
        name = domain if isinstance(domain, str) else f"{type(domain).__module__}:{type(domain).__qualname__}"
        base = preset(config) if isinstance(config, str) else (config or RunConfig())
        self.base_config, self.domain_name, self.env_lora = base, name, env_lora
        self.seeds = self.domain.seed_tasks()
        self.tokenizer = render_tokenizer(processing_class)
        p = args.generation_batch_size // args.num_generations
        a = base.agent
        self.size = math.ceil((base.budget + a.replay_size + a.base_seeds) / p) * p
        """Tasks per curriculum epoch: the loop's largest batch (fresh, replay and base seeds), a multiple of the
        generation batch's prompts, padded with seed tasks when fewer are valid."""
        self.run_dir, self.resume = Path(run_dir), resume
        self.model, self.engine, self.writer, self.cfg = model, None, None, None
        self.state: LoopState = LoopState()
        self.tasks = EpochTasks(self.size, args.num_generations)
        self.dataset = self.tasks.dataset
        """The trainer's ``train_dataset`` (:attr:`EpochTasks.dataset`): the epoch in flight's tasks."""
        self._logs: list[dict[str, Any]] = []
        self._mid_epoch: dict[str, Any] | None = None
        self._started_at, self._start_step = 0.0, 0
        if model is not None:
            self._open(model)

    @property
    def plan(self) -> EpochPlan | None:
        """The epoch in flight (its batch, rollouts and rewards so far), None between epochs."""
        return self.tasks.plan

    # ------------------------------------------------------------------------------------------- what TRL uses
    @property
    def steps_per_epoch(self) -> int:
        """The trainer's optimiser steps in one curriculum epoch."""
        return _steps_per_epoch(self.args, self.size)

    @property
    def resume_from(self) -> str | None:
        """The checkpoint to resume the trainer from (``trainer.train(resume_from_checkpoint=...)``): the newest
        one that the trainer and the curriculum both finished writing; None for a fresh run."""
        return rs.last_checkpoint(self.args.output_dir) if self.resume else None

    def reward_funcs(self, *funcs: Callable[..., Sequence[float | None]]) -> list[Callable[..., list]]:
        """The trainer's ``reward_funcs``: the domain's verifier when none are given, else ``funcs`` (TRL's signature,
        ``f(prompts, completions, **columns)``; the dataset's ``task_id``, ``question`` and ``answer`` columns are
        passed), each returning its rewards unchanged. Every rollout's total reward (TRL's ``reward_weights``
        applied) is kept under its task id; a rollout succeeds when it reaches ``agent.success_threshold``. Pass all
        of the trainer's reward functions through here, in the trainer's order."""
        return reward_functions(funcs, verifier_name=f"{self.domain.name}_verifier", weights=self.args.reward_weights,
                                plan=lambda: self.tasks.plan, check_group=self.tasks.check_group)

    def train(self, trainer, **kwargs: Any):
        """``trainer.train(resume_from_checkpoint=self.resume_from, **kwargs)``, and when it raises (a reward
        function's error, Ctrl-C, a notebook's stop button) the run is marked ``interrupted`` (Ctrl-C) or ``failed``
        with the error in ``events.log`` and its lock released, so that a retry in the same process continues it
        with ``resume=True``; the exception is raised again. Calling ``trainer.train`` directly works too: a later
        curriculum of the same process takes the run's lock over from this one."""
        kwargs.setdefault("resume_from_checkpoint", self.resume_from)
        try:
            return trainer.train(**kwargs)
        except BaseException as exc:
            self.abandon(exc)
            raise

    def abandon(self, exc: BaseException) -> None:
        """The trainer stopped on ``exc``: mark the run ``interrupted`` or ``failed`` and release its lock (a run
        already finished, or never opened, is left as it is)."""
        writer = self.writer
        if writer is None or not writer.holds_lock:
            return
        if interrupted(exc):
            writer.finish(self.state.env_version, status="interrupted")
        else:
            writer.fail(exc, self.state.env_version)

    # ------------------------------------------------------------------------------------------ the callback
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        """Take the trainer's model when none was given; on a resume, reconcile the run directory with the
        checkpoint the trainer resumed from; write the epoch's tasks."""
        if self.plan is not None:
            return
        if self.engine is None:
            self._open(model)
        with _own_rng():
            try:
                self._restore(state.global_step)
            except RunDirError as exc:  # refused before anything ran: the run's state as it was, the lock let go
                self.writer.fail(exc, self.state.env_version)
                raise
            if self.state.epoch < self.cfg.loop.epochs:
                self._plan()
            if self._mid_epoch is not None and self._restore_rollouts(self._mid_epoch) and not self.tasks.missing():
                # the checkpoint ends a pass: the trainer counts it done and calls no on_epoch_end for it, so the
                # epoch is finished here, as on_epoch_end would have, and committed (its checkpoint exists)
                self.writer.event(f"epoch {self.state.epoch + 1} finished on resume: the checkpoint at step "
                                  f"{state.global_step} holds its whole pass")
                self._finish(state)
                rs.commit_staged(self.writer)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.plan is not None and logs:
            self._logs.append(dict(logs))

    def on_epoch_end(self, args, state, control, **kwargs):
        """A pass over the task batch is over: finish the curriculum epoch (the loop's steps), stage it, write the
        next tasks and ask the trainer for the checkpoint that commits it."""
        plan = self.plan
        if plan is None:
            return
        missing = self.tasks.missing()
        if missing:  # the trainer stopped inside the pass (max_steps): the epoch stays unfinished
            self.writer.event(f"epoch {plan.state.epoch + 1} not finished: {len(missing)} of its tasks were not "
                              "rolled out when the trainer's pass ended")
            return
        with _own_rng():
            self._finish(state)
        control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        """The trainer wrote a checkpoint: add the curriculum's file to it, then commit a staged epoch."""
        folder = rs.checkpoint_dir(args.output_dir, state.global_step)
        if folder.is_dir():
            rs.write_checkpoint_state(folder, self._checkpoint_state(state.global_step))
        staged = rs.staged_step(self.writer.dir)
        if staged is not None and staged[1] <= state.global_step:
            rs.commit_staged(self.writer)

    def on_train_end(self, args, state, control, **kwargs):
        if self.writer is not None:
            self.writer.finish(self.state.env_version)

    # -------------------------------------------------------------------------------------------- internals
    def _finish(self, state) -> None:
        """The epoch in flight after its pass: the loop's :func:`finish_epoch`, the held-out evaluation when due,
        the epoch staged at the trainer's step (committed once a checkpoint holds it), the next epoch's tasks."""
        update = _agent_update(self.args, self._logs, self.plan, time.perf_counter() - self._started_at,
                               state.global_step - self._start_step)
        self.state, result = finish_epoch(self.plan, self.engine, self.domain, self.cfg, update)
        later = {TRL_GLOBAL_STEP: state.global_step}
        if self.cfg.eval.every and self.state.epoch % self.cfg.eval.every == 0:
            later.update(scores := evaluate_epoch(self.engine, self.cfg, self.writer.dir, self.state.epoch))
            self.state = with_frontier(self.state, scores)
        result = dataclasses.replace(result, record=result.record.with_extra(later))
        rs.stage(self.writer.dir, result, state.global_step, self.engine.save_adapters)
        self.tasks.serve(None)
        self._logs = []
        if self.state.epoch < self.cfg.loop.epochs:
            self._plan()
        self._start_step = state.global_step

    def _open(self, model) -> None:
        """Add the ``env`` adapter, build the engine around the model, open (or resume) the run directory."""
        if model is None:
            raise ValueError("GenEnvCurriculum has no model: pass the peft model, or add the curriculum to a "
                             "GRPOTrainer's callbacks")
        agent = agent_adapter_of(model)
        epochs = self.args.num_train_epochs if self.args.max_steps <= 0 else \
            self.args.max_steps / self.steps_per_epoch
        self.cfg = curriculum_config(self.base_config, self.args, self.domain_name, model, agent, math.ceil(epochs))
        if self.cfg.loop.variant == "offline_teacher":
            raise ValueError("GenEnvCurriculum does not run the offline_teacher baseline (it needs a second model)")
        used = rs.curriculum_checkpoints(self.args.output_dir) if not self.resume else []
        if used:
            raise RunDirError(f"output_dir {self.args.output_dir} holds a curriculum run's checkpoints "
                              f"({used[-1].name}): a fresh run would overwrite them; choose an empty output_dir, or "
                              "pass resume=True to continue that run")
        attach_env(model, agent, self.env_lora, self.cfg.loop.seed)
        self.model, self.engine = model, ModelEngine(self.cfg, model, self.tokenizer, agent)
        try:
            self.writer = RunWriter(self.run_dir, self.cfg, resume=self.resume, reclaim=True)
        except RunDirError as exc:
            raise RunDirError(str(exc).replace("pass --resume", "pass resume=True")) from None
        for warning in self.cfg.warnings():
            self.writer.event("warning: " + warning)
            warnings.warn(warning, stacklevel=3)

    def _identity(self) -> dict[str, str]:
        return rs.run_identity(self.writer.dir, self.cfg)

    def _restore(self, step: int) -> None:
        """The curriculum's state at the trainer's ``step``: the staged epoch committed when the checkpoint holds
        it, the ``env`` adapter, the pool and the consumption as the last committed epoch left them."""
        self._mid_epoch = None
        saved = rs.checked_checkpoint(self.args.output_dir, step, self._identity())
        staged = rs.staged_step(self.writer.dir)
        if staged is not None:
            if staged[0] == self.writer.last_epoch + 1 and staged[1] <= step:
                rs.commit_staged(self.writer)
            else:
                rs.discard_staged(self.writer.dir)
        last = self.writer.last_epoch
        last_step = rs.committed_step(self.writer.dir, last)
        if step < last_step:
            wanted = rs.checkpoint_dir(self.args.output_dir, last_step)
            raise RunDirError(f"the trainer resumed at step {step}, before the run's last committed epoch {last} "
                              f"(step {last_step}): resume from GenEnvCurriculum.resume_from ({wanted} or later)"
                              + ("" if wanted.is_dir() else f"; that checkpoint is gone: start a new run from the "
                                 f"agent adapter {adapter_dir(self.writer.dir, last) / 'agent'}"))
        if last:
            self.engine.load_env(adapter_dir(self.writer.dir, last))
            self.state = restore_state(self.writer.dir, last, int(read_state(self.writer.dir)["env_version"]),
                                       self.cfg, self.domain)
        elif self.cfg.eval.every and not (self.writer.dir / BASELINE).is_file():
            scores = evaluate_epoch(self.engine, self.cfg, self.writer.dir, 0)
            self.writer.write_baseline(scores)
            self.state = with_frontier(self.state, scores)
        self._start_step = last_step
        if step > last_step:
            self._mid_epoch = saved or {}

    def _plan(self) -> None:
        plan = plan_epoch(self.state, self.engine, self.domain, self.seeds, self.cfg, size=self.size)
        self.tasks.serve(plan, {b.task_id: self.engine.chat_prompt(self.domain.agent_messages(b.spec))
                                for b in plan.batch})
        self._logs = []
        self._started_at = time.perf_counter()

    def _restore_rollouts(self, saved: dict[str, Any]) -> bool:
        """The rollouts of the epoch in flight before a mid-epoch checkpoint (and its logged steps), when the
        checkpoint holds them for the same tasks (True); else the epoch goes on with what is rolled out from here
        (False)."""
        if not (saved.get("epoch") == self.state.epoch and self.tasks.restore(saved)):
            self.writer.event(f"warning: resumed inside epoch {self.state.epoch + 1} without its earlier rollouts "
                              "(the checkpoint holds none for these tasks); its p̂ counts the rollouts from here")
            return False
        self._logs = list(saved["logs"])
        self._started_at -= float(saved.get("elapsed", 0.0))
        return True

    def _checkpoint_state(self, step: int) -> dict[str, Any]:
        return {"format": 1, "run": self._identity(), "epoch": self.state.epoch, "global_step": step,
                **self.tasks.in_flight(), "logs": self._logs, "elapsed": time.perf_counter() - self._started_at}


def _agent_update(args, logs: list[dict[str, Any]], plan: EpochPlan, wall: float, steps: int) -> AgentUpdate:
    """The epoch's agent update as the record states it: TRL's logged metrics averaged (``grpo/*``), how the user's
    trainer ran (``agent/*``), its steps and wall time."""
    metrics = {**grpo_metrics(logs), AGENT_PREFIX_PATH: FULL,
               AGENT_GRADIENT_CHECKPOINTING: bool(args.gradient_checkpointing),
               AGENT_ROLLOUTS: "vllm" if getattr(args, "use_vllm", False) else "transformers"}
    plan.timer.seconds["agent_update"] = max(wall, 0.0)
    return AgentUpdate(loss=metrics[GRPO_LOSS], update_s=max(wall, 0.0), steps=steps, metrics=metrics)


def _own_rng():
    """The curriculum's sampling (the simulator, the RWR update) leaves the trainer's random stream as it was."""
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    return torch.random.fork_rng(devices=devices)


def _check_args(args) -> None:
    """What the curriculum needs of the trainer's configuration, refused in one line otherwise."""
    problems = []
    if getattr(args, "world_size", 1) > 1:
        problems.append("one process (a data-parallel run would keep each process's rollouts apart)")
    if args.dataloader_num_workers:
        problems.append("dataloader_num_workers=0 (a worker process would read a stale copy of the tasks)")
    if args.remove_unused_columns:
        problems.append("remove_unused_columns=False (GRPOConfig's default: the dataset's slot column is read)")
    if problems:
        raise ValueError("GenEnvCurriculum needs " + "; ".join(problems))
