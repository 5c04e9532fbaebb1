"""genenv_lab: GenEnv co-evolution of an LLM agent and an LLM environment simulator as two LoRA adapters."""

__version__ = "0.1.0"

__all__ = ["GenEnvCurriculum", "__version__"]


def __getattr__(name: str):
    """``from genenv_lab import GenEnvCurriculum``: loaded on first use (it imports torch, transformers and TRL)."""
    if name == "GenEnvCurriculum":
        from genenv_lab.trl import GenEnvCurriculum

        return GenEnvCurriculum
    raise AttributeError(f"module 'genenv_lab' has no attribute {name!r}")
