"""Shared fixtures: one model cache per test session, a tiny config, the scripted fake backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory) -> Path:
    """Models built or converted during tests go to one temporary cache (unless the user set one)."""
    if "GENENV_LAB_CACHE" not in os.environ:
        os.environ["GENENV_LAB_CACHE"] = str(tmp_path_factory.mktemp("genenv-cache"))
    return Path(os.environ["GENENV_LAB_CACHE"])


@pytest.fixture
def tiny_cfg():
    from genenv_lab.config import preset

    return preset("tiny")
