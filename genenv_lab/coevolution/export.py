"""Take a trained agent out of a run directory: answer a task with it (``genenv-lab generate``) or export it
(``genenv-lab export``) as a folder any transformers + peft user loads with the standard calls.

An export holds the agent's LoRA adapter (peft format) with the tokenizer beside it and a filled model card
(``README.md``: preset, α, band, epochs, held-out score, the method), or with ``merge=True`` one model with the
adapter merged in (``AutoModelForCausalLM.from_pretrained(OUT)``). A base built or unpacked locally (``tiny``, the
prepared world models, ``smollm2-135m`` from its package) is copied into ``OUT/base``, so the folder works on
another machine. The adapter's ``base_model_name_or_path`` is the base's hub id where it has one (a hub base, and
``smollm2-135m``), else the absolute path of ``OUT/base`` (:func:`base_reference`), so that
``AutoPeftModelForCausalLM.from_pretrained("OUT")`` loads it from any working directory; explicitly::

    base = AutoModelForCausalLM.from_pretrained("OUT/base")        # or the hub id the card names
    model = PeftModel.from_pretrained(base, "OUT")
    tokenizer = AutoTokenizer.from_pretrained("OUT")

The folder is written beside ``OUT`` (``.OUT.partial``) and renamed into place, so a killed export leaves no half
folder.

``push_to_hub`` (``genenv-lab export ... --push-to-hub OWNER/NAME``) publishes the folder with huggingface_hub's
``create_repo`` and ``upload_folder``. This project's machines cannot reach the hub, so its test drives a local
stand-in for ``HfApi`` (the calls and the folder they carry), not the hub itself.

The library calls are transformers', peft's and huggingface_hub's own (``save_pretrained``, ``merge_and_unload``,
``upload_folder``); what is written by hand here is the model card and the choice of base reference.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genenv_lab.domains.base import HELDOUT_REASON, reply_prefill
from genenv_lab.rundir.layout import adapter_dir
from genenv_lab.rundir.read import committed_epochs, read_config, read_epochs
from genenv_lab.core.metrics import EVAL

METHOD = "https://arxiv.org/abs/2512.19682"
HUB_IDS = {"smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct"}
"""Where a locally unpacked base came from (named in the model card)."""


def _run_epoch(run_dir: Path, epoch: int | None) -> tuple[Any, int]:
    """The run's configuration and the epoch asked for (default: the last complete one), checked."""
    cfg = read_config(run_dir)
    last = committed_epochs(run_dir)  # a whole number or a one-line refusal: 2.9 is not read as 2
    epoch = last if epoch is None else epoch
    if not 0 <= epoch <= last:
        raise ValueError(f"{run_dir} has epochs 0-{last} (0: the untrained agent); epoch {epoch} is not one")
    return cfg, epoch


def _agent_backend(cfg, run_dir: Path, epoch: int):
    """The run's domain and a backend holding its adapters after ``epoch`` (none for 0).

    Always the ``hf`` engine (transformers + peft): every engine writes the same peft adapter folders, and answering
    or exporting needs no trainer, so a run trained with ``unsloth`` on a Colab GPU (or ``vllm``) loads anywhere,
    CPU included. A 4-bit Unsloth base is loaded in the run's 16-bit dtype here (outputs shift slightly)."""
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.domains import domain_of

    from genenv_lab.models.loading import check_model_source

    domain = domain_of(cfg)
    if cfg.model.engine != "hf":
        cfg = cfg.replace(model={"engine": "hf"})
    check_model_source(cfg.model.name_or_path)  # a base that is neither here nor cached: seconds, not retries
    backend = make_backend(cfg, domain)
    if epoch:
        backend.load_adapters(adapter_dir(run_dir, epoch))
    return domain, backend


def generate(run_dir: str | Path, task_text: str, *, epoch: int | None = None, max_new_tokens: int | None = None
             ) -> dict[str, Any]:
    """The agent's greedy answer to ``task_text`` (written as the simulator writes tasks, e.g. ``Task: 7 * 8``),
    posed with the domain's prompt, and the domain's verdict on it."""
    cfg, epoch = _run_epoch(Path(run_dir), epoch)
    domain, backend = _agent_backend(cfg, Path(run_dir), epoch)
    parsed = domain.safe_parse(task_text)
    if not parsed.valid and domain.env_prefill and not task_text.startswith(domain.env_prefill):
        parsed = domain.safe_parse(f"{domain.env_prefill} {task_text}")
    spec = parsed.spec
    if parsed.reason == HELDOUT_REASON:  # never trained on, but a fair question to ask the agent
        texts = {task_text.strip(), f"{domain.env_prefill} {task_text.strip()}"}
        spec = next((t.spec for t in domain.heldout_tasks() if t.spec.text.strip() in texts), None)
    if spec is None:
        raise ValueError(f"{task_text!r} is not a {cfg.loop.domain} task ({parsed.reason})")
    messages = domain.agent_messages(spec)
    (answer,), = backend.generate("agent", [messages], n=1, temperature=0.0,
                                  max_new_tokens=max_new_tokens or cfg.agent.max_completion_length)
    reward, error = domain.safe_score(spec, answer)
    prefill = reply_prefill(messages)
    return {"epoch": epoch, "question": spec.question, "answer": prefill + answer, "expected": spec.answer,
            "reward": reward, "error": error}


