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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy table below serves, for type checkers and editors (never imported at run time)
    from genenv_lab.coevolution.session import run
    from genenv_lab.compare import collect, compare_grid, verdict
    from genenv_lab.config import PRESETS, RunConfig, preset
    from genenv_lab.core.types import EpochRecord
    from genenv_lab.evaluation.runner import score_predictions
    from genenv_lab.lab.runs import load_run
    from genenv_lab.rundir.read import read_epochs
    from genenv_lab.rundir.upgrade import upgrade_path as upgrade
    from genenv_lab.trl import GenEnvCurriculum

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

__all__ = ["RunConfig", "preset", "PRESETS", "run", "EpochRecord", "read_epochs", "load_run", "upgrade",
           "compare_grid", "collect", "verdict", "score_predictions", "GenEnvCurriculum", "__version__"]
"""The lazy table's names (tests/test_structure.py holds the two and the ``TYPE_CHECKING`` block to one list)."""


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'genenv_lab' has no attribute {name!r}")
    module, _, attribute = _WHERE[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
