"""The TRL curriculum's epochs on the loop's own steps: :class:`EpochDriver`, what
:class:`~genenv_lab.trl.callback.GenEnvCurriculum`'s trainer hooks call.

It opens (or resumes) the run directory around the user's model, reconciles it with the checkpoint the trainer
resumed from, writes an epoch's tasks with the loop's :func:`~genenv_lab.coevolution.loop.plan_epoch`, and after the
trainer's pass finishes the epoch with the loop's :func:`~genenv_lab.coevolution.loop.finish_epoch` and stages it
until a checkpoint holds it (:mod:`genenv_lab.trl.resume`).
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from genenv_lab.backends.base import AgentUpdate
from genenv_lab.backends.distributed import MainProcessGeneration, processes
from genenv_lab.backends.prefix import FULL
from genenv_lab.coevolution.heldout import evaluate_epoch
from genenv_lab.coevolution.loop import EpochPlan, finish_epoch, plan_epoch
from genenv_lab.coevolution.session import after_updates, interrupted, with_frontier
from genenv_lab.coevolution.state import restore_state
from genenv_lab.config import RunConfig
from genenv_lab.core.metrics import (AGENT_GRADIENT_CHECKPOINTING, AGENT_PREFIX_PATH, AGENT_ROLLOUTS, GRPO_LOSS,
    TRL_GLOBAL_STEP)
from genenv_lab.core.types import LoopState
from genenv_lab.domains import Domain
from genenv_lab.models.loading import ADAPTERS
from genenv_lab.rundir.layout import BASELINE, RunDirError, adapter_dir
from genenv_lab.rundir.read import read_state
from genenv_lab.rundir.write import FollowerWriter, RunWriter, open_run
from genenv_lab.trainers.grpo import grpo_metrics
from genenv_lab.rundir import staging
from genenv_lab.trl import resume as rs
from genenv_lab.trl.engine import ModelEngine, agent_adapter_of, attach_env, curriculum_config, steps_per_epoch
from genenv_lab.trl.tasks import EpochTasks


class EpochDriver:
    """One TRL curriculum run's epochs: its configuration, engine, run writer, loop state and the epoch in flight
    (:attr:`tasks`). Built before the model is known; :meth:`open` takes it.

    Under a launcher (``accelerate launch``, ``torchrun``) every process drives the same epochs on the same inputs:
    the main process generates the simulator's tasks and every process holds them
    (:class:`~genenv_lab.backends.distributed.MainProcessGeneration`), each process's rollouts are shared with the
    others before an epoch is finished or checkpointed (:meth:`EpochTasks.share <genenv_lab.trl.tasks.EpochTasks.
    share>`), the RWR update splits its mini-batches across the processes as the loop's does, and the main process
    alone writes the run directory and the checkpoint's curriculum file."""

    def __init__(self, args, domain: Domain, domain_name: str, base_config: RunConfig, env_lora, tokenizer,
                 size: int, run_dir: Path, resume: bool):
        self.args, self.domain, self.domain_name, self.base_config = args, domain, domain_name, base_config
        self.env_lora, self.tokenizer, self.size, self.run_dir, self.resume = env_lora, tokenizer, size, run_dir, resume
        self.seeds = domain.seed_tasks()
        self.procs = processes()
        self.cfg: RunConfig | None = None
        self.engine: ModelEngine | MainProcessGeneration | None = None
        self.writer: RunWriter | FollowerWriter | None = None
        self.state: LoopState = LoopState()
        self.tasks = EpochTasks(size, args.num_generations)
        self.logs: list[dict[str, Any]] = []
        """TRL's logged metrics of the epoch in flight (the record's ``grpo/*`` averages)."""
        self.mid_epoch: dict[str, Any] | None = None
        """On a resume inside an epoch: what the trainer's checkpoint holds of it ({} when nothing)."""
        self.started_at, self.start_step = 0.0, 0

    @property
    def plan(self) -> EpochPlan | None:
        """The epoch in flight (its batch, rollouts and rewards so far), None between epochs."""
        return self.tasks.plan

    def begin(self, state) -> None:
        """The trainer begins at ``state.global_step``: reconcile the run directory with its checkpoint
        (:meth:`restore`; refused in one line, the run's state as it was and the lock let go), write the epoch's
        tasks, and finish and commit an epoch whose whole pass the checkpoint already holds (the trainer counts that
        pass done and calls no ``on_epoch_end`` for it)."""
        try:
            self.restore(state.global_step)
        except RunDirError as exc:
            self.writer.fail(exc, self.state.env_version)
            raise
        if self.state.epoch < self.cfg.loop.epochs:
            self.plan_next()
        if self.mid_epoch is not None and self.restore_rollouts(self.mid_epoch) and not self.tasks.missing():
            self.writer.event(f"epoch {self.state.epoch + 1} finished on resume: the checkpoint at step "
                              f"{state.global_step} holds its whole pass")
            self.finish(state)
            if self.procs.is_main:
                staging.commit_staged(self.writer)

    def abandon(self, exc: BaseException) -> None:
        """The trainer stopped on ``exc``: mark the run ``interrupted`` or ``failed`` and release its lock (a run
        already finished, or never opened, is left as it is)."""
        if self.writer is None or not (self.writer.holds_lock or isinstance(self.writer, FollowerWriter)):
            return
        if interrupted(exc):
            self.writer.finish(self.state.env_version, status="interrupted")
        else:
            self.writer.fail(exc, self.state.env_version)

    def finish(self, state) -> None:
        """The epoch in flight after its pass: the loop's :func:`finish_epoch`, the held-out evaluation when due,
        the epoch staged at the trainer's step (committed once a checkpoint holds it), the next epoch's tasks."""
        update = _agent_update(self.args, self.logs, self.tasks.plan, time.perf_counter() - self.started_at,
                               state.global_step - self.start_step)

        def after(updated: LoopState) -> tuple[LoopState, dict[str, Any]]:
            updated, later = after_updates(updated, self.engine, self.cfg, self.writer.eval_dir, self.procs,
                                           ADAPTERS)
            return updated, {TRL_GLOBAL_STEP: state.global_step, **later}

        self.state, result = finish_epoch(self.tasks.plan, self.engine, self.domain, self.cfg, update, after=after)
        if self.procs.is_main:
            staging.stage(self.writer.dir, result, state.global_step, self.engine.save_adapters)
        self.tasks.serve(None)
        self.logs = []
        if self.state.epoch < self.cfg.loop.epochs:
            self.plan_next()
        self.start_step = state.global_step

    def open(self, model) -> None:
        """Add the ``env`` adapter, build the engine around the model, open (or resume) the run directory."""
        if model is None:
            raise ValueError("GenEnvCurriculum has no model: pass the peft model, or add the curriculum to a "
                             "GRPOTrainer's callbacks")
        agent = agent_adapter_of(model)
        epochs = self.args.num_train_epochs if self.args.max_steps <= 0 else \
            self.args.max_steps / steps_per_epoch(self.args, self.size)
        self.cfg = curriculum_config(self.base_config, self.args, self.domain_name, model, agent, math.ceil(epochs))
        if self.cfg.loop.variant == "offline_teacher":
            raise ValueError("GenEnvCurriculum does not run the offline_teacher baseline (it needs a second model)")
        used = rs.curriculum_checkpoints(self.args.output_dir) if not self.resume else []
        if used:
            raise RunDirError(f"output_dir {self.args.output_dir} holds a curriculum run's checkpoints "
                              f"({used[-1].name}): a fresh run would overwrite them; choose an empty output_dir, or "
                              "pass resume=True to continue that run")
        attach_env(model, agent, self.env_lora, self.cfg.loop.seed)
        engine = ModelEngine(self.cfg, model, self.tokenizer, agent)
        self.engine = MainProcessGeneration(engine, self.procs) if self.procs.world_size > 1 else engine
        try:
            self.writer = open_run(self.run_dir, self.cfg, self.resume, self.procs, reclaim=True)
        except RunDirError as exc:
            raise RunDirError(str(exc).replace("pass --resume", "pass resume=True")) from None
        for warning in self.cfg.warnings():
            self.writer.event("warning: " + warning)
            warnings.warn(warning, stacklevel=4)

    def identity(self) -> dict[str, str]:
        return rs.run_identity(self.writer.dir, self.cfg)

    def restore(self, step: int) -> None:
        """The curriculum's state at the trainer's ``step``: the staged epoch committed when the checkpoint holds
        it, the ``env`` adapter, the pool and the consumption as the last committed epoch left them."""
        self.mid_epoch = None
        saved = rs.checked_checkpoint(self.args.output_dir, step, self.identity())
        staged = staging.staged_step(self.writer.dir) if self.procs.is_main else None
        if staged is not None:
            if staged[0] == self.writer.last_epoch + 1 and staged[1] <= step:
                staging.commit_staged(self.writer)
            else:
                staging.discard_staged(self.writer.dir)
        last = self.procs.broadcast(self.writer.last_epoch)  # the others read the run once the main one settled it
        self.writer.last_epoch = last
        last_step = rs.committed_step(self.writer.dir, last)
        rs.check_not_behind(self.args.output_dir, self.writer.dir, step, last, last_step)
        if last:
            self.engine.load_env(adapter_dir(self.writer.dir, last))
            self.state = restore_state(self.writer.dir, last, int(read_state(self.writer.dir)["env_version"]),
                                       self.cfg, self.domain)
        elif self.cfg.eval.every and not (self.writer.dir / BASELINE).is_file():
            scores = evaluate_epoch(self.engine, self.cfg, self.writer.eval_dir, 0)
            self.writer.write_baseline(scores)
            self.state = with_frontier(self.state, scores)
        self.start_step = last_step
        if step > last_step and self.procs.world_size > 1 and rs.inside_a_pass(saved):
            # each process would pick the rest of the pass's tasks by its own share of the re-ordered slots
            raise RunDirError(f"checkpoint-{step} is inside an epoch's pass: on {self.procs.world_size} processes "
                              f"resume from one between two passes, GenEnvCurriculum.resume_from "
                              f"({rs.last_checkpoint(self.args.output_dir, whole_passes=True)})")
        if step > last_step:
            self.mid_epoch = saved or {}

    def close(self) -> None:
        """The run is over: mark it finished (the main process) and drop a follower's scratch folder."""
        self.writer.finish(self.state.env_version)

    def plan_next(self) -> None:
        plan = plan_epoch(self.state, self.engine, self.domain, self.seeds, self.cfg, size=self.size)
        self.tasks.serve(plan, {b.task_id: self.engine.chat_prompt(self.domain.agent_messages(b.spec))
                                for b in plan.batch})
        self.logs = []
        self.started_at = time.perf_counter()

    def restore_rollouts(self, saved: dict[str, Any]) -> bool:
        """The rollouts of the epoch in flight before a mid-epoch checkpoint (and its logged steps), when the
        checkpoint holds them for the same tasks (True); else the epoch goes on with what is rolled out from here
        (False)."""
        if not (saved.get("epoch") == self.state.epoch and self.tasks.restore(saved)):
            self.writer.event(f"warning: resumed inside epoch {self.state.epoch + 1} without its earlier rollouts "
                              "(the checkpoint holds none for these tasks); its p̂ counts the rollouts from here")
            return False
        self.logs = list(saved["logs"])
        self.started_at -= float(saved.get("elapsed", 0.0))
        return True

    def checkpoint_state(self, step: int) -> dict[str, Any]:
        return {"format": 1, "run": self.identity(), "epoch": self.state.epoch, "global_step": step,
                **self.tasks.in_flight(), "logs": self.logs, "elapsed": time.perf_counter() - self.started_at}


def _agent_update(args, logs: list[dict[str, Any]], plan: EpochPlan, wall: float, steps: int) -> AgentUpdate:
    """The epoch's agent update as the record states it: TRL's logged metrics averaged (``grpo/*``), how the user's
    trainer ran (``agent/*``), its steps and wall time."""
    metrics = {**grpo_metrics(logs), AGENT_PREFIX_PATH: FULL,
               AGENT_GRADIENT_CHECKPOINTING: bool(args.gradient_checkpointing),
               AGENT_ROLLOUTS: "vllm" if getattr(args, "use_vllm", False) else "transformers"}
    plan.timer.seconds["agent_update"] = max(wall, 0.0)
    return AgentUpdate(loss=metrics[GRPO_LOSS], update_s=max(wall, 0.0), steps=steps, metrics=metrics)


def own_rng():
    """The curriculum's sampling (the simulator, the RWR update) leaves the trainer's random stream as it was."""
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    return torch.random.fork_rng(devices=devices)
