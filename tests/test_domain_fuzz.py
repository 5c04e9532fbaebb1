"""Every domain survives hostile model output: a task or a counted rejection, a reward in [0, 1], never a raise."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genenv_lab.domains import DOMAINS
from genenv_lab.domains.base import ParseResult
from genenv_lab.domains.hostile import hostile_cases, random_hostile

NAMES = sorted(DOMAINS)


def _check(domain, text: str) -> None:
    parsed = domain.safe_parse(text)
    assert isinstance(parsed, ParseResult) and parsed.valid != bool(parsed.reason)
    spec = domain.seed_tasks()[0].spec
    reward, error = domain.safe_score(spec, text)
    assert 0.0 <= reward <= 1.0 and isinstance(error, str)


@pytest.mark.parametrize("name", NAMES)
def test_fixed_hostile_cases(name):
    domain = DOMAINS[name]()
    for text in hostile_cases():
        _check(domain, text)


@pytest.mark.parametrize("name", NAMES)
def test_overlong_text_is_rejected_unparsed(name):
    domain = DOMAINS[name]()
    text = "Task: 7 * 8" + " " * domain.max_text_chars
    assert "longer than" in domain.safe_parse(text).reason
    assert domain.safe_score(domain.seed_tasks()[0].spec, text) == (0.0, f"completion longer than "
                                                                        f"{domain.max_text_chars} characters")


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=300), st.integers(0, 2**32).map(lambda s: random_hostile(random.Random(s)))))
def test_random_and_recombined_hostile_text(name, text):
    _check(DOMAINS[name](), text)
