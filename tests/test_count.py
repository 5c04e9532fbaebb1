"""The ``count`` world: domain parse/score/decontamination, the world's generator (steps learnt in order), the world
model builder."""

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.coevolution.resolve import resolve
from genenv_lab.domains import get_domain
from genenv_lab.domains.count import HIGHEST, LOWEST, MAX_START, CountWorld, all_tasks, heldout_pairs, sequence

D = get_domain("count")


def test_parse_computes_the_sequence_and_features():
    spec = D.parse("Task: 3 to 7").spec
    assert spec.answer == "4 5 6 7" and spec.text == "Task: 3 to 7" and spec.question == "Count from 3 to 7."
    assert spec.features == {"level": 7, "start": 3, "steps": 4}
    assert D.parse("  task: 1 TO 13 ").spec.features["level"] == 13


@pytest.mark.parametrize("text, reason", [
    ("3 to 7", "missing 'Task:' line"),
    ("Task: 3 - 7", "not of the form 'a to b'"),
    ("Task: 3 to 7 to 9", "not of the form 'a to b'"),
    ("Task: 13 to 19", f"start outside 1-{MAX_START}"),
    ("Task: 0 to 9", f"start outside 1-{MAX_START}"),
    ("Task: 1 to 25", f"end outside {LOWEST}-{HIGHEST}"),
    ("Task: 4 to 5", "fewer than 2 steps"),
    ("Task: 4 to 2", f"end outside {LOWEST}-{HIGHEST}"),
])
def test_rejections_name_their_reason(text, reason):
    assert D.parse(text).reason == reason


def test_heldout_items_span_every_level_are_rejected_as_generations_and_load_for_evaluation():
    held = D.heldout_tasks()
    assert sorted(t.spec.features["level"] for t in held) == list(range(LOWEST + 1, HIGHEST + 1))
    for item in held:
        assert D.parse(item.spec.text).reason == "held-out item (never trained on)"
    seeds = {(s.spec.features["start"], s.spec.features["level"]) for s in D.seed_tasks()}
    assert not seeds & heldout_pairs()
    # every level keeps a task to train on
    assert {b for a, b in all_tasks() if (a, b) not in heldout_pairs()} == set(range(LOWEST, HIGHEST + 1))


def test_score_is_exact_on_the_whole_sequence():
    spec = D.parse("Task: 2 to 6").spec
    assert D.score(spec, " 3 4 5 6") == 1.0 and D.score(spec, " 3 4 5 6.\nmore") == 1.0
    assert D.score(spec, " 3 4 6") == 0.0  # the world's skip is wrong, not partly right
    assert D.score(spec, " 3 4 5 6 7") == 0.0 and D.score(spec, " 3 4 5 six") == 0.0 and D.score(spec, "") == 0.0
    assert D.score(spec, D.reference_solution(spec)) == 1.0


