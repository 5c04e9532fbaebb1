"""The agent's GRPO settings, built once for every engine.

Both engines that train the agent (``hf``: transformers + peft + TRL; ``unsloth``: Unsloth's patched TRL) hand
TRL's ``GRPOConfig`` the settings :func:`grpo_settings` returns and add only what is theirs (device and precision
flags, vLLM rollouts). So the update the method depends on is the same on the CPU path every test runs and on the
GPU path a Colab user takes: the batch (G completions for each of ``prompts_per_step`` tasks), the learning rate,
held **constant** (TRL's default decays it to 0 within each call, i.e. within each epoch), the RL objective
(:class:`~genenv_lab.config.AgentConfig`'s ``loss_type``, ``importance_sampling_level``, ``scale_rewards``,
``epsilon``/``epsilon_high``, ``num_iterations``, ``mask_truncated_completions``), the KL coefficient and the
sampling temperature. :data:`METHOD_FIELDS` names them; a test builds both engines' settings (Unsloth not needed)
and compares them field by field.

The optimiser is the engine's: the ``hf`` engine keeps one AdamW per adapter for the whole run (Adam's moments carry
across epochs); Unsloth holds both roles' weights in one adapter slot swapped in place, so its AdamW is fresh per
update (``UnslothBackend.optimizer``'s docstring; tested in tests/test_agent_trainer.py).
"""

from __future__ import annotations

from typing import Any

METHOD_FIELDS = ("per_device_train_batch_size", "num_generations", "max_completion_length", "learning_rate",
                 "lr_scheduler_type", "num_train_epochs", "temperature", "weight_decay", "loss_type",
                 "importance_sampling_level", "scale_rewards", "epsilon", "epsilon_high", "num_iterations",
                 "mask_truncated_completions", "beta", "warmup_steps", "gradient_accumulation_steps")
"""The GRPOConfig fields the method depends on: equal for every engine given the same run configuration."""


def grpo_settings(cfg, *, output_dir: str, seed: int, world_size: int = 1) -> dict[str, Any]:
    """GRPOConfig keyword arguments for one agent update of ``cfg`` (a :class:`~genenv_lab.config.RunConfig`).

    Under ``world_size`` processes each takes ``prompts_per_step / world_size`` tasks of a step (the engine
    checks that it divides); ``beta`` is ``agent.kl_beta`` (the ``hf`` engine builds its trainer with 0 and sets it
    after, see ``HFBackend.grpo_trainer``)."""
    a = cfg.agent
    return dict(
        output_dir=output_dir,
        per_device_train_batch_size=a.num_generations * a.prompts_per_step // world_size,
        gradient_accumulation_steps=1, num_generations=a.num_generations,
        max_completion_length=a.max_completion_length, temperature=a.temperature,
        learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, num_train_epochs=1,
        beta=a.kl_beta, loss_type=a.loss_type, importance_sampling_level=a.importance_sampling_level,
        scale_rewards=a.scale_rewards, epsilon=a.epsilon, epsilon_high=a.epsilon_high or a.epsilon,
        num_iterations=a.num_iterations, mask_truncated_completions=a.mask_truncated_completions,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, seed=seed,
        dataloader_num_workers=0, gradient_checkpointing=False,
    )
