"""Task families the simulator writes in. Each domain: env prompt, parse + validate, agent prompt, score.

A domain is looked up by name in :data:`DOMAINS`; see :class:`genenv_lab.domains.base.Domain` for the interface.
"""

from __future__ import annotations

from .base import Domain, LineageStats, ParseResult, SeedTask, get_domain
from .arith import ArithDomain
from .count import CountDomain
from .qa import QADomain, QAExactDomain
from .times import Times99Domain, TimesDomain
from .tools import ToolsDomain

DOMAINS: dict[str, type[Domain]] = {"arith": ArithDomain, "tools": ToolsDomain, "qa": QADomain,
                                    "qa_em": QAExactDomain, "times": TimesDomain,
                                    "times99": Times99Domain, "count": CountDomain}

__all__ = ["DOMAINS", "Domain", "LineageStats", "ParseResult", "SeedTask", "get_domain", "ArithDomain",
           "TimesDomain", "Times99Domain", "CountDomain", "ToolsDomain", "QADomain", "QAExactDomain"]
