"""The small interface the loop talks to, so that it also runs with a scripted fake, and what an engine lends the
two roles' trainers.

A backend holds one base model with two adapters (``agent`` and ``env``) and offers four operations:
``generate`` (sampling with a chosen adapter), ``train_agent`` (it takes an update of the agent adapter from a trainer
of :mod:`genenv_lab.trainers.agent`, lending it a :class:`TrainerKit`; the update's rollouts also give the rewards
from which p̂ is computed), ``train_env`` (it takes the simulator's update from the trainer of
:mod:`genenv_lab.trainers.env`, lending it an :class:`EnvKit`) and adapter save/load. The engines lend; the trainers
(floor ``trainers/``, above the engines) build and run the updates, so no engine holds a training algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Protocol, Sequence, runtime_checkable

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
    forward may serve the trainer class, and how to read the prefix path its trainer took (``prefix_path_of``: the
    ``unsloth`` engine reads Unsloth's own; ``None``: the trainer's ``prefix_path``). What
    :func:`genenv_lab.trainers.grpo.build_grpo_trainer` builds from and :func:`~genenv_lab.trainers.grpo.run_grpo`
    runs with."""

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
    prefix_path_of: Callable[[Any], str] | None = None


@runtime_checkable
class AgentTrainer(Protocol):
    """An agent trainer of :data:`genenv_lab.trainers.agent.TRAINERS`: a name and the update it builds and runs."""

    name: str

    def update(self, kit: TrainerKit) -> AgentUpdate:
        """One update of the agent adapter from what the engine lends: built (TRL's GRPOTrainer, by
        :func:`genenv_lab.trainers.grpo.build_grpo_trainer`), run, and its figures returned (``grpo/*``,
        ``agent/*``; :func:`genenv_lab.trainers.grpo.run_grpo`)."""


@dataclass(frozen=True)
class EnvKit:
    """What an engine lends the simulator's trainer for one update (:meth:`Backend.train_env`), the ``env`` adapter
    active: the model (the trainer switches its train/eval mode), the tokenizer and how a context becomes the
    prompt's text (``render``: the engine's chat template), the longest sequence the model takes, the device, the
    run-long optimiser of the env role, the forward that gives the next token's log-probabilities at chosen
    positions (``log_probs(input_ids, attention_mask, positions)``: ``positions`` (B, T-1) marks the positions whose
    next token is scored; it returns their (N, V) float32 log-softmax under the active adapter; each engine its own
    kernel), the context in which the model is its base with the adapters off (``base``: the KL anchor), and the
    job's processes (:class:`genenv_lab.backends.distributed.Processes`: each process takes its part of every
    mini-batch). What :func:`genenv_lab.trainers.env.rwr_update` runs with."""

    model: Any
    tokenizer: Any
    render: Callable[[Messages], str]
    max_seq_length: int
    device: Any
    optimizer: Any
    log_probs: Callable[[Any, Any, Any], Any]
    base: Callable[[], ContextManager[Any]]
    procs: Any


@runtime_checkable
class EnvTrainer(Protocol):
    """The simulator's trainer (:class:`genenv_lab.trainers.env.RWR`): a name and the update it runs."""

    name: str

    def update(self, kit: EnvKit, examples: Sequence[EnvExample]) -> EnvUpdate:
        """One update of the env adapter on ``examples`` from what the engine lends, and its figures."""


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

    def train_env(self, trainer: EnvTrainer, examples: Sequence[EnvExample]) -> EnvUpdate:
        """Take one update of the ``env`` adapter from ``trainer`` on ``examples`` (weighted (context → target)
        pairs): lend it an :class:`EnvKit` with the ``env`` adapter active, return its figures and leave the
        ``agent`` adapter active. The loop calls it through :func:`genenv_lab.trainers.env.update_env`."""

    def completion_tokens(self, texts: Sequence[str]) -> list[int]:
        """Optional: tokens of each agent completion text under the agent's tokenizer (the run's compute
        accounting, ``cumulative/agent_tokens``); a backend without it leaves the count unknown (null)."""

    def save_adapters(self, directory: Path) -> None: ...

    def load_adapters(self, directory: Path) -> None: ...

    def adapter_state(self, adapter: str) -> dict[str, Any]:
        """A copy of the adapter's weights (for tests and diagnostics)."""