def model_card(cfg, records: list[dict], epoch: int, origin: str, base_path: str | None) -> str:
    """The export's README.md: what the agent is, how it was trained, how well it does, how to load it. ``origin``
    names the base (a hub id where there is one); ``base_path`` is where the adapter's base loads from (``None``:
    merged, no adapter)."""
    merged = base_path is None
    c = cfg.curriculum
    record = next((r for r in records if r.get("epoch") == epoch), {})
    scores = {k: v for k, v in record.extra.items() if k.startswith(EVAL) and v is not None}
    score_text = ", ".join(f"{k[5:]} {v:.3f}" for k, v in scores.items()) or "not measured in this run"
    load = ('model = AutoModelForCausalLM.from_pretrained("OUT")' if merged else
            f'base = AutoModelForCausalLM.from_pretrained("{base_path}")\n'
            'model = PeftModel.from_pretrained(base, "OUT")')
    hub = f"base_model: {origin}\n" if "/" in origin else ""  # the model hub's field takes a hub id only
    return f"""---
library_name: {"transformers" if merged else "peft"}
{hub}tags: [genenv, grpo, curriculum, lora]
---

# GenEnv agent: {cfg.loop.domain}, preset {cfg.preset}, epoch {epoch}

The agent adapter of a [GenEnv]({METHOD}) co-evolution run trained with genenv_lab: an LLM agent trained by GRPO on
tasks that an LLM environment simulator writes, the simulator rewarded by the α-Curriculum Reward and updated by
reward-weighted regression{" (the adapter merged into the base)" if merged else ""}.

| | |
|---|---|
| base model | `{cfg.model.name_or_path}` ({origin}) |
| preset, variant | {cfg.preset}, {cfg.loop.variant} |
| domain | {cfg.loop.domain} |
| α, band | {c.alpha}, p̂ within ±{c.k_min} |
| epochs | {epoch} of {cfg.loop.epochs} (G = {cfg.agent.num_generations}, agent lr {cfg.agent.lr}, \
LoRA r = {cfg.model.lora_r}) |
| held-out score at this epoch | {score_text} |

```python
from transformers import AutoModelForCausalLM, AutoTokenizer
from peft import PeftModel
{load}
tokenizer = AutoTokenizer.from_pretrained("OUT")
```

The prompt format is the domain's (`genenv_lab.domains`); `genenv-lab generate --run RUN "Task: ..."` poses a task
as training did.
"""


def export_agent(run_dir: str | Path, out: str | Path, *, epoch: int | None = None, merge: bool = False) -> Path:
    """Write the run's agent (after ``epoch``, default the last) to ``out`` (a new or empty folder); see the
    module docstring."""
    run_dir, out = Path(run_dir), Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out} exists and is not an empty folder; choose a new one")
    cfg, epoch = _run_epoch(run_dir, epoch)
    if epoch == 0:  # before any model loads
        raise ValueError("epoch 0 is the untrained agent: there is no adapter to export")
    _, backend = _agent_backend(cfg, run_dir, epoch)
    source = str(backend.model.get_base_model().config._name_or_path)
    local = Path(source).is_dir()
    origin = HUB_IDS.get(cfg.model.name_or_path, cfg.model.name_or_path) if local else source
    # written beside and renamed into place: a killed export leaves no half folder under --out
    work = out.with_name(f".{out.name}.partial")
    if work.exists():
        shutil.rmtree(work)  # an export killed before (only ever this function's own scratch folder)
    work.mkdir(parents=True)
    try:
        backend.tokenizer.save_pretrained(work)
        if merge:
            backend.model.merge_and_unload(adapter_names=["agent"]).save_pretrained(work)
            base_path = None
        else:
            for item in (adapter_dir(run_dir, epoch) / "agent").iterdir():
                shutil.copy2(item, work / item.name)
            if local:  # built or unpacked on this machine: it travels with the adapter
                shutil.copytree(source, work / "base", ignore=shutil.ignore_patterns("genenv_*.json", "*.lock"))
                backend.tokenizer.save_pretrained(work / "base")
            config_path = work / "adapter_config.json"
            adapter_config = json.loads(config_path.read_text())
            adapter_config["base_model_name_or_path"] = base_reference(cfg, source, out)
            config_path.write_text(json.dumps(adapter_config, indent=2) + "\n")
            base_path = "OUT/base" if local else source
        (work / "README.md").write_text(model_card(cfg, read_epochs(run_dir), epoch, origin, base_path))
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


