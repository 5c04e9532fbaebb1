"""The domain interface: what the simulator writes, how it is parsed and validated, how the agent is scored.

A domain is plain Python with no model in it, so every method is unit-testable. Rewards follow the verifier
habit of TRL and nanochat: ``score`` is a plain function returning a float in [0, 1].
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from genenv_lab.core.curriculum import band_edges, in_band
from genenv_lab.core.types import TaskSpec
from genenv_lab.safe_io import read_text



HELDOUT_REASON = "held-out item (never trained on)"
"""The rejection reason of a generated task that is one of the domain's held-out items."""


def data_dir() -> Path:
    """The project's ``data/`` folder: beside the package in a checkout, else the installed ``genenv_lab.data``."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "data", here / "data"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"genenv_lab's data folder was not found beside {here}; reinstall the package")


@dataclass(frozen=True)
class SeedTask:
    seed_id: str
    spec: TaskSpec


def reply_prefill(messages) -> str:
    """The start of the reply a domain prefilled as a final assistant message (``""`` when there is none): the
    generation continues it, and the full reply is this plus the generated text.

    >>> reply_prefill([{"role": "user", "content": "Q"}, {"role": "assistant", "content": "Task:"}])
    'Task:'
    """
    return messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""


@dataclass(frozen=True)
class LineageStats:
    """Recent success statistics of one seed's lineage, shown to the simulator in its context."""

    successes: int = 0
    rollouts: int = 0
    recent: tuple[tuple[str, float], ...] = ()
    """(difficulty summary, p̂) of the lineage's most recent measured tasks, newest last (shown to the simulator)."""

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.rollouts if self.rollouts else None


@dataclass(frozen=True)
class ParseResult:
    """Either a valid task (``spec``) or a rejection (``reason``), never both."""

    spec: TaskSpec | None = None
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.spec is not None


def canonical_question(text: str) -> str:
    """A question in a canonical spelling: lower case, no space beside a symbol, single spaces between words, so
    that ``4*11`` and ``4 * 11`` read as one question.

    >>> canonical_question("  What is 4 * 11 ?"), canonical_question("what is 4*11?")
    ('what is 4*11?', 'what is 4*11?')
    """
    text = re.sub(r"\s*([^\w\s])\s*", r"\1", text.lower())
    return " ".join(text.split())


