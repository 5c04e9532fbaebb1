"""BFCL multi-turn on BFCL's own backends (genenv_lab/evaluation/bfcl_multi_turn.py): the answer keys score 100 %
under both protocols, empty predictions score what the docs say, the strings BFCL's harness writes are matched
byte for byte, nothing a model writes runs as code, every call a model writes is bounded in time and memory before it
runs (issue 56), the inference loop follows BFCL's, and a run records the score per epoch. Parity with the official
``multi_turn_checker`` is in tests/test_bfcl_parity.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genenv_lab.evaluation import bfcl, bfcl_multi_turn as mt
from genenv_lab.evaluation.bfcl_decode import DecodeError
from genenv_lab.evaluation.runner import gold_predictions, score_predictions

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks" / "bfcl"

pytestmark = pytest.mark.skipif(not mt.available(), reason=f"bfcl-eval is not installed ({mt.INSTALL})")


@pytest.fixture(scope="module")
def data() -> Path:
    for folder in (SHARED, mt.wheel_data()):
        if folder is not None and (folder / "multi_turn_func_doc").is_dir():
            return folder
    pytest.skip("no BFCL multi-turn data (../shared/benchmarks/bfcl or the bfcl-eval wheel)")


@pytest.fixture(scope="module")
def items(data) -> dict[str, list[mt.MultiTurnItem]]:
    return {c: bfcl.load_category(data, c) for c in mt.CATEGORIES}


def test_the_four_categories_load_as_bfcl_assembles_them(items):
    assert {c: len(v) for c, v in items.items()} == {c: 200 for c in mt.CATEGORIES}
    miss = items["multi_turn_miss_func"][0]
    held = [f["name"] for docs in miss.held_back.values() for f in docs]
    assert held and not set(held) & {f["name"] for f in miss.functions}  # moved to their turn, not shown before
    assert all(len(it.ground_truth) == len(it.turns) for c in items.values() for it in c)


def test_answer_keys_score_one_under_both_protocols(items):
    for entries in items.values():
        for it in entries:
            gold = mt.gold_prediction(it)
            official, per_turn = mt.score(it, gold, "official"), mt.score(it, gold, "per-turn")
            assert official.correct and official.score == 1.0, (it.id, official.reason)
            assert per_turn.correct and per_turn.score == 1.0, (it.id, per_turn.extra["turn_correct"])


def test_empty_predictions_score_what_the_docs_say(items):
    """No turns: cut off (official 0) and every turn wrong (per-turn 0). Every turn empty: official 0 (the first
    turn whose key is not empty fails), per-turn the share of turns whose key is empty (the model should call
    nothing there: miss_func and miss_param have such turns)."""
    for entries in items.values():
        for it in entries[:20]:
            none = mt.score(it, [], "per-turn")
            assert not none.correct and none.score == 0.0
            assert none.reason.startswith("multi_turn:force_terminated")
            blank = mt.score(it, [[] for _ in it.ground_truth], "per-turn")
            assert not blank.correct and blank.reason.startswith("multi_turn:empty_turn_model_response")
            empty_keys = sum(1 for key in it.ground_truth if not key)
            assert blank.score == pytest.approx(empty_keys / len(it.ground_truth))
            assert mt.score(it, "not a list", "official").reason.startswith("multi_turn:inference_error")
            assert mt.score(it, None, "official").reason == "no prediction"


def test_a_wrong_turn_is_wrong_and_the_others_still_count_per_turn(items):
    it = items["multi_turn_base"][0]
    pred = mt.gold_prediction(it)
    pred[1] = ["[ls(a=True)]"]  # a call, the wrong one
    r = mt.score(it, pred, "per-turn")
    assert not r.correct and r.extra["official_turns"][:2] == [True, False]
    assert r.extra["turn_correct"] == [True, False] + [True] * (len(pred) - 2)
    assert r.score == pytest.approx((len(pred) - 1) / len(pred))


# ----------------------------------------------------------------------- the strings BFCL's harness writes


def test_call_strings_follow_upstreams_writer():
    assert mt.decode_step("[cd(folder='document'), ls(a=True)]") == ["cd(folder='document')", "ls(a=True)"]
    # upstream's writer: a dict of dicts is a nested call named by its first key, other dicts keep unescaped keys
    assert mt.render_calls([{"f": {"v": {"g": {"a": 1}}}}]) == ["f(v=g(a=1))"]
    assert mt.render_calls([{"f": {"v": {"k": [1, "x"]}}}]) == ["f(v={'k': [1, 'x']})"]
    with pytest.raises(IndexError):  # an empty dict value: upstream's writer fails, so the step does not decode
        mt.render_calls([{"f": {"v": {}}}])
    with pytest.raises(DecodeError):
        mt.decode_step("I have done it.")
    with pytest.raises(DecodeError):
        mt.decode_step(["[ls()]"])


def test_result_strings_are_upstreams(items):
    b = mt.Backends(items["multi_turn_base"][0])
    out = b.execute(["pwd()", "cd(folder='document')", "cd(folder='nowhere', extra=1)", "kill()", "cd(folder=",
                     "nosuch(x=1)"])
    assert out[0] == '{"current_working_directory": "/workspace"}' or out[0].startswith('{"current_working')
    assert out[1] == '{"current_working_directory": "document"}'  # a dict: json.dumps
    assert out[2] == "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument 'extra'"
    assert out[3] == "Error during execution: Function call kill is not allowed."
    assert out[4] == "Error during execution: '(' was never closed (<string>, line 1)"
    assert out[5] == "Error during execution: name 'nosuch' is not defined"
    assert b.execute(["mkdir(dir_name='t')"]) == ["None"]  # anything else: str()


def test_message_layout_of_a_turn(items):
    it = items["multi_turn_miss_func"][0]
    (turn, docs), = it.held_back.items()
    opened = mt.turn_messages(it, turn)
    # BFCL's "functions added" message, byte for byte (its template, formatted with the docs' Python repr)
    assert opened == [{"role": "user", "content": f"{list(docs)}\nI have updated some more functions you can choose "
                                                  "from. What about now?"}]
    assert mt.tool_messages(["ls()"], ["{}"]) == [{"role": "tool", "name": "ls()", "content": "{}"}]


# ----------------------------------------------------------------------- nothing a model writes is run


HOSTILE = [
    "[open(file='{p}', mode='w')]", "__import__('os').system('touch {p}')", "[exec(source=\"open('{p}','w')\")]",
    "[eval(source=\"__import__('os').system('touch {p}')\")]", "[cd(folder=__import__('os').system('touch {p}'))]",
    "[cd(folder=open('{p}', 'w'))]", "[().__class__.__base__.__subclasses__()]", "[cd.__globals__(x=1)]",
    "[cd(folder=[x for x in ().__class__.__mro__])]", "[cd(folder=lambda: open('{p}', 'w'))]",
    "[touch(file_name=10**10**10)]", "[echo(content='a' * 10**9)]", "[" + "f(x=" * 200 + "1" + ")" * 200 + "]",
    "[getattr(o=cd, name='__globals__')]", "[globals()]", "[breakpoint()]", "[setattr(obj=cd, name='x', value=1)]",
    "[cd(folder='document'), os.system(cmd='touch {p}')]", "[subprocess.run(args=['touch', '{p}'])]",
    "[cd(**{{'folder': 'x'}})]", "[cd(folder=f'{{open(\"{p}\", \"w\")}}')]",
]


def test_hostile_outputs_run_nothing(items, tmp_path):
    """Every hostile reply goes through inference and scoring; no file appears, no code object is executed
    (the interpreter's own audit events: ``exec`` for exec/eval/code, ``os.system``, ``subprocess.Popen``,
    ``open`` for writing), and each is a counted failure, never an exception."""
    sentinel = tmp_path / "pwned"
    it = items["multi_turn_base"][0]
    replies = [h.format(p=sentinel) for h in HOSTILE]
    mt.Backends(it)  # the backend modules are imported (an import executes code) before the watch starts
    events: list[tuple[str, str]] = []
    watching = [True]

    def hook(event, args):
        if not watching[0]:
            return
        if event in ("exec", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn"):
            events.append((event, repr(args)[:120]))
        if event == "open" and args and str(args[0]).startswith(str(tmp_path)):
            events.append((event, repr(args)[:120]))

    sys.addaudithook(hook)
    try:
        conv = mt.Conversation(it, "official")
        for reply in replies:
            if conv.finished:
                break
            conv.reply(reply)
        results = [mt.score(it, [[r] for _ in it.ground_truth], "per-turn") for r in replies]
    finally:
        watching[0] = False
    assert not sentinel.exists()
    assert events == []
    assert all(not r.correct for r in results)


def test_backends_dispatch_only_public_methods_by_bare_name(items):
    b = mt.Backends(items["multi_turn_base"][0])
    assert all(not name.startswith("_") for name in b.methods)
    out = b.execute(["_load_scenario(scenario={})", "__init__()", "cd.__call__(folder='document')"])
    assert all(o.startswith("Error during execution: name ") for o in out)


# ----------------------------------------------------------------------- inference, as BFCL's loop runs it


def test_conversation_follows_bfcls_prompting_loop(items):
    it = items["multi_turn_base"][0]
    conv = mt.Conversation(it, "official")
    first = conv.messages()
    assert first[0]["role"] == "system" and first[1:] == [dict(m) for m in it.turns[0]]
    gold = mt.gold_prediction(it)
    for turn in gold:
        conv.reply(turn[0])
        shown = conv.messages()
        assert shown[-1]["role"] == "tool"  # the calls ran and their results came back
        conv.reply("Done.")  # no call: the turn ends
    assert conv.finished and not conv.cut_off
    assert conv.prediction == [[t[0], "Done."] for t in gold]
    assert mt.score(it, conv.prediction).correct


def test_step_limit_cuts_the_entry_off(items):
    it = items["multi_turn_base"][0]
    conv = mt.Conversation(it, "official")
    while not conv.finished:
        conv.reply("[pwd()]")  # a call every step: never ends the turn
    limit = mt.upstream().step_limit
    assert conv.cut_off and conv.prediction == [["[pwd()]"] * (limit + 1)]
    assert mt.score(it, conv.prediction).reason.startswith("multi_turn:force_terminated")


def test_per_turn_conversation_starts_each_turn_from_the_answer_keys_history(items):
    it = items["multi_turn_base"][0]
    conv = mt.Conversation(it, "per-turn")
    conv.reply("I cannot.")  # turn 0: no call
    shown = conv.messages()
    assert shown[-1] == dict(it.turns[1][0])
    assert {"role": "assistant", "content": mt.gold_step(it, 0)} in shown
    assert sum(1 for m in shown if m["role"] == "tool") == len(it.ground_truth[0])


class _Replier:
    """A scripted model for :func:`genenv_lab.coevolution.heldout.converse` (every conversation is of one entry):
    answers a turn
    with the answer key's step, then with prose; no room for prompts longer than ``fits`` characters."""

    def __init__(self, item, fits: int = 10**9):
        self.gold = mt.gold_prediction(item)
        self.fits = fits
        self.batches: list[int] = []

    def prompt_room(self, messages):
        return 1000 if sum(len(m["content"]) for m in messages) <= self.fits else 0

    def generate(self, adapter, prompts, *, n, max_new_tokens, temperature, **kw):
        self.batches.append(len(prompts))
        out = []
        for messages in prompts:
            turn = sum(1 for m in messages if m["role"] == "user") - 1
            answered = messages[-1]["role"] == "tool"
            out.append(["Done." if answered or not self.gold[turn] else self.gold[turn][0]])
        return out


