"""A run's configuration from a JSON or YAML file, read as strictly as flags are (bounded, typed, YAML without
aliases, numbers as JSON reads them)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from genenv_lab.config.fields import SECTIONS
from genenv_lab.config.schema import ConfigError, RunConfig
from genenv_lab.config.spellings import old_layout_error


def load_config(path: str | Path) -> RunConfig:
    """A :class:`RunConfig` from a JSON or YAML file holding config.json's sections (a run's ``config.json``, a file
    for ``run --config``), read as an untrusted file (a regular file of at most 4 MB); one ConfigError otherwise
    (:func:`config_file_data`, then :func:`config_from_data`). A run's own ``config.json`` gives every field, so it
    reads as it was written; one in the layout before fields moved section is refused in one line that says to run
    ``genenv-lab upgrade RUN_DIR``. ``genenv-lab run --config`` reads a file through
    :func:`genenv_lab.coevolution.resolve.load_run_config`, which also brings a new domain's recommended settings."""
    path = Path(path)
    data = config_file_data(path)
    try:
        return config_from_data(data)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def config_file_data(path: str | Path) -> dict:
    """The mapping of sections a JSON or YAML configuration file holds (read strictly; one ConfigError otherwise)."""
    from genenv_lab.safe_io import MB, loads_json, read_regular

    path = Path(path)
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    try:
        raw = read_regular(path, 4 * MB, "config file")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as a configuration ({exc})") from None
    deep = nesting_problem(raw)
    if deep:
        raise ConfigError(f"{path} is not read as a configuration: {deep}")
    try:
        if not yaml_file:
            data = loads_json(raw)
    except ValueError as exc:
        raise ConfigError(f"{path} cannot be read as a configuration ({exc})") from None
    if yaml_file:
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or give JSON") from None
        try:
            data = _load_yaml(yaml, raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} cannot be read as YAML ({str(exc).splitlines()[0]})") from None
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a configuration (a mapping of sections: {', '.join(SECTIONS)})")
    return data


def config_from_data(data: dict) -> RunConfig:
    """The configuration ``data`` (a file's sections) describes: its ``preset`` (one of PRESETS) with the data's
    values over it, or the dataclasses' defaults with them (``"custom"``, or no preset).

    A ``preset`` is applied, not only shown: ``{"preset": "tiny", "loop": {"epochs": 1}}`` is the tiny preset with
    one epoch. Any other name is the label of a configuration built from the dataclasses' defaults (``"custom"``,
    the default, or your own) and must be printable ASCII; one that is a preset's name spelled otherwise (``Tiny``,
    ``tiny ``, a fullwidth ``ｔｉｎｙ``, a dotless-i ``tıny``) or a letter or two from one (``tinyy``,
    ``cpu-dry-hint-lon``: one edit for a name of up to 5 letters, two for a longer one) is refused with the name it is
    near, so a label never claims a preset it is not and a typo never runs the defaults."""
    from collections.abc import Mapping

    from genenv_lab.config.presets import PRESETS, preset

    name = data.get("preset", "custom")
    if not isinstance(name, str) or name == "custom":  # a preset that is no string is refused by from_dict
        return RunConfig.from_dict(data)
    if name not in PRESETS:
        folded = unicodedata.normalize("NFKC", name).replace("\u0131", "i").strip().casefold()
        near = next((p for p in PRESETS if p == folded), None) or next(
            (p for p in PRESETS if _edits(folded, p) <= (1 if len(p) <= 5 else 2)), None)
        if near or not (name.isascii() and name.isprintable()):
            raise ConfigError(f"preset={ascii(name)[:60]} is not a preset's name as written"
                              + (f" (did you mean {near!r}?)" if near else "") + f": give one of {', '.join(PRESETS)} "
                              "exactly (its settings, with the file's values over them), or a label of printable "
                              "ASCII such as \"custom\" (the defaults, with the file's values)")
        return RunConfig.from_dict(data)  # a label of the user's own configuration, built from the defaults
    problem = old_layout_error(data)
    if problem:
        raise ConfigError(problem)
    merged = preset(name).to_dict()
    for key, value in data.items():
        mine = merged.get(key)
        merged[key] = {**mine, **value} if isinstance(mine, dict) and isinstance(value, Mapping) else value
    return RunConfig.from_dict(merged)


MAX_NESTING = 32
"""The deepest nesting a configuration file may hold (brackets, indentation levels, ``- `` items on one line); a
configuration needs four."""


def nesting_problem(raw: bytes | str) -> str | None:
    r"""Why a configuration file's text nests too deeply to hand to a parser, or None: one linear scan, before
    PyYAML's pure-Python scanner (which takes minutes over 100,000 nested ``[``) or the JSON reader see it. Brackets
    inside quotes count too: a configuration's strings hold none that deep.

    >>> nesting_problem("loop: {epochs: 3}"), nesting_problem("a: " + "[" * 40 + "]" * 40)[:40]
    (None, 'brackets nested 33 deep (at most 32 are ')
    >>> nesting_problem("a:\n" + "".join(" " * (4 * i) + f"k{i}:\n" for i in range(40)))[:34]
    'indentation 132 columns deep (at m'
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return (f"brackets nested {depth} deep (at most {MAX_NESTING} are read), at character {i}; a "
                        "configuration nests four levels")
        elif ch in "]}":
            depth = max(0, depth - 1)
    for n, line in enumerate(text.splitlines(), 1):
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        if indent > 4 * MAX_NESTING:
            return f"indentation {indent} columns deep (at most {4 * MAX_NESTING}) on line {n}"
        items = len(re.match(r"(?:-[ \t]+)*", body).group(0).split("-")) - 1
        if items > MAX_NESTING:
            return f"{items} list items nested on line {n} (at most {MAX_NESTING})"
    return None


def _edits(a: str, b: str) -> int:
    """The Levenshtein distance of two short strings (the standard library has none; a preset's name is a few
    dozen characters at most).

    >>> _edits("tinyy", "tiny"), _edits("cpu-dry-hint-lon", "cpu-dry-hint-long"), _edits("mine", "tiny")
    (1, 1, 2)
    """
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _load_yaml(yaml, raw):
    """YAML read as a configuration: PyYAML's safe loader, with no anchors or aliases (a 1 kB file of nested aliases
    expands to gigabytes) and numbers read as YAML 1.2 and JSON read them (``010`` is 10, not octal 8; ``1:20`` is a
    string, not 80; ``5e-5`` is a number)."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
        raise ValueError("YAML anchors and aliases (*name) are not accepted in a configuration; write the values out")

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                   r"|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))
    Loader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node)))
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
