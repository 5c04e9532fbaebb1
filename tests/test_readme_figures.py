"""The README is a front door whose numbers come from committed files: its size and first command, the demo's
verdict and the picture's caption as the scripts wrote them, the results table as the committed studies say, and
links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from genenv_lab.core.paired import paired

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_its_first_command_comes_early():
    lines = README.splitlines()
    assert len(lines) <= 150, len(lines)
    first = next(i for i, line in enumerate(lines, start=1) if line.startswith("bash "))
    assert first < 30 and lines[first - 1].startswith("bash scripts/demo.sh")


def test_the_demo_verdict_is_the_one_the_demo_printed():
    """The block is ``docs/figures/demo-verdict.txt`` word for word: the verdict lines `bash scripts/demo.sh`
    printed on this project's machine, every line within 120 columns."""
    blocks = re.findall(r"<!-- demo-verdict: (\S+) -->\n```\n(.*?)\n```\n<!-- /demo-verdict -->", README, re.S)
    assert len(blocks) == 1
    path, quoted = blocks[0]
    written = (ROOT / path).read_text(encoding="utf-8").rstrip("\n")
    assert quoted == written and max(len(line) for line in written.splitlines()) <= 120
    assert "The curriculum paid" in written or "The curriculum did not pay" in written


def test_the_picture_caption_quotes_numbers_the_snapshot_script_computed():
    """Every number in the caption under the picture is in the caption ``python -m tools.snapshots --story``
    computed from the two runs (``<run>-story.md``), and the picture it names is there."""
    blocks = re.findall(r"<!-- story-caption: (\S+) -->\n\*(.*?)\*\n<!-- /story-caption -->", README, re.S)
    assert len(blocks) == 1
    path, quoted = blocks[0]
    computed = (ROOT / path).read_text(encoding="utf-8")
    numbers = re.findall(r"\d+\.\d+|\d+ of \d+", quoted)
    assert numbers and all(n in computed for n in numbers), [n for n in numbers if n not in computed]
    assert (ROOT / path.replace("-story.md", "-story.png")).is_file()


def _cell(values: pd.Series) -> str:
    s = paired(values)
    return f"{s.mean:+.3f} ({s.low:+.3f} to {s.high:+.3f})".replace("-", "−")


def test_the_results_table_says_what_the_committed_studies_say():
    rows = [line for line in README.splitlines() if re.match(r"\| `[\w-]+` \|", line)]
    assert len(rows) >= 4
    for row in rows:
        preset, _, seeds, static, random_env, select, link = [c.strip() for c in row.strip("|").split("|")]
        csv = ROOT / re.search(r"\]\(([^)]+\.csv)\)", link).group(1)
        study = pd.read_csv(csv)
        name = preset.strip("`")
        arms = ("static", "random_env", "random_env_select")
        by_arm = {arm: study[study["label"] == f"{name}:{arm}"] for arm in arms}
        assert static == _cell(by_arm["static"]["difference"]), (row, csv)
        assert random_env == _cell(by_arm["random_env"]["difference"]), (row, csv)
        assert select == (_cell(by_arm["random_env_select"]["difference"]) if len(by_arm["random_env_select"])
                          else "—"), (row, csv)  # a study without the arm says so
        got = sorted(by_arm["static"]["seed"])
        assert seeds == f"{got[0]}–{got[-1]}", row


def test_every_relative_link_of_the_readme_and_the_user_docs_leads_to_a_file():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "research" / "README.md"]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"(https?:|mailto:|#)", target):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert not broken, broken
