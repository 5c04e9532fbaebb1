"""``python -m genenv_lab.cli``: the same as ``genenv-lab``."""

import sys

from genenv_lab.cli.commands import main

sys.exit(main())
