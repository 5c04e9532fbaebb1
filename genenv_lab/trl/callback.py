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

import math
from pathlib import Path
from typing import Any, Callable, Sequence

from transformers import TrainerCallback

from genenv_lab.config import RunConfig, preset
from genenv_lab.domains import Domain, get_domain
from genenv_lab.rundir import staging
from genenv_lab.trl import resume as rs
from genenv_lab.trl.driver import EpochDriver, own_rng
from genenv_lab.trl.rewards import reward_functions
from genenv_lab.trl.engine import render_tokenizer
from genenv_lab.trl.engine import steps_per_epoch as _steps_per_epoch


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
        p = args.generation_batch_size // args.num_generations
        a = base.agent
        self.size = math.ceil((base.budget + a.replay_size + a.base_seeds) / p) * p
        """Tasks per curriculum epoch: the loop's largest batch (fresh, replay and base seeds), a multiple of the
        generation batch's prompts, padded with seed tasks when fewer are valid."""
        self.resume = resume
        self.driver = EpochDriver(args, self.domain, name, base, env_lora, render_tokenizer(processing_class),
                                  self.size, Path(run_dir), resume)
        """The epochs on the loop's own steps (:class:`~genenv_lab.trl.driver.EpochDriver`)."""
        self.dataset = self.driver.tasks.dataset
        """The trainer's ``train_dataset`` (:attr:`~genenv_lab.trl.tasks.EpochTasks.dataset`): the epoch in flight's
        tasks."""
        if model is not None:
            self.driver.open(model)

    # ------------------------------------------------------------------------------------------- what TRL uses
    @property
    def steps_per_epoch(self) -> int:
        """The trainer's optimiser steps in one curriculum epoch."""
        return _steps_per_epoch(self.args, self.size)

    @property
    def resume_from(self) -> str | None:
        """The checkpoint to resume the trainer from (``trainer.train(resume_from_checkpoint=...)``): the newest
        one that the trainer and the curriculum both finished writing (on several processes, the newest between two
        passes: :func:`~genenv_lab.trl.resume.inside_a_pass`); None for a fresh run."""
        if not self.resume:
            return None
        return rs.last_checkpoint(self.args.output_dir, whole_passes=self.driver.procs.world_size > 1)

    def reward_funcs(self, *funcs: Callable[..., Sequence[float | None]]) -> list[Callable[..., list]]:
        """The trainer's ``reward_funcs``: the domain's verifier when none are given, else ``funcs`` (TRL's signature,
        ``f(prompts, completions, **columns)``; the dataset's ``task_id``, ``question`` and ``answer`` columns are
        passed), each returning its rewards unchanged. Every rollout's total reward (TRL's ``reward_weights``
        applied) is kept under its task id; a rollout succeeds when it reaches ``agent.success_threshold``. Pass all
        of the trainer's reward functions through here, in the trainer's order."""
        return reward_functions(funcs, verifier_name=f"{self.domain.name}_verifier", weights=self.args.reward_weights,
                                plan=lambda: self.driver.plan, check_group=self.driver.tasks.check_group)

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
        """The trainer stopped on ``exc``: mark the run ``interrupted`` or ``failed`` and release its lock
        (:meth:`EpochDriver.abandon <genenv_lab.trl.driver.EpochDriver.abandon>`)."""
        self.driver.abandon(exc)

    # ------------------------------------------------------------------------------------------ the callback
    def on_train_begin(self, args, state, control, model=None, **kwargs):
        """Take the trainer's model when none was given; on a resume, reconcile the run directory with the
        checkpoint the trainer resumed from; write the epoch's tasks."""
        if self.driver.plan is not None:
            return
        if self.driver.engine is None:
            self.driver.open(model)
        with own_rng():
            self.driver.begin(state)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.driver.plan is not None and logs:
            self.driver.logs.append(dict(logs))

    def on_epoch_end(self, args, state, control, **kwargs):
        """A pass over the task batch is over: finish the curriculum epoch (the loop's steps), stage it, write the
        next tasks and ask the trainer for the checkpoint that commits it."""
        d = self.driver
        if d.plan is None:
            return
        d.tasks.share(d.procs)
        missing = d.tasks.missing()
        if missing:  # the trainer stopped inside the pass (max_steps): the epoch stays unfinished
            d.writer.event(f"epoch {d.plan.state.epoch + 1} not finished: {len(missing)} of its tasks were not "
                           "rolled out when the trainer's pass ended")
            return
        with own_rng():
            d.finish(state)
        control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        """The trainer wrote a checkpoint: add the curriculum's file to it, then commit a staged epoch."""
        d = self.driver
        d.tasks.share(d.procs)  # the checkpoint holds every process's rollouts of the epoch in flight
        if not d.procs.is_main:
            return
        folder = rs.checkpoint_dir(args.output_dir, state.global_step)
        if folder.is_dir():
            rs.write_checkpoint_state(folder, d.checkpoint_state(state.global_step))
        staged = staging.staged_step(d.writer.dir)
        if staged is not None and staged[1] <= state.global_step:
            staging.commit_staged(d.writer)

    def on_train_end(self, args, state, control, **kwargs):
        if self.driver.writer is not None:
            self.driver.close()


def _check_args(args) -> None:
    """What the curriculum needs of the trainer's configuration, refused in one line otherwise."""
    problems = []
    per_process = args.per_device_train_batch_size * args.steps_per_generation
    if getattr(args, "world_size", 1) > 1 and per_process % args.num_generations:
        problems.append(f"under {args.world_size} processes, per_device_train_batch_size × steps_per_generation "
                        f"({per_process}) a multiple of num_generations ({args.num_generations}), so that a GRPO "
                        "group's rollouts lie on one process")
    if args.dataloader_num_workers:
        problems.append("dataloader_num_workers=0 (a worker process would read a stale copy of the tasks)")
    if args.remove_unused_columns:
        problems.append("remove_unused_columns=False (GRPOConfig's default: the dataset's slot column is read)")
    if problems:
        raise ValueError("GenEnvCurriculum needs " + "; ".join(problems))
