"""genenv_lab: GenEnv co-evolution of an LLM agent and an LLM environment simulator as two LoRA adapters."""

__version__ = "0.1.0"
