"""What each variant (GenEnv and its baselines) changes, as data: :data:`VARIANT_TABLE`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """What a baseline changes (method.md §7), read by the loop's named steps; never the agent optimiser or the
    per-epoch budget of fresh tasks (``RunConfig.budget``)."""

    name: str
    fixed_set: str | None = None
    """``untrained``/``teacher``: the whole task set is written in epoch 1 (by the untrained simulator, by a
    teacher model) and each epoch samples ``budget`` fresh tasks from it; None: new generations every epoch."""
    trains_env: bool = True
    """The simulator is updated by RWR on the in-band generations."""
    shows_statistics: bool = True
    """The simulator's context holds the lineage's success statistics."""
    one_variation_each: bool = False
    """``budget`` parents with one variation each, instead of ``seeds_per_epoch`` × ``n_variations``."""
    rank_trim: float = 0.0
    """Share of the epoch's measured tasks dropped at each end of the p̂ ranking before they join the pool."""
    pool_keeps_last_epoch: bool = False
    """The pool holds the last epoch's (trimmed) tasks only, instead of every valid task so far."""
    screens: bool = False
    """Online difficulty filtering (``genenv_lab.core.screening``): each epoch's candidate tasks (the fixed set, or
    with :attr:`oversamples` the epoch's fresh generations) are screened by G agent rollouts without an update; only
    the ones :attr:`keeps` accepts train (topped up to the budget with other screened tasks), and tasks screened at
    p̂ = 1 leave the pool (``loop.screen_factor`` caps the candidates screened)."""
    keeps: str = "informative"
    """What a screened task must be to train: ``informative`` (0 < p̂ < 1, DAPO's dynamic sampling) or ``in_band``
    (abs(p̂ − α) ≤ k_min, the band the α-Curriculum Reward pays for)."""
    oversamples: bool = False
    """The simulator writes ``loop.screen_factor`` × its usual ``n_variations`` per parent, and the fresh tasks are
    chosen among them by screening (curation at equal budget: its generations and screening rollouts are counted)."""
    niches: str = "config"
    """The niche penalty on the simulator's RWR weights (``env.niche_gamma``, a labelled extension,
    :mod:`genenv_lab.core.niches`): ``config`` as the config sets it, ``off`` the paper's RWR whatever the config says,
    ``placebo`` the config's multipliers shuffled across the epoch's niches (the control that tells the memory from
    the reweighting)."""


VARIANT_TABLE = {v.name: v for v in (
    Variant("genenv"),
    # the paper's RWR as written, beside a preset whose genenv carries the niche penalty (env.niche_gamma > 0)
    Variant("genenv_paper", niches="off"),
    # the niche penalty's placebo: the same multipliers, shuffled across niches (no memory behind them)
    Variant("genenv_placebo", niches="placebo"),
    Variant("random_env", trains_env=False),
    Variant("static", fixed_set="untrained", trains_env=False),
    Variant("filter_only", trains_env=False, shows_statistics=False, one_variation_each=True, rank_trim=0.1,
            pool_keeps_last_epoch=True),  # the authors' release: no simulator update, a 10 % rank filter
    Variant("offline_teacher", fixed_set="teacher", trains_env=False),
    # what practitioners use (DAPO's dynamic sampling): static's fixed set, screened online for 0 < p̂ < 1
    Variant("online_filter", fixed_set="untrained", trains_env=False, screens=True),
    # curation at equal budget (PLR⊥-style): the untrained simulator writes screen_factor× as many tasks, the agent's
    # rollouts screen them, the in-band ones train; the control that tells training the simulator from selection
    Variant("random_env_select", trains_env=False, screens=True, keeps="in_band", oversamples=True),
)}
KEEPS = ("informative", "in_band")
NICHES = ("config", "off", "placebo")
"""How a variant applies ``env.niche_gamma`` (:attr:`Variant.niches`)."""
"""What a screening variant may keep (:attr:`Variant.keeps`)."""
VARIANTS = tuple(VARIANT_TABLE)
