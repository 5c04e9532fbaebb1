"""Decoding function calls from raw outputs: every accepted format, prose, reasoning, and clear no-call results."""

import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.evaluation.calls import decode_calls, format_calls_json, format_calls_python


@pytest.mark.parametrize("text, fmt", [
    ('{"name": "f", "arguments": {"a": 1, "b": "x"}}', "json"),
    ('{"name": "f", "parameters": {"a": 1, "b": "x"}}', "json"),
    ('[{"name": "f", "arguments": {"a": 1, "b": "x"}}]', "json"),
    ('{"function": {"name": "f", "arguments": "{\\"a\\": 1, \\"b\\": \\"x\\"}"}}', "json"),
    ('{"tool_calls": [{"name": "f", "arguments": {"a": 1, "b": "x"}}]}', "json"),
    ('<tool_call>\n{"name": "f", "arguments": {"a": 1, "b": "x"}}\n</tool_call>', "tool_call"),
    ("<TOOLCALL>[f(a=1, b='x')]</TOOLCALL>", "tool_call"),
    ('f(a=1, b="x")', "python"),
    ("[f(a=1, b='x')]", "python"),
    ('```json\n[{"name": "f", "arguments": {"a": 1, "b": "x"}}]\n```', "json"),
    ("```python\nf(a=1, b='x')\n```", "python"),
    ('I will call the tool now: {"name": "f", "arguments": {"a": 1, "b": "x"}} and report back.', "embedded"),
    ("Sure! [f(a=1, b='x')] should do it.", "embedded"),
])
def test_each_format_decodes_to_the_same_call(text, fmt):
    r = decode_calls(text)
    assert r.format == fmt
    assert list(r) == [("f", {"a": 1, "b": "x"})]


def test_several_calls_in_each_format():
    want = [("f", {"a": 1}), ("g", {"b": 2})]
    assert list(decode_calls("[f(a=1), g(b=2)]")) == want
    assert list(decode_calls('[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": 2}}]')) == want
    qwen = ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
            '<tool_call>\n{"name": "g", "arguments": {"b": 2}}\n</tool_call>')
    assert list(decode_calls(qwen)) == want
    unclosed = '<tool_call>{"name": "f", "arguments": {"a": 1}}\n<tool_call>{"name": "g", "arguments": {"b": 2}}'
    assert list(decode_calls(unclosed)) == want


def test_python_values_resolve_like_bfcl_without_eval():
    r = decode_calls("math.mod.f(x=-3, y=2.5e-1, z=[1, (2, 3)], d={'k': None}, v=my_var, c=np.array([1]), "
                     "n=2*3, s=__import__('os').getcwd())")
    (name, args), = r
    assert name == "math.mod.f"
    assert args["x"] == -3 and args["y"] == 0.25 and args["z"] == [1, (2, 3)] and args["d"] == {"k": None}
    assert args["v"] == "my_var"            # a bare name is its identifier (BFCL's convention)
    assert args["c"] == "np.array([1])"     # a call without keywords is its source text
    assert args["n"] == 6                   # arithmetic on literals is folded safely
    assert args["s"] == "__import__('os').getcwd()"  # never evaluated


def test_keyword_named_arguments_and_positional_args():
    (name, args), = decode_calls("[range_query(field='age', from='30', to='40')]")
    assert args == {"field": "age", "from": "30", "to": "40"}
    r = decode_calls("f(1, b=2)")
    assert r.calls[0].positional == (1,) and r.calls[0].arguments == {"b": 2}


def test_reasoning_is_ignored():
    assert list(decode_calls("<think>maybe g(b=2)?</think>\n[f(a=1)]")) == [("f", {"a": 1})]
    # an unfinished thought holds no answer
    assert not decode_calls("<think>I should call f(a=1) but")
    # the opening tag was in the prompt: only the text after </think> counts
    assert list(decode_calls("call g(b=2) maybe</think>[f(a=1)]")) == [("f", {"a": 1})]


@pytest.mark.parametrize("text", [
    "", "   ", "I cannot help with that: none of the functions compute a triangle area.",
    "The function determine_body_mass_index(weight, height) does not fit this request.",
    '{"answer": 42}', "[1, 2, 3]", "42", '{"name": "f"}', "<tool_call>not json</tool_call>",
])
def test_no_call_is_a_clear_falsy_result(text):
    r = decode_calls(text)
    assert not r and len(r) == 0 and list(r) == [] and r.reason


def test_identical_embedded_calls_are_kept_once():
    text = "First I call [f(a=1)]. Final answer:\n[f(a=1)]"
    assert list(decode_calls(text)) == [("f", {"a": 1})]


def test_non_string_input():
    assert not decode_calls(None)


_keys = st.one_of(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), st.sampled_from(keyword.kwlist))
# "<think>" and "</think>" delimit reasoning, which is stripped before decoding (by design), so values avoid them
_text = st.text(max_size=12).filter(lambda t: "think>" not in t.lower())
_scalars = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32),
                     st.booleans(), _text, st.none())
_values = st.recursive(_scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                      st.dictionaries(st.text(max_size=5), c, max_size=3)),
                       max_leaves=6)
# function names may be keywords too (``if(``, ``api.import(``); True/False/None() parse as calls of constants
_names = st.one_of(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True),
                   st.sampled_from([k for k in keyword.kwlist if k not in ("True", "False", "None")]))
_calls = st.lists(st.tuples(st.builds(lambda a, b: a + b, _names, st.one_of(st.just(""), _names.map(".{}".format))),
                            st.dictionaries(_keys, _values, max_size=4)), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(_calls)
def test_rendered_calls_decode_back(calls):
    assert list(decode_calls(format_calls_json(calls))) == calls
    assert list(decode_calls(format_calls_python(calls))) == calls


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_decoder_never_raises(text):
    r = decode_calls(text)
    assert bool(r) == (len(r) > 0)
