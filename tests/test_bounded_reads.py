"""Every data file the project reads but did not write goes through one bounded reader (round 4, failure 5): a link
to ``/dev/zero`` grew a BFCL read to 22.8 GB, a FIFO hung it, ``check-domain --seeds /dev/zero`` did the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from genenv_lab.evaluation.bfcl import _read_jsonl
from genenv_lab.safe_io import UnsafeFile, read_text


@pytest.fixture
def hostile(tmp_path):
    """A link to /dev/zero and a FIFO nobody writes to."""
    zero, fifo = tmp_path / "zero.json", tmp_path / "fifo.json"
    zero.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    return zero, fifo


def test_the_data_reader_refuses_special_files_and_oversized_ones_at_once(hostile, tmp_path):
    for path in hostile:
        with pytest.raises(UnsafeFile, match="not a regular file"):
            read_text(path, "BFCL file")
        with pytest.raises(UnsafeFile):
            _read_jsonl(path)
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"{}\n" * 1000)
    with pytest.raises(UnsafeFile, match="above"):
        read_text(big, limit=100)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_text(bad)


def test_check_domain_with_a_seed_file_that_is_a_device_or_a_fifo_is_one_line(hostile):
    for path in hostile:
        proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "check-domain", "count", "--seeds", str(path)],
                              capture_output=True, text=True, timeout=120)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "not a regular file" in out and "Traceback" not in out, out
