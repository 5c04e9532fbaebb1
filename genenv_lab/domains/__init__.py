"""Task families the simulator writes in. Each domain: env prompt, parse + validate, agent prompt, score.

A domain is named by :func:`domain_class`: a name of :data:`DOMAINS` (the shipped ones), a class anywhere as
``package.module:Class``, or a name an installed package registers in the entry-point group
:data:`ENTRY_POINT_GROUP`. See :class:`genenv_lab.domains.base.Domain` for the interface and docs/domains.md for a
worked example.
"""

from __future__ import annotations

from genenv_lab.domains.base import Domain, LineageStats, ParseResult, SeedTask, get_domain
from genenv_lab.domains.arith import ArithDomain
from genenv_lab.domains.carry import CarryDomain
from genenv_lab.domains.count import CountDomain
from genenv_lab.domains.facts import FactsDomain
from genenv_lab.domains.stride import StrideDomain
from genenv_lab.domains.qa import QADomain, QAExactDomain
from genenv_lab.domains.times import Times99Domain, TimesDomain
from genenv_lab.domains.tools import ToolsDomain

DOMAINS: dict[str, type[Domain]] = {"arith": ArithDomain, "tools": ToolsDomain, "qa": QADomain,
                                    "qa_em": QAExactDomain, "times": TimesDomain,
                                    "times99": Times99Domain, "count": CountDomain,
                                    "stride": StrideDomain, "carry": CarryDomain,
                                    "facts": FactsDomain}

ENTRY_POINT_GROUP = "genenv_lab.domains"
"""Entry-point group under which an installed package registers its domains by name, e.g. in its pyproject.toml:
``[project.entry-points."genenv_lab.domains"] add = "my_pkg.add:AddDomain"``."""


def _registered() -> dict[str, object]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_domains() -> list[str]:
    """The domain names this installation knows: the shipped ones and those installed packages register."""
    return sorted(set(DOMAINS) | set(_registered()))


def _reraise_interrupts(exc: BaseException) -> None:
    """Ctrl-C (and a generator closing) stay what they are; every other exception of a domain's import is a line."""
    if isinstance(exc, (KeyboardInterrupt, GeneratorExit)):
        raise exc


def domain_class(name: str) -> type[Domain]:
    """The :class:`Domain` subclass ``name`` stands for (see the module docstring); ``ValueError`` in one line when
    there is none."""
    if name in DOMAINS:
        return DOMAINS[name]
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a domain name is needed")
    if ":" in name:
        module, _, attr = name.partition(":")
        import importlib

        try:  # importing the module runs its code: whatever it raises, a sys.exit() in it included, is one line
            cls = getattr(importlib.import_module(module), attr)
        except BaseException as exc:  # noqa: BLE001 - third-party code
            _reraise_interrupts(exc)
            raise ValueError(f"domain {name!r} could not be imported ({type(exc).__name__}: {exc})") from None
    elif (entry := _registered().get(name)) is not None:
        try:
            cls = entry.load()
        except BaseException as exc:  # noqa: BLE001 - whatever a third-party package raises on import
            _reraise_interrupts(exc)
            raise ValueError(f"domain {name!r} (entry point) could not be loaded ({type(exc).__name__}: {exc})") \
                from None
    else:
        raise ValueError(f"unknown domain {name!r}: choose one of {known_domains()}, or name a class as "
                         "package.module:Class (docs/domains.md)")
    if not (isinstance(cls, type) and issubclass(cls, Domain)):
        raise ValueError(f"domain {name!r} is not a subclass of genenv_lab.domains.Domain")
    return cls


def domain_of(cfg) -> Domain:
    """The domain a :class:`~genenv_lab.config.RunConfig` trains on, with its seed and held-out files
    (``loop.seeds``, ``loop.heldout``) when it names its own."""
    return get_domain(cfg.loop.domain, seeds=cfg.loop.seeds, heldout=cfg.loop.heldout)


__all__ = ["DOMAINS", "ENTRY_POINT_GROUP", "domain_class", "domain_of", "known_domains", "Domain", "LineageStats",
           "ParseResult", "SeedTask", "get_domain", "ArithDomain", "TimesDomain", "Times99Domain", "CountDomain",
           "ToolsDomain", "QADomain", "QAExactDomain"]