def test_converse_batches_steps_and_cuts_what_no_longer_fits(items):
    from genenv_lab.coevolution.heldout import converse

    it = items["multi_turn_base"][0]
    model = _Replier(it)
    convs = [mt.Conversation(it, "official") for _ in range(3)]
    assert converse(model, convs, 64) == []
    assert model.batches[0] == 3 and len(model.batches) == 2 * len(it.ground_truth)  # one generate per step
    assert all(mt.score(it, c.prediction).correct for c in convs)
    short = [mt.Conversation(it, "official")]
    assert converse(_Replier(it, fits=1), short, 64) == [it.id]
    assert short[0].cut_off and mt.score(it, short[0].prediction).score == 0.0


# ----------------------------------------------------------------------- the runner, the CLI and a run


def test_runner_scores_both_protocols_and_refuses_what_does_not_apply(data, tmp_path):
    preds = tmp_path / "gold.jsonl"
    gold_predictions("bfcl", data, ["multi_turn_base", "multi_turn_miss_param"], out_path=preds, limit=3)
    official = score_predictions("bfcl", preds, data, limit=3, out_dir=tmp_path / "o")
    per_turn = score_predictions("bfcl", preds, data, limit=3, out_dir=tmp_path / "p", protocol="per-turn")
    assert official["value"] == per_turn["value"] == 1.0
    assert official["official_metric"] and not per_turn["official_metric"]
    assert "NOT BFCL's leaderboard metric" in per_turn["metric"] and per_turn["protocol"] == "per-turn"
    row = json.loads((tmp_path / "p" / "results.jsonl").read_text().splitlines()[0])
    assert row["correct"] is True and row["turn_correct"] == [True] * row["n_turns"]
    with pytest.raises(ValueError, match="single-turn only"):
        score_predictions("bfcl", preds, data, limit=3, scoring="lenient")
    with pytest.raises(ValueError, match="unknown"):
        score_predictions("bfcl", preds, data, limit=3, protocol="whole")
    missing = score_predictions("bfcl", preds, data, category="multi_turn_base", limit=5, protocol="per-turn")
    assert missing["n_missing_predictions"] == 2  # their turns count, as wrong
    assert missing["categories"]["multi_turn_base"]["n_turns"] > missing["categories"]["multi_turn_base"][
        "n_turns_correct"]


