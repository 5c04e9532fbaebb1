"""The ``times`` world: domain parse/score/decontamination, the world's generator, the world model builder."""

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.domains import LineageStats, get_domain
from genenv_lab.domains.times import HIGHEST, LOWEST, TimesWorld, heldout_pairs, level

D = get_domain("times")


def test_parse_computes_the_product_and_features():
    spec = D.parse("Task: 3 * 7").spec
    assert spec.answer == "21" and spec.text == "Task: 3 * 7"
    assert spec.features == {"level": 7, "smaller": 3, "product_digits": 2}
    assert D.parse("  task: 4x10 ").spec.answer == "40"


@pytest.mark.parametrize("text, reason", [
    ("7 * 8", "missing 'Task:' line"),
    ("Task: 7 + 8", "not of the form 'a * b'"),
    ("Task: 7 * 8 * 2", "not of the form 'a * b'"),
    ("Task: 16 * 2", "operand outside the tables 2-15"),
    ("Task: 1 * 9", "operand outside the tables 2-15"),
])
def test_rejections_name_their_reason(text, reason):
    assert D.parse(text).reason == reason


def test_heldout_items_are_rejected_in_either_order_but_load_for_evaluation():
    held = D.heldout_tasks()
    assert len(held) == 30
    for item in held:
        a, b = (int(x) for x in item.spec.text.split(":")[1].split("*"))
        assert D.parse(f"Task: {a} * {b}").reason == "held-out item (never trained on)"
        assert D.parse(f"Task: {b} * {a}").reason == "held-out item (never trained on)"
    seeds = {tuple(sorted(int(x) for x in s.spec.text.split(":")[1].split("*"))) for s in D.seed_tasks()}
    assert not seeds & heldout_pairs()


# ------------------------------------------------------------------------------------------------ times99
T99 = get_domain("times99")


@pytest.mark.parametrize("text, reason", [
    ("Task: 12 * 11", "operand outside the tables 2-9 times 2-99"),  # two two-digit numbers
    ("Task: 100 * 2", "operand outside the tables 2-9 times 2-99"),
    ("Task: 1 * 50", "operand outside the tables 2-9 times 2-99"),
    ("Task: 7 + 8", "not of the form 'a * b'"),
])
def test_times99_rejections_name_their_reason(text, reason):
    assert T99.parse(text).reason == reason


def test_times99_parses_a_one_digit_number_times_one_up_to_99_and_scores_the_product():
    spec = T99.parse("Task: 8 * 97").spec
    assert spec.answer == "776" and spec.features == {"level": 97, "smaller": 8, "product_digits": 3}
    assert T99.parse("Task: 97 * 8").spec.features["level"] == 97  # either order
    assert T99.score(spec, " 776") == 1.0 and T99.score(spec, " 766") == 0.0
    assert T99.agent_messages(spec)[-1] == {"role": "assistant", "content": "8 * 97 ="}
    assert get_domain("times").parse("Task: 8 * 97").reason == "operand outside the tables 2-15"  # times unchanged


def test_times99_seeds_and_heldout_set_span_the_range_and_heldout_items_are_never_trained_on():
    seeds = T99.seed_tasks()
    levels = [s.spec.features["level"] for s in seeds]
    assert min(levels) <= 5 and max(levels) >= 40  # easy to hard for SmolLM2: not all of its tasks are easy
    held = T99.heldout_tasks()
    assert sorted(t.spec.features["level"] for t in held) == list(range(3, 100, 3))
    for item in held:
        a, b = item.spec.features["smaller"], item.spec.features["level"]
        assert T99.parse(f"Task: {a} * {b}").reason == T99.parse(f"Task: {b} * {a}").reason == \
            "held-out item (never trained on)"
    assert not {(s.spec.features["smaller"], s.spec.features["level"]) for s in seeds} & heldout_pairs("times99")


def test_score_is_exact_on_the_first_number():
    spec = D.parse("Task: 3 * 7").spec
    assert D.score(spec, " 21") == 1.0
    assert D.score(spec, " 210") == 0.0  # the world's place-value slip is wrong, not half right
    assert D.score(spec, " 5 6") == 0.0 and D.score(spec, "") == 0.0


