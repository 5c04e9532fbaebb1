"""What the command line's verbs share: the console they print to, the one-process check of the verbs that are not
data-parallel, and the signal handling of a verb that starts work."""

from __future__ import annotations

import sys


def console(quiet: bool = False):
    """rich's console; written to a file or a pipe it keeps 120 columns (its default of 80 cuts the table)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 120, quiet=quiet)


def one_process(console, command: str) -> bool:
    """Whether this is a one-process job; otherwise says that ``command`` runs in one process (only ``run`` is
    data-parallel: every process of an ``eval`` or ``compare`` job would write the same files)."""
    from genenv_lab.backends.distributed import launched_world_size

    if launched_world_size() == 1:
        return True
    console.print(f"[red]error:[/red] genenv-lab {command} runs in one process; launch it without torchrun or "
                  "accelerate launch (only genenv-lab run is data-parallel)")
    return False


def interruptible() -> None:
    """Ctrl-C, SIGTERM and SIGHUP end a run as ``interrupted`` (:func:`genenv_lab.coevolution.session.stop_on_signals`,
    imported
    when a command starts work, not when the parser is built)."""
    from genenv_lab.coevolution.session import stop_on_signals

    stop_on_signals()