def test_cli_eval_with_protocol(data, tmp_path):
    env = {**os.environ, "GENENV_LAB_DATA": str(data.parent)}
    preds = tmp_path / "gold.jsonl"
    base = [sys.executable, "-m", "genenv_lab.cli", "eval", "--benchmark", "bfcl", "--data-dir", str(data),
            "--category", "multi_turn_long_context", "--limit", "2"]
    subprocess.run(base + ["--gold", str(preds)], check=True, env=env, capture_output=True, cwd=ROOT)
    out = subprocess.run(base + ["--predictions", str(preds), "--protocol", "per-turn", "--out", str(tmp_path / "e")],
                         check=True, env=env, capture_output=True, text=True, cwd=ROOT)
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["value"] == 1.0 and summary["protocol"] == "per-turn", out.stdout


def test_a_tiny_run_records_the_multi_turn_score_per_epoch(data, tmp_path):
    """The issue's command: naming the benchmark evaluates every epoch; the tiny model's context (1,024 tokens)
    cannot hold BFCL's function docs, so every conversation is cut at its first prompt, counted, and scores 0."""
    run = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "tiny", "--epochs", "1",
                    "--eval-benchmark", "bfcl", "--eval-category", "multi_turn_base", "--eval-limit", "2",
                    "--eval-data-dir", str(data), "--out", str(run)], check=True, capture_output=True, cwd=ROOT)
    records = [json.loads(line) for line in (run / "epochs.jsonl").read_text().splitlines()]
    assert [r["extra"]["eval/bfcl"] for r in records] == [0.0]
    assert (run / "eval" / "epoch_000" / "summary.json").is_file()  # the untrained agent's, before epoch 1
    summary = json.loads((run / "eval" / "epoch_001" / "summary.json").read_text())
    assert summary["protocol"] == "per-turn" and summary["n_prompt_longer_than_context"] == 2


