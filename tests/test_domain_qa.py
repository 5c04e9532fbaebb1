"""The qa domain: two-hop structure checks with reasons, F1 / exact-match scoring, seeds."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.domains.base import LineageStats
from genenv_lab.domains.qa import QADomain, QAExactDomain

D = QADomain()
E = QAExactDomain()

GOOD = ("Question: Who was the first president of the country whose capital is Nairobi?\n"
        "Step 1: Which country has Nairobi as its capital? -> Kenya\n"
        "Step 2: Who was the first president of Kenya? -> Jomo Kenyatta\n"
        "Answer: Jomo Kenyatta")


def test_valid_task():
    r = D.parse("Sure!\n" + GOOD + "\nThanks")
    assert r.valid, r.reason
    assert r.spec.question == "Who was the first president of the country whose capital is Nairobi?"
    assert r.spec.answer == "Jomo Kenyatta" and r.spec.text == GOOD
    assert r.spec.features == {"question_words": 12, "answer_words": 2, "answer_kind": "entity",
                               "bridge_kind": "entity"}
    assert r.spec.text.startswith(D.env_prefill)


def _edit(line: str, new: str) -> str:
    lines = GOOD.splitlines()
    idx = [ln.split(":")[0] for ln in lines].index(line)
    lines[idx] = f"{line}: {new}" if new is not None else ""
    return "\n".join(lines)


@pytest.mark.parametrize("text, reason", [
    (_edit("Step 2", None), "missing 'Step 2:'"),
    (_edit("Answer", None), "missing 'Answer:'"),
    (_edit("Step 1", "Which country has Nairobi as its capital? Kenya"), "'<sub-question> -> <answer>'"),
    (_edit("Question", "Who was the first president of Kenya, whose capital is Nairobi?"), "names the step-1 answer"),
    (_edit("Question", "Who was the first president of the country whose capital is Nairobi"), "end with '?'"),
    (_edit("Question", "Who was Kenya's?"), "words long"),
    (_edit("Step 2", "Who was the first president of that country? -> Jomo Kenyatta"), "does not use the step-1"),
    (_edit("Step 2", "Who was the first president of Kenya? -> Daniel arap Moi"), "step-2 answer differs"),
    (_edit("Answer", "the founding father who later became the long serving first president"), "longer than 8"),
    (_edit("Answer", "."), "empty answer"),
    ("Question: Is the capital of Kenya, Nairobi, also named Nairobi today?\n"
     "Step 1: What is the capital of Kenya? -> Nairobi\nStep 2: What is Nairobi called today? -> Nairobi\n"
     "Answer: Nairobi", "names the step-1 answer"),
    ("Question: Which river flows through the city where the Louvre is, the Seine?\n"
     "Step 1: In which city is the Louvre? -> Paris\nStep 2: Which river flows through Paris? -> the Seine\n"
     "Answer: Seine", "answer appears in the question"),
])
def test_rejections_have_reasons(text, reason):
    r = D.parse(text)
    assert not r.valid and reason in r.reason, r.reason


def test_bridge_and_answer_are_matched_as_whole_words():
    # "Kenyan" does not name the bridge "Kenya": matching is on whole normalised words
    assert D.parse(GOOD.replace("the country whose capital is Nairobi", "the Kenyan republic")).valid


def test_scores():
    spec = D.parse(GOOD).spec
    assert D.score(spec, D.reference_solution(spec)) == 1.0 == E.score(spec, D.reference_solution(spec))
    assert D.score(spec, "It was Jomo Kenyatta.\nAnswer: jomo kenyatta.") == 1.0
    partial = D.score(spec, "Answer: Uhuru Kenyatta")
    assert partial == pytest.approx(0.5) and E.score(spec, "Answer: Uhuru Kenyatta") == 0.0
    assert D.score(spec, "") == 0.0 and D.score(spec, "Answer: Nelson Mandela") == 0.0


def test_messages_and_seeds():
    seeds = D.seed_tasks()
    assert len(seeds) >= 10 and len({s.seed_id for s in seeds}) == len(seeds)
    assert [s.spec for s in E.seed_tasks()] == [s.spec for s in seeds]
    for s in seeds:
        assert D.score(s.spec, D.reference_solution(s.spec)) == 1.0
        agent = D.agent_messages(s.spec)
        assert agent[1]["content"] == s.spec.question and s.spec.answer not in agent[1]["content"]
    env = D.env_messages(seeds[0].spec, LineageStats(successes=1, rollouts=10), alpha=0.5)
    assert seeds[0].spec.text in env[1]["content"] and "easier" in env[1]["content"]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_parse_never_raises(text):
    r = D.parse("Question:" + text)
    assert r.valid or r.reason
