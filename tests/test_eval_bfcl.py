"""BFCL's AST checker on hand-made tricky cases, the Java/JS conversions, and gold answers scoring 100%."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.evaluation import bfcl
from genenv_lab.evaluation.calls import decode_calls
from genenv_lab.evaluation.literals import convert_java, convert_js, render_java, render_js

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"

AREA = {"name": "calc.area", "description": "Area of a triangle.",
        "parameters": {"type": "dict", "required": ["base", "height"], "properties": {
            "base": {"type": "float"}, "height": {"type": "integer"}, "unit": {"type": "string"},
            "opts": {"type": "dict"}, "tags": {"type": "array", "items": {"type": "string"}},
            "pts": {"type": "array", "items": {"type": "float"}}}}}
AREA_KEY = [{"calc.area": {"base": [10.0], "height": [5], "unit": ["square meters", "m2", ""],
                           "opts": [{"precision": [2], "mode": ["exact", ""]}, ""],
                           "tags": [["Math", "Geometry"], ""], "pts": [[1.0, 2.5], ""]}}]


def check(text, functions=(AREA,), key=AREA_KEY, category="simple_python"):
    return bfcl.ast_check(list(functions), decode_calls(text), key, category)


@pytest.mark.parametrize("text", [
    "calc.area(base=10, height=5)",                                   # int accepted for float; optional omitted
    "calc.area(base=10.0, height=5, unit='Square-Meters.')",          # case and ,./-_*^ and spaces ignored
    "calc.area(base=10.0, height=5, unit='M2')",
    "calc.area(base=10.0, height=5, opts={'precision': 2})",           # dict: optional key omitted
    "calc.area(base=10.0, height=5, opts={'precision': 2, 'mode': 'EXACT'})",
    "calc.area(base=10.0, height=5, tags=['math', 'geometry'])",       # list strings standardized
    "calc.area(base=10.0, height=5, pts=[1.0, 2.5])",
    '{"name": "calc.area", "arguments": {"base": 10, "height": 5}}',
    '<tool_call>{"name": "calc.area", "arguments": {"base": 10.0, "height": 5, "unit": "m2"}}</tool_call>',
])
def test_accepted(text):
    assert check(text) == (True, "ok")


@pytest.mark.parametrize("text, reason", [
    ("calc.area(base=10)", "missing required parameter 'height'"),
    ("calc.area(base=10, height=5, color='red')", "unexpected parameter 'color'"),
    ("calc.area(base=10, height=5.0)", "wrong type for 'height'"),          # float not accepted for integer
    ("calc.area(base='10', height=5)", "wrong type for 'base'"),
    ("calc.area(base=True, height=5)", "wrong type for 'base'"),           # bool is not a number
    ("calc.area(base=11, height=5)", "invalid value for 'base'"),
    ("calc.area(base=10, height=5, unit='cm')", "invalid value for 'unit'"),
    ("calc.area(base=10, height=5, opts={'precision': 3})", "invalid value for 'opts'['precision']"),
    ("calc.area(base=10, height=5, opts={'digits': 2})", "unexpected key 'digits'"),
    ("calc.area(base=10, height=5, opts={'mode': 'exact'})", "missing key 'precision'"),
    ("calc.area(base=10, height=5, tags=['geometry', 'math'])", "invalid value for 'tags'"),  # order matters
    ("area(base=10, height=5)", "wrong function"),
    ("[calc.area(base=10, height=5), calc.area(base=10, height=5)]", "wrong number of calls"),
    ("The area is 25 square meters.", "no function call decoded"),
    ("calc.area(10, 5)", "positional arguments are not read"),
])
def test_rejected(text, reason):
    ok, why = check(text)
    assert not ok and reason in why


def test_array_elements_get_upstreams_one_level_type_check():
    strict = [{"calc.area": {"base": [10.0], "height": [5], "pts": [[1.0, 2.5]]}}]
    ok, why = check("calc.area(base=10, height=5, pts=[1, 2.5])", key=strict)
    assert not ok and "wrong element type in 'pts'" in why       # as upstream: no int -> float inside arrays
    assert check("calc.area(base=10, height=5, pts=[1.0, 2.5])", key=strict) == (True, "ok")
    # as upstream, an optional ("") alternative skips the element check; the values still compare equal
    assert check("calc.area(base=10, height=5, pts=[1, 2.5])") == (True, "ok")


def test_optional_param_without_blank_is_required_by_the_key():
    key = [{"calc.area": {"base": [10.0], "height": [5], "unit": ["m2"]}}]
    ok, why = check("calc.area(base=10, height=5)", key=key)
    assert not ok and "missing parameter 'unit'" in why


def test_variable_values_of_the_keys_own_type():
    key = [{"calc.area": {"base": ["b"], "height": [5]}}]           # the key passes a variable name
    assert check("calc.area(base=b, height=5)", key=key) == (True, "ok")
    assert not check("calc.area(base=c, height=5)", key=key)[0]


ADD = {"name": "add", "parameters": {"type": "dict", "required": ["a", "b"],
                                     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
MUL = {"name": "mul", "parameters": {"type": "dict", "required": ["x"], "properties": {"x": {"type": "float"}}}}
PAR_KEY = [{"add": {"a": [1], "b": [2]}}, {"add": {"a": [3], "b": [4]}}, {"mul": {"x": [2.0]}}]


@pytest.mark.parametrize("text", [
    "[add(a=1, b=2), add(a=3, b=4), mul(x=2)]",
    "[mul(x=2.0), add(a=3, b=4), add(a=1, b=2)]",
    "[add(b=4, a=3), mul(x=2), add(b=2, a=1)]",
])
def test_parallel_calls_match_in_any_order(text):
    assert check(text, functions=(ADD, MUL), key=PAR_KEY, category="parallel_multiple") == (True, "ok")


def test_parallel_failures():
    ok, why = check("[add(a=1, b=2), add(a=1, b=2), mul(x=2)]", (ADD, MUL), PAR_KEY, "parallel_multiple")
    assert not ok and "no call matches answer 'add'" in why
    ok, why = check("[add(a=1, b=2), mul(x=2)]", (ADD, MUL), PAR_KEY, "parallel")
    assert not ok and "wrong number of calls" in why


def test_parallel_needs_a_true_matching_not_a_greedy_one():
    fn = {"name": "f", "parameters": {"type": "dict", "required": [], "properties": {"x": {"type": "integer"}}}}
    key = [{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}]   # greedy would give x=1 to the first answer and fail
    assert check("[f(x=1), f(x=2)]", (fn,), key, "parallel") == (True, "ok")


def test_multiple_checks_the_answer_function_among_several():
    key = [{"mul": {"x": [2.0]}}]
    assert check("mul(x=2)", (ADD, MUL), key, "multiple") == (True, "ok")
    assert not check("add(a=1, b=2)", (ADD, MUL), key, "multiple")[0]


@pytest.mark.parametrize("text, correct", [
    ("I can't compute that with the given functions.", True),
    ("", True),
    ("add(a=1, b=2)", False),
    ('{"name": "add", "arguments": {"a": 1, "b": 2}}', False),
])
def test_irrelevance_is_correct_iff_no_call(text, correct):
    assert bfcl.ast_check([ADD], decode_calls(text), None, "irrelevance")[0] is correct
    assert bfcl.ast_check([ADD], decode_calls(text), None, "live_relevance")[0] is (not correct)


def test_java_values_are_strings_converted_by_type():
    fn = {"name": "Svc.run", "parameters": {"type": "dict", "required": ["id", "flag", "ids", "conf"], "properties": {
        "id": {"type": "long"}, "flag": {"type": "boolean"}, "ids": {"type": "Array", "items": {"type": "integer"}},
        "conf": {"type": "HashMap"}, "name": {"type": "String"}}}}
    key = [{"Svc.run": {"id": [42], "flag": [True], "ids": [[1, 2]], "conf": [{"k": ["v"], "n": [5]}],
                        "name": ["Ann", ""]}}]
    good = ('Svc.run(id="42L", flag="true", ids="new int[]{1, 2}", '
            'conf="new HashMap<String, Object>() {{ put(\\"k\\", \\"v\\"); put(\\"n\\", 5); }}", name="Ann")')
    assert check(good, (fn,), key, "simple_java") == (True, "ok")
    ok, why = check(good.replace('"42L"', '"42"'), (fn,), key, "simple_java")   # long needs the L suffix
    assert not ok and "'id'" in why
    ok, why = check(good.replace('flag="true"', "flag=True"), (fn,), key, "simple_java")
    assert not ok and "strings of Java source" in why


def test_javascript_values_are_strings_converted_by_type():
    fn = {"name": "go", "parameters": {"type": "dict", "required": ["s", "xs", "o"], "properties": {
        "s": {"type": "String"}, "xs": {"type": "array", "items": {"type": "float"}}, "o": {"type": "dict"},
        "b": {"type": "Boolean"}}}}
    key = [{"go": {"s": ["hello"], "xs": [[1.5, 2.0]], "o": [{"k": ["v"], "arr": [["a", "b"]]}], "b": [False, ""]}}]
    text = "go(s=\"'Hello'\", xs='[1.5, 2.0]', o=\"{k: 'v', arr: ['a', 'b']}\", b='false')"
    assert check(text, (fn,), key, "simple_javascript") == (True, "ok")


@pytest.mark.parametrize("value, type_name, items", [
    (True, "boolean", None), (7, "integer", None), (123456789012, "long", None), (0.5, "double", None),
    ([3, 4], "Array", "integer"), ([5, 6], "ArrayList", "long"), (["a b", "c,d"], "Array", "String"),
    ({"limit": 50, "name": "x"}, "HashMap", None), ([], "ArrayList", "String"),
])
def test_java_render_convert_roundtrip(value, type_name, items):
    assert convert_java(render_java(value, type_name, items), type_name, items) == value


@pytest.mark.parametrize("value, type_name, items", [
    (False, "Boolean", None), (12, "integer", None), (2.5, "float", None), ([1.0, 2.0], "array", "float"),
    (["x", "y, z"], "array", "String"), ({"a": 1, "b": ["q"], "c": {"d": True}}, "dict", None),
])
def test_js_render_convert_roundtrip(value, type_name, items):
    assert convert_js(render_js(value, type_name, items), type_name, items) == value


@given(st.text())
def test_standardize_string_is_idempotent(text):
    once = bfcl.standardize_string(text)
    assert bfcl.standardize_string(once) == once


@given(st.text(), st.text(alphabet=" ,./-_*^", max_size=5))
def test_standardize_ignores_the_listed_punctuation(text, noise):
    assert bfcl.standardize_string(noise + text + noise) == bfcl.standardize_string(text)


@pytest.mark.skipif(not (SHARED / "bfcl").is_dir(), reason=f"offline benchmark data not found at {SHARED}")
@pytest.mark.parametrize("style", ["python", "json"])
def test_gold_answers_score_100_percent_on_every_available_category(style):
    root = SHARED / "bfcl"
    cats = bfcl.available_categories(root)
    assert set(bfcl.NON_LIVE) <= set(cats)
    for cat in cats:
        items = bfcl.load_category(root, cat)
        assert items
        failures = [(it.id, r.reason) for it in items if (g := bfcl.gold_prediction(it, style)) is not None
                    for r in [bfcl.score_item(it, g)] if not r.correct]
        assert not failures, f"{cat}: {failures[:5]}"


@pytest.mark.skipif(not (SHARED / "bfcl").is_dir(), reason=f"offline benchmark data not found at {SHARED}")
def test_wrong_answers_score_zero_on_real_items():
    items = bfcl.load_category(SHARED / "bfcl", "parallel")[:50]
    for it in items:
        calls = bfcl.gold_calls(it)
        assert not bfcl.score_item(it, bfcl.format_calls_python(calls[:-1])).correct      # a call missing
        assert not bfcl.score_item(it, "I would rather not call anything.").correct
