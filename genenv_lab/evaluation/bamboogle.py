"""Bamboogle (125 two-hop questions): normalised exact match and token F1 of the extracted final answer.

Normalisation (SQuAD): lowercase, drop punctuation, drop the articles *a*, *an*, *the*, collapse whitespace.
A prediction is correct when its normalised answer equals the normalised form of any gold alias (Bamboogle has one
gold answer per question; a list-valued ``Answer`` is read as aliases). F1 is SQuAD's token F1, the maximum over the
aliases.

Final-answer extraction from a raw output (:func:`extract_answer`), first rule that applies:

1. ``<think>...</think>`` is dropped;
2. the content of the last ``<answer>...</answer>`` (Search-R1 style);
3. the content of the last ``\\boxed{...}``;
4. the text after the last ``answer is`` / ``answer:`` (also ``Final answer:``, case-insensitive), up to the end
   of that line;
5. otherwise the last non-empty line.

The result loses surrounding markdown emphasis, quotes and a final period.

>>> extract_answer("Citibank was founded in 1812.\\nSo the answer is: James Madison.")
'James Madison'
>>> exact_match("the James  Madison", ["james madison"]), round(f1_score("James Madison Jr.", ["james madison"]), 3)
(True, 0.8)
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv_lab.evaluation.calls import strip_reasoning
from genenv_lab.evaluation.common import BenchmarkSpec, ItemResult, accuracy
from genenv_lab.safe_io import read_text

SOURCES = ("ofirpress/self-ask, datasets/bamboogle.md (links the Google Sheet with the 125 questions); copies: "
           "HF dataset 'chiayewken/bamboogle' (test split)")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_CUE = re.compile(r"\banswer\s*(?:is\b\s*[:：]?|[:：])\s*", re.IGNORECASE)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation.

    >>> normalize_answer("The  Titan IIIE!")
    'titan iiie'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: list[str]) -> bool:
    p = normalize_answer(prediction)
    return any(p == normalize_answer(g) for g in golds)


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p), overlap / len(g)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: list[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def _boxed(text: str) -> str | None:
    idx = text.rfind("\\boxed{")
    if idx < 0:
        return None
    i, depth, start = idx + len("\\boxed{"), 1, idx + len("\\boxed{")
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1] if depth == 0 else None


def _clean(answer: str) -> str:
    answer = answer.strip()
    for _ in range(3):
        answer = answer.strip().strip("*_`").strip()
        if len(answer) >= 2 and answer[0] == answer[-1] and answer[0] in "\"'":
            answer = answer[1:-1]
        answer = answer.rstrip(".").strip()
    return answer


def extract_answer(output: str) -> str:
    """The final answer in a raw model output (rules in the module docstring)."""
    text = strip_reasoning(output or "")
    tags = _ANSWER_TAG.findall(text)
    if tags:
        return _clean(tags[-1])
    boxed = _boxed(text)
    if boxed is not None:
        return _clean(boxed)
    cues = list(_ANSWER_CUE.finditer(text))
    for cue in reversed(cues):
        rest = text[cue.end():].strip().splitlines()
        if rest and rest[0].strip():
            return _clean(rest[0])
    lines = [line for line in text.splitlines() if line.strip()]
    return _clean(lines[-1]) if lines else ""


@dataclass(frozen=True)
class BamboogleItem:
    id: str
    category: str
    question: str
    answers: tuple[str, ...]


def available_categories(data_dir: Path) -> list[str]:
    return ["test"] if any((data_dir / f).exists() for f in ("bamboogle.json", "test.verl.jsonl", "bamboogle.csv")) \
        else []


def load_category(data_dir: Path, category: str = "test") -> list[BamboogleItem]:
    if category != "test":
        raise ValueError("Bamboogle has a single split, 'test'")
    rows: list[tuple[str, Any]] = []
    if (data_dir / "bamboogle.json").exists():
        rows = [(r["Question"], r["Answer"])
                for r in json.loads(read_text(data_dir / "bamboogle.json", "Bamboogle file"))]
    elif (data_dir / "test.verl.jsonl").exists():
        for line in read_text(data_dir / "test.verl.jsonl", "Bamboogle file").splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append((r["extra_info"]["question"], r["reward_model"]["ground_truth"]))
    else:
        text = read_text(data_dir / "bamboogle.csv", "Bamboogle file")
        rows = [(r[0], r[4]) for r in csv.reader(io.StringIO(text, newline="")) if r and r[0].strip()]
    items = []
    for i, (q, a) in enumerate(rows):
        answers = tuple(str(x).strip() for x in (a if isinstance(a, list) else [a]) if str(x).strip())
        items.append(BamboogleItem(id=f"bamboogle-{i}", category="test", question=q.strip(), answers=answers))
    return items


def score_item(item: BamboogleItem, prediction: str) -> ItemResult:
    answer = extract_answer(prediction)
    em = exact_match(answer, list(item.answers))
    f1 = f1_score(answer, list(item.answers))
    reason = "ok" if em else (f"extracted {answer!r}; gold {list(item.answers)!r}" if answer else "no answer found")
    return ItemResult(item.id, item.category, em, f1, reason, {"extracted": answer, "f1": f1})


def gold_prediction(item: BamboogleItem) -> str:
    return f"Answer: {item.answers[0]}"


def prompt_messages(item: BamboogleItem) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer the question. Think step by step if needed, then finish with a "
                                          "line 'Answer: <short answer>'."},
            {"role": "user", "content": item.question}]


def summarize(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    rs = [r for v in results.values() for r in v]
    f1 = sum(r.score for r in rs) / len(rs) if rs else float("nan")
    return {
        "metric": "exact_match (SQuAD-normalised, any gold alias)", "value": accuracy(rs), "f1": f1, "n": len(rs),
        "categories": {c: {"metric": "exact_match", "value": accuracy(v), "f1": sum(r.score for r in v) / len(v),
                           "n": len(v)} for c, v in results.items() if v},
        "covered": ["normalised exact match and token F1 on the extracted final answer"],
        "not_covered": ["LLM-judge accuracy (some papers report it)"],
        "approximated": ["the final answer is extracted from the raw output by fixed rules (see "
                         "genenv_lab.evaluation.bamboogle.extract_answer)"],
    }


SPEC = BenchmarkSpec(name="bamboogle", folder="bamboogle",
                     markers=("bamboogle.json", "test.verl.jsonl", "bamboogle.csv"), sources=SOURCES,
                     categories=available_categories, load=load_category, score=score_item, gold=gold_prediction,
                     summarize=summarize)
