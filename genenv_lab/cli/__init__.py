"""The ``genenv-lab`` command line: ``run``, ``compare``, ``eval``, ``export``, ``lab`` and the rest."""

from genenv_lab.cli.commands import main

__all__ = ["main"]
