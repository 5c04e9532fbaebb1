#!/usr/bin/env bash
# Execute every notebook on a preset (default cpu-dry-hint-long, the demo's world, as the notebooks default to on a
# CPU) and write HTML copies with their outputs to docs/notebooks/ (the .ipynb files stay without outputs). Most of
# the time goes to 06 and 07 (40-epoch runs) and to 08 (eight 40-epoch runs: four arms × two seeds): allow half an
# hour or more on 2 cores.
# Usage: bash scripts/render_notebooks.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-cpu-dry-hint-long}"
bash scripts/setup.sh dev,notebooks
. .venv/bin/activate
mkdir -p docs/notebooks
export GENENV_LAB_PRESET="$preset"
export PLOTLY_RENDERER=notebook_connected  # the pages are rewritten below to load plotly.js from one local file
for nb in notebooks/*.ipynb; do
  t0=$SECONDS
  jupyter nbconvert --to html --execute --ExecutePreprocessor.timeout=3600 \
    --output-dir docs/notebooks "$nb" >>.venv/render.log 2>&1 \
    || { echo "failed: $nb (see .venv/render.log)" >&2; tail -n 30 .venv/render.log >&2; exit 1; }
  printf '  %-48s %5ss\n' "$(basename "$nb")" "$((SECONDS - t0))"
done
# outputs may quote file paths (a library's warning, a traceback): keep them relative to the checkout and the venv,
# so the published pages name no folder of the machine that rendered them
sed -i -e "s#$PWD/\.venv/lib/python[0-9.]*/site-packages/#site-packages/#g" -e "s#$PWD/##g" docs/notebooks/*.html
# pages that render offline: plotly.js from docs/notebooks/plotly.min.js (one copy), formulas as MathML, no CDN
python -m tools.offline_html docs/notebooks/*.html >/dev/null
echo "HTML in docs/notebooks/ (preset $preset), readable offline"
