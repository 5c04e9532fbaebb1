"""Configuration: one frozen dataclass per component, validated at construction, and presets by name.

Every default of ``docs/method.md`` where the paper is silent is a field here, so it appears in the run's
``config.json``. Invalid values raise :class:`ConfigError` naming the field, the value and the accepted range,
before any model is loaded.

The package's modules: :mod:`.checks` (the one mechanism every value passes), :mod:`.variants` (the baselines
as a table), :mod:`.schema` (the dataclasses), :mod:`.fields` (the fields the command line lists), :mod:`.presets`
(presets by name, a domain's recommended settings), :mod:`.spellings` (the short flags as aliases of fields, and the
old names of moved fields) and :mod:`.files` (a config from a JSON or YAML file).
Everything public is importable from here.
"""

from __future__ import annotations

from genenv_lab.config.checks import (bounded, bounds_of, Bounds, build, check_bounds, check_type, ConfigError,
    replace_fields, require)
from genenv_lab.config.variants import Variant, VARIANT_TABLE, VARIANTS
from genenv_lab.config.spellings import ALIASES, ASK_FOR_EVAL, current_name, MOVED, RenamedField, upgrade
from genenv_lab.config.schema import (AgentConfig, CurriculumConfig, DTYPES, ENGINES, EnvConfig, EVAL_PROTOCOLS,
    EvalConfig, IMPORTANCE_SAMPLING_LEVELS, LoopConfig, LOSS_TYPES, MAX_SEED, ModelConfig, REWARD_SCALINGS, RunConfig,
    WORLD_ANCHORS, WorldConfig)
from genenv_lab.config.fields import config_fields, field_choices, field_docs, SECTIONS
from genenv_lab.config.presets import CPU_PRESETS, for_domain, notebook_preset, preset, PRESETS
from genenv_lab.config.files import load_config

__all__ = [
    'AgentConfig', 'ALIASES', 'ASK_FOR_EVAL', 'bounded', 'Bounds', 'bounds_of', 'build', 'check_bounds',
    'check_type', 'config_fields', 'ConfigError', 'CPU_PRESETS', 'current_name', 'CurriculumConfig', 'DTYPES',
    'ENGINES', 'EnvConfig', 'EVAL_PROTOCOLS', 'EvalConfig', 'field_choices', 'field_docs', 'for_domain',
    'IMPORTANCE_SAMPLING_LEVELS', 'load_config', 'LoopConfig', 'LOSS_TYPES', 'MAX_SEED', 'ModelConfig', 'MOVED',
    'notebook_preset', 'preset', 'PRESETS', 'RenamedField', 'replace_fields', 'require', 'REWARD_SCALINGS',
    'RunConfig', 'SECTIONS', 'upgrade', 'Variant', 'VARIANT_TABLE', 'VARIANTS', 'WORLD_ANCHORS', 'WorldConfig']
