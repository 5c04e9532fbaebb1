"""Print the `gpu` extra's Unsloth pins (pyproject.toml), space-separated: the versions the Unsloth CPU venv
(scripts/setup_unsloth_cpu.sh) and the device check's wheels (scripts/gpu_wheels.sh) install."""

import re
import tomllib
from pathlib import Path

extra = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
print(" ".join(p for p in extra["project"]["optional-dependencies"]["gpu"] if re.match(r"unsloth(-zoo)?==", p)))
