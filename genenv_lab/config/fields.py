"""The config's fields listed for the command line: each section's fields with their types (``typing``), their
documentation (the docstring under each field, read by ``docstring_parser``: the library tyro reads attribute
docstrings with) and their choices. The command line itself is built from this list in genenv_lab/cli/flags.py
(argparse: why not tyro or HfArgumentParser is said there and in docs/usage.md)."""

from __future__ import annotations

import dataclasses

from genenv_lab.core.curriculum import ENV_REWARD_SHAPES
from genenv_lab.config.schema import (AGENT_TRAINERS, DTYPES, ENGINES, EVAL_PROTOCOLS, IMPORTANCE_SAMPLING_LEVELS,
    LOSS_TYPES, REWARD_SCALINGS, RunConfig, TRACKERS, WORLD_ANCHORS, ENV_PARENTS)
from genenv_lab.config.variants import VARIANTS

SECTIONS = tuple(f.name for f in dataclasses.fields(RunConfig) if f.name != "preset")
"""config.json's sections, in the order of :class:`RunConfig`."""


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a config dataclass (the string literal under each field), by field name, on one
    line each (``docstring_parser.parse_from_object``)."""
    import docstring_parser

    try:
        params = docstring_parser.parse_from_object(cls).params
    except (OSError, TypeError):  # installed without sources: the flags just have no help text
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    return {p.arg_name: " ".join((p.description or "").split()) for p in params
            if p.args and p.args[0] == "attribute" and p.arg_name in names}


def field_choices() -> dict[tuple[str, str], tuple[str, ...]]:
    """The fields whose values come from a fixed list, with that list (the CLI shows it as choices; a domain is
    not one: it may be a class from outside the package)."""
    return {("model", "engine"): ENGINES, ("model", "dtype"): DTYPES, ("curriculum", "shape"): ENV_REWARD_SHAPES,
            ("agent", "loss_type"): LOSS_TYPES, ("agent", "importance_sampling_level"): IMPORTANCE_SAMPLING_LEVELS,
            ("agent", "scale_rewards"): REWARD_SCALINGS, ("agent", "trainer"): AGENT_TRAINERS,
            ("loop", "variant"): VARIANTS,
            ("loop", "report_to"): TRACKERS, ("eval", "protocol"): EVAL_PROTOCOLS, ("world", "anchor"): WORLD_ANCHORS,
            ("env", "parents"): ENV_PARENTS}


FIELD_METAVARS = {("loop", "domain"): "NAME|package.module:Class", ("model", "name_or_path"): "NAME|DIR"}
"""The placeholder a field's flag shows where its type's (TEXT, N, X) says too little."""


def config_fields() -> list[tuple[str, str, type, str]]:
    """Every settable field as ``(section, field, type, docstring)``, in declaration order."""
    import typing

    out = []
    hints = typing.get_type_hints(RunConfig)
    for section in SECTIONS:
        cls = hints[section]
        types = typing.get_type_hints(cls)
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            out.append((section, f.name, types[f.name], docs.get(f.name, "")))
    return out
