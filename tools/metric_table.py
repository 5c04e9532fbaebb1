"""docs/run_directory.md's table of the ``epochs.jsonl`` keys, rendered from the metric registry.

    python -m tools.metric_table            # print the table
    python -m tools.metric_table --write    # replace the table in docs/run_directory.md

The table sits between the page's two ``<!-- metric table -->`` markers; ``tests/test_metric_names.py`` checks that it
is the registry's (:func:`genenv_lab.core.metrics.markdown_table`).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from genenv_lab.core.metrics import markdown_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "run_directory.md"
MARK = "<!-- metric table -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in docs/run_directory.md")
    args = parser.parse_args()
    table = markdown_table()
    if not args.write:
        print(table)
        return
    page = PAGE.read_text()
    if page.count(MARK) != 2:
        raise SystemExit(f"{PAGE} needs two '{MARK}' lines around the table")
    PAGE.write_text(re.sub(f"{re.escape(MARK)}.*?{re.escape(MARK)}", lambda _: f"{MARK}\n{table}\n{MARK}", page,
                           flags=re.S))
    print(f"wrote the table of {table.count(chr(10)) - 1} metrics into {PAGE.name}")


if __name__ == "__main__":
    main()
