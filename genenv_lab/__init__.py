"""genenv_lab: GenEnv co-evolution of an LLM agent and an LLM environment simulator as two LoRA adapters.

The front door, the names a notebook or a script starts from::

    from genenv_lab import preset, run, load_run

    cfg = preset("cpu-demo").replace(loop={"epochs": 4})
    for record in run(cfg, "runs/mine"):          # one EpochRecord per epoch, as epochs.jsonl holds it
        print(record.epoch, record.p_hat_mean, record.get("eval/domain"))
    data = load_run("runs/mine")                   # records, tasks, attempts, config, as the lab reads them

- configuration: :class:`RunConfig`, :func:`preset` (a configuration by name), :data:`PRESETS`;
- training: :func:`run` (Algorithm 1, one record per epoch; ``resume=True`` continues a killed run);
  ``GenEnvCurriculum`` (the same epoch inside your own TRL ``GRPOTrainer``, docs/trl.md);
- reading: :func:`read_epochs` (a run's records, strict), :func:`load_run` (everything the lab shows of a run),
  :class:`EpochRecord`, :func:`upgrade` (a run written by an older version, rewritten in place after a copy);
- comparing: :func:`compare_grid` (baselines side by side over seeds), :func:`collect` (their runs as one table),
  :func:`verdict` (the closing sentences of ``genenv-lab compare``);
- evaluating: :func:`score_predictions` (a benchmark's official metric on a predictions file).

Each name is imported on first use, so ``import genenv_lab`` loads no model library.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_WHERE = {
    "RunConfig": "genenv_lab.config", "preset": "genenv_lab.config", "PRESETS": "genenv_lab.config",
    "run": "genenv_lab.coevolution.session",
    "EpochRecord": "genenv_lab.core.types", "read_epochs": "genenv_lab.rundir.read",
    "load_run": "genenv_lab.lab.runs", "upgrade": "genenv_lab.rundir.upgrade:upgrade_path",
    "compare_grid": "genenv_lab.compare", "collect": "genenv_lab.compare", "verdict": "genenv_lab.compare",
    "score_predictions": "genenv_lab.evaluation.runner",
    "GenEnvCurriculum": "genenv_lab.trl",
}
"""Each public name → the module that defines it (``module:attribute`` where the names differ)."""

__all__ = [*_WHERE, "__version__"]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'genenv_lab' has no attribute {name!r}")
    module, _, attribute = _WHERE[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
