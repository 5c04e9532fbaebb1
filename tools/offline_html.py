"""Executed notebooks as HTML pages that render without a network: plotly.js from one local file, math as MathML.

    python -m tools.offline_html docs/notebooks/*.html

``jupyter nbconvert --to html`` writes pages that fetch plotly.js, require.js and MathJax from CDNs, so a page opened
offline (or from a machine that blocks those hosts) shows every figure as a blank block and every formula as raw
TeX. This rewrites such a page in place:

- every ``<script>`` that loads plotly.js, require.js or MathJax from a CDN (and MathJax's configuration) is
  removed, and the page's ``<head>`` loads ``plotly.min.js`` from beside it; that file is copied once into the
  page's folder from the installed ``plotly`` package (the version whose figures the page holds);
- the ``$…$`` and ``$$…$$`` formulas of the rendered Markdown cells become MathML (``latex2mathml``), which every
  current browser typesets natively. Code (``<code>``, ``<pre>``) is left alone.

Idempotent: a page already rewritten is left as it is. Written by hand because nbconvert offers no offline mode
for plotly figures (its ``--embed-images`` covers images only) and MathJax cannot run without its server or a
local copy of its several hundred files.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
from pathlib import Path

PLOTLY_FILE = "plotly.min.js"
MARKER = "<!-- genenv_lab.offline_html -->"  # the name it had when the committed pages were written

_CDN_SCRIPT = re.compile(
    r"<script\b[^>]*\bsrc=\"https://(?:cdn\.plot\.ly|cdnjs\.cloudflare\.com/ajax/libs/(?:mathjax|require\.js))/"
    r"[^\"]*\"[^>]*>\s*</script>\s*", re.IGNORECASE)
_PLOTLY_IMPORT = re.compile(r"<script type=\"module\">\s*import \"https://cdn\.plot\.ly/[^\"]*\"\s*;?\s*</script>\s*")
_MATHJAX_CONFIG = re.compile(
    r"<script type=\"text/x-mathjax-config\">.*?</script>\s*"
    r"|<script>\s*if \(window\.MathJax && window\.MathJax\.Hub[^<]*</script>\s*", re.DOTALL)
_MARKDOWN_CELL = re.compile(r"(data-mime-type=\"text/markdown\">)(.*?)(</div>)", re.DOTALL)
_CODE = re.compile(r"(<(code|pre)\b.*?</\2>)", re.DOTALL | re.IGNORECASE)
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\s)(.+?)(?<![\s\\])\$(?!\d)", re.DOTALL)


def tex_to_mathml(tex: str, display: bool) -> str:
    """One formula (TeX as written in a Markdown cell, HTML entities allowed) as a MathML element; a formula
    latex2mathml cannot read stays as its text in a ``<code>`` (never raw ``$``)."""
    from latex2mathml.converter import convert

    source = html.unescape(tex).strip()
    try:
        return convert(source, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - any failure of the third-party parser: show the source, marked as code
        return f"<code>{html.escape(source)}</code>"


def typeset(markdown_html: str) -> str:
    """The rendered Markdown of one cell with its ``$…$``/``$$…$$`` formulas as MathML, code left as it is."""
    parts = _CODE.split(markdown_html)
    out = []
    for i, part in enumerate(parts):
        if i % 3 == 2:  # the tag-name group of the split
            continue
        if i % 3 == 1:  # a <code> or <pre> element
            out.append(part)
            continue
        out.append(_MATH.sub(lambda m: tex_to_mathml(m.group(1) or m.group(2), m.group(1) is not None), part))
    return "".join(out)


def make_offline(page: str) -> str:
    """The text of an nbconvert HTML page, rewritten as the module docstring says."""
    if MARKER in page:
        return page
    page = _CDN_SCRIPT.sub("", page)
    page = _PLOTLY_IMPORT.sub("", page)
    page = _MATHJAX_CONFIG.sub("", page)
    page = _MARKDOWN_CELL.sub(lambda m: m.group(1) + typeset(m.group(2)) + m.group(3), page)
    head = f'{MARKER}\n<script charset="utf-8" src="{PLOTLY_FILE}"></script>\n'
    if "</head>" in page:
        return page.replace("</head>", head + "</head>", 1)
    return head + page


def plotly_js() -> Path:
    """The installed plotly package's plotly.min.js."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / PLOTLY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall plotly (pip install --force-reinstall plotly)")
    return path


def rewrite(pages: list[Path]) -> list[Path]:
    """Rewrite each page in place and put plotly.min.js beside it (once per folder); the rewritten pages."""
    source = plotly_js()
    for folder in {p.resolve().parent for p in pages}:
        shutil.copyfile(source, folder / PLOTLY_FILE)
    for path in pages:
        path.write_text(make_offline(path.read_text(encoding="utf-8")), encoding="utf-8")
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=Path, help="HTML pages written by jupyter nbconvert --to html")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.pages if not p.is_file()]
    if missing:
        parser.error(f"no such page: {', '.join(missing)}")
    for path in rewrite(args.pages):
        print(f"offline: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
