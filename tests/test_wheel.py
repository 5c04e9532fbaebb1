"""The package outside a checkout: its wheel carries the seeds, held-out sets and world models of ``data/`` (through
the ``genenv_lab/data`` link), and a domain loads them from the unpacked wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_data_and_domains_load_from_it(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist")], check=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("genenv_lab-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    shipped = {f"genenv_lab/data/{p.name}" for p in (ROOT / "data").glob("*.jsonl")}
    assert shipped and shipped <= names
    models = {f"genenv_lab/data/world_models/{p.parent.name}/{p.name}"
              for p in (ROOT / "data" / "world_models").glob("*/*")}  # the CPU presets' world models
    assert models and models <= names
    code = ("from genenv_lab.domains import get_domain; from genenv_lab.domains.base import data_dir; "
            "d = get_domain('count'); print(data_dir(), len(d.seed_tasks()), len(d.heldout_tasks()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    where, seeds, held = out.stdout.split()
    assert Path(where) == tmp_path / "site" / "genenv_lab" / "data" and int(seeds) > 0 and int(held) > 0
