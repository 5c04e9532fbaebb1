"""scripts/slim_wheel.py: the device check's wheels made to fit a device call (bitsandbytes with one CUDA library,
Unsloth without its Studio app), still installable by pip."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("slim_wheel", ROOT / "scripts" / "slim_wheel.py")
slim_wheel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slim_wheel)


def test_members_kept_and_dropped():
    keep = slim_wheel.keep_member
    assert not keep("studio/app.js", ["studio/"], None)
    assert keep("unsloth/__init__.py", ["studio/"], None)
    lib = "libbitsandbytes_cuda130.so"
    assert keep("bitsandbytes/libbitsandbytes_cuda130.so", [], lib)
    assert not keep("bitsandbytes/libbitsandbytes_cuda128.so", [], lib)
    assert keep("bitsandbytes/functional.py", [], lib)  # only shared libraries are chosen among


def _wheel(path: Path) -> Path:
    """A minimal pure wheel of a package ``pkg`` with two shared-library stand-ins and a ``studio`` folder."""
    wheel = path / "pkg-1.0-py3-none-any.whl"
    files = {"pkg/__init__.py": "VALUE = 7\n", "pkg/libpkg_cuda130.so": "a", "pkg/libpkg_cuda128.so": "b",
             "studio/index.html": "<html>", "pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pkg\n"
             "Version: 1.0\n", "pkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
             "true\nTag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "pkg-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in {**files, "pkg-1.0.dist-info/RECORD": record}.items():
            zf.writestr(name, text)
    return wheel


def test_a_slimmed_wheel_installs_without_the_dropped_files(tmp_path):
    wheel = _wheel(tmp_path)
    for args in (["studio/"], ["--keep-lib", "libpkg_cuda130.so"]):
        subprocess.run([sys.executable, str(ROOT / "scripts" / "slim_wheel.py"), str(wheel), *args], check=True)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        record = zf.read("pkg-1.0.dist-info/RECORD").decode()
    assert names == {"pkg/__init__.py", "pkg/libpkg_cuda130.so", "pkg-1.0.dist-info/METADATA",
                     "pkg-1.0.dist-info/WHEEL", "pkg-1.0.dist-info/RECORD"}
    assert "studio/" not in record and "cuda128" not in record and "cuda130" in record
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(target),
                    str(wheel)], check=True)
    assert (target / "pkg" / "libpkg_cuda130.so").exists() and not (target / "studio").exists()


def test_keeping_a_library_the_wheel_lacks_is_refused(tmp_path):
    wheel = _wheel(tmp_path)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "slim_wheel.py"), str(wheel), "--keep-lib",
                           "libpkg_cuda999.so"], capture_output=True, text=True)
    assert proc.returncode != 0 and "has no libpkg_cuda999.so" in proc.stderr
    with zipfile.ZipFile(wheel) as zf:
        assert "pkg/libpkg_cuda128.so" in zf.namelist()  # untouched


@pytest.mark.parametrize("argv", [[], ["x.whl"], ["x.whl", "--keep-lib"]])
def test_bad_arguments_say_what_to_pass(argv):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "slim_wheel.py"), *argv], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and proc.stderr.strip()
