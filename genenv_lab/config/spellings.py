"""Every other spelling of a config field, as tables: the short flags users type most, each an alias of one field
(:data:`ALIASES`; ``--epochs 5`` is ``--loop.epochs 5``), and the layout of 0.1.0's fields before some moved
section (:data:`MOVED`). The old layout is read by no read path: a stored config in it is refused in one line
(:func:`old_layout_error`, asked by ``RunConfig.from_dict``) that says to run ``genenv-lab upgrade RUN_DIR``,
whose rewrite of ``config.json`` is :func:`upgrade_config_dict` (called by that command only)."""

from __future__ import annotations

from typing import Any, Mapping

from genenv_lab.config.checks import ConfigError

ALIASES: dict[str, str] = {
    "--model": "model.name_or_path",
    "--engine": "model.engine",
    "--domain": "loop.domain",
    "--epochs": "loop.epochs",
    "--seed": "loop.seed",
    "--variant": "loop.variant",
    "--report-to": "loop.report_to",
    "--eval-every": "eval.every",
    "--eval-benchmark": "eval.benchmark",
    "--eval-category": "eval.category",
    "--eval-limit": "eval.limit",
    "--eval-protocol": "eval.protocol",
    "--eval-data-dir": "eval.data_dir",
}
"""The short flags of ``genenv-lab run``, each the field it sets (its help is the field's)."""

ASK_FOR_EVAL = ("eval.benchmark", "eval.category", "eval.protocol")
"""Naming one of these on the command line without ``eval.every`` evaluates every epoch where the preset evaluates
never (naming what to evaluate on asks for an evaluation)."""

MOVED_GROUPS: dict[tuple[str, str], tuple[str, ...]] = {
    ("loop.eval_", "eval."): ("every", "benchmark", "category", "limit", "data_dir", "max_new_tokens", "protocol"),
    ("model.world_", "world."): ("steps", "env_steps", "hidden_size", "layers", "lr", "anchor", "seed"),
}
"""The fields that moved to their own section (issue 40), by (old prefix, new prefix): ``loop.eval_every`` is
``eval.every``."""
MOVED: dict[str, str] = {old + name: new + name for (old, new), names in MOVED_GROUPS.items() for name in names}
"""Old name → new name of every moved field: what ``genenv-lab upgrade`` rewrites."""

_SAID: set[str] = set()
"""Empty: no notice is said any more (the old names are not read). tests/conftest.py's ``fresh_notices`` fixture
still clears it; it goes with that fixture."""


def old_layout_fields(data: Mapping[str, Any]) -> list[str]:
    """The fields of ``data`` (config.json's layout) that are named as before they moved (:data:`MOVED`)."""
    found = []
    for old in MOVED:
        section, name = old.split(".")
        part = data.get(section)
        if isinstance(part, Mapping) and name in part:
            found.append(old)
    return found


def old_layout_error(data: Mapping[str, Any]) -> str | None:
    """One line saying that ``data`` is a config in the old layout and how to rewrite it; None when it is not."""
    found = old_layout_fields(data)
    if not found:
        return None
    return (f"this configuration is in the layout before fields moved section ({', '.join(found[:3])}"
            f"{', ...' if len(found) > 3 else ''}): run `genenv-lab upgrade RUN_DIR` on its run folder (or write "
            f"{', '.join(MOVED[old] for old in found[:3])} in a file of your own)")


def upgrade_config_dict(data: dict) -> dict:
    """``data`` (config.json's layout) with every moved field under its new name (pure: ``data`` is left as it
    was). A field given under both names with two different values is a :class:`ConfigError`; a section that is not
    a mapping is left for the config's own check to refuse. Only ``genenv-lab upgrade`` calls this.

    >>> upgrade_config_dict({"loop": {"epochs": 2, "eval_every": 1}})
    {'loop': {'epochs': 2}, 'eval': {'every': 1}}
    >>> upgrade_config_dict({"loop": {"eval_every": 3}, "eval": "fast"})  # no field is dropped
    {'loop': {'eval_every': 3}, 'eval': 'fast'}
    """
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    for old, new in MOVED.items():
        (old_section, old_field), (new_section, new_field) = old.split("."), new.split(".")
        part = out.get(old_section)
        if not isinstance(part, dict) or old_field not in part:
            continue
        target = out.setdefault(new_section, {})
        if not isinstance(target, dict):  # nowhere to put it: left where it is, for the config's check to refuse
            continue
        value = part.pop(old_field)
        if new_field in target and target[new_field] != value:
            raise ConfigError(f"{old} ({value!r}) and its new name {new} ({target[new_field]!r}) are both "
                              "given, with different values; keep only " + new)
        target[new_field] = value
    return out
