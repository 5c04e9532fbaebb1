"""How long `genenv-lab run` takes to reach its first epoch on an empty model cache, for every CPU preset: the time
from the command's start to the run's ``started`` line in ``events.log``, and to its first committed epoch (an upper
bound of when epoch 1 started: the model loaded, the untrained agent evaluated, epoch 1 trained and written).

    python benchmarks/first_epoch.py                   # every CPU preset, one at a time, each on a fresh cache
    python benchmarks/first_epoch.py --preset cpu-dry-hint-long tiny

A preset whose world model ships (data/world_models/) loads it; one whose does not would build it here first, which
is what this measures. Written by hand: a timer around the CLI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from genenv_lab.config import CPU_PRESETS  # noqa: E402


def first_epoch(preset: str, limit: float) -> tuple[float | None, float | None]:
    """(seconds to the run's start, seconds to epoch 1's commit) of ``preset`` on a fresh cache; None past
    ``limit``."""
    with tempfile.TemporaryDirectory(prefix="genenv-first-") as tmp:
        out, env = Path(tmp) / "run", {**os.environ, "GENENV_LAB_CACHE": str(Path(tmp) / "cache")}
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", preset, "--epochs", "1",
                                 "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = commit = None
        try:
            while commit is None and time.monotonic() - t0 < limit:
                done = proc.poll() is not None  # read the log once more after the process ends
                log = out / "events.log"
                text = log.read_text(errors="replace") if log.is_file() else ""
                if start is None and " started " in text:
                    start = time.monotonic() - t0
                if "epoch 1 complete" in text:
                    commit = time.monotonic() - t0
                if done:
                    break
                time.sleep(0.2)
        finally:
            proc.kill()
            proc.wait()
        return start, commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", nargs="*", default=list(CPU_PRESETS))
    parser.add_argument("--limit", type=float, default=600, help="give up on a preset after this many seconds")
    args = parser.parse_args(argv)
    print(f"{'preset':<20} {'run started (s)':>15} {'epoch 1 committed (s)':>22}")
    for name in args.preset:
        start, commit = (f"{v:.0f}" if v is not None else f"> {args.limit:.0f}"
                         for v in first_epoch(name, args.limit))
        print(f"{name:<20} {start:>15} {commit:>22}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
