"""A tiny model pre-trained once on a domain's *world*: the learnable base of the ``cpu-demo`` preset.

A domain that defines a world (``count``: :class:`genenv_lab.domains.count.CountWorld`; ``times``:
:class:`genenv_lab.domains.times.TimesWorld`) supplies a stream of
(messages, reply) pairs in both roles, the agent's and the simulator's, in exactly the prompts the loop uses. This
module trains a tiny Qwen2-architecture model (and its byte-level BPE tokenizer) on that stream, with the loss on the
reply tokens only, in two phases: ``steps`` batches of the agent role alone (at this size, mixing in the simulator's
long prompts from the start kept the agent from learning its facts: docs/research/curriculum_cpu.md, "Design notes
from the code"), then ``env_steps`` rounds of one simulator batch and one agent
batch at half the learning rate, so the agent role is rehearsed while the simulator role is learnt. It caches it under
``<cache>/world-<domain>-<hash>/``; the hash covers the domain, the seed, the size, the steps and the world's version,
so a changed recipe builds a new model and a rerun reuses the old one; it also covers the teacher's parameters where
the world declares them (:meth:`~genenv_lab.domains.worlds.LevelWorld.recipe`).

The world models of the CPU presets ship with the package (``genenv_lab/data/world_models/<cache name>/``, written by
``python -m tools.ship_world_models``, one thread each, so a rebuild on the same kind of CPU gives the same model):
:func:`shipped_world_model` finds one by its recipe's name, and a recipe with no shipped file is built and cached as
above (minutes to tens of minutes on a laptop's cores).

Written by hand because it is a plain next-token loop on generated data (a few dozen lines); transformers'
``Trainer`` would add a dataset, a collator and a scheduler for no gain at this size.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from genenv_lab.models.tiny import build_tokenizer, chatml, new_model, save_model

WORLDS_VERSION = 8
"""Bump when a world's corpus changes meaning, so cached models are rebuilt. 7: the simulator's instruction and the
teacher's shift use ``curriculum.in_band`` (a rate on a band edge in floating point, 0.4 at α = 0.3 ± 0.1, is now
in band and gets the "similar" hint, as the RWR filter counts it). 8: counts start at 1–12 (``count.MAX_START``)."""
MARKER = "genenv_world.json"


@dataclass(frozen=True)
class WorldModelSpec:
    """What the prepared model is: its domain's world, seed, size and training steps (their defaults are the
    ``world_*`` fields of :class:`~genenv_lab.config.ModelConfig`; :func:`world_spec` builds this from a config)."""

    domain: str
    seed: int
    steps: int
    env_steps: int
    hidden_size: int
    num_layers: int
    batch_size: int = 64
    lr: float = 2e-3
    anchor: str = "newest"
    """Where the world's teacher starts the simulator's next task (:class:`~genenv_lab.domains.worlds.LevelWorld`):
    the newest recent task's level, or always the seed's."""

    def world(self):
        """The world (teacher) this model is pre-trained on."""
        return world_class(self.domain)(anchor=self.anchor)

    def cache_name(self) -> str:
        recipe = self.world().recipe()  # holds the anchor, so the key below leaves it out (older keys stay valid)
        fields = {k: v for k, v in asdict(self).items() if k != "anchor"}
        key = [fields, WORLDS_VERSION] + ([recipe] if recipe else [])
        digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]
        return f"world-{self.domain}-{digest}"


SHIPPED = Path(__file__).resolve().parent.parent / "data" / "world_models"
"""Where the package's prepared world models lie, one folder per recipe, named by :meth:`WorldModelSpec.cache_name`."""


class WorldModelError(RuntimeError):
    """A world model's folder that does not hold its recipe's model, whole: refused in one line."""


FILES = "files"
"""The marker's (``genenv_world.json``) manifest: ``{file name: sha256}`` of every other file of the folder."""


def file_digests(folder: Path) -> dict[str, str]:
    """``{name: sha256}`` of the folder's files, the marker left out."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).iterdir())
            if p.is_file() and p.name != MARKER}


def check_world_model(folder: Path, spec: WorldModelSpec) -> Path:
    """``folder`` when it holds ``spec``'s model whole: its marker names ``spec``'s recipe and this version of the
    worlds, and every file of its manifest is there with its digest (a truncated or altered weight file, a missing
    tokenizer file or another recipe's model are found here, before anything loads them). Else a
    :class:`WorldModelError` naming the folder and how to rebuild it."""
    shipped = Path(folder).parent == SHIPPED
    fix = (f"rebuild it with `python -m tools.ship_world_models --out {folder.parent}` from the repository, or "
           "reinstall genenv_lab" if shipped else "delete the folder and the run builds it again")
    try:
        meta = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError) as exc:
        raise WorldModelError(f"world model {folder}: its {MARKER} cannot be read ({exc}); {fix}") from None
    want = {**asdict(spec), "version": WORLDS_VERSION}
    if not isinstance(meta, dict) or any(meta.get(k) != v for k, v in want.items()):
        raise WorldModelError(f"world model {folder} holds another recipe's model (its {MARKER} does not name "
                              f"{spec.cache_name()}'s recipe); {fix}")
    manifest = meta.get(FILES)
    if not isinstance(manifest, dict) or not manifest:
        raise WorldModelError(f"world model {folder}: its {MARKER} lists no files to check; {fix}")
    for name, digest in manifest.items():
        path = folder / str(name)
        if not path.is_file():
            raise WorldModelError(f"world model {folder}: {name} is missing; {fix}")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise WorldModelError(f"world model {folder}: {name} is damaged (its digest differs from the "
                                  f"manifest's); {fix}")
    return folder


def shipped_world_model(spec: WorldModelSpec) -> Path | None:
    """The shipped model of ``spec``'s recipe, checked whole (:func:`check_world_model`), or None when none ships
    (a complete folder: its marker is written last)."""
    folder = SHIPPED / spec.cache_name()
    return check_world_model(folder, spec) if (folder / MARKER).is_file() else None


def world_spec(cfg) -> WorldModelSpec | None:
    """The world model a :class:`~genenv_lab.config.RunConfig` asks for (``None`` unless it names ``tiny-world``)."""
    if cfg.model.name_or_path != "tiny-world":
        return None
    w = cfg.world
    return WorldModelSpec(domain=cfg.loop.domain, seed=w.seed, steps=w.steps, env_steps=w.env_steps,
                          hidden_size=w.hidden_size, num_layers=w.layers, lr=w.lr, anchor=w.anchor)


def world_class(domain_name: str):
    """The class of the domain's world (``Domain.world``, whose instances offer ``agent_example``/
    ``env_example(rng)``); one registry, the domains'."""
    from genenv_lab.domains import DOMAINS, domain_class

    world = domain_class(domain_name).world
    if world is None:
        with_one = sorted(name for name, cls in DOMAINS.items() if cls.world is not None)
        raise ValueError(f"model 'tiny-world' needs a domain with a world to pre-train on; {domain_name!r} has none "
                         f"(domains with one: {with_one}). Use --domain times, or another model.")
    return world


