"""The command line's configuration surface: a run's config from the parsed arguments (the preset, the short flags,
the generated ``--section.field`` flags, ``--set SECTION.FIELD=VALUE`` and ``--config FILE``), resolved at the edge
(:mod:`genenv_lab.coevolution.resolve`), and the argparse types the commands share. Only :mod:`genenv_lab.cli`
parses arguments; this module turns them into a :class:`~genenv_lab.config.RunConfig`.

The ``--section.field`` flags are generated from the config dataclasses: the field list and types from
``dataclasses``/``typing``, the help from each field's attribute docstring as ``docstring_parser`` reads it (the
library tyro reads them with; :func:`genenv_lab.config.field_docs`), the ranges and choices from the fields'
declarations. The parser is argparse's, not tyro's nor transformers' ``HfArgumentParser``: tyro builds nested
``--agent.lr`` flags from the same docstrings, but parses booleans as ``True``/``False`` only, lists as
space-separated words, prints its own help and errors and cannot say which fields a user gave (what the short
aliases, ``--set``, the one-value-per-field check and a domain's settings need), so the flags users type would
change; ``HfArgumentParser`` makes flat names (``--lr`` is in two sections) with help from field metadata, not
docstrings (docs/usage.md)."""

from __future__ import annotations

import argparse
import functools
import typing
from pathlib import Path

from genenv_lab.config import ConfigError, RunConfig, preset


def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration: the preset, then every field the command line sets. A field may be written three
    ways, all read by one path (:func:`field_of`, converted by the field's type): its short alias (``--epochs 5``,
    :data:`~genenv_lab.config.ALIASES`), ``--loop.epochs 5`` and ``--set loop.epochs=5``. Giving one field two
    different values is refused in one line instead of one spelling silently winning. A domain, however it is
    written, brings its recommended settings (:func:`~genenv_lab.coevolution.resolve.for_domain`). Naming a held-out
    benchmark, category or protocol without ``eval.every`` evaluates every epoch where the preset evaluates never
    (:data:`~genenv_lab.config.ASK_FOR_EVAL`). The result is resolved (:func:`~genenv_lab.coevolution.resolve.resolve`:
    a bad domain, benchmark or file fails here, in one line, before any model loads)."""
    from genenv_lab.coevolution.resolve import for_domain, resolve
    from genenv_lab.config import ASK_FOR_EVAL

    given: dict[str, list[tuple[str, object]]] = {}
    for key, value in vars(args).items():  # the short flags and --section.field VALUE (config_arguments)
        if key.startswith(FIELD_DEST) and value is not None:
            spelling = key[len(FIELD_DEST):]
            given.setdefault(field_of(spelling), []).append((spelling, value))
    for item in getattr(args, "set", None) or []:
        section, field, value = parse_setting(item)
        given.setdefault(f"{section}.{field}", []).append((f"--set {item.partition('=')[0].strip()}", value))
    changes: dict[str, dict] = {}
    for path, values in given.items():
        if len({repr(v) for _, v in values}) > 1:
            said = ", ".join(f"{spelling} {value!r}" for spelling, value in values)
            raise ConfigError(f"{path} is given different values ({said}); give it once")
        section, field = path.split(".")
        changes.setdefault(section, {})[field] = values[-1][1]
    cfg = _base_config(args)
    domain = changes.get("loop", {}).pop("domain", None)
    if domain is not None:
        cfg = for_domain(cfg, domain)
    if "eval.every" not in given and cfg.eval.every == 0 and any(path in given for path in ASK_FOR_EVAL):
        changes.setdefault("eval", {})["every"] = 1  # naming what to evaluate on asks for it: every epoch
    changes = {section: fields for section, fields in changes.items() if fields}
    return resolve(cfg.replace(**changes) if changes else cfg)


def field_of(spelling: str) -> str:
    """The field (``section.field``) a command-line spelling sets: a short alias (``--epochs``) or
    ``--section.field``."""
    from genenv_lab.config import ALIASES

    return ALIASES.get(spelling) or spelling[2:]


def _base_config(args: argparse.Namespace) -> RunConfig:
    """What the command line's options change: ``--config FILE``, else ``--preset``, else (``--resume`` of an
    existing run) the run's own ``config.json``, else the ``tiny`` preset."""
    if getattr(args, "config", None) and getattr(args, "preset", None):
        raise ConfigError("give --config FILE or --preset NAME, not both")
    if getattr(args, "config", None):
        from genenv_lab.coevolution.resolve import load_run_config

        return load_run_config(args.config)
    if getattr(args, "preset", None):
        return preset(args.preset)
    from genenv_lab.rundir.layout import CONFIG, RunDirError

    if getattr(args, "resume", False) and args.out and (Path(args.out) / CONFIG).is_file():
        from genenv_lab.rundir.read import read_config

        try:
            return read_config(args.out)
        except RunDirError as exc:
            raise ConfigError(str(exc)) from None
    return preset("tiny")


