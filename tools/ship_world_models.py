"""Build the tiny world models of the CPU presets into the package (``genenv_lab/data/world_models/``), so that no
user's machine builds one: a run on a preset whose recipe ships starts its first epoch at once.

Each model is built by :func:`genenv_lab.models.world.build_world_model` exactly as a run would build it, with one
torch thread (a matrix product's rounding depends on how it is split over threads, so one thread makes the rebuild
on the same kind of CPU give the same weights; on another kind of CPU the rounding differs and 650 steps carry it
far, so a rebuild there is a different model that fits its world as well). ``tests/test_shipped_world_models.py``
checks each shipped model against its recipe without rebuilding (its tokenizer, and its loss on fresh examples of its
world against what its marker says it reached); ``GENENV_LAB_REBUILD_WORLD=1`` adds a rebuild of cpu-times' model,
the check to run after changing a world or the builder (a changed recipe must change its ``cache_name``). The
folder's name is the recipe's hash (:meth:`~genenv_lab.models.world.WorldModelSpec.cache_name`); its
``genenv_world.json`` holds the recipe.

    python -m tools.ship_world_models                 # every CPU preset's recipe that has no shipped model yet
    python -m tools.ship_world_models --preset cpu-times --out /tmp/rebuilt   # one recipe, elsewhere
    python -m tools.ship_world_models --list           # recipes, their folders and whether each ships

Written by hand: a loop over the presets around the project's own builder.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Sequence


def recipes(presets: Sequence[str] | None = None) -> dict[str, tuple[list[str], object]]:
    """``{cache name: (presets using it, WorldModelSpec)}`` of the CPU presets (or ``presets``) on ``tiny-world``."""
    from genenv_lab.config import CPU_PRESETS, preset
    from genenv_lab.models.world import world_spec

    found: dict[str, tuple[list[str], object]] = {}
    for name in presets or CPU_PRESETS:
        spec = world_spec(preset(name))
        if spec is not None:
            found.setdefault(spec.cache_name(), ([], spec))[0].append(name)
    return found


def build_one(spec, out_root: Path) -> Path:
    """Build ``spec``'s model into ``out_root/<cache name>`` with one torch thread (restored afterwards)."""
    import torch

    from genenv_lab.models.world import build_world_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return build_world_model(out_root / spec.cache_name(), spec)
    finally:
        torch.set_num_threads(threads)


def main(argv: Sequence[str] | None = None) -> int:
    from genenv_lab.models.world import SHIPPED, MARKER

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", nargs="*", help="only these presets' recipes (default: every CPU preset)")
    parser.add_argument("--out", type=Path, default=SHIPPED, help=f"where to build (default: {SHIPPED})")
    parser.add_argument("--list", action="store_true", help="list the recipes and whether each ships, build nothing")
    args = parser.parse_args(argv)
    for name, (users, spec) in recipes(args.preset).items():
        there = (args.out / name / MARKER).is_file()
        if args.list or there:
            print(f"{name}: {'ships' if there else 'missing'} ({', '.join(users)})")
            continue
        t0 = time.monotonic()
        build_one(spec, args.out)
        print(f"{name}: built in {time.monotonic() - t0:.0f} s ({', '.join(users)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
