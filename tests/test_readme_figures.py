"""The README's figures say what their runs say: captions quoted from what the snapshot script computed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_quotes_the_glance_caption_the_snapshot_script_wrote():
    """README's caption under the glance figure is the text ``python -m tools.snapshots`` computed from
    the run it names (``<run>-glance.md``), word for word."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- glance-caption: (\S+) -->\n\*(.*?)\*\n<!-- /glance-caption -->", readme, re.S)
    assert blocks, "README has no glance caption block"
    for path, quoted in blocks:
        assert quoted == (ROOT / path).read_text(encoding="utf-8").strip(), path