# ----------------------------------------------------------------------- bounds (issue 56: P1, P2, P3)
# Every call a model's text reaches is bounded before it runs (bfcl_multi_turn's MAX_* constants;
# docs/bfcl_multi_turn.md, "Bounds"). Each break of reliability round 5 is reproduced here and now holds: a counted
# wrong answer in well under 5 s and 300 MB, through `eval --predictions`, through `eval --model` with a scripted
# model, and in a Hypothesis property over short random call sequences. Times and memory are asserted loosely.

DOUBLING_ROUND = ("cp(source='x', destination='y'), mkdir(dir_name='z'), mv(source='x', destination='z'), "
                  "mv(source='y', destination='z'), mv(source='z', destination='x')")
"""Upstream's shallow ``cp`` and re-parenting ``mv`` share folders: each round of these five calls doubles the
paths under ``x``."""


def _doubling(rounds: int, final: str = "find(path='.')") -> str:
    """Round 5's P2 step (3.4 kB at 22 rounds: 7.8 s and 1.7 GB before the bounds)."""
    start = "mkdir(dir_name='x'), cd(folder='x'), touch(file_name='f'), cd(folder='..')"
    return "[" + ", ".join([start] + [DOUBLING_ROUND] * rounds + [final]) + "]"


STALLS = {  # round 5's reproductions: entry id -> its first turn's one step (the other turns are empty)
    "power": ("multi_turn_base_15", "[power(base=10, exponent=1000000000)]"),
    "square_root": ("multi_turn_base_15", "[square_root(number=2, precision=10000000)]"),
    "logarithm": ("multi_turn_base_15", "[logarithm(value=2, base=10, precision=1000000)]"),
    "doubling": ("multi_turn_base_0", _doubling(22)),
    "cat": ("multi_turn_base_15", "[touch(file_name='f'), echo(content='" + "q" * 99_000 + "', file_name='f'), "
            + ", ".join(["cat(file_name='f')"] * 5000) + "]"),
}
CLI_STALLS = ("power", "square_root", "doubling")


