"""Every other spelling of a config field, as tables: the short flags users type most, each an alias of one field
(:data:`ALIASES`; ``--epochs 5`` is ``--loop.epochs 5``), and the old names of the fields that moved section
(:data:`MOVED`), with a one-line notice (:class:`RenamedField`) naming the new spelling. What a user types (a flag,
``--set``, ``RunConfig.replace``) is read under an old name for one release; a stored config (a run's
``config.json``, a ``--config`` file) is read in the old layout for good, as every old run's records are
(:mod:`genenv_lab.rundir.metrics`), so a run started before the move always resumes, compares and opens."""

from __future__ import annotations

import warnings
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
    ("model.world_", "world."): ("steps", "env_steps", "hidden_size", "layers", "anchor", "seed"),
}
"""The fields that moved to their own section (issue 40), by (old prefix, new prefix): ``loop.eval_every`` is
``eval.every``."""
MOVED: dict[str, str] = {old + name: new + name for (old, new), names in MOVED_GROUPS.items() for name in names}
"""Old name → new name of every moved field: read until the next release."""

RELEASE_NOTE = "the old name is read until the next release"


class RenamedField(UserWarning):
    """A config field was named by its old spelling (:data:`MOVED`); the message says the new one."""


_SAID: set[str] = set()
"""The notices shown so far in this process. A set of our own, not a warnings registry: the warning machinery empties
its registries whenever any library changes the filters, which showed a notice twice in one run."""


def notice(text: str) -> None:
    """``text`` as a one-line :class:`RenamedField` warning, once per process."""
    if text not in _SAID:
        _SAID.add(text)
        warnings.warn_explicit(text, RenamedField, "genenv-lab", 0)


def current_name(path: str, *, flag: bool = False) -> str:
    """The field ``section.field`` is now called (itself, unless it moved: then with the notice, once)."""
    new = MOVED.get(path)
    if new is None:
        return path
    notice(f"{'--' if flag else ''}{path} is now {'--' if flag else ''}{new} ({RELEASE_NOTE})")
    return new


def upgrade(sections: Mapping[str, Any], *, stored: bool = False) -> dict[str, Any]:
    """``sections`` (config.json's layout with ``stored``, or the changes of ``RunConfig.replace``) with every moved
    field under its new name, and one notice naming them; a field given under both names with two values is a
    :class:`ConfigError`. A section that is not a mapping is left for the config's own check to refuse."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in sections.items()}
    moved = []
    for old, new in MOVED.items():
        (old_section, old_field), (new_section, new_field) = old.split("."), new.split(".")
        part = out.get(old_section)
        if not isinstance(part, dict) or old_field not in part:
            continue
        value = part.pop(old_field)
        target = out.setdefault(new_section, {})
        if not isinstance(target, dict):
            continue
        if new_field in target and target[new_field] != value:
            raise ConfigError(f"{old} ({value!r}) and its new name {new} ({target[new_field]!r}) are both "
                              "given, with different values; give only " + new)
        target[new_field] = value
        moved.append(old)
    if moved:
        notice(f"a config written before fields moved, read in the new places: {_said(moved)}" if stored else
               f"config fields moved: {_said(moved)} ({RELEASE_NOTE}; write the new names)")
    return out


def _said(moved: list[str]) -> str:
    """``loop.eval_* → eval.*`` for a group that moved whole, ``old → new`` for each of the others."""
    out = []
    for (old, new), names in MOVED_GROUPS.items():
        mine = [name for name in names if old + name in moved]
        if len(mine) == len(names):
            out.append(f"{old}* → {new}*")
        else:
            out += [f"{old}{name} → {new}{name}" for name in mine]
    return ", ".join(out)