def _prompt_and_full(messages, reply) -> tuple[str, str]:
    """The chat text up to the reply (a prefilled start included) and the whole conversation."""
    full = chatml(messages, reply)
    return full[: len(full) - len(reply) - len("<|im_end|>\n")], full


def build_world_model(out_dir: str | Path, spec: WorldModelSpec, progress: bool = True) -> Path:
    """Pre-train the world model of ``spec`` into ``out_dir`` (idempotent: a complete build is reused)."""
    from tqdm.auto import tqdm

    out = Path(out_dir)
    if (out / MARKER).is_file():
        return check_world_model(out, spec)
    world = spec.world()
    rng = random.Random(spec.seed)
    torch.manual_seed(spec.seed)
    tokenizer = build_tokenizer([_prompt_and_full(*world.example(rng))[1] for _ in range(2000)])
    model = new_model(tokenizer, hidden_size=spec.hidden_size, num_layers=spec.num_layers)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.0)
    model.train()
    losses: dict[str, list[float]] = {"agent": [], "env": []}

    def step(role: str, n: int) -> None:
        sample = world.env_example if role == "env" else world.agent_example
        ids, mask, labels = _batch(tokenizer, [sample(rng) for _ in range(n)])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses[role].append(loss.item())

    bar = tqdm(total=spec.steps + spec.env_steps, desc=f"preparing the {spec.domain} world model (once, cached)",
               unit="step", disable=not progress)
    for _ in range(spec.steps):
        step("agent", spec.batch_size)
        bar.update(1)
        if len(losses["agent"]) % 50 == 0:
            bar.set_postfix(agent_loss=f"{_recent(losses['agent']):.3f}")
    for group in opt.param_groups:
        group["lr"] = spec.lr / 2
    for _ in range(spec.env_steps):
        step("env", spec.batch_size // 2)
        step("agent", spec.batch_size)
        bar.update(1)
        if len(losses["env"]) % 25 == 0:
            bar.set_postfix(agent_loss=f"{_recent(losses['agent']):.3f}", env_loss=f"{_recent(losses['env']):.3f}")
    bar.close()
    model.eval()
    meta = {**asdict(spec), "version": WORLDS_VERSION, "agent_loss": _recent(losses["agent"]),
            "env_loss": _recent(losses["env"])}
    return save_model(model, tokenizer, out, MARKER, meta, manifest=(FILES, file_digests))


def fit_losses(folder: str | Path, spec: WorldModelSpec, n: int = 32, seed: int = 123) -> dict[str, float]:
    """The loss of the world model in ``folder`` on ``n`` fresh examples of ``spec``'s world per role (``agent``,
    ``env``; the reply's tokens only, as the builder trains). A model that is its recipe's model reads close to its
    marker's ``agent_loss`` and ``env_loss`` on any machine, where its weights are bit-equal only on the kind of CPU
    that built it (training's rounding differs between CPUs, and 650 steps carry it far)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    world, rng = spec.world(), random.Random(seed)
    out = {}
    for role, sample in (("agent", world.agent_example), ("env", world.env_example)):
        ids, mask, labels = _batch(tokenizer, [sample(rng) for _ in range(n)])
        with torch.no_grad():
            out[role] = float(model(input_ids=ids, attention_mask=mask, labels=labels).loss)
    return out


def _recent(values: list[float], n: int = 50) -> float:
    tail = values[-n:]
    return sum(tail) / len(tail) if tail else float("nan")


def _batch(tokenizer, pairs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask and labels (-100 outside the reply) of (messages, reply) pairs."""
    rows = []
    for messages, reply in pairs:
        prompt, full = _prompt_and_full(messages, reply)
        n_prompt = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        rows.append((tokenizer(full, add_special_tokens=False)["input_ids"], n_prompt))
    width = max(len(r) for r, _ in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100)
    for i, (row, n_prompt) in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
        labels[i, n_prompt: len(row)] = torch.tensor(row[n_prompt:])
    return ids, mask, labels
