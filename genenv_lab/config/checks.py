"""How every config field is checked, one mechanism for all: :class:`ConfigError` (one line naming the field, the
value and what is accepted), :func:`require` and :func:`in_range` for the dataclasses' own checks, and
:func:`build`/:func:`replace_fields`, through which every value arrives (a flag, ``--set``, a config file, a run's
``config.json``, ``replace``) and is type-checked first."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Mapping


class ConfigError(ValueError):
    """A configuration value is out of its accepted range; the message says which field and what to do."""


def require(ok: bool, where: str, name: str, value: Any, accepted: str) -> None:
    if not ok:
        raise ConfigError(f"{where}.{name}={value!r} is invalid: accepted {accepted}.")


def in_range(where: str, name: str, value: Any, lo: float | None = None, hi: float | None = None,
              integer: bool = False, lo_open: bool = False) -> None:
    kind = "an integer" if integer else "a number"
    bounds = []
    if lo is not None:
        bounds.append(f"{'>' if lo_open else '≥'} {lo}")
    if hi is not None:
        bounds.append(f"≤ {hi}")
    accepted = f"{kind} {' and '.join(bounds)}".strip()
    is_num = isinstance(value, int) if integer else isinstance(value, (int, float))
    ok = is_num and not isinstance(value, bool) and not (isinstance(value, float) and math.isnan(value))
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value <= hi
    require(ok, where, name, value, accepted)


def build(cls: type, values: Mapping[str, Any]) -> Any:
    if not isinstance(values, Mapping):
        raise ConfigError(f"the {cls.__name__} section is {type(values).__name__}, not a mapping of its fields")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"{cls.__name__} has no field(s) {sorted(unknown)}; accepted: {sorted(known)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    for name, value in values.items():
        check_type(cls, name, value)
    return cls(**values)


def check_type(cls: type, name: str, value: Any) -> None:
    """A field's value has the field's type, however it arrived (a flag, ``--set``, a config file, a run's
    config.json, ``replace``): ``"false"`` is no boolean, ``True`` no number, a string no list of module names. The
    ranges are the dataclasses' own checks."""
    import typing

    want = typing.get_type_hints(cls)[name]
    if want is bool:
        ok = isinstance(value, bool)
    elif want is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif want is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif want is str:
        ok = isinstance(value, str)
    elif typing.get_origin(want) is tuple:
        ok = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    else:
        ok = True
    if not ok:
        kind = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(
            want, "a list of strings")
        raise ConfigError(f"{cls.__name__}.{name}={json.dumps(value, default=str)[:60]} is invalid: accepted "
                          f"{kind}")


def replace_fields(obj: Any, changes: Mapping[str, Any]) -> Any:
    merged = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    known = set(merged)
    unknown = set(changes) - known
    if unknown:
        raise ConfigError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}; accepted: {sorted(known)}")
    merged.update(changes)
    return build(type(obj), merged)
