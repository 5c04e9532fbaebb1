"""Rewrite a wheel without some of its files, so that the device check's wheels fit the 64 MiB a device call carries.

    python scripts/slim_wheel.py WHEEL PREFIX [PREFIX ...]      drop every member whose path starts with a PREFIX
    python scripts/slim_wheel.py WHEEL --keep-lib NAME           of the package's lib*.so files keep NAME only

The wheel is rewritten in place, its RECORD without the dropped files' lines, so pip installs it like the original.
scripts/gpu_wheels.sh uses it for bitsandbytes (the CUDA library of the machine's CUDA only: 4 of 43 MB) and Unsloth
(without its Studio web app, which the library never imports: 3 of 29 MB). Written here because no packaging tool
removes files from a built wheel.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import PurePosixPath


def keep_member(name: str, prefixes: list[str], keep_lib: str | None) -> bool:
    """Whether the wheel member ``name`` stays: not under a dropped prefix, and, with ``keep_lib``, a shared library
    only if it is that one."""
    if any(name.startswith(p) for p in prefixes):
        return False
    base = PurePosixPath(name).name
    if keep_lib is not None and base.startswith("lib") and base.endswith(".so") and base != keep_lib:
        return False
    return True


def slim(wheel: str, prefixes: list[str], keep_lib: str | None) -> tuple[int, int]:
    """Rewrite ``wheel`` without the members ``keep_member`` drops; returns (members dropped, bytes before)."""
    before = os.path.getsize(wheel)
    with zipfile.ZipFile(wheel) as src:
        names = src.namelist()
        kept = [n for n in names if keep_member(n, prefixes, keep_lib)]
        if keep_lib is not None and not any(PurePosixPath(n).name == keep_lib for n in kept):
            sys.exit(f"{wheel} has no {keep_lib}: nothing would be left to load")
        dropped = set(names) - set(kept)
        fd, tmp = tempfile.mkstemp(suffix=".whl", dir=os.path.dirname(os.path.abspath(wheel)))
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for name in kept:
                data = src.read(name)
                if name.endswith(".dist-info/RECORD"):
                    lines = data.decode().splitlines()
                    data = ("\n".join(line for line in lines if line.split(",", 1)[0] not in dropped) + "\n").encode()
                dst.writestr(src.getinfo(name), data)
    os.replace(tmp, wheel)
    return len(dropped), before


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit(__doc__)
    wheel, rest = argv[0], argv[1:]
    keep_lib = None
    if rest[0] == "--keep-lib":
        if len(rest) != 2:
            sys.exit("--keep-lib takes one library file name, e.g. libbitsandbytes_cuda130.so")
        keep_lib, rest = rest[1], []
    n, before = slim(wheel, rest, keep_lib)
    print(f"{os.path.basename(wheel)}: {n} files dropped, {before / 2**20:.1f} -> "
          f"{os.path.getsize(wheel) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
