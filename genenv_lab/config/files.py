"""A run's configuration from a JSON or YAML file, read as strictly as flags are (bounded, typed, YAML without
aliases, numbers as JSON reads them)."""

from __future__ import annotations

import re
from pathlib import Path

from .fields import SECTIONS
from .schema import ConfigError, RunConfig


def load_config(path: str | Path) -> RunConfig:
    """A :class:`RunConfig` from a JSON or YAML file holding config.json's sections (a run's ``config.json``, a file
    for ``run --config``), read as an untrusted file (a regular file of at most 4 MB); one ConfigError otherwise."""
    from ..safe_io import MB, loads_json, read_regular

    path = Path(path)
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    try:
        raw = read_regular(path, 4 * MB, "config file")
        if not yaml_file:
            data = loads_json(raw)
    except (OSError, ValueError) as exc:
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
    try:
        return RunConfig.from_dict(data)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


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