def _by_id(items, category="multi_turn_base"):
    return {it.id: it for it in items[category]}


def _scored_with_cost(item, prediction):
    """(per-turn result, seconds, peak bytes traced) of scoring ``prediction``."""
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = mt.score(item, prediction, "per-turn")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, time.perf_counter() - start, peak


@pytest.mark.parametrize("name", list(STALLS))
def test_round_5s_stalls_score_as_wrong_in_bounded_time(items, name):

    entry, step = STALLS[name]
    it = _by_id(items)[entry]
    pred = [[step]] + [[] for _ in it.ground_truth[1:]]
    r, seconds, peak = _scored_with_cost(it, pred)
    assert seconds < 5 and peak < 300e6, (seconds, peak)
    assert not r.correct and r.score == 0.0 and r.extra["bounds"], r.extra
    if name == "cat":  # a per-entry bound: the entry is wrong for it, with the reason
        assert r.reason.startswith("multi_turn:bound_exceeded: ") and "characters of results" in r.reason


def test_a_call_over_a_bound_is_an_error_result_and_runs_nothing(items):
    b = mt.Backends(_by_id(items)["multi_turn_base_15"])
    out = b.execute(["power(base=10, exponent=1000000000)", "square_root(number=2, precision=10000000)",
                     "logarithm(value=2, base=10, precision=1e9)", "logarithm(value='1e" + "9" * 60 + "', base=10, "
                     "precision=5)", "round_number(number=5, decimal_places=-1000000000)", "power(base=2, exponent=-"
                     + "9" * 4000 + ")", "power(base=1, exponent=" + "9" * 4000 + ")", "square_root(number=2, "
                     "precision='5')"])
    assert all(o.startswith("Error during execution: not run: ") and o.endswith("(genenv_lab's bound)")
               for o in out[:5]), out
    assert out[5] == "Error during execution: int too large to convert to float"  # upstream's own, at once
    assert out[6] == '{"result": 1}'
    assert "error" in out[7]  # decimal refuses a text precision: upstream's error dict, not a bound
    assert len(b.budget.refused) == 5 and not b.budget.exceeded  # per call: the entry goes on


