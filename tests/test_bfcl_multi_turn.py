"""BFCL multi-turn on BFCL's own backends (genenv_lab/evaluation/bfcl_multi_turn.py): the answer keys score 100 %
under both protocols, empty predictions score what the docs say, the strings BFCL's harness writes are matched
byte for byte, nothing a model writes runs as code, the inference loop follows BFCL's, and a run records the score
per epoch. Parity with the official ``multi_turn_checker`` is in tests/test_bfcl_parity.py."""

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
    """A scripted model for :func:`genenv_lab.heldout.converse` (every conversation is of one entry): answers a turn
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
    from genenv_lab.heldout import converse

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
