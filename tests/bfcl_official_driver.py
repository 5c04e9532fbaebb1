"""Official BFCL verdicts for the parity test, run inside the official package's venv (not collected by pytest).

    <bfcl venv>/bin/python tests/bfcl_official_driver.py DATA_DIR PREDICTIONS.jsonl OUT.jsonl

PREDICTIONS.jsonl rows: ``{"id", "category", "prediction"}``. For each row the driver does what
``bfcl_eval.eval_checker.eval_runner`` does for a prompting model (``_evaluate_single_ast_entry`` /
``_evaluate_single_relevance_entry``), calling the package's own functions: ``default_decode_ast_prompting``
with the category's return format, ``is_function_calling_format_output`` / ``is_empty_output`` and
``ast_checker``. The eval runner itself is not called because it scores whole result files of a registered model
and writes score files; its per-entry logic is the few lines below. OUT.jsonl rows: ``{"id", "category",
"prediction_index", "valid"}`` plus ``"error"`` where the official checker raised (its run would stop there).

The model name given to ``ast_checker`` is a prompting model whose config does not rewrite ``.`` to ``_`` in
function names (the rewrite applies to some API function-calling models only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MODEL = "gpt-4o-2024-11-20"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _category_data(data_dir: Path, category: str) -> tuple[dict, dict]:
    def newest(folder: Path) -> Path:  # BFCL_v<N>_<category>.json by exact name, the highest N
        exact = [p for p in folder.glob("BFCL_v*.json") if p.name.split("_", 2)[2] == f"{category}.json"]
        return max(exact, key=lambda p: int(p.name.split("_")[1][1:]))

    prompts = {r["id"]: r for r in _rows(newest(data_dir))}
    answers = {}
    if "relevance" not in category:
        answers = {r["id"]: r["ground_truth"] for r in _rows(newest(data_dir / "possible_answer"))}
    return prompts, answers


def verdict(prediction: str, prompt: dict, answer, category: str) -> bool:
    # imported here: pytest's doctest collection imports this file in the project's venv, which lacks bfcl_eval
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.model_handler.utils import default_decode_ast_prompting
    from bfcl_eval.utils import is_empty_output, is_function_calling_format_output, is_java, is_js

    if "relevance" in category:  # relevance and irrelevance: decoded as Python, whatever the category
        try:
            decoded = default_decode_ast_prompting(prediction, ReturnFormat.PYTHON, False)
            has_call = not is_empty_output(decoded)
        except Exception:  # noqa: BLE001 - upstream: any decoder failure means "no call"
            has_call = False
        return not has_call if "irrelevance" in category else has_call
    if is_java(category):
        language, fmt = Language.JAVA, ReturnFormat.JAVA
    elif is_js(category):
        language, fmt = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
    else:
        language, fmt = Language.PYTHON, ReturnFormat.PYTHON
    try:
        decoded = default_decode_ast_prompting(prediction, fmt, False)
    except Exception:  # noqa: BLE001 - upstream: ast_decoder:decoder_failed
        return False
    if not is_function_calling_format_output(decoded):
        return False
    return ast_checker(prompt["function"], decoded, answer, language, category, MODEL)["valid"]


def multi_turn_verdict(prediction: list, prompt: dict, answer: list, category: str, index: int) -> bool:
    """``_evaluate_single_multi_turn_entry`` of the official eval runner, with the prompting handlers' decoder
    (``default_decode_execute_prompting``, what ``OSSHandler.decode_execute`` calls). Upstream keeps each entry's
    backend instances in its executor module's globals under the model's name, so every prediction gets a name of
    its own and its instances are dropped after its verdict."""
    import copy
    from types import SimpleNamespace

    import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils as utils
    from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry
    from bfcl_eval.model_handler.utils import default_decode_execute_prompting

    handler = SimpleNamespace(decode_execute=default_decode_execute_prompting)
    name = f"parity{index}"
    try:
        return _evaluate_single_multi_turn_entry(handler, prompt["id"], prediction, answer, copy.deepcopy(prompt),
                                                 name, category)["valid"]
    finally:
        for key in [k for k in vars(utils) if k.startswith(name + "_")]:
            del vars(utils)[key]


def main() -> None:
    data_dir, pred_path, out_path = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    cache: dict[str, tuple[dict, dict]] = {}
    with open(out_path, "w", encoding="utf-8") as out:
        for i, row in enumerate(_rows(pred_path)):
            cat = row["category"]
            if cat not in cache:
                cache[cat] = _category_data(data_dir, cat)
            prompts, answers = cache[cat]
            result = {"id": row["id"], "category": cat, "prediction_index": i}
            try:
                judge = multi_turn_verdict if cat.startswith("multi_turn") else verdict
                args = (i,) if cat.startswith("multi_turn") else ()
                result["valid"] = bool(judge(row["prediction"], prompts[row["id"]], answers.get(row["id"]), cat, *args))
            except Exception as exc:  # noqa: BLE001 - recorded: upstream's run would stop on this entry
                result["valid"], result["error"] = False, f"{type(exc).__name__}: {exc}"[:300]
            out.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