def test_a_result_str_cannot_write_is_upstreams_error_string_and_the_entry_is_scored_on(items):
    """Round 5, P3: ``str()`` of a 5,001-digit integer raised outside the executor's ``try``. Upstream keeps the
    formatting inside and records the error; here too (the strings compared with upstream's own executor), so
    the per-turn entry of the report (turn 0 that step, the others gold) scores 0.8."""
    import decimal

    import mpmath
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    it = _by_id(items)["multi_turn_base_15"]
    calls = ["power(base=10, exponent=5000)", "power(base=2, exponent=10)", "power(base=2.5, exponent=3)",
             "logarithm(value=100, base=10, precision=12)", "logarithm(value='1e5', base=7, precision=30)",
             "square_root(number=2, precision=40)", f"multiply(a={'9' * 4300}, b={'7' * 4300})",
             "round_number(number=123456, decimal_places=-2)", "mean(numbers=[1, 2, 3.5])", "power(base=10, "
             "exponent=9000)", "square_root(number=-1, precision=5)", "logarithm(value=0, base=10, precision=5)"]
    saved = decimal.getcontext().prec, mpmath.mp.prec
    try:
        theirs, _ = execute_multi_turn_func_call(calls, {}, ["MathAPI"], "genenv_lab_bounds_test", "p3")
    finally:  # upstream leaves the precision it sets
        decimal.getcontext().prec, mpmath.mp.prec = saved
    assert mt.Backends(it).execute(calls) == theirs
    assert theirs[0].startswith("Error during execution: Exceeds the limit (4300 digits)")
    pred = [["[power(base=10, exponent=5000)]"]] + mt.gold_prediction(it)[1:]
    r = mt.score(it, pred, "per-turn")
    assert r.score == pytest.approx(0.8) and r.extra["turn_correct"] == [False, True, True, True, True]
    assert not r.correct and r.reason.startswith("multi_turn:instance_state_mismatch")  # a scored verdict


def test_each_call_restores_the_process_global_precisions(items):
    import decimal

    import mpmath

    before = decimal.getcontext().prec, mpmath.mp.prec
    b = mt.Backends(_by_id(items)["multi_turn_base_15"])
    out = b.execute(["logarithm(value=2, base=10, precision=50)", "square_root(number=2, precision=60)",
                     "logarithm(value=2, base=10, precision='x')"])
    assert (decimal.getcontext().prec, mpmath.mp.prec) == before
    assert len(out[0]) > 50 and len(out[1]) > 60  # each result written at the precision its call set


def test_per_entry_bounds_stop_the_entry_and_count_its_later_turns_wrong(items):
    it = _by_id(items)["multi_turn_base_15"]
    gold = mt.gold_prediction(it)
    many = "[" + ", ".join(["pwd()"] * (mt.MAX_CALLS + 1)) + "]"
    r = mt.score(it, [[many]] + gold[1:], "per-turn")
    assert r.reason.startswith("multi_turn:bound_exceeded: ") and f"{mt.MAX_CALLS} calls" in r.reason
    assert r.extra["turn_correct"] == [False] * len(gold) and r.extra["official_turns"][0] is False
    # the same calls spread under the bound, then the gold: the turns after are scored as usual
    under = "[" + ", ".join(["pwd()"] * 50) + "]"
    r = mt.score(it, [[under, gold[0][0]]] + gold[1:], "per-turn")
    assert r.correct and r.extra["bounds"] == []
    # in a turn whose key is empty (miss_param), going over a bound is wrong too (the official check skips such a
    # turn; it would have run the calls)
    miss = items["multi_turn_miss_param"][0]
    pred = mt.gold_prediction(miss)
    pred[next(t for t, key in enumerate(miss.ground_truth) if not key)] = [many]
    r = mt.score(miss, pred, "official")
    assert not r.correct and r.reason.startswith("multi_turn:bound_exceeded: ")


