"""``qa``: Bamboogle-style two-hop questions with a short answer, scored by token F1 (``qa_em``: exact match).

The simulator writes the question, its two-step decomposition and the answer::

    Question: In what year was the author of "Pride and Prejudice" born?
    Step 1: Who wrote "Pride and Prejudice"? -> Jane Austen
    Step 2: In what year was Jane Austen born? -> 1775
    Answer: 1775

The truth of world knowledge cannot be computed, so the domain checks the *structure* that makes a question
compositional (rejections with a reason): all four lines present; steps written as ``<sub-question> -> <answer>``;
the step-1 answer (the bridge) appears in the step-2 question but **not** in the final question (otherwise the
question gives the first hop away); the step-2 answer equals the final answer (normalised); the answer does not
appear in the question or in step 1; the answer has 1-8 words; the question 5-60 words and ends with ``?``.
Comparisons use SQuAD normalisation (lowercase, no punctuation or articles) on whole words.

The agent sees only the final question and must end with ``Answer: <short answer>``; the final answer is extracted
by Bamboogle's rule (:func:`genenv_lab.evaluation.bamboogle.extract_answer`). Reward: token F1 against the answer
(1.0 for an exact match, partial credit for overlap); ``qa_em`` gives 1.0/0.0 by normalised exact match.
"""

from __future__ import annotations

import re
from typing import ClassVar

from genenv_lab.evaluation.bamboogle import exact_match, extract_answer, f1_score, normalize_answer
from genenv_lab.core.types import TaskSpec
from genenv_lab.domains.base import Domain, ParseResult

MAX_TEXT_CHARS = 1500
MIN_QUESTION_WORDS = 5
MAX_QUESTION_WORDS = 60
MAX_ANSWER_WORDS = 8
_LINE = re.compile(r"^\s*(question|step\s*1|step\s*2|answer)\s*[:：](.*)$", re.IGNORECASE)
r"""A field line; its value is ``group(2).strip()`` (a lazy ``(.*?)\s*$`` is quadratic on a long blank run)."""
_ARROW = re.compile(r"\s*(?:->|→|=>)\s*")


def _contains(haystack: str, needle: str) -> bool:
    """Whether the normalised ``needle`` occurs as whole words in the normalised ``haystack``."""
    h, n = normalize_answer(haystack), normalize_answer(needle)
    return bool(n) and re.search(rf"(?:^| ){re.escape(n)}(?: |$)", h) is not None


def _answer_kind(answer: str) -> str:
    a = answer.strip()
    if re.fullmatch(r"(1[0-9]{3}|20[0-9]{2})", a):
        return "year"
    if re.fullmatch(r"[-+]?[\d,]+(?:\.\d+)?", a):
        return "number"
    if re.search(r"\b(1[0-9]{3}|20[0-9]{2})\b", a) and re.search(r"[A-Za-z]", a):
        return "date"
    return "entity"


class QADomain(Domain):
    name = "qa"
    recommended = {"env": {"max_new_tokens": 128}, "agent": {"success_threshold": 0.5, "max_completion_length": 32}}
    soft: ClassVar[bool] = True
    """Token F1 as the reward (True) or normalised exact match (False)."""
    system_prompt_env = (
        "You write two-hop trivia questions with short, well-established answers. Reply with exactly four lines:\n"
        "Question: <a question that needs two facts, without naming the intermediate answer>\n"
        "Step 1: <first sub-question> -> <its answer>\n"
        "Step 2: <second sub-question, which uses the step-1 answer> -> <its answer>\n"
        "Answer: <the final answer, at most 8 words>")
    system_prompt_agent = ("Answer the question. Think briefly if needed, then finish with the line "
                           "'Answer: <short answer>'.")
    env_prefill = "Question:"
    difficulty_hints = ("Write a new question of similar difficulty on a different topic.",
                        "Write a harder question: less famous facts or a less direct chain.",
                        "Write an easier question about very well-known facts.")

    def parse(self, text: str) -> ParseResult:
        if len(text) > MAX_TEXT_CHARS:
            return ParseResult(reason=f"text longer than {MAX_TEXT_CHARS} characters")
        fields: dict[str, str] = {}
        for line in text.splitlines():
            m = _LINE.match(line)
            if m:
                key = re.sub(r"\s+", "", m.group(1).lower())
                fields.setdefault(key, m.group(2).strip())
        for key, label in (("question", "Question"), ("step1", "Step 1"), ("step2", "Step 2"),
                           ("answer", "Answer")):
            if not fields.get(key):
                return ParseResult(reason=f"missing '{label}:' line")
        question, answer = fields["question"], fields["answer"].strip().rstrip(".").strip()
        steps = []
        for key in ("step1", "step2"):
            parts = _ARROW.split(fields[key], maxsplit=1)
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                return ParseResult(reason="step line not in '<sub-question> -> <answer>' form")
            steps.append((parts[0].strip(), parts[1].strip().rstrip(".").strip()))
        (q1, a1), (q2, a2) = steps
        n_words = len(question.split())
        if not question.rstrip().endswith("?"):
            return ParseResult(reason="question does not end with '?'")
        if n_words < MIN_QUESTION_WORDS or n_words > MAX_QUESTION_WORDS:
            return ParseResult(reason=f"question not {MIN_QUESTION_WORDS}-{MAX_QUESTION_WORDS} words long")
        if not normalize_answer(answer):
            return ParseResult(reason="empty answer")
        if len(normalize_answer(answer).split()) > MAX_ANSWER_WORDS:
            return ParseResult(reason=f"answer longer than {MAX_ANSWER_WORDS} words")
        if normalize_answer(a2) != normalize_answer(answer):
            return ParseResult(reason="step-2 answer differs from the final answer")
        if not _contains(q2, a1):
            return ParseResult(reason="step 2 does not use the step-1 answer")
        if _contains(question, a1):
            return ParseResult(reason="question names the step-1 answer")
        if _contains(question, answer) or _contains(q1, answer):
            return ParseResult(reason="answer appears in the question")
        if normalize_answer(a1) == normalize_answer(answer):
            return ParseResult(reason="step-1 answer equals the final answer")
        question = " ".join(question.split())
        canonical = (f"Question: {question}\nStep 1: {q1} -> {a1}\nStep 2: {q2} -> {a2}\nAnswer: {answer}")
        features = {"question_words": n_words, "answer_words": len(normalize_answer(answer).split()),
                    "answer_kind": _answer_kind(answer), "bridge_kind": _answer_kind(a1)}
        return ParseResult(spec=TaskSpec(question=question, answer=answer, text=canonical, features=features))

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt_agent}, {"role": "user", "content": spec.question}]

    def reference_solution(self, spec: TaskSpec) -> str:
        lines = spec.text.splitlines()
        steps = [ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("step")]
        reasoning = " ".join(f"{q} {a}." for q, a in (_ARROW.split(s, maxsplit=1) for s in steps))
        return f"{reasoning}\nAnswer: {spec.answer}"

    def score(self, spec: TaskSpec, completion: str) -> float:
        """Token F1 (``soft``) or exact match of the extracted answer against the gold answer."""
        got = extract_answer(completion)
        if not got:
            return 0.0
        if self.soft:
            return f1_score(got, [spec.answer])
        return 1.0 if exact_match(got, [spec.answer]) else 0.0


class QAExactDomain(QADomain):
    """The same tasks, rewarded 1.0/0.0 by normalised exact match; reads the same seed file."""

    name = "qa_em"
    soft = False

    def seed_tasks(self):
        return QADomain().seed_tasks()  # same tasks and parser; the seeds live in qa_seeds.jsonl
