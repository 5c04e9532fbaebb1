"""Baselines, ablations and sweeps side by side: run a grid of configurations over seeds, then compare.

The package's modules, where its jobs split: :mod:`.grid` runs the comparison, :mod:`.table` reads its runs back
into one table, :mod:`.stats` computes what the table says (paired by seed), :mod:`.verdicts` writes the closing
sentences and :mod:`.report` the files and the figure. Everything public is importable from here.


``compare_grid`` runs every (label, config) entry for every seed into ``<out>/runs/<label>-s<seed>`` (finished runs
are skipped, interrupted ones resumed, so a killed comparison continues where it stopped; ``jobs`` > 1 runs that many
at once on the CPU cores, :func:`run_parallel`), with the domain's
held-out evaluation every epoch and the counterfactual reference set switched on. ``collect`` reads the run
directories back into one table (one row per label, seed, epoch); ``summarise`` gives mean and spread over seeds;
``report_figure`` draws the comparison; ``write_report`` saves ``comparison.csv``, ``comparison.parquet``,
``summary.csv``, ``band_residence.csv`` (per label and seed: first epoch with p̂ on generated tasks inside the
label's own band [α−k_min, α+k_min], whether it stayed, epochs in band), ``rollouts_to_reach.csv`` (per baseline:
the agent rollouts GenEnv needs to reach its final held-out score, :func:`rollouts_to_reach_table`),
``efficiency.csv`` (per baseline, paired by seed with GenEnv: the area under the held-out curve against cumulative
agent rollouts over the common range ÷ that range, and the rollouts to reach the baseline's own final score, with
95 % intervals: :func:`efficiency_table`), ``dry_run.csv`` (per label, the second-half epochs that ran dry:
:func:`dry_run_table`) and ``report.html`` (a self-contained plotly page the lab also shows); :func:`verdict`
writes the paragraph that ends ``genenv-lab compare``: genenv's final held-out score against each baseline's, the
rollouts it needed to reach them, whether the curriculum paid against the fixed set (``static``), the data
efficiency paired by seed, and how often the fixed set ran dry. :func:`late_averages` gives each run's in-band
share over its second half and p̂ over its last third, :func:`paired_differences` genenv's final score minus each
baseline's paired by seed (``benchmarks/seed_table.py`` prints both for a comparison folder).

Columns of the comparison table (:data:`COLUMNS`): ``label, variant, seed, epoch`` (0: the untrained agent,
held-out score and ``tasks_consumed`` = ``cumulative/agent_rollouts`` = ``cumulative/agent_tokens`` = 0 only), then
the readings compare computes: ``heldout`` (``eval/domain``, or the first ``eval/<benchmark>`` score),
``tasks_consumed`` (distinct non-seed tasks the agent has trained on so far), ``informative_frac`` and
``informative_groups`` (the share and number of informative GRPO groups, :func:`.table.dry_columns`); every other
column is a key of the metric registry (:mod:`genenv_lab.core.metrics`) under its own name, holding the record's value:
``p_hat_mean``, ``in_band_frac``, ``reference/p_hat`` (the same epoch's agent on the untrained simulator's tasks),
``valid_frac``, ``agent_reward_mean``, ``cumulative/agent_rollouts`` and ``cumulative/agent_tokens`` (agent
completions sampled for training so far, screening included, and their completion tokens; a run written before
those keys counts its attempts rows as rollouts and has no tokens), ``wall_s``, ``dry/step_frac``,
``dry/frontier_informative``, ``features/level``, ``levels/max``, ``reference/in_band_frac``,
``reference/frontier_share`` and ``diversity/entropy``. A reading over a late window of the epochs is named by
:func:`genenv_lab.core.readings.late_column` (``reference/p_hat, last third``). Nothing reads a saved
``comparison.csv`` back: the lab and a rerun of ``genenv-lab compare`` rebuild the table from the run directories.
"""

from __future__ import annotations

from genenv_lab.compare.table import (attempt_rollouts_by_epoch, band_residence, bands_of, collect, COLUMNS,
    METRICS, REACH_COLUMNS, run_dir_for, summarise, table_rows, tasks_consumed_by_epoch)
from genenv_lab.compare.stats import (dry_run_table, efficiency_table, final_scores, late_averages,
    LATE_COLUMNS, PAIRED_COLUMNS, paired_differences, read_study, rollouts_to_reach_table, seed_finals)
from genenv_lab.compare.verdicts import glance, spread_lines, verdict
from genenv_lab.compare.report import report_figure, REPORT_PANELS, write_report
from genenv_lab.compare.grid import (check_jobs, compare_grid, COMPARE_LOCK, sweep_entries, threads_per_job,
    variant_entries)

__all__ = [
    'attempt_rollouts_by_epoch', 'band_residence', 'bands_of', 'check_jobs', 'collect', 'COLUMNS', 'compare_grid',
    'COMPARE_LOCK', 'dry_run_table', 'efficiency_table', 'final_scores', 'late_averages',
    'LATE_COLUMNS', 'METRICS', 'PAIRED_COLUMNS', 'paired_differences', 'REACH_COLUMNS', 'read_study',
    'report_figure', 'REPORT_PANELS', 'rollouts_to_reach_table', 'run_dir_for', 'threads_per_job', 'glance',
    'seed_finals', 'spread_lines', 'summarise', 'sweep_entries', 'table_rows', 'tasks_consumed_by_epoch',
    'variant_entries', 'verdict', 'write_report']
