"""API-Bank level-1 ("Call") and level-2 ("Retrieve+Call") API-call accuracy, by parameter match (an approximation).

Data: ``test-data/level-{1,2}-api.json`` (399 + 135 rows: instruction with API descriptions, the dialogue so far,
the expected ``API-Request: [ApiName(k='v', ...)]``). The gold call of a row is read from the source dialogue in
``lv1-lv2-samples/`` (the API turn after the ``API-Request:`` lines already in the row's input), whose structured
``param_dict`` is exact where the expected-output string has broken quoting.

Official metric: the predicted call is *executed* against the API simulators (initialised from ``init_database``)
and its result compared with the gold call's result by a per-API rule. The simulators' code is not part of the
offline data, and several APIs (``ToolSearcher``'s embedding retrieval, image captioning, speech recognition...)
need models, so this module scores by **parameter match** instead: the predicted API name must equal the gold one,
its parameter names must equal the gold call's, and each value must equal the gold value after normalisation
(case-folded, whitespace collapsed, quotes unified, outer quotes and a final period dropped; numbers compared as
numbers). This is stricter than execution wherever two argument spellings execute alike (notably ``ToolSearcher``
keywords, which upstream accepts whenever they retrieve the same tool), so the summary reports ``ToolSearcher``
rows separately.

Predictions are read from ``[ApiName(...)]`` (after ``API-Request:`` when present; Python keyword syntax, with a
tolerant fallback for unbalanced quotes), else from any call format :func:`decode_calls` accepts.

>>> parse_api_request("API-Request: [GetUserToken(username='JohnDoe', password='pass123')]")
('GetUserToken', {'username': 'JohnDoe', 'password': 'pass123'})
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv_lab.evaluation.calls import decode_calls, strip_reasoning
from genenv_lab.evaluation.common import BenchmarkSpec, ItemResult, accuracy
from genenv_lab.safe_io import read_text

LEVELS = {"level-1": "level-1-api.json", "level-2": "level-2-api.json"}
DIALOGUE_DIRS = {"level-1": "level-1-given-desc", "level-2": "level-2-toolsearcher"}
SOURCES = ("AlibabaResearch/DAMO-ConvAI, api-bank/ (test-data/*.json were moved to the HF dataset "
           "'liminghao1630/API-Bank'; lv1-lv2-samples/ and init_database/ are in the repo)")
_REQUEST = re.compile(r"\[\s*(\w+)\s*\((.*?)\)\s*\]", re.DOTALL)
_KEY = re.compile(r"(?:^|,)\s*([A-Za-z_]\w*)\s*=\s*")


@dataclass(frozen=True)
class ApiBankItem:
    id: str
    category: str
    instruction: str
    input: str
    expected_output: str
    api_name: str
    params: dict[str, str]
    dialogue_file: str


def available_categories(data_dir: Path) -> list[str]:
    return [lvl for lvl, f in LEVELS.items() if (data_dir / "test-data" / f).exists()]


def load_category(data_dir: Path, category: str) -> list[ApiBankItem]:
    if category not in LEVELS:
        raise ValueError(f"API-Bank category {category!r} is not covered; covered: {list(LEVELS)}")
    rows = json.loads(read_text(data_dir / "test-data" / LEVELS[category], "API-Bank file"))
    dialogues: dict[str, list[dict]] = {}
    items = []
    for index, row in enumerate(rows):
        fname = row["file"]
        if fname not in dialogues:
            path = data_dir / "lv1-lv2-samples" / DIALOGUE_DIRS[category] / fname
            dialogues[fname] = [json.loads(line) for line in read_text(path, "API-Bank file").splitlines()
                                if line.strip()]
        api_turns = [t for t in dialogues[fname] if t.get("role") == "API"]
        k = row["input"].count("API-Request:")
        if k >= len(api_turns):
            raise ValueError(f"{category} row {index}: dialogue {fname} has no API turn #{k + 1}")
        turn = api_turns[k]
        expected_name = _REQUEST.search(row["expected_output"])
        if not expected_name or expected_name.group(1) != turn["api_name"]:
            raise ValueError(f"{category} row {index}: expected output and dialogue disagree on the API name")
        items.append(ApiBankItem(id=f"{category}-{index}", category=category, instruction=row["instruction"],
                                 input=row["input"], expected_output=row["expected_output"],
                                 api_name=turn["api_name"], params=dict(turn["param_dict"]), dialogue_file=fname))
    return items


def _strip_quotes(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _tolerant_args(args: str) -> dict[str, str]:
    """``k='v', k2='v2'`` split at ``, name=`` boundaries; each value loses one pair of outer quotes."""
    matches = list(_KEY.finditer(args))
    out = {}
    for m, nxt in zip(matches, matches[1:] + [None]):
        end = nxt.start() if nxt else len(args)
        out[m.group(1)] = _strip_quotes(args[m.end():end].strip().rstrip(",").strip())
    return out


def parse_api_request(text: str) -> tuple[str, dict[str, Any]] | None:
    """The first API call in a raw output as ``(name, params)``, or None."""
    text = strip_reasoning(text)
    idx = text.rfind("API-Request:")
    region = text[idx + len("API-Request:"):] if idx >= 0 else text
    m = _REQUEST.search(region)
    if m:
        name, args = m.group(1), m.group(2)
        decoded = decode_calls(f"{name}({args})")
        if decoded and decoded.format in ("python", "json") and len(decoded) == 1:
            return decoded.calls[0].name, dict(decoded.calls[0].arguments)
        if not args.strip():
            return name, {}
        parsed = _tolerant_args(args)
        if parsed:
            return name, parsed
    decoded = decode_calls(region)
    if decoded:
        return decoded.calls[0].name, dict(decoded.calls[0].arguments)
    return None


def normalize_value(value: Any) -> str | float:
    """Normalised parameter value: numbers as floats, everything else as folded, whitespace-collapsed text.

    >>> normalize_value("  Dr.  Lee. "), normalize_value(3), normalize_value("3.0")
    ('dr. lee', 3.0, 3.0)
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        value = repr(value)
    text = _strip_quotes(value)
    try:
        return float(text.replace(",", "")) if re.fullmatch(r"-?[\d,]*\.?\d+", text.strip()) else _norm_text(text)
    except ValueError:
        return _norm_text(text)


