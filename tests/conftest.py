"""Shared fixtures: one model cache per test session, a tiny config, the scripted fake backends (tests/fakes.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fakes

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory) -> Path:
    """Models built or converted during tests go to one temporary cache (unless the user set one)."""
    if "GENENV_LAB_CACHE" not in os.environ:
        os.environ["GENENV_LAB_CACHE"] = str(tmp_path_factory.mktemp("genenv-cache"))
    return Path(os.environ["GENENV_LAB_CACHE"])


@pytest.fixture(autouse=True)
def fresh_notices():
    """Each test starts with no renamed-field notice said yet (they are said once per process)."""
    from genenv_lab.config import spellings

    spellings._SAID.clear()


@pytest.fixture
def tiny_cfg():
    from genenv_lab.config import preset

    return preset("tiny")


@pytest.fixture(scope="session")
def scripted_backend() -> type[fakes.ScriptedBackend]:
    """The scripted fake backend (tests/fakes.py; the loop's component tests run on it without a model): the class,
    to call with the arguments a test needs (``scripted_backend(num_generations=4)``) or to subclass.
    tests/test_backend_base.py holds it to the Backend protocol."""
    return fakes.ScriptedBackend


@pytest.fixture(scope="session")
def scripted_counter() -> type[fakes.ScriptedCounter]:
    """The scripted fake backend on the ``count`` domain (tests/fakes.py), as :func:`scripted_backend`."""
    return fakes.ScriptedCounter


# ----------------------------------------------------------------------------------------------------- tiers

TIERS = {
    "unit": ("test_curriculum", "test_diversity", "test_rwr", "test_screening", "test_efficiency", "test_dryrun",
             "test_verdict", "test_structure", "test_eval_scorers", "test_eval_calls", "test_eval_fuzz",
             "test_eval_bfcl", "test_bfcl_multi_turn", "test_domain_fuzz", "test_domain_qa", "test_domain_tools",
             "test_arith", "test_count", "test_times", "test_diagnostics", "test_bounded_reads", "test_config",
             "test_environment_file", "test_offline_html", "test_tailing", "test_metric_names", "test_slim_wheel",
             "test_gpu_profiles", "test_niches", "test_stride", "test_carry", "test_facts"),
    "component": ("test_loop_component", "test_loop_online_filter", "test_agent_trainer", "test_agent_trainers",
                  "test_crash_points", "test_committed_work", "test_compare", "test_trackers", "test_domains_own",
                  "test_model_source", "test_shipped_world_models", "test_eval_runner", "test_export", "test_prefix",
                  "test_backend_base", "test_old_runs", "test_hint_following", "test_run_length",
                  "test_env_trainer", "test_training_side", "test_niche_loop", "test_readings"),
    "e2e": ("test_e2e_tiny", "test_cli_fields", "test_cli_summary", "test_eval_cli", "test_wheel",
            "test_trl_curriculum",
            "test_readme_figures"),
    "app": ("test_app_views", "test_app_compare", "test_app_smoke", "test_app_story", "test_lab_inline",
            "test_lab_panels"),
    "browser": ("test_app_browser",),
    "notebooks": ("test_notebooks", "test_notebooks_command"),
    "engines": ("test_vllm_cpu", "test_unsloth_cpu", "test_bfcl_parity", "test_distributed", "test_gpu",
                "test_unsloth_gpu", "test_gpu_resolve", "test_gpu_shapes"),
    "slow": ("test_slow_smollm2",),
}
"""Each test file's tier, as a marker of every test in it (the package's doctests are ``unit``). ``gpu`` is no
file's tier but each GPU test's own marker (``scripts/gpu_check.sh`` runs ``-m gpu``; the GPU files' CPU parts are
``engines``). The quick tier
(``bash scripts/test.sh --quick``) is the marker expression :data:`QUICK`: no extra venvs, browser, notebooks,
multi-process, real-model or GPU tests. A new test file goes into one tier here (tests/test_structure.py checks)."""
QUICK = "not (browser or notebooks or engines or slow or gpu)"
TIER_OF = {name: tier for tier, names in TIERS.items() for name in names}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        tier = "unit" if path.is_relative_to(ROOT / "genenv_lab") else TIER_OF.get(path.stem)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
