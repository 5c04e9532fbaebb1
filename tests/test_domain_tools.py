"""The tools domain: schema and grounding validation with reasons, canonical text, AST-checker scoring."""

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.domains.base import LineageStats
from genenv_lab.domains.tools import ToolsDomain, question_numbers

D = ToolsDomain()

WEATHER = {"name": "get_weather", "description": "Current weather of a city.", "parameters": {
    "type": "dict", "properties": {
        "city": {"type": "string", "description": "City."},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius", "description": "Unit."},
        "days": {"type": "integer", "description": "Forecast days."}},
    "required": ["city"]}}


def task(functions=None, question="What's the weather in Lisbon for the next 3 days?", calls=None, **extra):
    obj = {"functions": functions or [WEATHER], "question": question,
           "calls": calls if calls is not None else [{"name": "get_weather",
                                                      "arguments": {"city": "Lisbon", "days": 3}}]}
    obj.update(extra)
    return json.dumps(obj)


def test_valid_task_canonical_text_and_features():
    r = D.parse("Here you go:\n" + task() + "\nHope it helps")
    assert r.valid, r.reason
    assert r.spec.text.startswith(D.env_prefill)
    assert json.loads(r.spec.answer) == [{"name": "get_weather", "arguments": {"city": "Lisbon", "days": 3}}]
    assert r.spec.features == {"n_functions": 1, "n_calls": 1, "n_distractors": 0, "n_args": 2,
                               "n_optional_args": 1, "arg_types": "integer,string", "question_chars": 49}
    assert D.parse(r.spec.text).spec == r.spec          # canonical text is a fixed point


def _fn(props, required, name="f"):
    return {"name": name, "description": "d", "parameters": {"type": "dict", "properties": props,
                                                              "required": required}}


@pytest.mark.parametrize("text, reason", [
    ("no json here", "no JSON object"),
    ('{"functions": [', "invalid JSON"),
    (json.dumps({"question": "What is the weather in Oslo?", "calls": []}), "missing 'functions'"),
    (task(question="Hi?"), "question shorter"),
    (task(calls=[]), "missing 'calls'"),
    (task(calls=[{"name": "get_forecast", "arguments": {"city": "Lisbon"}}]), "unknown function"),
    (task(calls=[{"name": "get_weather", "arguments": {"days": 3}}]), "misses required parameter 'city'"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Lisbon", "hours": 3}}]), "unknown parameter"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Lisbon", "days": "3"}}]), "days is not a integer"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "kelvin"}}]), "enum"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Porto"}}]),
     "argument 'city': value 'Porto' does not appear"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Lisbon", "days": 5}}]), "value 5 does not appear"),
    (task(calls=[{"name": "get_weather", "arguments": {"city": "Lisbon"}}] * 2), "duplicate gold calls"),
    (task(functions=[WEATHER, WEATHER]), "duplicate function names"),
    (task(functions=[_fn({"x": {"type": "complex"}}, ["x"])]), "unknown type"),
    (task(functions=[_fn({"x": {"type": "array"}}, ["x"])]), "array without 'items'"),
    (task(functions=[_fn({"x": {"type": "string"}}, ["y"])]), "required parameter 'y' is not a property"),
    (task(functions=[_fn({}, [])]), "no properties"),
    (task(functions=[_fn({"x": {"type": "string"}}, ["x"], name="bad name!")]), "invalid name"),
])
def test_rejections_have_reasons(text, reason):
    r = D.parse(text)
    assert not r.valid and reason in r.reason, r.reason


def test_grounding_of_numbers_strings_and_nested_values():
    fn = _fn({"amount": {"type": "float"}, "rate": {"type": "float"}, "who": {"type": "array",
              "items": {"type": "string"}}, "meta": {"type": "dict"}, "n": {"type": "integer"},
              "flag": {"type": "boolean"}}, ["amount"], name="pay")
    q = "Pay 1,250.50 dollars at 4% to Ana and Bo for three months, with note 'rent'."
    ok = {"amount": 1250.5, "rate": 0.04, "who": ["Ana", "Bo"], "meta": {"note": "rent"}, "n": 3, "flag": True}
    assert D.parse(task([fn], q, [{"name": "pay", "arguments": ok}])).valid
    for bad in ({"who": ["Ana", "Cy"]}, {"meta": {"note": "food"}}, {"n": 5}, {"rate": 0.05}):
        r = D.parse(task([fn], q, [{"name": "pay", "arguments": {**ok, **bad}}]))
        assert not r.valid and "does not appear in the question" in r.reason


def test_question_numbers():
    got = question_numbers("a dozen eggs, 2.5 kg and -3 degrees, 10%")
    assert sorted(got) == sorted(Fraction(x) for x in ("12", "12", "2.5", "-3", "10", "0.1"))


def test_scoring_with_the_ast_checker():
    spec = D.parse(task()).spec
    assert D.score(spec, D.reference_solution(spec)) == 1.0
    assert D.score(spec, "[get_weather(city='lisbon', days=3)]") == 1.0                  # string standardized
    assert D.score(spec, '<tool_call>{"name": "get_weather", "arguments": {"city": "Lisbon", "days": 3, '
                         '"unit": "celsius"}}</tool_call>') == 1.0                       # optional = its default
    assert D.score(spec, "[get_weather(city='Lisbon', days=3, unit='fahrenheit')]") == 0.0
    assert D.score(spec, "[get_weather(city='Lisbon')]") == 0.0                            # gold's days missing
    assert D.score(spec, "It will be sunny.") == 0.0
    assert "missing parameter 'days'" in D.explain(spec, "[get_weather(city='Lisbon')]")


def test_parallel_tasks_are_order_free():
    calls = [{"name": "get_weather", "arguments": {"city": "Lisbon"}},
             {"name": "get_weather", "arguments": {"city": "Porto"}}]
    spec = D.parse(task(question="Weather in Lisbon and in Porto, please.", calls=calls)).spec
    assert spec.features["n_calls"] == 2
    assert D.score(spec, "[get_weather(city='Porto'), get_weather(city='Lisbon')]") == 1.0
    assert D.score(spec, "[get_weather(city='Porto')]") == 0.0


def test_messages():
    seed = D.seed_tasks()[0].spec
    env = D.env_messages(seed, LineageStats(successes=9, rollouts=10), alpha=0.5)
    assert env[0]["role"] == "system" and seed.text in env[1]["content"] and "harder" in env[1]["content"]
    agent = D.agent_messages(seed)
    assert seed.question in agent[1]["content"] and "get_" not in agent[0]["content"]


def test_seed_tasks_are_valid_unique_and_solved_by_their_reference():
    seeds = D.seed_tasks()
    assert len(seeds) >= 10 and len({s.seed_id for s in seeds}) == len(seeds)
    for s in seeds:
        assert D.score(s.spec, D.reference_solution(s.spec)) == 1.0, s.seed_id
    assert any(s.spec.features["n_calls"] > 1 for s in seeds)
    assert any(s.spec.features["n_distractors"] > 0 for s in seeds)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_parse_never_raises(text):
    r = D.parse('{"functions": [' + text)
    assert r.valid or r.reason
