"""GenEnv in your own TRL script: :class:`GenEnvCurriculum`, the simulator as a curriculum that a plain
``trl.GRPOTrainer`` trains on (docs/trl.md).

- :mod:`genenv_lab.trl.callback`: the curriculum, the trainer callback (its hooks call the driver).
- :mod:`genenv_lab.trl.driver`: the epochs on the loop's own steps (open, reconcile with a checkpoint, plan, finish).
- :mod:`genenv_lab.trl.tasks`: the dataset view of the epoch in flight, and its rollouts as a checkpoint holds them.
- :mod:`genenv_lab.trl.rewards`: the reward functions that keep each rollout's reward under its task.
- :mod:`genenv_lab.trl.engine`: the ``hf`` engine around the user's model, and the run's configuration.
- :mod:`genenv_lab.trl.resume`: staging, the checkpoint file, resuming with no committed epoch lost.
"""

from __future__ import annotations

from genenv_lab.trl.callback import GenEnvCurriculum
from genenv_lab.trl.engine import ENV


def tiny_model(domain: str = "arith") -> str:
    """The folder of the project's tiny test model warmed up on ``domain``'s format (built once, cached): a model
    to try the curriculum with on a CPU in seconds. Its numbers mean nothing."""
    from genenv_lab.backends.factory import prepare_base
    from genenv_lab.coevolution.resolve import for_domain
    from genenv_lab.config import preset
    from genenv_lab.domains import get_domain

    return prepare_base(for_domain(preset("tiny"), domain), get_domain(domain))


__all__ = ["ENV", "GenEnvCurriculum", "tiny_model"]