def base_reference(cfg, source: str, out: Path) -> str:
    """What the exported adapter names as its base (``base_model_name_or_path``), so that
    ``AutoPeftModelForCausalLM.from_pretrained(OUT)`` loads it from any working directory: the hub id where the base
    has one (a hub base, or ``smollm2-135m`` unpacked from its package: a hub copy of the folder then loads by the
    standard idiom), else the absolute path of ``OUT/base`` (a model built here, ``tiny``: after moving the folder,
    load ``OUT/base`` explicitly, as the model card says)."""
    if not Path(source).is_dir():
        return source
    return HUB_IDS.get(cfg.model.name_or_path) or str((out / "base").resolve())


_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` when it is a hub model id ``OWNER/NAME``; else a ``ValueError`` saying what to pass (checked
    before any model loads)."""
    if not _REPO_ID.match(repo_id) or repo_id.endswith((".", "-")) or ".." in repo_id:
        raise ValueError(f"--push-to-hub {repo_id!r}: expected a hub model id OWNER/NAME (letters, digits, '-', '_', "
                         "'.'), e.g. you/genenv-count-agent")
    return repo_id


HUB_ANSWER_S = 60.0
"""How long the hub may take to answer ``create_repo``, and how long any request of the upload may stall (no byte
sent or received) before it fails (a silent endpoint hung ``--push-to-hub`` past 180 s)."""
HUB_MIN_RATE = 32 * 1024
"""The slowest upload a push waits for, in bytes per second: the upload as a whole may take ``HUB_ANSWER_S`` plus
the folder's size at this rate (a 100 MB adapter: 53 min), so a hub that trickles a byte a second still ends."""


@contextmanager
def _stall_limit(stall_s: float):
    """huggingface_hub's shared HTTP session (``get_session``, whose timeout is ``None``: wait for ever) with
    ``stall_s`` as its connect/read/write/pool timeout for the duration, then as it was."""
    from huggingface_hub import get_session

    session = get_session()
    before = session.timeout
    session.timeout = type(before)(stall_s)  # the session's own Timeout class (httpx's, whichever build)
    try:
        yield
    finally:
        session.timeout = before


def _answered(call, timeout_s: float, what: str):
    """``call()`` in a daemon thread, its result or its exception, or a TimeoutError after ``timeout_s``."""
    import threading

    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name=f"hub-{what}")
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"the hub did not answer {what} within {timeout_s:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def push_to_hub(folder: str | Path, repo_id: str, *, private: bool = False, api: Any = None,
                answer_s: float = HUB_ANSWER_S) -> str:
    """Publish an exported folder as the hub model ``repo_id`` (created if absent); its URL. ``api``: an
    ``huggingface_hub.HfApi`` (default: one with the token of ``hf auth login`` or ``$HF_TOKEN``). Any hub
    failure (no network, no token, no rights, an answer or an upload stalled ``answer_s``) is a ``RuntimeError`` of
    one line; the folder stays as it is."""
    folder = Path(folder)
    check_repo_id(repo_id)
    if not (folder / "README.md").is_file():
        raise ValueError(f"{folder} is not an exported agent (no README.md model card): run genenv-lab export first")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    try:
        url = _answered(lambda: api.create_repo(repo_id, private=private, exist_ok=True), answer_s, "create_repo")
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        with _stall_limit(answer_s):
            _answered(lambda: api.upload_folder(repo_id=repo_id, folder_path=str(folder),
                                                commit_message="genenv_lab: export the agent"),
                      answer_s + size / HUB_MIN_RATE, f"the upload at {HUB_MIN_RATE // 1024} kB/s or faster")
    except Exception as exc:  # noqa: BLE001 - requests/hub errors of every kind: one line, the export is kept
        raise RuntimeError(f"could not push {folder} to {repo_id}: {type(exc).__name__}: {str(exc)[:200]} "
                           f"(the exported folder is kept; retry with hf upload {repo_id} "
                           f"{folder})") from None
    return str(url)