@given(st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_world_agent_replies_count_up_with_skips_only_and_end_on_the_end(seed):
    w = CountWorld()
    messages, reply = w.agent_example(random.Random(seed))
    a, b = (int(x) for x in re.match(r"Count from (\d+) to (\d+)\.", messages[1]["content"]).groups())
    assert messages[-1]["content"] == str(a)
    numbers = [a] + [int(x) for x in reply.split()]
    assert numbers[-1] == b
    assert all(y - x in (1, 2) for x, y in zip(numbers, numbers[1:]))
    assert (numbers[1:] == sequence(a, b)) == (D.score(D._parse(f"Task: {a} to {b}", False).spec, reply) == 1.0)


@given(st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_world_env_replies_are_valid_training_tasks_in_the_domains_prompt(seed):
    w = CountWorld()
    messages, reply = w.env_example(random.Random(seed))
    assert messages[-1] == {"role": "assistant", "content": "Task:"}
    assert messages[0]["content"] == D.system_prompt_env
    assert D.parse("Task:" + reply).valid  # never a held-out item, always inside the world


def test_a_tasks_success_is_the_product_of_its_steps_so_skills_come_in_order():
    w = CountWorld()
    assert all(w.mastery(n) > w.mastery(n + 1) for n in range(2, HIGHEST))
    assert w.mastery(HIGHEST) >= w.floor
    # low levels are solved, high ones out of reach: the frontier has to be walked
    assert w.success_probability(1, 6) > 0.9 and w.success_probability(1, 16) < 1e-3
    rng = random.Random(0)
    for end in (7, 9, 11):
        runs = [w.count(rng, 1, end) == sequence(1, end) for _ in range(4000)]
        assert abs(sum(runs) / len(runs) - w.success_probability(1, end)) < 0.03


def test_world_env_levels_follow_the_hint_from_the_newest_recent_task_loosely():
    w = CountWorld()
    rng = random.Random(1)
    shifts = {"harder": [], "easier": [], "similar": []}
    for _ in range(3000):
        messages, reply = w.env_example(rng)
        user = messages[1]["content"]
        kind = next(k for k in shifts if k in user)
        recent = re.findall(r"up to (\d+): [0-9.]+", user)
        anchor = int(recent[-1]) if recent else D.parse(user.split("\n")[1]).spec.features["level"]
        shifts[kind].append(D.parse("Task:" + reply).spec.features["level"] - anchor)
    mean = {k: sum(v) / len(v) for k, v in shifts.items()}
    assert mean["harder"] > 0.3 and mean["easier"] < -0.3 and abs(mean["similar"]) < 0.5


def test_world_model_builds_for_the_count_world(tmp_path):
    from genenv_lab.config import preset
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.models.loading import cache_dir
    from genenv_lab.models.world import world_spec

    cfg = preset("cpu-demo").replace(world={"steps": 3, "env_steps": 2, "hidden_size": 32, "layers": 1})
    assert cfg.loop.domain == "count"
    backend = make_backend(cfg, D)
    prompts = [D.agent_messages(s.spec) for s in D.seed_tasks()[:2]]
    outs = backend.generate("agent", prompts, n=2, max_new_tokens=8, temperature=1.0)
    assert len(outs) == 2 and all(len(o) == 2 for o in outs)
    marker = cache_dir() / world_spec(cfg).cache_name() / "genenv_world.json"
    assert marker.is_file() and '"domain": "count"' in marker.read_text()


@given(st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_task_anchored_teacher_varies_the_seed_it_is_shown_keeping_its_start(seed):
    w = CountWorld(anchor="task")
    rng = random.Random(seed)
    messages, reply = w.env_example(rng)
    shown = D.parse(messages[1]["content"].split("\n")[1]).spec.features
    written = D.parse("Task:" + reply).spec.features
    assert D.parse("Task:" + reply).valid
    # the level moves from the seed's by a shift of the hint (or of the "similar" set), never from a recent task's
    assert -3 <= written["level"] - shown["level"] <= 3 or written["level"] in (LOWEST, HIGHEST)
    if (shown["start"], written["level"]) not in heldout_pairs() and written["level"] - shown["start"] >= 2:
        assert written["start"] == shown["start"]


def test_task_anchored_seeds_span_the_levels_evenly_so_the_easy_end_is_learnt():
    rng = random.Random(0)
    uniform, task = CountWorld(), CountWorld(anchor="task")
    easy = {name: sum(w.seed_text(rng)[1] <= 9 for _ in range(4000)) / 4000
            for name, w in (("tasks", uniform), ("levels", task))}
    assert easy["levels"] == pytest.approx(7 / 22, abs=0.03)  # levels 3-9 of 3-24
    assert easy["tasks"] < 0.15  # uniform over counts: the easy end is rare
    for i in range(200):
        text, lvl = task.seed_text(random.Random(i))
        assert D.parse(text).spec.features["level"] == lvl


def test_cpu_dry_preset_reads_the_easy_seeds_by_name_and_its_world_anchors_on_the_task():
    from genenv_lab.config import ConfigError, preset
    from genenv_lab.models.world import world_spec

    cfg = preset("cpu-dry")
    domain = get_domain(cfg.loop.domain, cfg.loop.seeds)
    levels = [s.spec.features["level"] for s in domain.seed_tasks()]
    assert max(levels) <= 8 and len(levels) == 10
    assert not {(s.spec.features["start"], s.spec.features["level"]) for s in domain.seed_tasks()} & heldout_pairs()
    spec = world_spec(cfg)
    assert spec.anchor == "task" and spec.world().anchor == "task"
    # the default world's cache key is what it was before the anchor was a setting; another anchor is another model
    assert world_spec(preset("cpu-demo")).cache_name() != spec.cache_name()
    with pytest.raises(ConfigError, match="WorldConfig.anchor"):
        cfg.replace(world={"anchor": "oldest"})
    with pytest.raises(ConfigError, match="data/ folder"):  # a file's existence is checked at the edge
        resolve(cfg.replace(loop={"seeds": "no_such_seeds.jsonl"}))


def test_cpu_dry_hint_is_cpu_dry_with_a_simulator_pre_trained_longer():
    """Only the world model's simulator rounds differ (so only the model, never the loop), and so does its cache."""
    from genenv_lab.config import preset
    from genenv_lab.models.world import world_spec

    dry, hint = preset("cpu-dry"), preset("cpu-dry-hint")
    assert hint.world.env_steps == 1500 > dry.world.env_steps
    assert hint.replace(preset="cpu-dry", world={"env_steps": dry.world.env_steps}) == dry
    assert world_spec(hint).cache_name() != world_spec(dry).cache_name()


def test_cpu_dry_hint_long_is_cpu_dry_hint_run_longer_with_its_fixed_set_grown_in_proportion():
    """Pre-registration 6: 40 epochs, and the fixed set's variations per seed scaled by 40/16 (rounded up), so the
    fixed set is no smaller relative to the run; the world model (and its cache) is cpu-dry-hint's."""
    import math

    from genenv_lab.config import preset
    from genenv_lab.models.world import world_spec

    hint, long = preset("cpu-dry-hint"), preset("cpu-dry-hint-long")
    assert long.loop.epochs == 40
    assert long.env.static_variations == math.ceil(hint.env.static_variations * 40 / hint.loop.epochs)
    assert long.replace(preset="cpu-dry-hint", loop={"epochs": hint.loop.epochs},
                        env={"static_variations": hint.env.static_variations}) == hint
    assert world_spec(long).cache_name() == world_spec(hint).cache_name()