def _norm_text(text: str) -> str:
    text = " ".join(text.replace('"', "'").casefold().split())
    return text[:-1].rstrip() if text.endswith(".") else text


def score_item(item: ApiBankItem, prediction: str) -> ItemResult:
    parsed = parse_api_request(prediction or "")
    extra = {"gold_api": item.api_name}
    if parsed is None:
        return ItemResult(item.id, item.category, False, 0.0, "no API call found", extra)
    name, params = parsed
    if name != item.api_name:
        return ItemResult(item.id, item.category, False, 0.0,
                          f"wrong API: expected {item.api_name}, got {name}", extra)
    missing = sorted(set(item.params) - set(params))
    unexpected = sorted(set(params) - set(item.params))
    if missing or unexpected:
        return ItemResult(item.id, item.category, False, 0.0,
                          f"parameter names differ: missing {missing}, unexpected {unexpected}", extra)
    for k, gold in item.params.items():
        if normalize_value(params[k]) != normalize_value(gold):
            return ItemResult(item.id, item.category, False, 0.0,
                              f"value of {k!r} differs: expected {gold!r}, got {params[k]!r}", extra)
    return ItemResult(item.id, item.category, True, 1.0, "ok", extra)


def gold_prediction(item: ApiBankItem) -> str:
    return item.expected_output


def prompt_messages(item: ApiBankItem) -> list[dict[str, str]]:
    """The row's own instruction (with the API descriptions) as system message and the dialogue as user message."""
    return [{"role": "system", "content": item.instruction.strip()}, {"role": "user", "content": item.input}]


def summarize(results: dict[str, list[ItemResult]]) -> dict[str, Any]:
    cats: dict[str, Any] = {}
    for c, rs in results.items():
        entry = {"metric": "api_call_accuracy_param_match", "value": accuracy(rs),
                 "correct": sum(r.correct for r in rs), "n": len(rs)}
        ts = [r for r in rs if r.extra.get("gold_api") == "ToolSearcher"]
        if ts:
            other = [r for r in rs if r.extra.get("gold_api") != "ToolSearcher"]
            entry["toolsearcher_rows"] = {"value": accuracy(ts), "n": len(ts)}
            entry["other_rows"] = {"value": accuracy(other), "n": len(other)}
        cats[c] = entry
    all_rs = [r for rs in results.values() for r in rs]
    return {
        "metric": "api_call_accuracy_param_match (approximation of API-Bank's execution-based API-call accuracy; "
                  "micro over the evaluated levels)",
        "value": accuracy(all_rs), "n": len(all_rs), "categories": cats,
        "covered": [f"{c}: API-call accuracy by parameter match" for c in results],
        "not_covered": ["execution of predicted calls against the API simulators (their code is not in the data)",
                        "level-1/level-2 response generation (ROUGE-L)", "level-3 (plan + retrieve + call)"],
        "approximated": ["API-call correctness: API name + parameter names + normalised values equal to the gold "
                         "call's, instead of comparing execution results",
                         "ToolSearcher rows: keywords must match the gold keywords (upstream accepts any keywords "
                         "that retrieve the same tool)"],
    }


SPEC = BenchmarkSpec(name="api-bank", folder="api-bank", markers=("test-data",), sources=SOURCES,
                     categories=available_categories, load=load_category, score=score_item, gold=gold_prediction,
                     summarize=summarize)