def test_a_folder_walk_over_the_bound_or_inside_itself_is_refused_and_the_state_still_compared(items):
    it = _by_id(items)["multi_turn_base_0"]
    b = mt.Backends(it)
    small = b.execute(mt.decode_step(_doubling(3, "du()")))
    assert small[-1].startswith('{"disk_usage"')  # 8 copies: walked as upstream walks it
    b = mt.Backends(it)
    big = b.execute(mt.decode_step(_doubling(60, "du()")) + ["ls()", "find(path='x/x/x')"])
    assert "paths to walk" in big[-3] and big[-2].startswith('{"current_directory_content"')
    assert "paths to walk" in big[-1]  # 2**57 paths below x/x/x
    loop = mt.Backends(it).execute(["mkdir(dir_name='a')", "cp(source='a', destination='a')", "find()", "du()"])
    assert all("a folder contains itself" in o for o in loop[2:]), loop
    # scored: the state check compares the model's tree with the answer key's, which stops at the first difference
    pred = [[_doubling(60, "du()")]] + [[] for _ in it.ground_truth[1:]]
    r = mt.score(it, pred, "official")
    assert r.reason.startswith("multi_turn:instance_state_mismatch")


_STUB_EVAL = r'''
import json, sys
import genenv_lab.coevolution.heldout as heldout
from genenv_lab.cli import main

reply = json.loads(sys.argv[1])


class Scripted:
    """A scripted model: a turn's first step is the hostile reply, and "Done." once its calls' results are back."""

    def generate(self, adapter, prompts, *, n, max_new_tokens, temperature, **kw):
        return [["Done." if messages[-1]["role"] == "tool" else reply] for messages in prompts]


heldout.backend_for = lambda model, **kw: Scripted()
sys.exit(main(sys.argv[2:]))
'''


def _peak_mb(pid: int, seen: float) -> float:
    """The larger of ``seen`` and the process's resident high-water mark (``VmHWM``, MB). Read from /proc: the
    high-water mark of the memory the program itself mapped after exec, where ``wait4``'s ``ru_maxrss`` would also
    count the pages it shared with this (large) test process between fork and exec."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return max(seen, int(line.split()[1]) / 1024)
    except OSError:  # it has just ended
        pass
    return seen


def _measured(cmd: list[str], cwd: Path) -> tuple[int, str, float, float]:
    """Run ``cmd``; its exit status, output, wall seconds and peak resident memory (MB, sampled every 10 ms from its
    high-water mark). Its address space is capped at 4 GB and its time at 60 s, so that a regression fails here
    instead of reaching the machine's OOM killer."""
    import resource
    import tempfile
    import time

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    with tempfile.TemporaryFile() as out:
        start, mb = time.perf_counter(), 0.0
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, preexec_fn=cap,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        while True:
            mb = _peak_mb(proc.pid, mb)  # before reaping: the high-water mark of the finished program
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > 60:
                proc.kill()
                pid, status, _ = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        return proc.returncode, out.read().decode(errors="replace"), seconds, mb


@pytest.mark.parametrize("name", CLI_STALLS)
def test_round_5s_stalls_through_eval_predictions(data, tmp_path, name):
    entry, step = STALLS[name]
    n_turns = {"multi_turn_base_15": 5, "multi_turn_base_0": 4}[entry]
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": entry, "prediction": [[step]] + [[]] * (n_turns - 1)}) + "\n")
    code, out, seconds, mb = _measured([sys.executable, "-m", "genenv_lab.cli", "eval", "--benchmark", "bfcl",
                                        "--category", "multi_turn_base", "--predictions", str(preds), "--limit",
                                        "16", "--protocol", "per-turn", "--data-dir", str(data), "--out",
                                        str(tmp_path / "e")], ROOT)
    assert code == 0 and seconds < 5 and mb < 300, (code, seconds, mb, out[-2000:])
    row = next(json.loads(line) for line in (tmp_path / "e" / "results.jsonl").read_text().splitlines()
               if json.loads(line)["id"] == entry)
    assert not row["correct"] and row["score"] == 0.0 and row["bounds"], row["bounds"]


