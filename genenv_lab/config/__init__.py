"""Configuration: one frozen dataclass per component, validated at construction, and presets by name.

Every default of ``docs/method.md`` where the paper is silent is a field here, so it appears in the run's
``config.json``. Invalid values raise :class:`ConfigError` naming the field, the value and the accepted range,
before any model is loaded.

The package's modules: :mod:`.checks` (the one mechanism every value passes), :mod:`.variants` (the baselines
as a table), :mod:`.schema` (the dataclasses), :mod:`.fields` (the fields the command line lists), :mod:`.presets`
(presets by name, a domain's recommended settings) and :mod:`.files` (a config from a JSON or YAML file).
Everything public is importable from here.
"""

from __future__ import annotations

from .checks import (
    bounded, bounds_of, Bounds, build, check_bounds, check_type, ConfigError, replace_fields, require)
from .variants import (
    Variant, VARIANT_TABLE, VARIANTS)
from .schema import (
    AgentConfig, CurriculumConfig, DTYPES, ENGINES, EnvConfig, IMPORTANCE_SAMPLING_LEVELS, LoopConfig, LOSS_TYPES,
    MAX_SEED, ModelConfig, REWARD_SCALINGS, RunConfig)
from .fields import (
    config_fields, field_choices, field_docs, SECTIONS)
from .presets import (
    CPU_PRESETS, for_domain, notebook_preset, preset, PRESETS)
from .files import (
    load_config)

__all__ = [
    'AgentConfig', 'bounded', 'Bounds', 'bounds_of', 'build', 'check_bounds', 'check_type', 'config_fields',
    'ConfigError', 'CPU_PRESETS', 'CurriculumConfig', 'DTYPES', 'ENGINES', 'EnvConfig', 'field_choices',
    'field_docs', 'for_domain', 'IMPORTANCE_SAMPLING_LEVELS', 'load_config', 'LoopConfig', 'LOSS_TYPES', 'MAX_SEED',
    'ModelConfig', 'notebook_preset', 'preset', 'PRESETS', 'replace_fields', 'require', 'REWARD_SCALINGS',
    'RunConfig', 'SECTIONS', 'Variant', 'VARIANT_TABLE', 'VARIANTS']
