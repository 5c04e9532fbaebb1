"""Run names as the lab accepts them from a browser: checked before any file is opened (a single path component
of letters, digits, ``.``, ``_``, ``-``; no separators, no ``..``, no hidden names), resolved with every symlink
followed and required to sit directly in the runs folder, and shown escaped when refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""What a run name may be: a single path component that is neither hidden nor ``.``/``..``."""


class LabError(ValueError):
    """A request the lab refuses (a bad run name, a path outside the runs folder, an unknown preset); the message
    says what is accepted."""


def validate_run_name(name: Any) -> str:
    """``name`` if it is an acceptable run name, else :class:`LabError`.

    >>> validate_run_name("tiny-2024.01_a")
    'tiny-2024.01_a'
    >>> validate_run_name("../etc")
    Traceback (most recent call last):
    ...
    genenv_lab.lab.names.LabError: run name '../etc' is not allowed: use 1-100 letters, digits, ...
    """
    if not isinstance(name, str) or not RUN_NAME.fullmatch(name):
        raise LabError(f"run name {name!r} is not allowed: use 1-100 letters, digits, '.', '_' or '-', "
                       "starting with a letter or digit")
    return name


def shown_name(name: Any) -> str:
    """``name`` as a card's heading may show it: an acceptable run name as it is, anything else escaped
    (``ascii``: no newline, no right-to-left override), at most 120 characters.

    >>> shown_name("tiny_genenv-s0")
    'tiny_genenv-s0'
    >>> shown_name("a\\nb\\u202e")
    "'a\\\\nb\\\\u202e'"
    """
    if isinstance(name, str) and RUN_NAME.fullmatch(name):
        return name
    return ascii(str(name))[:120]


def resolve_run(runs_root: str | Path, name: Any) -> Path:
    """The directory of run ``name`` under ``runs_root``, all symlinks resolved, or :class:`LabError` when the
    name is not allowed or the path it leads to is not directly inside ``runs_root``."""
    validate_run_name(name)
    try:  # a symlink loop (or a link too deep to follow) is one refused name, not the whole lab's failure
        root = Path(runs_root).expanduser().resolve()
        path = (root / name).resolve()
    except (RuntimeError, OSError) as exc:
        raise LabError(f"run {name!r} cannot be resolved ({exc}); refused") from None
    if path.parent != root:
        raise LabError(f"run {name!r} leads outside the runs folder; refused")
    return path


def lab_arguments(parser, default_runs) -> None:
    """The lab's command-line options (``python app.py`` and ``genenv-lab lab`` alike; no Gradio needed to list
    them)."""
    parser.add_argument("--runs", default=str(default_runs), help=f"folder of run directories (default: "
                                                                  f"{default_runs})")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine "
                                                            "only)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    parser.add_argument("--run", help="the run shown first (a folder name under --runs; default: the newest)")
    parser.add_argument("--compact", action="store_true", help="the inline lab's layout, for a notebook's frame: a "
                                                               "one-line title, the runs table folded away")

