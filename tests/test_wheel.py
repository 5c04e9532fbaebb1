"""The package outside a checkout: its wheel carries the seeds, held-out sets and world models of ``data/`` (through
the ``genenv_lab/data`` link), and a domain loads them from the unpacked wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> tuple[Path, set[str]]:
    """The project's wheel, built and unpacked into a folder of its own (the wheel alone: the core venv's packages
    serve its dependencies), and the names it holds."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    # built from a copy of the tree: setuptools writes build/ and genenv_lab.egg-info into the tree it builds, which
    # scripts/test.sh's background set-up (pip install -e . into the engine venvs) may be writing at the same time
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "runs", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist")], check=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("genenv_lab-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    return tmp_path / "site", names


def test_the_wheel_carries_data_and_domains_load_from_it(wheel_site, tmp_path):
    site, names = wheel_site
    shipped = {f"genenv_lab/data/{p.name}" for p in (ROOT / "data").glob("*.jsonl")}
    assert shipped and shipped <= names
    models = {f"genenv_lab/data/world_models/{p.parent.name}/{p.name}"
              for p in (ROOT / "data" / "world_models").glob("*/*")}  # the CPU presets' world models
    assert models and models <= names
    code = ("from genenv_lab.domains import get_domain; from genenv_lab.domains.base import data_dir; "
            "d = get_domain('count'); print(data_dir(), len(d.seed_tasks()), len(d.heldout_tasks()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    where, seeds, held = out.stdout.split()
    assert Path(where) == site / "genenv_lab" / "data" and int(seeds) > 0 and int(held) > 0


def test_the_wheel_serves_the_lab_from_a_folder_that_is_not_the_repository(wheel_site, tmp_path):
    """Issue 67 (round 6, I1): the lab's layout is in the package, so the wheel alone serves it: ``inline.show``
    from a folder with no ``app.py`` beside it answers ``GET /`` with the lab, and ``genenv-lab lab -h`` lists its
    options."""
    pytest.importorskip("gradio", reason="the lab needs the app extra")
    site, names = wheel_site
    assert "genenv_lab/lab/app.py" in names
    (tmp_path / "runs").mkdir()
    code = ("import urllib.request, genenv_lab.lab.app as app; from genenv_lab.lab import inline; "
            "lab = inline.show('runs', where='none'); page = urllib.request.urlopen(lab.local_url, timeout=60); "
            "print(page.status, b'GenEnv' in page.read(), app.__file__); lab.close()")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "GRADIO_ANALYTICS_ENABLED": "False"})
    assert out.returncode == 0, out.stderr[-3000:]
    status, found, where = next(line for line in out.stdout.splitlines() if line.endswith("app.py")).split()
    assert (status, found) == ("200", "True") and Path(where).is_relative_to(site), out.stdout


@pytest.mark.notebooks
def test_the_quickstart_runs_headless_from_the_wheel(wheel_site, tmp_path, monkeypatch):
    """Issue 67: Colab's wheel path less the GPU. Notebook 00 runs top to bottom on the tiny preset with the wheel
    alone on its path, from a folder that is not the repository, its inline lab cell included; the kernel's package
    is the wheel's."""
    pytest.importorskip("gradio", reason="the quickstart's last cell serves the lab")
    import nbformat
    from nbclient import NotebookClient

    site, _ = wheel_site
    monkeypatch.setenv("GENENV_LAB_PRESET", "tiny")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    book = nbformat.read(ROOT / "notebooks" / "00_quickstart.ipynb", as_version=4)
    book.cells.append(nbformat.v4.new_code_cell("import genenv_lab; print(genenv_lab.__file__)"))
    NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0].get("evalue") if errors else ""
    where = Path(book.cells[-1].outputs[0]["text"].strip())
    assert where.is_relative_to(site), where
