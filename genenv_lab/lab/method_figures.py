"""Plotly figures and tables of the curriculum math, for the notebooks (run-directory views live in ``lab.views``).

All functions are pure: numbers in, a figure or a DataFrame out.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from genenv_lab.core import curriculum as cur
from genenv_lab.style import ALPHA_COLOUR, BAND_FILL


def _grid(n: int = 201) -> list[float]:
    return [i / (n - 1) for i in range(n)]


def reward_shapes_figure(alpha: float = 0.5, beta: float = 2.0, k_min: float = 0.1,
                         betas: Sequence[float] = (2.0, 8.0, 32.0)) -> go.Figure:
    """R_env(p̂) for each shape (gaussian at several β), with α and the ±k_min band shaded."""
    p = _grid()
    fig = go.Figure()
    for b in betas:
        fig.add_scatter(x=p, y=[cur.env_reward(x, alpha, b, "gaussian") for x in p], name=f"gaussian β={b:g}",
                        line={"width": 3 if b == beta else 1.5})
    for shape in ("learnability", "min", "azr"):
        fig.add_scatter(x=p, y=[cur.env_reward(x, alpha, beta, shape) for x in p], name=shape, line={"dash": "dot"})
    _band(fig, alpha, k_min)
    fig.update_layout(title="Environment reward shapes R_env(p̂)", xaxis_title="agent success rate p̂",
                      yaxis_title="R_env", template="plotly_white", height=420)
    return fig


def _band(fig: go.Figure, alpha: float, k_min: float) -> None:
    fig.add_vrect(*cur.band_edges(alpha, k_min), fillcolor=BAND_FILL, line_width=0,
                  annotation_text="band", annotation_position="top left")
    fig.add_vline(x=alpha, line_dash="dash", line_color=ALPHA_COLOUR, annotation_text="α")


def band_resolution_frame(gs: Sequence[int] = (4, 5, 6, 8, 10, 16), alpha: float = 0.5,
                          k_min: float = 0.1) -> pd.DataFrame:
    """For each G: the p̂ values the band keeps, how many, and whether the project warns about it."""
    rows = []
    for g in gs:
        kept = cur.band_values(g, alpha, k_min)
        rows.append({"G": g, "p̂ values kept": ", ".join(f"{v:.3g}" for v in kept), "n kept": len(kept),
                     "warning": cur.band_warning(g, alpha, k_min) is not None})
    return pd.DataFrame(rows)


def signal_figure(alpha: float = 0.5, beta: float = 2.0, num_generations: int = 5) -> go.Figure:
    """Why α = 0.5: the GRPO signal of a task is ∝ p(1−p) (variance of a Bernoulli reward), zero at p ∈ {0, 1}.

    Also drawn: the chance that all G rollouts agree (no GRPO signal at all), p^G + (1−p)^G, and R_env.
    """
    p = _grid()
    g = num_generations
    fig = go.Figure()
    fig.add_scatter(x=p, y=[x * (1 - x) / 0.25 for x in p], name="p(1−p), scaled to 1 at p=0.5")
    fig.add_scatter(x=p, y=[x ** g + (1 - x) ** g for x in p], name=f"P(all {g} rollouts agree) = p^G + (1−p)^G",
                    line={"dash": "dot"})
    fig.add_scatter(x=p, y=[cur.env_reward(x, alpha, beta) for x in p], name=f"R_env (β={beta:g})",
                    line={"dash": "dash"})
    fig.update_layout(title="Learning signal against task difficulty", xaxis_title="success rate p",
                      template="plotly_white", height=420)
    return fig


def rwr_weights_figure(rewards: Sequence[float], lambdas: Sequence[float] = (0.0, 1.0, 5.0, 20.0)) -> go.Figure:
    """RWR weights (mean 1) of the given rewards for several λ."""
    order = sorted(range(len(rewards)), key=lambda i: rewards[i])
    xs = [f"R={rewards[i]:.2f}" for i in order]
    fig = go.Figure()
    for lam in lambdas:
        w = cur.rwr_weights(rewards, lam)
        fig.add_bar(x=xs, y=[w[i] for i in order], name=f"λ={lam:g}")
    fig.update_layout(title="RWR weights ∝ exp(λ·R_env), mean 1", yaxis_title="weight", barmode="group",
                      template="plotly_white", height=380)
    return fig
