"""The arith domain: safe parsing, truth computation, rejections with reasons, scoring."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.domains import get_domain
from genenv_lab.domains.arith import evaluate, extract_answer

D = get_domain("arith")


def test_valid_task_computes_truth_and_features():
    r = D.parse("Sure!\nExpression: (12 + 7) * 3\nQuestion: How many marbles?\nThanks")
    assert r.valid and r.spec.answer == "57"
    assert r.spec.features == {"n_operands": 3, "max_digits": 2, "operators": "*+", "n_operators": 2,
                               "has_parens": True, "depth": 2}
    assert r.spec.text == "Expression: (12 + 7) * 3\nQuestion: How many marbles?"


@pytest.mark.parametrize("text, reason", [
    ("Question: only a question", "missing 'Expression:'"),
    ("Expression: 3 + 4", "missing 'Question:'"),
    ("Expression: 3 +\nQuestion: q", "syntax error"),
    ("Expression: __import__('os').system('ls')\nQuestion: q", "disallowed construct"),
    ("Expression: 2 ** 10\nQuestion: q", "disallowed operator"),
    ("Expression: 1.5 + 2\nQuestion: q", "disallowed literal"),
    ("Expression: 7 / 0\nQuestion: q", "division by zero"),
    ("Expression: 7 / 2\nQuestion: q", "non-integer result"),
    ("Expression: 1234567 + 1\nQuestion: q", "digits"),
    ("Expression: 1+1+1+1+1+1+1+1+1\nQuestion: q", "operands"),
    ("Expression: " + "(" * 200 + "1" + ")" * 200 + "\nQuestion: q", "longer than"),
    ("Expression: x + 1\nQuestion: q", "disallowed construct: Name"),
])
def test_rejections_have_reasons(text, reason):
    r = D.parse(text)
    assert not r.valid and reason in r.reason


def test_usual_spellings_and_stated_results_are_cross_checked():
    assert D.parse("Expression: 12 x 4 + 20\nQuestion: q").spec.answer == "68"
    assert D.parse("Expression: 45 ÷ 9 = 5\nQuestion: q").spec.answer == "5"
    r = D.parse("Expression: 45 / 9 = 6\nQuestion: q")
    assert not r.valid and "disagrees" in r.reason
    assert D.parse("Expression: 6 * 7 = ?\nQuestion: q").spec.answer == "42"


def test_scoring_and_answer_extraction():
    spec = D.parse("Expression: 100 - 37\nQuestion: left?").spec
    assert D.score(spec, " 63 coins") == 1.0
    assert D.score(spec, " 100 minus 37 ... Answer: 63.0") == 1.0
    assert D.score(spec, " 64, I think") == 0.0
    assert D.score(spec, "no number") == 0.0
    assert extract_answer("Answer: 1,000 apples") == "1000"
    messages = D.agent_messages(spec)
    assert messages[-1] == {"role": "assistant", "content": "100 - 37 ="}


def test_seed_tasks_are_valid_and_unique():
    seeds = D.seed_tasks()
    assert len(seeds) >= 10
    assert len({s.seed_id for s in seeds}) == len(seeds)
    for s in seeds:
        assert D.score(s.spec, D.reference_solution(s.spec)) == 1.0


@given(st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=5),
       st.lists(st.sampled_from(["+", "-", "*"]), min_size=5, max_size=5))
def test_evaluate_matches_python_on_safe_expressions(nums, ops):
    expr = str(nums[0]) + "".join(f" {o} {n}" for o, n in zip(ops, nums[1:]))
    value, feats = evaluate(expr)
    assert value == eval(expr)  # reference only, on strings this test built itself
    assert feats["n_operands"] == len(nums)


@given(st.text(max_size=80))
def test_parse_never_raises(text):
    r = D.parse("Expression: " + text + "\nQuestion: q")
    assert r.valid or r.reason


def test_a_held_out_item_spelt_otherwise_is_refused_as_training_or_probe_item(tmp_path):
    """Round 6, PB1: the held-out guard compares the domain's canonical form of the question, so `4*11` (or other
    case and spacing) is refused like held-out `4 * 11`, as a generated task and as a probe item."""
    import json

    from genenv_lab.domains.base import HELDOUT_REASON

    d = get_domain("arith")
    for text in ("Expression: 4*11\nQuestion: What is the value of 4*11?",
                 "Expression: 4 * 11\nQuestion: what is the value of 4  *  11 ?"):
        assert d.safe_parse(text).reason == HELDOUT_REASON
    assert d.safe_parse("Expression: 4 * 12\nQuestion: What is the value of 4 * 12?").valid
    probe = tmp_path / "probe.jsonl"
    probe.write_text(json.dumps({"id": "p0", "text": "Expression: 4*11\nQuestion: What is the value of 4*11?"}) + "\n")
    with pytest.raises(ValueError, match="probe.jsonl:1: .*held-out item"):
        d.probe_tasks(str(probe))
