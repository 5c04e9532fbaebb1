"""The CPU presets' world models ship with the package: every recipe has its folder, a run resolves to it without
building anything, and one shipped model rebuilt from its recipe is the same model."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import pytest
import torch

from genenv_lab.config import CPU_PRESETS, preset
from genenv_lab.models.world import MARKER, SHIPPED, WORLDS_VERSION, shipped_world_model, world_spec
from tools.ship_world_models import build_one, recipes


def test_every_cpu_preset_on_a_world_model_has_its_recipe_shipped():
    found = recipes()
    users = sorted(name for names, _ in found.values() for name in names)
    assert users == sorted(name for name in CPU_PRESETS if preset(name).model.name_or_path == "tiny-world")
    for name, (_, spec) in found.items():
        folder = shipped_world_model(spec)
        assert folder is not None and folder.name == name, f"{name} does not ship: python -m tools.ship_world_models"
        meta = json.loads((folder / MARKER).read_text())
        assert {k: meta[k] for k in asdict(spec)} == asdict(spec) and meta["version"] == WORLDS_VERSION
        assert (folder / "model.safetensors").stat().st_size < 4 * 2**20  # tiny: hidden 128, 3 layers


def test_a_run_resolves_a_shipped_recipe_without_building(tmp_path, monkeypatch):
    """On an empty model cache the loader hands over the package's folder and writes nothing to the cache; a recipe
    that does not ship (another seed) is built there as before."""
    from genenv_lab.models import world as world_module
    from genenv_lab.models.loading import resolve_model_dir

    monkeypatch.setenv("GENENV_LAB_CACHE", str(tmp_path / "cache"))
    built = []
    monkeypatch.setattr(world_module, "build_world_model", lambda out, spec, progress=True: built.append(out) or out)
    spec = world_spec(preset("cpu-dry-hint-long"))
    t0 = time.monotonic()
    path = resolve_model_dir("tiny-world", world=spec)
    assert time.monotonic() - t0 < 5 and built == []
    cache = tmp_path / "cache"
    assert path == str(SHIPPED / spec.cache_name()) and not (cache.exists() and any(cache.iterdir()))
    other = world_spec(preset("cpu-dry-hint-long").replace(world={"seed": 1}))
    assert shipped_world_model(other) is None
    resolve_model_dir("tiny-world", world=other)
    assert built == [tmp_path / "cache" / other.cache_name()]


def _logits(folder, prompts):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        return [model(**tokenizer(p, return_tensors="pt")).logits[0] for p in prompts], tokenizer


@pytest.mark.slow
def test_a_shipped_model_rebuilt_from_its_recipe_is_the_same_model(tmp_path):
    """cpu-times' recipe (the cheapest: 450 + 200 steps, about two minutes on one thread), rebuilt as the tool
    builds it: the same recipe name, the same tokenizer, and logits equal within float tolerance on a fixed prompt set
    of the world's own examples, both roles."""
    import random

    from genenv_lab.models.world import _prompt_and_full

    spec = world_spec(preset("cpu-times"))
    shipped = shipped_world_model(spec)
    assert shipped is not None
    rebuilt = build_one(spec, tmp_path)
    assert rebuilt.name == shipped.name == spec.cache_name()
    rng, world = random.Random(123), spec.world()
    prompts = [_prompt_and_full(*(world.env_example if i % 2 else world.agent_example)(rng))[0] for i in range(12)]
    (ours, tok_a), (theirs, tok_b) = _logits(rebuilt, prompts), _logits(shipped, prompts)
    assert [tok_a(p)["input_ids"] for p in prompts] == [tok_b(p)["input_ids"] for p in prompts]
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-3)


def test_a_damaged_or_foreign_world_model_is_refused_in_one_line(tmp_path):
    """Round 6, W1–W4: the marker's manifest (a digest of each file) and recipe are checked at load: each file of a
    copy altered, truncated or removed, and another recipe's model in the folder, are refused naming the folder and
    how to rebuild it; the intact copy passes."""
    import shutil

    from genenv_lab.models.world import FILES, WorldModelError, check_world_model

    (_, spec), (_, other) = list(recipes().values())[:2]
    source = shipped_world_model(spec)
    manifest = json.loads((source / MARKER).read_text())[FILES]
    assert "model.safetensors" in manifest and "tokenizer_config.json" in manifest
    for name in manifest:
        for how in ("flip", "truncate", "remove"):
            copy = tmp_path / f"{name}-{how}"
            shutil.copytree(source, copy)
            assert check_world_model(copy, spec) == copy
            path = copy / name
            data = path.read_bytes()
            if how == "flip":
                path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
            elif how == "truncate":
                path.write_bytes(data[: len(data) // 2])
            else:
                path.unlink()
            with pytest.raises(WorldModelError, match=f"world model {copy}: {name} is (damaged|missing).*; delete"):
                check_world_model(copy, spec)
    foreign = tmp_path / "foreign"
    shutil.copytree(shipped_world_model(other), foreign)
    with pytest.raises(WorldModelError, match="holds another recipe's model"):
        check_world_model(foreign, spec)
