"""Notebooks: valid, committed without outputs, and executed headless with the tiny preset."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_every_phase_has_a_notebook():
    names = [p.stem for p in NOTEBOOKS]
    for prefix in ("00_", "01_", "02_", "03_", "04_", "05_", "06_", "07_", "08_"):
        assert any(n.startswith(prefix) for n in names), f"missing notebook {prefix}*"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_valid_and_clean(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path.name} has committed outputs"
    assert any("GENENV_LAB_PRESET" in c.source for c in book.cells[:3]), "one configuration cell at the top"


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_teaches(path):
    """Each notebook explains its phase (≥ 300 words, an equation up front), reads its figures and tables in a
    'What you see' paragraph, and ends with a recap and at least one 'Try this' cell."""
    book = nbformat.read(path, as_version=4)
    markdown = [c.source for c in book.cells if c.cell_type == "markdown"]
    assert sum(_words(m) for m in markdown) >= 300, f"{path.name}: under 300 words of narrative"
    assert "$" in markdown[0], f"{path.name}: the first cell should state the paper's equation or line (LaTeX)"
    assert any("what you see" in m.lower() for m in markdown), f"{path.name}: no 'What you see' paragraph"
    assert any("try this" in m.lower() for m in markdown), f"{path.name}: no 'Try this' cell"
    assert any(m.lstrip().lower().startswith("## recap") for m in markdown), f"{path.name}: no recap"
    assert "YOUR-ORG" not in "".join(c.source for c in book.cells), "no placeholder URL"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_executes_headless_with_tiny_preset(path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("GENENV_LAB_PRESET", "tiny")
    book = nbformat.read(path, as_version=4)
    client = NotebookClient(book, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
