"""The config's fields listed for the command line: each section's fields with their types, their documentation (the
docstring under each field) and their choices."""

from __future__ import annotations

import dataclasses

from genenv_lab.core.curriculum import ENV_REWARD_SHAPES
from genenv_lab.config.schema import (AGENT_TRAINERS, DTYPES, ENGINES, EVAL_PROTOCOLS, IMPORTANCE_SAMPLING_LEVELS,
    LOSS_TYPES, REWARD_SCALINGS, RunConfig, TRACKERS, WORLD_ANCHORS)
from genenv_lab.config.variants import VARIANTS

SECTIONS = tuple(f.name for f in dataclasses.fields(RunConfig) if f.name != "preset")
"""config.json's sections, in the order of :class:`RunConfig`."""


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a config dataclass (the string literal under each field), by field name."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # installed without sources: the flags just have no help text
        return {}
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def field_choices() -> dict[tuple[str, str], tuple[str, ...]]:
    """The fields whose values come from a fixed list, with that list (the CLI shows it as choices; a domain is
    not one: it may be a class from outside the package)."""
    return {("model", "engine"): ENGINES, ("model", "dtype"): DTYPES, ("curriculum", "shape"): ENV_REWARD_SHAPES,
            ("agent", "loss_type"): LOSS_TYPES, ("agent", "importance_sampling_level"): IMPORTANCE_SAMPLING_LEVELS,
            ("agent", "scale_rewards"): REWARD_SCALINGS, ("agent", "trainer"): AGENT_TRAINERS,
            ("loop", "variant"): VARIANTS,
            ("loop", "report_to"): TRACKERS, ("eval", "protocol"): EVAL_PROTOCOLS, ("world", "anchor"): WORLD_ANCHORS}


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
