"""Each Colab install profile resolves (genenv_lab/backends/profiles.py): pip's resolver in dry-run mode, for Colab's
Python and Linux platform tags, with the runtime's torch held fixed by a constraint, over the project's own
requirements (core and the lab's ``app`` extra, read from pyproject.toml) and the profile's GPU pins. Nothing is
installed. It needs the package index (CI has it); each resolution is time-limited.

A profile the index cannot serve (a wheel missing, the index unreachable, the time limit) skips, naming what was
missing; a conflict fails. Two known conflicts are checked to be reported as conflicts, so that the test can tell
one: the T4's last vLLM (0.11.2: transformers < 5, torch 2.9) beside this project, and the former ``gpu`` extra
(vLLM 0.33, which needs pillow >= 13) beside the lab (Gradio 6: pillow < 13).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from genenv_lab.backends import profiles

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 240  # one resolution (about 40 s alone); two run at a time
PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(35, 4, -1)] + ["manylinux2014_x86_64", "manylinux2010_x86_64",
                                                                     "manylinux1_x86_64"]
"""Colab's Ubuntu 22.04 (glibc 2.35) takes every manylinux wheel up to 2.35."""


def project_requirements() -> list[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(meta["dependencies"]) + list(meta["optional-dependencies"]["app"])


ALL = os.environ.get("GENENV_LAB_RESOLVE_ALL") == "1"
"""Set to 1 to resolve every row of VLLM_FOR_TORCH and the T4 profile on torch 2.14 as well (about 40 s each)."""
CASES = {  # name: (requirements beyond the project's, the runtime's torch, "resolves", or "conflict" and its cause)
    **{f"colab-l4 on torch {t}": (profiles.requirements("colab-l4", f"{t}.0"), f"{t}.0", "resolves")
       for t in profiles.VLLM_FOR_TORCH if ALL or t == profiles.GPU_VLLM_TORCH},
    "colab-t4 on torch 2.13": (profiles.requirements("colab-t4", "2.13.0"), "2.13.0", "resolves"),
    **({"colab-t4 on torch 2.14": (profiles.requirements("colab-t4", "2.14.0"), "2.14.0", "resolves")} if ALL else {}),
    "T4's last vLLM (0.11.2) beside transformers >= 5": (
        [*profiles.UNSLOTH, profiles.T4_LAST_VLLM], "2.9.0", "conflict", "transformers"),
    "the former gpu extra (vLLM 0.33) beside the lab": (
        [*profiles.UNSLOTH, "vllm==0.33.0"], "2.14.0", "conflict", "pillow"),
}


def resolve(extra: list[str], torch_version: str) -> dict:
    """pip's verdict on the project + ``extra`` with torch held at ``torch_version``: ``status`` is ``resolved``
    (with ``versions``), ``conflict`` (with pip's reason), or ``unavailable`` (what the index lacks, or why it
    could not be asked)."""
    with tempfile.TemporaryDirectory(prefix="genenv-resolve-") as tmp:
        cons, report = Path(tmp) / "constraints.txt", Path(tmp) / "report.json"
        cons.write_text(profiles.torch_pin(torch_version) + "\n")
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
               "--report", str(report), "--python-version", profiles.COLAB_PYTHON, "--implementation", "cp",
               "--only-binary=:all:", "--timeout", "30", "--retries", "1", "-c", str(cons),
               *[a for p in PLATFORMS for a in ("--platform", p)], *project_requirements(), *extra]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            return {"status": "unavailable", "why": f"pip did not finish in {LIMIT_S} s"}
        err = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines()
                        if not line.startswith(("WARNING: Location", "Looking in", "Collecting", "  Downloading",
                                                "  Using cached", "Requirement already")))
        if proc.returncode == 0:
            installs = json.loads(report.read_text())["install"]
            return {"status": "resolved",
                    "versions": {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installs}}
    if "ResolutionImpossible" in err:
        cause = err[err.find("The conflict is caused by"):].split("\n\n")[0] if "conflict is caused" in err else err
        return {"status": "conflict", "why": cause[-1500:]}
    missing = re.findall(r"No matching distribution found for (\S+)", err)
    if missing:
        return {"status": "unavailable", "why": f"no wheel on this index for {', '.join(sorted(set(missing)))}"}
    if re.search(r"(?i)connection|network|timed out|temporary failure|proxy|SSL", err):
        return {"status": "unavailable", "why": "the package index could not be reached: " + err.strip()[-300:]}
    return {"status": "error", "why": err[-3000:]}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(resolve, case[0], case[1]) for name, case in CASES.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("case", [n for n, c in CASES.items() if c[2] == "resolves"])
def test_each_profile_resolves_with_colabs_torch_held(verdicts, case):
    extra, torch_version = CASES[case][:2]
    v = verdicts[case]
    if v["status"] == "unavailable":
        pytest.skip(f"{case}: {v['why']}")
    assert v["status"] == "resolved", f"{case} does not resolve: {v['why']}"
    got = v["versions"]
    assert got["torch"] == torch_version, "the runtime's torch was replaced"
    assert int(got["transformers"].split(".")[0]) >= 5 and got["unsloth"] == profiles.UNSLOTH[0].split("==")[1]
    assert got.get("gradio", "").startswith("6."), "the lab's Gradio is part of every profile"
    wanted_vllm = next((r.split("==")[1] for r in extra if r.startswith("vllm==")), None)
    assert got.get("vllm") == wanted_vllm, "colab-t4 has no vLLM; colab-l4 the one that pins its torch"


@pytest.mark.parametrize("case", [n for n, c in CASES.items() if c[2] == "conflict"])
def test_a_known_conflict_is_reported_as_one(verdicts, case):
    v = verdicts[case]
    if v["status"] == "unavailable":
        pytest.skip(f"{case}: {v['why']}")
    assert v["status"] == "conflict", f"{case} was expected to conflict, pip said {v['status']}: {v.get('why', '')}"
    assert CASES[case][3] in v["why"], f"pip's reason does not name {CASES[case][3]}: {v['why']}"