@pytest.mark.parametrize("name", CLI_STALLS + ("p3",))
def test_round_5s_stalls_through_eval_model_with_a_scripted_model(data, tmp_path, name):
    """``eval --model``: every turn of every conversation opens with the hostile reply (16 conversations, the 16th
    the math entry; the file-system step on its entry alone). Before the bounds the first two hung the evaluation,
    the third took gigabytes, and P3's 5,001-digit result aborted it after 8 of 16 conversations; now all are
    written and scored."""
    step = STALLS[name][1] if name != "p3" else "[power(base=10, exponent=5000)]"
    limit = 1 if name == "doubling" else 16
    code, out, seconds, mb = _measured([sys.executable, "-c", _STUB_EVAL, json.dumps(step), "eval", "--benchmark",
                                        "bfcl", "--model", "scripted", "--category", "multi_turn_base", "--limit",
                                        str(limit), "--protocol", "per-turn", "--data-dir", str(data), "--out",
                                        str(tmp_path / "e")], tmp_path)
    assert code == 0 and seconds < 5 and mb < 300, (code, seconds, mb, out[-2000:])
    preds = [json.loads(line) for line in (tmp_path / "e" / "predictions.jsonl").read_text().splitlines()]
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "e" / "results.jsonl").read_text().splitlines())}
    assert len(preds) == limit and len(rows) == limit and all(p["prediction"][0][0] == step for p in preds)
    assert not any(r["reason"].startswith("unscorable") for r in rows.values())
    entry = STALLS[name][0] if name != "p3" else "multi_turn_base_15"
    assert not rows[entry]["correct"] and rows[entry]["score"] == 0.0
    if name != "p3":
        assert rows[entry]["bounds"]


# A Hypothesis property: short random call sequences on the file system and math backends (each element a call or
# one of P2's doubling rounds, with arguments drawn up to absurd sizes) are scored within time and memory bounds,
# and leave the process-global precisions as they were.

_NAMES = ["x", "y", "z", "f", "a", ".", "..", "/"]


def _call_strategy():
    from hypothesis import strategies as st

    name = st.sampled_from(_NAMES)
    big = st.one_of(st.integers(-10**6, 10**6), st.integers(-10**40, 10**40), st.sampled_from([10**9, 10**18]))
    number = st.one_of(big, st.floats(allow_nan=False, width=32), st.sampled_from(["'1e999999999999'", "'2'"]))
    text = st.one_of(st.text("ab\n", max_size=40), st.builds(lambda n: "q" * n, st.integers(0, 90_000)))
    calls = [
        st.builds("mkdir(dir_name={!r})".format, name), st.builds("cd(folder={!r})".format, name),
        st.builds("touch(file_name={!r})".format, name), st.builds("cat(file_name={!r})".format, name),
        st.builds("echo(content={!r}, file_name={!r})".format, text, name),
        st.builds("cp(source={!r}, destination={!r})".format, name, name),
        st.builds("mv(source={!r}, destination={!r})".format, name, name),
        st.builds("rm(file_name={!r})".format, name), st.builds("find(path={!r})".format, name),
        st.just("du(human_readable=True)"), st.builds("sort(file_name={!r})".format, name),
        st.builds("tail(file_name={!r}, lines={})".format, name, big),
        st.builds("power(base={}, exponent={})".format, number, big),
        st.builds("square_root(number={}, precision={})".format, number, big),
        st.builds("logarithm(value={}, base={}, precision={})".format, number, number, big),
        st.builds("round_number(number={}, decimal_places={})".format, big, big),
        st.builds("multiply(a={}, b={})".format, big, big),
        st.just(DOUBLING_ROUND),
    ]
    return st.one_of(*calls)


def test_random_call_sequences_stay_within_time_and_memory(items):
    import decimal

    import mpmath
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    it = _by_id(items)["multi_turn_base_15"]  # the file system and the math API
    n_turns = len(it.ground_truth)
    before = decimal.getcontext().prec, mpmath.mp.prec

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.lists(_call_strategy(), max_size=12), min_size=1, max_size=n_turns))
    def check(turns):
        pred = [["[" + ", ".join(calls) + "]"] if calls else [] for calls in turns]
        pred += [[] for _ in range(n_turns - len(pred))]
        r, seconds, peak = _scored_with_cost(it, pred)
        assert seconds < 5 and peak < 300e6, (seconds, peak, r.extra["bounds"])
        assert 0.0 <= r.score <= 1.0 and not r.reason.startswith("unscorable")
        assert (decimal.getcontext().prec, mpmath.mp.prec) == before

    check()
