#!/usr/bin/env bash
# Set up .venv with the notebooks extra (JupyterLab, papermill) and open JupyterLab on notebooks/.
# Extra arguments go to `jupyter lab`, e.g.: bash scripts/notebooks.sh --no-browser --port 8889
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,notebooks
. .venv/bin/activate
root_flag=()
[ "$(id -u)" != 0 ] || root_flag=(--allow-root)  # Jupyter refuses to run as root without it (containers, Colab-like VMs)
echo "JupyterLab on notebooks/ (Ctrl-C to stop; the URL with its token is printed below)"
exec jupyter lab "${root_flag[@]}" "$@" notebooks/