class Domain:
    """Base class of task families. Subclasses set ``name`` and implement the abstract methods."""

    name: ClassVar[str] = ""
    system_prompt_env: ClassVar[str] = ""
    system_prompt_agent: ClassVar[str] = ""
    env_prefill: ClassVar[str] = ""
    """Start of the simulator's reply, prefilled as a final assistant message (the generation continues it)."""
    env_stop: ClassVar[tuple[str, ...]] = ()
    """Stop strings of the simulator's generation: where the task format ends (format-constrained decoding; the
    stop string is not part of the recorded output)."""
    env_alphabet: ClassVar[str] = ""
    """The characters a task may be written with: the simulator samples only tokens spelt with them (and the end of
    sequence); empty for free text. Include the stop strings' characters so that a generation can end on them."""
    difficulty_hints: ClassVar[tuple[str, str, str]] = (
        "Write a variation of similar difficulty.", "Write a harder variation.", "Write an easier variation.")
    """The instruction when the lineage's success rate is near α, above the band, below it."""
    heldout_benchmark: ClassVar[tuple[str, str]] = ("bamboogle", "")
    """(benchmark, category) that measures this domain's skill when it ships no held-out set (the comparison's
    held-out score then comes from the benchmark's offline data)."""
    world: ClassVar[type | None] = None
    """The generated pre-training corpus of the ``tiny-world`` model for this domain (a
    :class:`~genenv_lab.domains.worlds.LevelWorld` subclass), if it has one (``count``, ``times``)."""
    recommended: ClassVar[dict[str, dict[str, Any]]] = {}
    """Config changes this domain needs whatever the preset (e.g. longer env generations for JSON tasks);
    ``genenv-lab run --domain`` applies them (see :func:`genenv_lab.coevolution.resolve.for_domain`)."""

    seeds_file: str = ""
    """A JSONL file of seed tasks to use instead of the shipped ``data/<name>_seeds.jsonl`` (``loop.seeds``)."""
    heldout_file: str = ""
    """A JSONL file of held-out tasks to use instead of the shipped ``data/<name>_heldout.jsonl`` (``loop.heldout``)."""

    def seed_tasks(self) -> list[SeedTask]:
        """The base seed set: ``seeds_file`` when set, else the shipped ``data/<domain>_seeds.jsonl``; validated on
        load."""
        return self._load(self.seeds_file or f"{self.name}_seeds.jsonl")

    def heldout_tasks(self) -> list[SeedTask]:
        """The held-out evaluation set (never trained on): ``heldout_file`` when set, else the shipped
        ``data/<domain>_heldout.jsonl``; [] when there is none."""
        source = self._heldout_source()
        return self._load(source) if source else []

    def probe_tasks(self, filename: str) -> list[SeedTask]:
        """The training items of a probe file (``loop.probe``), validated on load as the seeds are; an item that
        poses a held-out question is a ``ValueError`` naming its line, since choices are made on the probe."""
        return self._load(filename, parse=self.safe_parse)

    def _heldout_source(self) -> str | None:
        if self.heldout_file:
            return self.heldout_file
        shipped = f"{self.name}_heldout.jsonl"
        return shipped if (data_dir() / shipped).is_file() else None

    def _load(self, filename: str, parse=None, strict: bool = True) -> list[SeedTask]:
        """Tasks of a JSONL file of ``{"id": ..., "text": ...}`` lines (a name in the shipped ``data/`` folder, or a
        path), each validated by ``parse`` (default :meth:`parse`); a bad line is a ``ValueError`` naming it
        (``strict=False``: skipped)."""
        parse = parse or self.parse
        path = data_dir() / filename  # an absolute path stays itself
        seeds = []
        for lineno, line in enumerate(read_text(path, "seed or held-out file").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                text, seed_id = item["text"], str(item["id"])
            except (ValueError, TypeError, KeyError):
                if not strict:
                    continue
                raise ValueError(f"{path}:{lineno}: expected a JSON object with 'id' and 'text'") from None
            result = parse(text) if isinstance(text, str) else ParseResult(reason="'text' is not a string")
            if not result.valid:
                if not strict:
                    continue
                raise ValueError(f"{path}:{lineno}: task is invalid for domain {self.name!r}: {result.reason}")
            seeds.append(SeedTask(seed_id=seed_id, spec=result.spec))
        return seeds

    def format_examples(self, alpha: float = 0.5) -> list[tuple[list[dict[str, str]], str]]:
        """(messages, reply) pairs in both roles on the seed tasks: the tiny test model's format warm-up.

        Messages may end with a prefilled assistant message; the reply then continues it.
        """
        pairs = []
        for seed in self.seed_tasks():
            env = self.env_messages(seed.spec, LineageStats(), alpha)
            start = reply_prefill(env)
            pairs.append((env, seed.spec.text[len(start):] if seed.spec.text.startswith(start) else seed.spec.text))
            pairs.append((self.agent_messages(seed.spec), self.reference_solution(seed.spec)))
        return pairs

    def reference_solution(self, spec: TaskSpec) -> str:
        """A correct agent reply to ``spec`` after the prefill (what ``score`` gives 1.0)."""
        raise NotImplementedError

    def describe(self, features: dict[str, Any]) -> str:
        """A short difficulty summary of a task from its features, shown to the simulator (``k=v`` pairs)."""
        return ", ".join(f"{k} {v}" for k, v in features.items())

    def canonical(self, question: str) -> str:
        """The question in this domain's canonical spelling: two spellings of one question read the same (the
        held-out guard compares these). The default (:func:`canonical_question`) ignores case and the spaces beside
        symbols; a domain whose questions differ in case or spacing overrides it."""
        return canonical_question(question)

    def niche(self, spec: TaskSpec) -> str:
        """The kind of task ``spec`` is, for the niche penalty's memory (``env.niche_gamma``,
        :mod:`genenv_lab.core.niches`): two tasks of one niche train the simulator towards the same thing. The
        default is the canonical question (:meth:`canonical`); a domain whose difficulty lives in a few features
        names them instead (counting: its start and end)."""
        return self.canonical(spec.question)

    def env_messages(self, seed: TaskSpec, stats: LineageStats, alpha: float,
                     k_min: float = 0.1) -> list[dict[str, str]]:
        """Chat messages asking the simulator for one variation of ``seed`` given the lineage's statistics.

        The context states the run's target band [α − k_min, α + k_min], the lineage's success rate and its
        recent tasks (difficulty summary and p̂), and the instruction follows the rate (harder above the band,
        easier below, similar inside). With an ``env_prefill``, a final assistant message starts the reply; the
        raw generation the domain parses is that start plus the continuation."""
        similar, harder, easier = self.difficulty_hints
        rate = stats.success_rate
        if rate is None:
            status, direction = "No attempts on this task family yet.", similar
        else:
            lo, hi = band_edges(alpha, k_min)
            status = (f"The student succeeded on {stats.successes} of {stats.rollouts} recent attempts on this "
                      f"task family (success rate {rate:.2f}; target band {lo:.2f}-{hi:.2f}).")
            if stats.recent:
                status += "\nRecent tasks: " + "; ".join(f"{d}: {p:.2f}" for d, p in stats.recent) + "."
            direction = similar if in_band(rate, alpha, k_min) else harder if rate > alpha else easier
        messages = [{"role": "system", "content": self.system_prompt_env},
                    {"role": "user", "content": f"Seed task:\n{seed.text}\n\n{status}\n{direction}"}]
        if self.env_prefill:
            messages.append({"role": "assistant", "content": self.env_prefill})
        return messages

    def parse(self, text: str) -> ParseResult:
        """Parse and validate a generation; a rejection carries a short reason (counted in ``epochs.jsonl``)."""
        raise NotImplementedError

    max_text_chars: ClassVar[int] = 16_384
    """The longest generation or completion handed to :meth:`parse` or :meth:`score` (the training budgets write a
    few hundred tokens at most); a longer one is a counted rejection (reward 0) before any parsing, so that one
    runaway output costs nothing and the parsers' time stays bounded."""

    def safe_parse(self, text: str) -> ParseResult:
        """:meth:`parse` for model output: whatever the parser raises on a hostile generation (nesting deep enough
        for a RecursionError, a number too large to convert) becomes a rejection naming the exception, counted
        like any other, instead of aborting the run; a text longer than :attr:`max_text_chars` is rejected
        unparsed."""
        if not isinstance(text, str):
            return ParseResult(reason="generation is not text")
        if len(text) > self.max_text_chars:
            return ParseResult(reason=f"generation longer than {self.max_text_chars} characters")
        try:
            result = self.parse(text)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a model wrote the text; nothing may stop training
            return ParseResult(reason=f"unparseable generation ({type(exc).__name__})")
        if result.valid and self.canonical(result.spec.question) in self.heldout_questions:
            return ParseResult(reason=HELDOUT_REASON)
        return result

    @cached_property
    def heldout_questions(self) -> frozenset[str]:
        """The questions of :meth:`heldout_tasks` in canonical form (:meth:`canonical`), read once: a generated
        task that poses one of them, however it is spaced or cased, is rejected by :meth:`safe_parse` whatever the
        domain's own parser does, so no domain trains on its held-out set."""
        try:
            tasks = self.heldout_tasks()
        except Exception:  # noqa: BLE001 - a parser that fails on a held-out item: keep every item it reads
            source = self._heldout_source()
            tasks = self._load(source, parse=self._quiet_parse, strict=False) if source else []
        return frozenset(self.canonical(t.spec.question) for t in tasks)

    def _quiet_parse(self, text: str) -> ParseResult:
        try:
            return self.parse(text)
        except Exception as exc:  # noqa: BLE001
            return ParseResult(reason=type(exc).__name__)

    def safe_score(self, spec: TaskSpec, completion: str) -> tuple[float, str]:
        """:meth:`score` for model output: (reward, "") or, when the scorer raises on the completion or returns
        something outside [0, 1], (0.0, what went wrong). The loop counts these (``extra.agent/score_errors``). A
        completion longer than :attr:`max_text_chars` scores 0 unparsed."""
        if not isinstance(completion, str):
            return 0.0, "completion is not text"
        if len(completion) > self.max_text_chars:
            return 0.0, f"completion longer than {self.max_text_chars} characters"
        try:
            reward = float(self.score(spec, completion))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a model wrote it; nothing may stop training
            return 0.0, type(exc).__name__
        if not 0.0 <= reward <= 1.0:  # NaN fails this too
            return 0.0, "reward outside [0, 1]"
        return reward, ""

    def agent_messages(self, spec: TaskSpec) -> list[dict[str, str]]:
        """Chat messages that pose the task to the agent (a final assistant message prefills its reply)."""
        raise NotImplementedError

    def score(self, spec: TaskSpec, completion: str) -> float:
        """Reward in [0, 1] of the agent's ``completion`` for the task."""
        raise NotImplementedError


def get_domain(name: str, seeds: str = "", heldout: str = "") -> Domain:
    """An instance of the domain ``name`` (:func:`genenv_lab.domains.domain_class`), reading its seed and held-out
    tasks from ``seeds`` / ``heldout`` (JSONL paths) when given."""
    from genenv_lab.domains import domain_class

    domain = domain_class(name)()
    if seeds:
        domain.seeds_file = task_file(seeds)
    if heldout:
        domain.heldout_file = task_file(heldout)
    return domain


def task_file(value: str) -> str:
    """A seed or held-out file's absolute path: ``value`` as a path when it names a file, else (a bare name) the
    file of that name in :func:`data_dir`."""
    path = Path(value).expanduser()
    if not path.is_file() and not path.is_absolute() and (data_dir() / path).is_file():
        return str(data_dir() / path)
    return str(path.resolve())
