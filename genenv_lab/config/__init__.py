"""Configuration: one frozen dataclass per component, validated at construction, and presets by name.

Every default of ``docs/method.md`` where the paper is silent is a field here, so it appears in the run's
``config.json``. Invalid values raise :class:`ConfigError` naming the field, the value and the accepted range,
before any model is loaded.

The package's modules: :mod:`.checks` (the one mechanism every value passes), :mod:`.variants` (the baselines
as a table), :mod:`.schema` (the dataclasses), :mod:`.fields` (the fields the command line lists), :mod:`.presets`
(presets by name), :mod:`.spellings` (the short flags as aliases of fields, and the old layout that ``genenv-lab
upgrade`` rewrites) and :mod:`.files` (a config from a JSON or YAML file). The package imports no domain, model or
engine: names checked against their registries and a domain's recommended settings are
:mod:`genenv_lab.coevolution.resolve`'s.
Everything public is importable from here.
"""

from __future__ import annotations

from genenv_lab.config.checks import bounded, bounds_of, Bounds, build, ConfigError, require
from genenv_lab.config.variants import VARIANT_TABLE, VARIANTS
from genenv_lab.config.spellings import ALIASES, ASK_FOR_EVAL
from genenv_lab.config.schema import (AgentConfig, CurriculumConfig, EnvConfig, EvalConfig,
    IMPORTANCE_SAMPLING_LEVELS, LoopConfig, LOSS_TYPES, MAX_SEED, ModelConfig, REWARD_SCALINGS, RunConfig, TASK_FILE,
    WorldConfig)
from genenv_lab.config.fields import config_fields, field_choices, field_docs, SECTIONS
from genenv_lab.config.presets import CPU_PRESETS, notebook_preset, preset, PRESETS
from genenv_lab.config.files import config_file_data, config_from_data, load_config

__all__ = [
    'AgentConfig', 'ALIASES', 'ASK_FOR_EVAL', 'bounded', 'Bounds', 'bounds_of', 'build', 'config_fields',
    'config_file_data', 'config_from_data', 'ConfigError', 'CPU_PRESETS', 'CurriculumConfig', 'EnvConfig',
    'EvalConfig', 'field_choices', 'field_docs', 'IMPORTANCE_SAMPLING_LEVELS', 'load_config', 'LoopConfig',
    'LOSS_TYPES', 'MAX_SEED', 'ModelConfig', 'notebook_preset', 'preset', 'PRESETS', 'require', 'REWARD_SCALINGS',
    'RunConfig', 'SECTIONS', 'TASK_FILE', 'VARIANT_TABLE', 'VARIANTS', 'WorldConfig']
