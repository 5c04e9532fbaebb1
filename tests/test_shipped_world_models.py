"""The CPU presets' world models ship with the package: every recipe has its folder, a run resolves to it without
building anything, each is its recipe's model (its tokenizer, and its fit to its world), and one rebuilt from its
recipe fits as well (opt-in: GENENV_LAB_REBUILD_WORLD=1)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict

import pytest

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


FIT = (1.5, 0.05)
"""A shipped model fits its world when its loss on fresh examples is at most 1.5 × its marker's + 0.05, per role."""


def _same_tokenizer(folder, spec) -> None:
    """The tokenizer the recipe trains (on the first 2000 examples of its seed, as the builder does) is the folder's:
    the same ids on a fixed prompt set of the world's own examples, both roles."""
    import random

    from transformers import AutoTokenizer

    from genenv_lab.models.tiny import build_tokenizer
    from genenv_lab.models.world import _prompt_and_full

    world = spec.world()
    rng = random.Random(spec.seed)
    ours = build_tokenizer([_prompt_and_full(*world.example(rng))[1] for _ in range(2000)])
    theirs = AutoTokenizer.from_pretrained(folder)
    rng = random.Random(123)
    prompts = [_prompt_and_full(*(world.env_example if i % 2 else world.agent_example)(rng))[1] for i in range(24)]
    assert [ours(p)["input_ids"] for p in prompts] == [theirs(p)["input_ids"] for p in prompts]


def test_each_shipped_model_is_its_recipes_model_and_fits_its_world(tmp_path):
    """Every shipped model, without rebuilding it: the recipe's tokenizer is the folder's, and on fresh examples of
    its world the model's loss is close to what its marker says it reached (both roles), far below the same recipe's
    untrained model's. (Its weights are bit-equal to a rebuild only on the kind of CPU that built it:
    ``test_a_shipped_model_rebuilt_from_its_recipe_fits_as_well``.)"""
    from genenv_lab.models.tiny import new_model, save_model
    from genenv_lab.models.world import fit_losses

    for name, (_, spec) in recipes().items():
        folder = shipped_world_model(spec)
        _same_tokenizer(folder, spec)
        meta = json.loads((folder / MARKER).read_text())
        losses = fit_losses(folder, spec)
        for role in ("agent", "env"):
            assert losses[role] <= FIT[0] * meta[f"{role}_loss"] + FIT[1], (name, role, losses, meta)
    from transformers import AutoTokenizer

    untrained = save_model(new_model(AutoTokenizer.from_pretrained(folder), hidden_size=spec.hidden_size,
                                     num_layers=spec.num_layers), AutoTokenizer.from_pretrained(folder),
                           tmp_path / "untrained", MARKER, {})
    assert min(fit_losses(untrained, spec).values()) > 3 * max(losses.values())


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("GENENV_LAB_REBUILD_WORLD") != "1",
                    reason="rebuilds cpu-times' world model (5-8 minutes, one thread): GENENV_LAB_REBUILD_WORLD=1")
def test_a_shipped_model_rebuilt_from_its_recipe_fits_as_well(tmp_path):
    """cpu-times' recipe (the cheapest: 450 + 200 steps), rebuilt as the tool builds it: the same recipe name, the
    same tokenizer, and losses on fresh examples of its world within 25 % + 0.02 of the shipped model's, both roles.
    Opt-in: it is the check to run after changing a world or the builder (a changed recipe must change its
    ``cache_name``), and bit-equal weights hold only on the kind of CPU that built the shipped model."""
    from genenv_lab.models.world import fit_losses

    spec = world_spec(preset("cpu-times"))
    shipped = shipped_world_model(spec)
    assert shipped is not None
    rebuilt = build_one(spec, tmp_path)
    assert rebuilt.name == shipped.name == spec.cache_name()
    _same_tokenizer(rebuilt, spec)
    ours, theirs = fit_losses(rebuilt, spec), fit_losses(shipped, spec)
    for role in ("agent", "env"):
        assert abs(ours[role] - theirs[role]) <= 0.25 * theirs[role] + 0.02, (role, ours, theirs)


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


def test_the_carry_world_models_agent_is_read_against_its_teacher():
    """tools/world_fidelity.py: per kind of sum, the shipped carry model's sampled success rate beside the teacher's;
    short sums without a carry it solves (what the research log reads the model's four-digit fumbles against)."""
    from tools.world_fidelity import fidelity

    spec = world_spec(preset("cpu-carry"))
    wrong: dict[str, int] = {}
    rows = fidelity(str(shipped_world_model(spec)), sums=12, rollouts=4, seed=3, wrong=wrong)
    assert rows and all(0.0 <= model <= 1.0 and 0.0 < teacher <= 1.0 and n % 4 == 0 for *_, model, teacher, n in rows)
    easy = [model for digits, columns, model, _, _ in rows if digits == 2 and not columns]
    assert easy and min(easy) >= 0.75
    failed = sum(round((1 - model) * n) for *_, model, _, n in rows)
    assert set(wrong) <= {"ones", "tens", "hundreds", "thousands", "missing"}
    assert (sum(wrong.values()) >= failed) if failed else not wrong  # a failed rollout has a wrong column


def test_the_facts_world_models_agent_is_read_against_its_teacher():
    """tools/world_fidelity.py on the facts world: per sum, how often the shipped model writes a fact right beside the
    teacher's mastery; facts under ten it writes right, and a wrong sum of a fact over ten is mostly its own slip."""
    from tools.world_fidelity import facts_fidelity

    spec = world_spec(preset("cpu-facts"))
    rows = facts_fidelity(str(shipped_world_model(spec)), tasks=16, rollouts=4, seed=3)
    assert rows and all(0.0 <= model <= 1.0 and 0.0 < teacher <= 1.0 and 0.0 <= slips <= 1.0
                        for _, model, teacher, slips, _ in rows)
    by_sum = {total: (model, slips, n) for total, model, _, slips, n in rows}
    assert by_sum[0][0] >= 0.9 and by_sum[0][2] > 50
    wrong_over_ten = [(1 - model) * n for total, (model, _, n) in by_sum.items() if total]
    slips_over_ten = [slips * (1 - model) * n for total, (model, slips, n) in by_sum.items() if total]
    assert sum(slips_over_ten) >= 0.5 * sum(wrong_over_ten)