@given(st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_world_agent_replies_are_the_product_or_the_slip(seed):
    w = TimesWorld()
    messages, reply = w.agent_example(random.Random(seed))
    spec = D._parse("Task: " + messages[-1]["content"].rstrip(" ="), False).spec
    a, b = (int(x) for x in spec.text.split(":")[1].split("*"))
    assert int(reply) in (a * b, w.slip(a, b))


@given(st.integers(0, 10**6))
@settings(max_examples=60, deadline=None)
def test_world_env_replies_are_valid_training_tasks_in_the_domains_prompt(seed):
    w = TimesWorld()
    messages, reply = w.env_example(random.Random(seed))
    assert messages[-1] == {"role": "assistant", "content": "Task:"}
    assert messages[0]["content"] == D.system_prompt_env
    assert D.parse("Task:" + reply).valid  # never a held-out item, always inside the tables


def test_world_mastery_falls_with_level_and_is_calibrated_in_the_corpus():
    w = TimesWorld()
    assert all(w.mastery(lv) > w.mastery(lv + 1) for lv in range(LOWEST, HIGHEST))
    rng = random.Random(0)
    right = {lv: [0, 0] for lv in range(LOWEST, HIGHEST + 1)}
    for _ in range(6000):
        messages, reply = w.agent_example(rng)
        a, b = (int(x) for x in messages[-1]["content"].rstrip(" =").split("*"))
        right[level(a, b)][0] += int(reply) == a * b
        right[level(a, b)][1] += 1
    for lv in (4, 8, 12):
        assert abs(right[lv][0] / right[lv][1] - w.mastery(lv)) < 0.08


def test_world_env_levels_follow_the_hint_from_the_newest_recent_task_loosely():
    w = TimesWorld()
    rng = random.Random(1)
    shifts = {"harder": [], "easier": [], "similar": []}
    for _ in range(3000):
        messages, reply = w.env_example(rng)
        user = messages[1]["content"]
        kind = next(k for k in shifts if k in user)
        recent = re.findall(r"level (\d+): [0-9.]+", user)
        anchor = int(recent[-1]) if recent else D.parse(user.split("\n")[1]).spec.features["level"]
        a, b = (int(x) for x in reply.split("*"))
        assert a >= b  # the level comes first
        shifts[kind].append(level(a, b) - anchor)
    mean = {k: sum(v) / len(v) for k, v in shifts.items()}
    # loosely: clamped at the tables and a quarter of the time at a random level
    assert mean["harder"] > 0.3 and mean["easier"] < -0.3 and abs(mean["similar"]) < 0.5


def test_env_context_states_the_runs_band_and_recent_tasks():
    seed = D.seed_tasks()[5].spec
    stats = LineageStats(successes=9, rollouts=16,
                         recent=(("level 7", 0.5), ("level 9", 0.62)))
    user = D.env_messages(seed, stats, alpha=0.5, k_min=0.125)[1]["content"]
    assert "target band 0.38-0.62" in user and "Recent tasks: level 7: 0.50; level 9: 0.62." in user
    assert "similar" in user
    # the same rate is above a narrower band: the instruction follows the run's k_min
    assert "harder" in D.env_messages(seed, stats, alpha=0.5, k_min=0.05)[1]["content"]


def test_world_model_builds_loads_and_writes_tasks(tmp_path):
    from genenv_lab.config import preset
    from genenv_lab.backends.factory import make_backend

    cfg = preset("cpu-times").replace(world={"steps": 3, "env_steps": 2, "hidden_size": 32, "layers": 1})
    backend = make_backend(cfg, D)
    outs = backend.generate("env", [D.env_messages(D.seed_tasks()[0].spec, LineageStats(), 0.5, 0.125)], n=2,
                            max_new_tokens=8, temperature=1.0)
    assert len(outs) == 1 and len(outs[0]) == 2
    # the loop's format constraint: only the task's alphabet is sampled, and the text ends before a stop string
    prompts = [D.env_messages(s.spec, LineageStats(), 0.5, 0.125) for s in D.seed_tasks()[:4]]
    constrained = backend.generate("env", prompts, n=4, max_new_tokens=8, temperature=1.5, stop=D.env_stop,
                                   alphabet=D.env_alphabet)
    texts = [t for row in constrained for t in row]
    assert len(texts) == 16 and all(set(t) <= set(D.env_alphabet) for t in texts)
    assert not any(s in t for s in D.env_stop for t in texts)
    from genenv_lab.models.loading import cache_dir
    from genenv_lab.models.world import world_spec

    marker = cache_dir() / world_spec(cfg).cache_name() / "genenv_world.json"
    assert marker.is_file() and '"domain": "times"' in marker.read_text()


def test_world_model_needs_a_domain_with_a_world():
    from genenv_lab.coevolution.resolve import for_domain
    from genenv_lab.config import ConfigError, preset

    with pytest.raises(ConfigError, match="tiny-world"):
        for_domain(preset("cpu-times"), "arith")


@settings(max_examples=200, deadline=None)
@given(successes=st.integers(0, 16), rollouts=st.integers(1, 16), alpha=st.sampled_from([0.3, 0.4, 0.5, 0.6, 0.7]),
       k_min=st.sampled_from([0.05, 0.1, 0.125, 0.15, 0.25]))
def test_the_simulators_hint_and_the_worlds_teacher_use_the_rwr_filters_band(successes, rollouts, alpha, k_min):
    """One band: the instruction says "similar" exactly when ``curriculum.in_band`` (the RWR filter's test) passes
    the lineage's rate, and the world's teacher moves by a similar shift exactly then (at α = 0.7 a rate of 0.8 is
    in band, though 0.8 > 0.7 + 0.1 in floating point)."""
    from genenv_lab.core.curriculum import in_band

    successes = min(successes, rollouts)
    rate = successes / rollouts
    stats = LineageStats(successes=successes, rollouts=rollouts)
    user = D.env_messages(D.seed_tasks()[0].spec, stats, alpha, k_min)[1]["content"]
    similar, harder, easier = D.difficulty_hints
    expected = similar if in_band(rate, alpha, k_min) else harder if rate > alpha else easier
    assert user.endswith(expected)
    world = TimesWorld(random_level_share=0.0, similar_shifts=(0,), harder_shifts=(3,))
    moved = world.target_level(random.Random(0), 9, rate, alpha, k_min) - 9
    assert (moved == 0) == in_band(rate, alpha, k_min)


def test_a_rate_on_the_band_edge_in_floating_point_is_in_band_for_the_hint_too():
    stats = LineageStats(successes=4, rollouts=5)
    assert D.difficulty_hints[0] in D.env_messages(D.seed_tasks()[0].spec, stats, 0.7, 0.1)[1]["content"]
