"""The paragraph that ends a comparison (genenv_lab.compare.verdict): genenv's final held-out score against each
baseline's, the rollouts genenv needed to reach them, and whether the curriculum paid against the fixed set.
Hand-worked tables and a Hypothesis property; no model runs."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv_lab.compare import COLUMNS, final_scores, verdict
from genenv_lab.core.metrics import CUMULATIVE_AGENT_ROLLOUTS


def _table(curves: dict[str, list[list[tuple[float, float]]]], preset: str = "p") -> pd.DataFrame:
    """arm → per seed, per epoch (cumulative agent rollouts, held-out score) → a comparison table."""
    rows = []
    for arm, seeds in curves.items():
        for seed, points in enumerate(seeds):
            for epoch, (rollouts, score) in enumerate(points):
                rows.append({"label": f"{preset}:{arm}", "variant": arm, "seed": seed, "epoch": epoch,
                             "heldout": score, CUMULATIVE_AGENT_ROLLOUTS: rollouts, "tasks_consumed": epoch})
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"heldout": float, CUMULATIVE_AGENT_ROLLOUTS: float})


def test_genenv_ahead_of_static_on_three_seeds_paid_with_numbers():
    genenv = [[(0, 0.2), (100, 0.5), (200, 0.7)], [(0, 0.2), (100, 0.6), (200, 0.8)],
              [(0, 0.2), (100, 0.55), (200, 0.75)]]
    static = [[(0, 0.2), (100, 0.3), (200, 0.5)], [(0, 0.2), (100, 0.35), (200, 0.55)],
              [(0, 0.2), (100, 0.3), (200, 0.6)]]
    online = [[(0, 0.2), (300, 0.8), (600, 0.9)]] * 3  # more than genenv ever scores
    text = verdict(_table({"genenv": genenv, "static": static, "online_filter": online}))
    assert "mean ± std over 3 seeds" in text
    assert "genenv 0.750 ± 0.050 (epoch 2)" in text
    assert "static 0.550 ± 0.050 (epoch 2), genenv +0.200" in text
    assert "online_filter 0.900 ± 0.000 (epoch 2), genenv -0.150" in text
    # genenv's mean reaches static's 0.55 at epoch 1 with 100 rollouts; static spent 200 by epoch 2
    assert "static 2.00 (genenv: 100 by epoch 1; static: 200 by epoch 2)" in text
    assert "online_filter not reached (genenv's mean never scores 0.900)" in text
    assert "the curriculum paid: genenv ends 0.200 above it." in text
    assert "did not pay" not in text and "\n" not in text  # one paragraph


def test_static_ahead_did_not_pay_and_a_tie_is_not_a_win():
    genenv = [[(0, 0.2), (100, 0.6), (200, 0.5)]]
    static = [[(0, 0.2), (100, 0.4), (200, 0.55)]]
    text = verdict(_table({"genenv": genenv, "static": static}))
    assert "one seed, so no spread" in text and "±" not in text
    assert "the curriculum did not pay: genenv ends 0.050 below it" in text
    # genenv's epoch 1 (0.6) already reached static's final 0.55: that is said, with the ratio
    assert "though it reached static's final score with 2.00× fewer agent rollouts" in text
    tie = verdict(_table({"genenv": [[(0, 0.2), (100, 0.5)]], "static": [[(0, 0.2), (100, 0.5)]]}))
    assert "did not pay: genenv ends level with it" in tie


def test_a_win_inside_the_spread_or_on_one_seed_says_so():
    genenv = [[(0, 0.2), (100, 0.4)], [(0, 0.2), (100, 0.8)]]  # 0.6 ± 0.28
    static = [[(0, 0.2), (100, 0.55)], [(0, 0.2), (100, 0.55)]]
    text = verdict(_table({"genenv": genenv, "static": static}))
    assert "paid: genenv ends 0.050 above it, less than the spread over seeds" in text
    one = verdict(_table({"genenv": [[(0, 0.2), (100, 0.6)]], "static": [[(0, 0.2), (100, 0.5)]]}))
    assert "paid: genenv ends 0.100 above it, on one seed" in one


def test_without_static_or_genenv_or_scores_it_says_what_is_missing():
    genenv = [[(0, 0.2), (100, 0.5)]]
    text = verdict(_table({"genenv": genenv, "random_env": [[(0, 0.2), (100, 0.4)]]}))
    assert "No static arm" in text and "paid" not in text and "random_env 0.400" in text
    assert "no verdict" in verdict(_table({"genenv": genenv}))  # genenv alone
    assert "no verdict" in verdict(_table({"static": genenv}))  # no genenv
    assert "no verdict" in verdict(pd.DataFrame(columns=list(COLUMNS)))
    unscored = _table({"genenv": [[(0, float("nan")), (100, float("nan"))]], "static": genenv})
    assert "genenv has no held-out score yet" in verdict(unscored)


def test_one_paragraph_per_preset_each_against_its_own_genenv():
    a = _table({"genenv": [[(0, 0.2), (100, 0.6)]], "static": [[(0, 0.2), (100, 0.5)]]}, preset="a")
    b = _table({"genenv": [[(0, 0.2), (100, 0.4)]], "static": [[(0, 0.2), (100, 0.5)]]}, preset="b")
    first, second = verdict(pd.concat([a, b], ignore_index=True)).split("\n\n")
    assert first.startswith("a:") and "curriculum paid" in first
    assert second.startswith("b:") and "did not pay" in second


scores = st.sampled_from([i / 20 for i in range(21)])  # a held-out set of 20 items: ties happen


@settings(max_examples=150, deadline=None)
@given(n_seeds=st.integers(1, 4), n_epochs=st.integers(1, 4), data=st.data())
def test_verdict_says_did_not_pay_exactly_when_genenv_is_not_above_static(n_seeds, n_epochs, data):
    curves = {}
    for arm in ("genenv", "static", "online_filter"):
        step = data.draw(st.integers(1, 500), label=f"{arm} rollouts per epoch")
        curves[arm] = [[(step * e, data.draw(scores)) for e in range(n_epochs + 1)] for _ in range(n_seeds)]
    table = _table(curves)
    text = verdict(table)
    final = table[table["epoch"] == n_epochs].groupby("label")["heldout"].mean()
    g, s = final["p:genenv"], final["p:static"]
    assert ("did not pay" in text) == (g <= s + 1e-9)
    assert ("the curriculum paid" in text) == (g > s + 1e-9)
    assert f"genenv {g:.3f}" in text and f"static {s:.3f}" in text  # the numbers it judged on, not a claim
    for label, score in final_scores(table).items():
        assert score.epoch == n_epochs and score.seeds == n_seeds and math.isclose(score.mean, final[label])
    assert text.count("\n") == 0


def test_a_comparison_still_running_names_the_epochs_it_compares():
    genenv = [[(0, 0.2), (100, 0.6)]]
    static = [[(0, 0.2), (100, 0.3), (200, 0.5)]]
    text = verdict(_table({"genenv": genenv, "static": static}))
    assert "Comparing genenv's epoch 1 with static's epoch 2" in text and "the curriculum paid" in text
