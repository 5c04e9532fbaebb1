"""Data parallelism across processes: the same loop under ``torchrun`` or ``accelerate launch`` (docs/multi_gpu.md).

Every process runs the whole loop on the same inputs (the loop's own random stream is seeded identically), so
every process takes the same decisions; only the model work is split:

- generation (env tasks, reference rollouts, held-out evaluation): each process samples its contiguous share of
  the prompts (accelerate's ``split_between_processes``) and all shares are gathered, in process order, on every
  process (:class:`DataParallelBackend`);
- GRPO: TRL's own distributed path (each process its share of the prompts, G completions of a prompt on one
  process); afterwards every process's completions are gathered and scored into the epoch's reward log, so p̂ is
  computed from all of them, never from a shard;
- the env's RWR update (:mod:`genenv_lab.trainers.env`, lent the job's :class:`Processes` in its kit): each process
  takes its part of every mini-batch, its loss scaled by its share, and the adapter's gradients are averaged before
  the step (:meth:`Processes.average_gradients`): the update of the whole mini-batch. The KL cap is decided on the
  KL over every process's target tokens, so all stop together;
- the run directory, events and progress bars are written by the main process only; the others read it.

After every epoch the processes compare hashes of their adapters (:meth:`Processes.check_in_sync`); a run whose
processes disagree stops with an error instead of training on diverged copies.

The process group is accelerate's (``PartialState``): gloo on CPU, NCCL on GPUs. With one process (a plain run,
or ``torchrun --nproc_per_node 1``) nothing here talks to another process and the run is the plain run.
Written by hand because no library splits this loop's own (non-Trainer) steps; the primitives are accelerate's.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import nullcontext
from typing import Any, Sequence

PROCESS_SEED_STRIDE = 7_919
"""Process ``r`` seeds its sampling with ``seed + r * PROCESS_SEED_STRIDE`` (process 0: the plain run's seed)."""
ENGINES_DATA_PARALLEL = ("hf",)
"""Engines that run data-parallel (Unsloth and vLLM's colocated engine are single-GPU here)."""


def launched_world_size() -> int:
    """Processes of the job this process belongs to, as the launcher says (``WORLD_SIZE``; 1 without one)."""
    try:
        return max(int(os.environ.get("WORLD_SIZE", "1")), 1)
    except ValueError:
        raise RuntimeError(f"WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not a number of processes") from None


class Processes:
    """This process's place in the job (``world_size``, ``rank``, ``is_main``) and the few collective operations
    the loop needs. With one process every operation is local and nothing is imported."""

    def __init__(self) -> None:
        self.world_size = launched_world_size()
        self._state = None
        if self.world_size > 1:
            import torch
            from accelerate import PartialState

            # cpu=True is what makes accelerate set up gloo (MULTI_CPU) under a torchrun-style launcher
            self._state = PartialState(cpu=not torch.cuda.is_available())
            if self._state.num_processes != self.world_size:
                raise RuntimeError(f"the launcher says {self.world_size} processes but accelerate set up "
                                   f"{self._state.num_processes}; launch with torchrun or accelerate launch")
        self.rank = self._state.process_index if self._state else 0
        self.is_main = self.rank == 0
        if not self.is_main:  # progress bars are the main process's
            from datasets.utils.logging import disable_progress_bar as datasets_quiet
            from transformers.utils.logging import disable_progress_bar as transformers_quiet

            transformers_quiet()
            datasets_quiet()

    @property
    def device(self):
        """This process's device (its own GPU under a multi-GPU launch)."""
        import torch

        device = self._state.device if self._state is not None else torch.device("cuda" if torch.cuda.is_available()
                                                                                  else "cpu")
        # accelerate says cpu:0 on CPU; torch.load cannot map a tensor saved on "cpu" onto "cpu:0"
        return torch.device("cpu") if device.type == "cpu" else device

    def seed(self, seed: int) -> int:
        """This process's sampling seed for ``seed`` (process 0 keeps it: a 1-process run is the plain run)."""
        return seed + self.rank * PROCESS_SEED_STRIDE

    # ------------------------------------------------------------------------------------------- collectives
    def shard(self, items: Sequence[Any]) -> list[Any]:
        """This process's contiguous share of ``items`` (the first processes take one more when it does not
        divide); :meth:`gather` of the shares in process order gives ``items`` back."""
        if self._state is None:
            return list(items)
        with self._state.split_between_processes(list(items)) as mine:
            return list(mine)

    def gather(self, mine: Sequence[Any]) -> list[Any]:
        """Every process's list, concatenated in process order, on every process."""
        if self._state is None:
            return list(mine)
        from accelerate.utils import gather_object

        return list(gather_object(list(mine)))

    def broadcast(self, obj: Any) -> Any:
        """The main process's ``obj`` on every process."""
        if self._state is None:
            return obj
        from accelerate.utils import broadcast_object_list

        return broadcast_object_list([obj], from_process=0)[0]

    def mean(self, value: float) -> float:
        """The mean of ``value`` over the processes."""
        if self._state is None:
            return value
        values = self.gather([float(value)])
        return sum(values) / len(values)

    def pooled_mean(self, mean: float, count: int) -> tuple[float, float]:
        """(the mean over every process's items, given this process's ``mean`` over its ``count`` items; this
        process's share of all the items). With one process: ``(mean, 1.0)``, unchanged."""
        if self._state is None:
            return mean, 1.0
        parts = self.gather([(float(mean), int(count))])
        total = sum(c for _, c in parts)
        if total == 0:
            return 0.0, 0.0
        return sum(m * c for m, c in parts) / total, count / total

    def any(self, flag: bool) -> bool:
        """True on every process when it is true on one (a stop request, a failed check)."""
        return flag if self._state is None else any(self.gather([bool(flag)]))

    def average_gradients(self, params: Sequence[Any]) -> None:
        """Replace each parameter's gradient by its mean over the processes (one all-reduce of the flattened
        gradients; a parameter without a gradient counts as zero). DDP would do this too, but it wraps the whole
        model a second time beside TRL's own wrapper and broadcasts the frozen base weights when it is built."""
        if self._state is None:
            return
        import torch
        from accelerate.utils import reduce

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = reduce(torch.cat([g.reshape(-1) for g in grads]), reduction="mean")
        offset = 0
        for p, g in zip(params, grads):
            p.grad = flat[offset: offset + g.numel()].view_as(g).clone()
            offset += g.numel()

    def main_first(self):
        """A context in which each node's first process goes first (building a cached model the node's other
        processes then load)."""
        return self._state.local_main_process_first() if self._state is not None else nullcontext()

    def check_in_sync(self, backend: Any, adapters: Sequence[str]) -> list[str]:
        """Every process's adapter hash (one per process, in process order); raises when they differ."""
        mine = adapter_hash(backend, adapters)
        hashes = self.gather([mine])
        if len(set(hashes)) > 1:
            raise RuntimeError(f"the {self.world_size} processes hold different adapters "
                               f"({', '.join(h[:12] for h in hashes)}): their updates diverged; report it with the "
                               "launch command and the run's config.json")
        return hashes

    def close(self) -> None:
        """Wait for every process, then end the process group (a process that exits without it can abort gloo's
        teardown)."""
        if self._state is not None:
            self._state.wait_for_everyone()
            self._state.destroy_process_group()
            self._state._reset_state()  # accelerate's shared state would otherwise still name the ended group
            self._state = None


def adapter_hash(backend: Any, adapters: Sequence[str]) -> str:
    """SHA-256 of the named adapters' weights (name, shape, dtype and bytes of every tensor, in name order)."""
    import torch

    h = hashlib.sha256()
    for adapter in adapters:
        state = backend.adapter_state(adapter)
        for name in sorted(state):
            value = state[name]
            h.update(f"{adapter}/{name}".encode())
            if hasattr(value, "detach"):
                t = value.detach().cpu().contiguous()
                h.update(f"{tuple(t.shape)}{t.dtype}".encode())
                h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
            else:
                h.update(repr(value).encode())
    return h.hexdigest()


_PROCESSES: Processes | None = None


def processes() -> Processes:
    """The job's :class:`Processes` (created on first use; the process group lives until :meth:`Processes.close`)."""
    global _PROCESSES
    if _PROCESSES is None:
        _PROCESSES = Processes()
    return _PROCESSES


def close() -> None:
    """End the job's process group, if one was started."""
    global _PROCESSES
    if _PROCESSES is not None:
        _PROCESSES.close()
        _PROCESSES = None


class _ProcessesBackend:
    """A backend wrapped for a job of several processes: what the subclass does not change is the wrapped one's."""

    def __init__(self, inner: Any, procs: Processes):
        self.inner = inner
        self.procs = procs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class MainProcessGeneration(_ProcessesBackend):
    """A backend whose generation runs on the main process alone, its texts broadcast to the others; everything else
    is the wrapped backend's (the simulator's RWR update splits its mini-batches through the processes the engine
    lends, as in the loop).

    What :class:`genenv_lab.trl.GenEnvCurriculum` uses under a launcher: the main process samples from the stream a
    one-process run samples from (its seed is the plain run's, :meth:`Processes.seed`), so a launch writes the tasks
    a one-process run writes, and every process holds them; the simulator's generations are a small share of a TRL
    run, whose agent rollouts are the trainer's own."""

    def generate(self, adapter: str, prompts, **kwargs) -> list[list[str]]:
        texts, error = None, None
        if self.procs.is_main:
            try:
                texts = self.inner.generate(adapter, prompts, **kwargs)
            except Exception as exc:  # the others are told, then it is raised here
                error = f"{type(exc).__name__}: {exc}"
                self.procs.broadcast((None, error))
                raise
        texts, error = self.procs.broadcast((texts, error))
        if error is not None:
            raise RuntimeError(f"the main process's generation failed: {error}")
        return texts


class DataParallelBackend(_ProcessesBackend):
    """A backend whose generation is split across processes and whose agent update's reward log holds every
    process's completions (see the module docstring). Everything else is the wrapped backend's (``train_env``
    included: the simulator's trainer splits its own mini-batches through the processes the engine lends)."""

    def generate(self, adapter: str, prompts, **kwargs) -> list[list[str]]:
        return self.procs.gather(self.inner.generate(adapter, self.procs.shard(prompts), **kwargs))

    def train_agent(self, trainer, prompts, reward_fn):
        return self._gathering(reward_fn, lambda recorded: self.inner.train_agent(trainer, prompts, recorded))

    def _gathering(self, reward_fn, update_with):
        """``update_with(recorded)``'s update, every other process's completions then scored into ``reward_fn``."""
        local: list[tuple[str, str]] = []

        def recorded(task_ids, completions):
            local.extend(zip(task_ids, completions))
            return reward_fn(task_ids, completions)

        update = update_with(recorded)
        # every process's (rank, task id, completion); the others' are scored into this process's log as well
        everything = self.procs.gather([(self.procs.rank, t, c) for t, c in local])
        others = [(t, c) for rank, t, c in everything if rank != self.procs.rank]
        if others:
            reward_fn([t for t, _ in others], [c for _, c in others])
        return update

