"""Rendered notebook pages that work offline (tools.offline_html): the rewrite itself, and the committed
``docs/notebooks`` pages opened in headless Chromium on a machine with no network."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tools.offline_html import MARKER, PLOTLY_FILE, make_offline, rewrite, typeset

ROOT = Path(__file__).resolve().parent.parent
PAGE = """<html><head><script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"></script>
<script type="text/x-mathjax-config">MathJax.Hub.Config({tex2jax: {}});</script>
<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"> </script>
</head><body>
<div class="jp-RenderedMarkdown" data-mime-type="text/markdown"><p>p̂ is $\\hat p = k/G$ and the reward is
$$R = \\exp(-\\beta (\\hat p - \\alpha)^2)$$ while <code>$OUT</code> and a price of \\$5 stay;
a &lt; b in $a &lt; b$.</p>
</div>
<div class="jp-OutputArea-output" data-mime-type="text/html"><script>window.PlotlyConfig = {MathJaxConfig: 'local'};
</script><script charset="utf-8" src="https://cdn.plot.ly/plotly-4.1.1.min.js" integrity="x"></script>
<div id="f" class="plotly-graph-div"></div><script>Plotly.newPlot("f", [{"y": [1, 2]}])</script>
<p>an output with $x$ stays as printed</p></div>
</body></html>"""


def test_cdn_scripts_go_and_one_local_plotly_loads_in_the_head():
    page = make_offline(PAGE)
    assert "https://cdn" not in page and "mathjax-config" not in page
    assert page.count(f'src="{PLOTLY_FILE}"') == 1 and page.index(PLOTLY_FILE) < page.index("</head>")
    assert 'Plotly.newPlot("f"' in page  # the figure's own script stays
    assert make_offline(page) == page  # idempotent


def test_formulas_of_markdown_cells_become_mathml_and_code_stays():
    page = make_offline(PAGE)
    markdown = page[page.index('data-mime-type="text/markdown"'):page.index("</div>")]
    assert markdown.count("<math") == 3 and 'display="block"' in markdown  # $…$, $$…$$ and the escaped one
    assert "<code>$OUT</code>" in markdown and "\\$5" in markdown
    assert "$" not in markdown.replace("<code>$OUT</code>", "").replace("\\$5", "")
    assert "an output with $x$ stays" in page  # outputs are not Markdown cells: left alone


def test_a_formula_the_converter_cannot_read_shows_as_code_not_raw_dollars():
    assert typeset("<p>broken $\\frac{1}{$ here</p>") == "<p>broken <code>\\frac{1}{</code> here</p>"
    assert typeset("<p>costs $5 and $6 each</p>") == "<p>costs $5 and $6 each</p>"  # prices, not a formula


def test_rewrite_puts_plotly_js_beside_the_pages(tmp_path):
    page = tmp_path / "nb.html"
    page.write_text(PAGE)
    rewrite([page])
    assert (tmp_path / PLOTLY_FILE).stat().st_size > 1_000_000 and MARKER in page.read_text()


def test_committed_pages_are_offline_ones():
    pages = sorted((ROOT / "docs" / "notebooks").glob("*.html"))
    assert pages and (ROOT / "docs" / "notebooks" / PLOTLY_FILE).is_file()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert MARKER in text and 'src="https://cdn' not in text, page.name


def test_notebook_06_renders_figures_and_math_offline_in_chromium(tmp_path):
    from tools.browser import CHROMIUM, Chromium

    if not CHROMIUM.exists():
        pytest.skip("needs Debian's headless chromium at /usr/bin/chromium (apt-get install -y chromium)")
    page = next((ROOT / "docs" / "notebooks").glob("06_*.html"))
    browser = Chromium(tmp_path / "profile", width=1280, height=900)
    try:
        browser.navigate(page.as_uri())
        drawn = "document.querySelectorAll('.js-plotly-plot .main-svg').length > 0"
        assert browser.wait_for(drawn, 60), f"no plotly figure drawn in {page.name}"
        time.sleep(1.0)
        raw = browser.evaluate(r"""JSON.stringify([...document.querySelectorAll('[data-mime-type="text/markdown"]')]
            .map(e => e.innerText).join(' ').match(/\$[^$\s][^$]*\$/g))""")
        assert json.loads(raw) is None, f"raw TeX in {page.name}: {raw}"
        assert browser.evaluate("document.querySelectorAll('math').length") > 0
    finally:
        browser.close()