FIELD_DEST = "config:"


def boolean_type(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parser_for(kind: type, default=None):
    """The converter of a field's text, for its flags and ``--set`` alike (a text field whose default is not empty:
    :func:`nonempty_type`)."""
    if kind is bool:
        return boolean_type
    if kind in (int, float):
        return kind
    if kind is str:
        return nonempty_type if default else str
    return lambda text: tuple(part.strip() for part in text.split(",") if part.strip())  # tuple[str, ...]


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--section.field VALUE`` for every field of the run configuration, generated from the config dataclasses,
    and the short flags declared as aliases of fields (:data:`~genenv_lab.config.ALIASES`): the help is the field's
    docstring and range, the choices its constants, the type its type (a text field whose default is not empty
    cannot be emptied); values are validated by the config itself, after the preset and before any model loads."""
    from genenv_lab.config import ALIASES, config_fields

    fields = {f"{section}.{name}": (section, name, kind, doc) for section, name, kind, doc in config_fields()}
    short = parser.add_argument_group("common settings", "short for the field named in each help")
    for flag, path in ALIASES.items():
        _add_field(short, flag, *fields[path], help_prefix=f"= --{path}: ")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, (section, name, kind, doc) in fields.items():
        if section not in groups:
            groups[section] = parser.add_argument_group(
                f"{section} settings", f"every field of config.json's {section!r} section (default: the preset's)")
        _add_field(groups[section], f"--{path}", section, name, kind, doc)


def _add_field(group, flag: str, section: str, name: str, kind: type, doc: str, *, help_prefix: str = "") -> None:
    """One option setting field ``section.name`` (see :func:`config_arguments`)."""
    from genenv_lab.config import bounds_of
    from genenv_lab.config.fields import FIELD_METAVARS

    cls = _section_class(section)
    bounds = bounds_of(cls, name)
    if bounds is not None:  # the range declared on the field, as the config checks it
        doc = f"{doc} ({bounds.text()})" if doc else bounds.text()
    options = _choices().get((section, name))
    metavar = FIELD_METAVARS.get((section, name)) or {bool: "true|false", int: "N", float: "X", str: "TEXT"}.get(
        kind, "LIST")
    text = (help_prefix + doc).replace("``", "").replace("%", "%%")
    group.add_argument(flag, dest=f"{FIELD_DEST}{flag}", type=_parser_for(kind, _default_of(cls, name)),
                       choices=options, metavar=None if options else metavar,
                       help=text or None)


@functools.cache
def _choices() -> dict[tuple[str, str], tuple[str, ...]]:
    """The fields' fixed choices (:func:`~genenv_lab.config.field_choices`), read once."""
    from genenv_lab.config import field_choices

    return field_choices()


@functools.cache
def _section_classes() -> dict[str, type]:
    """Each section's dataclass, by name (read once: the parser asks for one per flag)."""
    from genenv_lab.config import RunConfig

    return typing.get_type_hints(RunConfig)


def _section_class(section: str) -> type:
    return _section_classes()[section]


def _default_of(cls: type, name: str):
    import dataclasses

    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def parse_setting(item: str) -> tuple[str, str, object]:
    """``SECTION.FIELD=VALUE`` of ``--set`` → (section, field, value): the field found as the flags find it and the
    value converted by the field's converter, as ``--SECTION.FIELD VALUE`` converts it (``false`` is a boolean,
    ``3`` an int, ``a,b`` a list); an unknown section or field, or a value of the wrong type, is a
    :class:`ConfigError` in one line. Ranges are checked by the config.

    >>> parse_setting("curriculum.alpha=0.3"), parse_setting("model.separate_adapters=False")
    (('curriculum', 'alpha', 0.3), ('model', 'separate_adapters', False))
    """
    import json

    from genenv_lab.config import SECTIONS, config_fields

    key, sep, raw = item.partition("=")
    section, dot, field = key.strip().partition(".")
    section, field = section.strip(), field.strip()
    if not sep or not dot or not section or not field:
        raise ConfigError(f"--set {item!r}: write SECTION.FIELD=VALUE, e.g. --set curriculum.alpha=0.3 or --set "
                          f"env.kl_coef=1.0 (sections: {', '.join(SECTIONS)})")
    kinds = {(s, f): kind for s, f, kind, _ in config_fields()}
    if section not in SECTIONS:
        raise ConfigError(f"--set {item!r}: no config section {section!r}; sections: {', '.join(SECTIONS)}")
    if (section, field) not in kinds:
        accepted = sorted(f for s, f in kinds if s == section)
        raise ConfigError(f"--set {item!r}: {section} has no field {field!r}; accepted: {', '.join(accepted)}")
    kind = kinds[section, field]
    text = raw.strip()
    if kind not in (bool, int, float, str) and text.startswith("["):  # a list may also be written as JSON
        try:
            return section, field, tuple(str(v) for v in json.loads(text))
        except (ValueError, TypeError):
            pass
    try:
        value = _parser_for(kind, _default_of(_section_class(section), field))(text if kind is not str else raw)
    except (ValueError, argparse.ArgumentTypeError):
        name = {bool: "true or false", int: "a whole number", float: "a number", str: "a non-empty text"}.get(
            kind, str(kind))
        raise ConfigError(f"--set {item!r}: {section}.{field} takes {name}, not {raw!r}") from None
    return section, field, value


def apply_settings(cfg: RunConfig, items) -> RunConfig:
    """``cfg`` with each ``SECTION.FIELD=VALUE`` of ``items`` applied (:func:`parse_setting`; a ``loop.domain``
    brings its recommended settings, except the fields also set), validated and resolved again: the ``--set`` of
    the benchmark scripts."""
    from genenv_lab.coevolution.resolve import for_domain, resolve

    changes: dict[str, dict] = {}
    for item in items:
        section, field, value = parse_setting(item)
        changes.setdefault(section, {})[field] = value
    domain = changes.get("loop", {}).pop("domain", None)
    if domain is not None:
        cfg = for_domain(cfg, domain, given=changes)
    changes = {section: fields for section, fields in changes.items() if fields}
    return resolve(cfg.replace(**changes) if changes else cfg)


def count_type(minimum: int, maximum: int | None = None):
    """argparse type: an integer ≥ ``minimum`` (and ≤ ``maximum`` when given; a value that cannot be right is
    refused, not ignored)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{value} is above {maximum}")
        return value
    parse.__name__ = f"integer ≥ {minimum}" if maximum is None else f"integer {minimum}-{maximum}"
    return parse


def nonempty_type(text: str) -> str:
    """argparse type: a non-blank string (``--model ""`` is refused)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value names nothing")
    return text
