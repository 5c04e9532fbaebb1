"""The small interface the loop talks to, so that it also runs with a scripted fake.

A backend holds one base model with two adapters (``agent`` and ``env``) and offers four operations:
``generate`` (sampling with a chosen adapter), ``train_agent`` (it takes an update of the agent adapter from a trainer
of :mod:`genenv_lab.trainers.agent`, lending it a :class:`TrainerKit`; the update's rollouts also give the rewards
from which p̂ is computed), ``rwr_step`` (the environment update) and adapter save/load.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

Messages = list[dict[str, str]]

# reward_fn(task_ids, completions) -> rewards: called by the agent's update for every generation batch.
RewardFn = Callable[[Sequence[str], Sequence[str]], list[float]]


@dataclass(frozen=True)
class AgentPrompt:
    """One row of the agent's GRPO batch."""

    task_id: str
    messages: Messages


@dataclass(frozen=True)
class EnvExample:
    """One weighted (context → task text) pair of the environment's RWR update."""

    messages: Messages
    target: str
    weight: float


@dataclass
class AgentUpdate:
    loss: float = float("nan")
    rollout_s: float = 0.0
    update_s: float = 0.0
    steps: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class EnvUpdate:
    loss: float = float("nan")
    kl: float = 0.0
    """Mean per-token KL(π_env ‖ π_env⁰) on the batch after the update."""
    steps: int = 0
    stopped_by_kl_cap: bool = False


@dataclass(frozen=True)
class TrainerKit:
    """What an engine lends an agent trainer for one update (:meth:`Backend.train_agent`): the run's configuration,
    the model with the ``agent`` adapter active and its tokenizer, the epoch's prompts as a data set (``prompt``,
    ``task_id``), the reward function, the run-long optimiser of the agent role, a scratch folder, the update's seed,
    the engine's trainer and config classes (TRL's ``GRPOTrainer``/``GRPOConfig`` or Unsloth's) and its own flags
    (``engine_args``: vLLM rollouts), the device, the number of processes and whether the project's shared-prefix
    forward may serve the trainer class. The fields are :func:`~.agent_trainer.build_grpo_trainer`'s arguments."""

    cfg: Any
    model: Any
    tokenizer: Any
    dataset: Any
    reward_fn: RewardFn
    optimizer: Any
    output_dir: str
    seed: int
    trainer_cls: Any
    config_cls: Any
    on_cuda: bool
    world_size: int = 1
    share_prefix: bool = False
    engine_args: dict[str, Any] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """The fields as keyword arguments (the objects themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@runtime_checkable
class AgentTrainer(Protocol):
    """An agent trainer of :data:`genenv_lab.trainers.agent.TRAINERS`: a name and the update it builds."""

    name: str

    def build(self, kit: TrainerKit) -> Any:
        """The trainer of one update from what the engine lends: an object with ``train()``, TRL's ``state``
        (``log_history``, ``global_step``), ``args`` and ``rollout_s`` (seconds spent in rollouts), as TRL's
        GRPOTrainer built by :func:`~.agent_trainer.build_grpo_trainer` has."""


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to (not including) the earliest occurrence of any of the ``stop`` strings.

    >>> cut_at_stop(" 7 * 8 = 56\\nmore", ("\\n", "=")), cut_at_stop(" 7 * 8", ("=",))
    (' 7 * 8 ', ' 7 * 8')
    """
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[:min(cuts)] if cuts else text


def alphabet_token_ids(tokenizer: Any, alphabet: str, vocab_size: int) -> list[int]:
    """The token ids a generation restricted to ``alphabet`` may sample: every token of the ``vocab_size`` ids whose
    text is made of the alphabet's characters, and the end-of-sequence token. Backends pass them to the library's
    own constraint (transformers' ``suppress_tokens`` takes the complement, vLLM's ``allowed_token_ids`` these).
    """
    chars = set(alphabet)
    allowed = [i for i in range(min(vocab_size, len(tokenizer)))
               if (text := tokenizer.decode([i])) and set(text) <= chars]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in allowed:
        allowed.append(tokenizer.eos_token_id)
    if not allowed:
        raise ValueError(f"no token of the vocabulary is spelt with the characters {alphabet!r}")
    return allowed


@runtime_checkable
class Backend(Protocol):
    """What an engine does for the loop (``isinstance(x, Backend)`` checks the methods are there; the tests check
    their signatures too)."""

    def generate(self, adapter: str, prompts: Sequence[Messages], *, n: int, max_new_tokens: int,
                 temperature: float, top_p: float = 1.0, stop: Sequence[str] = (),
                 alphabet: str = "") -> list[list[str]]:
        """``n`` samples per prompt from the base with ``adapter`` active (``temperature=0``: greedy).

        A prompt ending with an assistant message is continued (the domain prefilled the reply's start); the
        returned text is the continuation only. A sample ends at the first of the ``stop`` strings, which is not
        part of the returned text (vLLM's ``stop``; see :func:`cut_at_stop`). A non-empty ``alphabet`` restricts
        sampling to the tokens spelt with its characters (and end of sequence; see :func:`alphabet_token_ids`)."""

    def train_agent(self, trainer: AgentTrainer, prompts: Sequence[AgentPrompt], reward_fn: RewardFn) -> AgentUpdate:
        """Take one update of the ``agent`` adapter from ``trainer`` over ``prompts`` (G completions each, scored by
        ``reward_fn``): lend it a :class:`TrainerKit`, run what it built, return the update's figures and leave the
        ``agent`` adapter active. The loop calls it through :func:`genenv_lab.trainers.agent.update_agent`."""

    def rwr_step(self, examples: Sequence[EnvExample]) -> EnvUpdate:
        """Weighted NLL of (context → target) on the ``env`` adapter, with a KL penalty and a KL cap."""

    def completion_tokens(self, texts: Sequence[str]) -> list[int]:
        """Optional: tokens of each agent completion text under the agent's tokenizer (the run's compute
        accounting, ``cumulative/agent_tokens``); a backend without it leaves the count unknown (null)."""

    def save_adapters(self, directory: Path) -> None: ...

    def load_adapters(self, directory: Path) -> None: ...

    def adapter_state(self, adapter: str) -> dict[str, Any]:
        """A copy of the adapter's weights (for tests and diagnostics)."""
