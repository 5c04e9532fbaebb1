"""The command line's configuration surface: a run's config from the parsed arguments (the preset, the short flags,
the generated ``--section.field`` flags, ``--set SECTION.FIELD=VALUE`` and ``--config FILE``), and the argparse
types the commands share. Only :mod:`genenv_lab.cli` parses arguments; this module turns them into a
:class:`~genenv_lab.config.RunConfig`."""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from .config import ConfigError, RunConfig, for_domain, load_config, preset

def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration: the preset, then every field the command line sets. A field may be written three
    ways (``--epochs 5``, ``--loop.epochs 5``, ``--set loop.epochs=5``); giving one field two different values is
    refused in one line instead of one spelling silently winning. A domain, however it is written, brings its
    recommended settings (:func:`for_domain`). Naming a held-out benchmark, category or protocol without
    ``--eval-every`` evaluates every epoch where the preset evaluates never."""
    given: dict[tuple[str, str], list[tuple[str, object]]] = {}

    def give(section: str, field: str, value: object, spelling: str) -> None:
        given.setdefault((section, field), []).append((spelling, value))

    if args.model:
        give("model", "name_or_path", args.model, "--model")
    if args.engine:
        give("model", "engine", args.engine, "--engine")
    if args.domain:
        give("loop", "domain", args.domain, "--domain")
    for key in ("epochs", "seed", "variant", "eval_every", "eval_benchmark", "eval_category", "eval_limit",
                "eval_data_dir", "eval_protocol", "report_to"):
        value = getattr(args, key, None)
        if value is not None:
            give("loop", key, value, f"--{key.replace('_', '-')}")
    for item in getattr(args, "set", None) or []:
        section, field, value = parse_setting(item)
        give(section, field, value, f"--set {section}.{field}")
    for key, value in vars(args).items():  # --section.field VALUE (config_arguments)
        if key.startswith(FIELD_DEST) and value is not None:
            section, field = key[len(FIELD_DEST):].split(".", 1)
            give(section, field, value, f"--{section}.{field}")
    changes: dict[str, dict] = {}
    for (section, field), values in given.items():
        if len({repr(v) for _, v in values}) > 1:
            said = ", ".join(f"{spelling} {value!r}" for spelling, value in values)
            raise ConfigError(f"{section}.{field} is given different values ({said}); give it once")
        changes.setdefault(section, {})[field] = values[-1][1]
    cfg = _base_config(args)
    domain = changes.get("loop", {}).pop("domain", None)
    if domain is not None:
        cfg = for_domain(cfg, domain)
    loop = changes.get("loop", {})
    if "eval_every" not in loop and cfg.loop.eval_every == 0 and any(
            k in loop for k in ("eval_benchmark", "eval_category", "eval_protocol")):
        loop["eval_every"] = 1  # naming what to evaluate on asks for an evaluation: every epoch unless told
    changes = {section: fields for section, fields in changes.items() if fields}
    return cfg.replace(**changes) if changes else cfg


def _base_config(args: argparse.Namespace) -> RunConfig:
    """What the command line's options change: ``--config FILE``, else ``--preset``, else (``--resume`` of an
    existing run) the run's own ``config.json``, else the ``tiny`` preset."""
    if getattr(args, "config", None) and getattr(args, "preset", None):
        raise ConfigError("give --config FILE or --preset NAME, not both")
    if getattr(args, "config", None):
        return load_config(args.config)
    if getattr(args, "preset", None):
        return preset(args.preset)
    if getattr(args, "resume", False) and args.out and (Path(args.out) / "config.json").is_file():
        return load_config(Path(args.out) / "config.json")
    return preset("tiny")


FIELD_DEST = "config:"


def boolean_type(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parser_for(kind: type):
    if kind is bool:
        return boolean_type
    if kind in (int, float):
        return kind
    if kind is str:
        return str
    return lambda text: tuple(part.strip() for part in text.split(",") if part.strip())  # tuple[str, ...]


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--section.field VALUE`` for every field of the run configuration, generated from the config dataclasses:
    the help is the field's docstring, the choices its constants; values are validated by the config itself
    (ranges next to the fields), after the preset and before any model loads."""
    from .config import RunConfig, bounds_of, config_fields, field_choices

    choices = field_choices()
    groups: dict[str, argparse._ArgumentGroup] = {}
    sections = typing.get_type_hints(RunConfig)  # section name -> its dataclass
    for section, name, kind, doc in config_fields():
        bounds = bounds_of(sections[section], name)
        if bounds is not None:  # the range declared on the field, as the config checks it
            doc = f"{doc} ({bounds.text()})" if doc else bounds.text()
        if section not in groups:
            groups[section] = parser.add_argument_group(
                f"{section} settings", f"every field of config.json's {section!r} section (default: the preset's)")
        metavar = {bool: "true|false", int: "N", float: "X", str: "TEXT"}.get(kind, "LIST")
        options = choices.get((section, name))
        groups[section].add_argument(
            f"--{section}.{name}", dest=f"{FIELD_DEST}{section}.{name}", type=_parser_for(kind), choices=options,
            metavar=None if options else metavar, help=doc.replace("``", "").replace("%", "%%") or None)


def parse_setting(item: str) -> tuple[str, str, object]:
    """``SECTION.FIELD=VALUE`` of ``--set`` → (section, field, value), the value read as the field's type, exactly as
    ``--SECTION.FIELD VALUE`` reads it (``false`` is a boolean, ``3`` an int, ``a,b`` a list); an unknown section or
    field, or a value of the wrong type, is a :class:`ConfigError` in one line. Ranges are checked by the config.

    >>> parse_setting("curriculum.alpha=0.3"), parse_setting("model.separate_adapters=False")
    (('curriculum', 'alpha', 0.3), ('model', 'separate_adapters', False))
    """
    import json

    from .config import config_fields

    key, sep, raw = item.partition("=")
    section, dot, field = key.strip().partition(".")
    section, field = section.strip(), field.strip()
    kinds = {(s, f): kind for s, f, kind, _ in config_fields()}
    sections = sorted({s for s, _ in kinds})
    if not sep or not dot or not section or not field:
        raise ConfigError(f"--set {item!r}: write SECTION.FIELD=VALUE, e.g. --set curriculum.alpha=0.3 or --set "
                          f"env.kl_coef=1.0 (sections: {', '.join(sections)})")
    if section not in sections:
        raise ConfigError(f"--set {item!r}: no config section {section!r}; sections: {', '.join(sections)}")
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
        value = _parser_for(kind)(text if kind is not str else raw)
    except (ValueError, argparse.ArgumentTypeError):
        name = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, str(kind))
        raise ConfigError(f"--set {item!r}: {section}.{field} takes {name}, not {raw!r}") from None
    return section, field, value


def apply_settings(cfg: RunConfig, items) -> RunConfig:
    """``cfg`` with each ``SECTION.FIELD=VALUE`` of ``items`` applied (:func:`parse_setting`), validated again: the
    ``--set`` of the benchmark scripts."""
    changes: dict[str, dict] = {}
    for item in items:
        section, field, value = parse_setting(item)
        changes.setdefault(section, {})[field] = value
    return cfg.replace(**changes) if changes else cfg


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
