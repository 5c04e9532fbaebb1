"""Print a run's training-side figures per epoch and nothing measured on held-out items, for choices made before
a pre-registration (docs/research/preregistration.md): p̂ and the in-band share on the simulator's tasks, p̂ on the
untrained simulator's tasks, the simulator's levels, the dry-run share and the informative groups. Left out on purpose:
``eval/*``, ``heldout/*`` and ``dry/frontier_*`` (the frontier is read from the held-out answers).

    python tools/training_side.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from genenv_lab.rundir.read import read_epochs

COLUMNS = (("p̂", "p_hat_mean", None), ("band", "in_band_frac", None), ("ref p̂", None, "reference/p_hat"),
           ("level", None, "features/level"), ("max", None, "levels/max"), ("dry", None, "dry/step_frac"),
           ("inform.", "frac_zero_std", None), ("rwr", None, "rwr/steps"))
HELD_OUT = ("eval/", "heldout/", "dry/frontier_")
assert not any(extra and extra.startswith(HELD_OUT) for _, _, extra in COLUMNS), "a column measured on held-out items"


def cell(record: dict, top: str | None, extra: str | None) -> str:
    value = record.get(top) if top else (record.get("extra") or {}).get(extra)
    if value is None:
        return "—"
    if top == "frac_zero_std":
        value = 1 - value
    return f"{value:.2f}"


def main(paths: list[str]) -> None:
    for path in paths:
        print(path)
        print("epoch " + " ".join(f"{name:>7}" for name, _, _ in COLUMNS))
        for r in read_epochs(Path(path)):
            print(f"{r['epoch']:>5} " + " ".join(f"{cell(r, top, extra):>7}" for _, top, extra in COLUMNS))


if __name__ == "__main__":
    main(sys.argv[1:])
