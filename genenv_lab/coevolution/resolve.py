"""Where a run's configuration meets what is installed: :func:`resolve` checks the names a config gives against
their registries (the domain, the world recipe of ``tiny-world``, the held-out benchmark, the seed and held-out task
files), and :func:`for_domain` switches a config to a domain with that domain's recommended settings
(``Domain.recommended``). The config package holds its fields, bounds and the checks between its own fields only
(as TRL's ``GRPOConfig`` does); these need the domains, the models and the benchmarks, so they are made here, at
the edge: by the command line, ``preflight``/``run`` of :mod:`genenv_lab.coevolution.session`, the comparison grid,
the TRL integration and the lab. Written by hand: the registries are this project's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from genenv_lab.config import TASK_FILE, ConfigError, RunConfig, config_file_data, config_from_data, require
from genenv_lab.config.presets import PRESETS, preset


def resolve(cfg: RunConfig) -> RunConfig:
    """``cfg`` checked against what is installed, before any model loads, each problem one :class:`ConfigError`
    line as a bad field value is: ``loop.domain`` names a domain (shipped, ``package.module:Class`` or registered by
    a package), ``model.name_or_path="tiny-world"`` has a world for that domain, ``loop.seeds``, ``loop.heldout``
    and ``loop.probe`` name existing files, and ``eval.benchmark`` (when ``eval.every`` is set) is a benchmark or
    ``domain``.

    A preset, a run's ``config.json`` and a config from :func:`for_domain` are complete (their domain's settings
    are in them), so ``resolve(preset("tiny")) == preset("tiny")``; the config comes back as given."""
    _domain_class(cfg.loop.domain)  # the domain exists
    if cfg.model.name_or_path == "tiny-world":
        from genenv_lab.models.world import world_class

        try:
            world_class(cfg.loop.domain)
        except ValueError as exc:
            raise ConfigError(f"ModelConfig.name_or_path='tiny-world' is invalid here: {exc}") from None
    from genenv_lab.domains.base import task_file

    for name in ("seeds", "heldout", "probe"):
        value = getattr(cfg.loop, name)
        require(not value or Path(task_file(value)).is_file(), "LoopConfig", name, value, TASK_FILE)
    ev = cfg.eval
    if ev.every and ev.benchmark != "domain":
        from genenv_lab.evaluation.runner import BENCHMARKS, get_benchmark

        try:
            get_benchmark(ev.benchmark)
        except ValueError:
            require(False, "EvalConfig", "benchmark", ev.benchmark,
                    f"'domain' (the domain's held-out set) or one of {sorted(BENCHMARKS)}")
    return cfg


def for_domain(cfg: RunConfig, domain: str, given: Mapping[str, Any] | None = None) -> RunConfig:
    """``cfg`` switched to ``domain`` with the domain's recommended settings (a ``max_*`` token budget only grows,
    other fields take the domain's value), except the fields in ``given`` (config.json's layout: what was said
    explicitly with the domain wins); for the domain ``cfg`` already has, those settings are applied again. A
    per-epoch held-out score on the domain's own set (``eval.benchmark="domain"``) is turned off when the domain
    ships none (``tools``, ``qa``) and ``eval.every`` is not in ``given``. The result is checked by :func:`resolve`."""
    if domain != cfg.loop.domain:
        cfg = cfg.replace(loop={"domain": domain})
    cls = _domain_class(domain)
    resolve(cfg)  # a tiny-world without a world for this domain fails here, not in a settings change below
    given = {k: v for k, v in (given or {}).items() if isinstance(v, Mapping)}
    changes: dict[str, dict[str, Any]] = {}
    ev = cfg.eval
    if ev.every and ev.benchmark == "domain" and not cfg.loop.heldout and not cls().heldout_tasks() \
            and "every" not in given.get("eval", {}):
        changes["eval"] = {"every": 0}
    for section, fields in cls.recommended.items():
        current = getattr(cfg, section)
        for name, value in fields.items():
            if name in given.get(section, {}):
                continue
            old = getattr(current, name)
            grow = name.startswith("max_") and isinstance(old, int)
            changes.setdefault(section, {})[name] = max(old, value) if grow else value
    return resolve(cfg.replace(**changes)) if changes else cfg


def load_run_config(path: str | Path) -> RunConfig:
    """``genenv-lab run --config FILE``: the file's configuration (:func:`genenv_lab.config.config_from_data`), and
    when its ``preset`` is one of PRESETS and it names another ``loop.domain``, that domain's recommended settings
    except the fields the file gives (as ``--preset P --domain D`` does); resolved. Each problem one ConfigError
    line naming the file."""
    data = config_file_data(path)
    try:
        cfg = config_from_data(data)
        name = data.get("preset")
        if isinstance(name, str) and name in PRESETS and cfg.loop.domain != preset(name).loop.domain:
            return for_domain(cfg, cfg.loop.domain, given=data)
        return resolve(cfg)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _domain_class(name: str):
    """The domain class ``loop.domain`` names; a :class:`ConfigError` line naming the field otherwise."""
    from genenv_lab.domains import domain_class

    try:
        return domain_class(name)
    except ValueError as exc:
        raise ConfigError(f"LoopConfig.domain={name!r} is invalid: {exc}") from None
