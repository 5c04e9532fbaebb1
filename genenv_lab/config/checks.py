"""How every config field is checked, one mechanism for all: :class:`ConfigError` (one line naming the field, the
value and what is accepted); :func:`bounded`, the range declared on a number field, and :func:`check_bounds`, which
checks them all; :func:`require` for the few checks a range cannot say; and :func:`build`/:func:`replace_fields`,
through which every value arrives (a flag, ``--set``, a config file, a run's ``config.json``, ``replace``) and is
type-checked first."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping


class ConfigError(ValueError):
    """A configuration value is out of its accepted range; the message says which field and what to do."""


def require(ok: bool, where: str, name: str, value: Any, accepted: str) -> None:
    if not ok:
        raise ConfigError(f"{where}.{name}={value!r} is invalid: accepted {accepted}.")


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


@dataclass(frozen=True)
class Bounds:
    """A number field's accepted range, declared on the field (:func:`bounded`) and checked by :func:`check_bounds`;
    the command line's help shows it (:meth:`text`)."""

    lo: float | None = None
    hi: float | None = None
    integer: bool = False
    lo_open: bool = False

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is a number (a whole one when :attr:`integer`; not a bool, not NaN) in the range."""
        is_num = isinstance(value, int) if self.integer else isinstance(value, (int, float))
        ok = is_num and not isinstance(value, bool) and not (isinstance(value, float) and math.isnan(value))
        if ok and self.lo is not None:
            ok = value > self.lo if self.lo_open else value >= self.lo
        return ok and (self.hi is None or value <= self.hi)

    def text(self) -> str:
        """E.g. ``an integer ≥ 1 and ≤ 1024``, or ``a number > 0.0 and ≤ 1.0``."""
        bounds = ([f"{'>' if self.lo_open else '≥'} {self.lo}"] if self.lo is not None else []) + \
            ([f"≤ {self.hi}"] if self.hi is not None else [])
        return f"{'an integer' if self.integer else 'a number'} {' and '.join(bounds)}".strip()


def bounded(default: Any, lo: float | None = None, hi: float | None = None, *, integer: bool = False,
            lo_open: bool = False) -> Any:
    """A dataclass field with ``default`` whose value must lie in [``lo``, ``hi``] (``lo_open``: above ``lo``),
    a whole number when ``integer``: one declaration instead of a check written by hand in ``__post_init__``."""
    return field(default=default, metadata={"bounds": Bounds(lo, hi, integer, lo_open)})


def bounds_of(cls: type, name: str) -> Bounds | None:
    """The declared range of field ``name`` of config dataclass ``cls`` (None when it has none)."""
    return next((f.metadata.get("bounds") for f in dataclasses.fields(cls) if f.name == name), None)


def check_bounds(obj: Any) -> None:
    """Every declared range of ``obj``'s fields (one :class:`ConfigError` line naming the field, the value and the
    range)."""
    for f in dataclasses.fields(obj):
        b = f.metadata.get("bounds")
        if b is not None:
            require(b.admits(getattr(obj, f.name)), type(obj).__name__, f.name, getattr(obj, f.name), b.text())
