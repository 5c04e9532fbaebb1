"""Install profiles for a Colab GPU runtime, one per GPU class: the pins, in one place (standard library only, so
that the notebook's install cell runs it before anything else is installed).

- ``colab-t4`` (compute capability below 8.0: T4, sm75): Unsloth **without vLLM**, float16. No vLLM works there
  next to this project: vLLM 0.11.2 is the last with an attention backend for sm75 (the xformers backend went in
  0.12; FLASH_ATTN needs 8.0), and it requires ``transformers<5`` and ``torch==2.9.0`` (this project needs
  transformers >= 5). The ``unsloth`` engine then generates with transformers (``fast_inference`` off); the ``hf``
  engine runs there too.
- ``colab-l4`` (8.0 and above: L4 sm89, A100 sm80, H100): Unsloth with the vLLM that pins the runtime's own torch
  (:data:`VLLM_FOR_TORCH`; every vLLM release pins one torch exactly, so keeping Colab's torch picks the vLLM),
  bfloat16. A runtime whose torch no listed vLLM pins gets the ``colab-t4`` profile, and the line says why.

Both keep Colab's preinstalled torch: the pip command holds it with a constraint (``torch==<the runtime's>``), as
Unsloth's own notebooks do. **vLLM is matched to the runtime's CUDA**: the package index's vLLM is a CUDA 13 build
from 0.20.0 on (:data:`INDEX_CUDA_FROM`), and a CUDA 12 torch (Colab's ``+cu128``) cannot load it (``libcudart.so.13``,
unslothai/notebooks#327, unsloth#6590). On a CUDA 12 torch the profile installs vLLM's own CUDA 12.9 build from its
per-CUDA wheel index (:func:`vllm_source`: ``vllm==X+cu129`` from ``https://wheels.vllm.ai/X/cu129``; vLLM releases
cu129 and cu130 builds only); where the CUDA cannot be read, it goes without vLLM and says why.

Standard library only: the card is read through ``nvidia-smi`` and the runtime's torch (and its CUDA, the version's
``+cuNNN`` label) from pip's metadata, so the install cell runs it before anything is installed; without either it
says so in one line and picks the safe profile. ``pyproject.toml``'s extras ``gpu`` and ``gpu-vllm`` mirror these pins
(tests/test_gpu_profiles.py checks that they agree); ``tests/test_gpu_resolve.py`` runs pip's resolver on each
profile with Colab's Python and platform tags.

    python -m genenv_lab.backends.profiles                      # this runtime's profile, one line, and its pip command
    python -m genenv_lab.backends.profiles --profile colab-l4 --torch 2.13.0 --pip-args
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass

INDEX_CUDA_FROM = (0, 20)
"""From this vLLM release on, the package index's vLLM wheel is built for CUDA 13 (vllm#44335)."""
VLLM_CUDA12_INDEX = "https://wheels.vllm.ai/{version}/cu129"
"""vLLM's per-CUDA wheel index of a release's CUDA 12.9 build (its wheels carry the local label ``+cu129``)."""
UNSLOTH = ("unsloth==2026.10.9", "unsloth-zoo==2026.10.9")
"""Unsloth and its zoo, one release (they pin transformers <= 5.17, trl <= 1.15, datasets < 5, torch < 2.15)."""
VLLM_FOR_TORCH = {"2.10": "0.19.1", "2.11": "0.26.0", "2.13": "0.32.0"}
"""The vLLM for each torch (major.minor) that pins that torch exactly and takes transformers >= 5 beside Unsloth's
<= 5.17 and the lab's Gradio 6 (read from each release's metadata, 2026-12). None pins torch 2.12. vLLM 0.33 and
0.34 pin torch 2.14 but require pillow >= 13, which Gradio 6 (pillow < 13) refuses: on torch 2.14 the lab and vLLM
cannot share one environment, so that runtime gets the profile without vLLM. Releases before 0.19 require
transformers < 5."""
GPU_VLLM_TORCH = "2.13"
"""The torch whose vLLM the ``gpu-vllm`` extra pins (``pip install -e '.[gpu-vllm]'`` outside Colab)."""
T4_LAST_VLLM = "vllm==0.11.2"
"""The last vLLM with an attention backend for compute capability 7.5; it requires transformers < 5 (tested as a
known conflict)."""
COLAB_PYTHON = "3.12"
"""Colab's Python (and the device machines')."""


@dataclass(frozen=True)
class Profile:
    name: str
    gpu_class: str
    dtype: str
    vllm: bool
    about: str


PROFILES = {
    "colab-t4": Profile("colab-t4", "T4 (sm75) and any card below compute capability 8.0", "float16", False,
                        "Unsloth without vLLM (fast_inference off), float16"),
    "colab-l4": Profile("colab-l4", "L4 (sm89), A100 (sm80) and newer", "bfloat16", True,
                        "Unsloth with the vLLM that pins the runtime's torch, bfloat16"),
}


def torch_minor(version: str) -> str:
    """``2.13.0+cu126`` -> ``2.13``."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m:
        raise ValueError(f"not a torch version: {version!r}")
    return f"{m.group(1)}.{m.group(2)}"


def torch_pin(version: str) -> str:
    """The constraint that keeps the runtime's torch: ``2.13.0+cu126`` -> ``torch==2.13.0``."""
    return "torch==" + version.split("+", 1)[0]


def torch_cuda(torch_version: str) -> str | None:
    """The CUDA a torch build was made for, from its local label: ``2.11.0+cu128`` -> ``12.8``; None when the
    version carries none (a CPU build says ``+cpu``: None too).

    >>> torch_cuda("2.11.0+cu128"), torch_cuda("2.13.0+cu130"), torch_cuda("2.13.0"), torch_cuda("2.13.0+cpu")
    ('12.8', '13.0', None, None)
    """
    m = re.search(r"\+cu(\d+)(\d)$", torch_version)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def vllm_source(torch_version: str, cuda: str | None) -> tuple[list[str], str]:
    """(pip arguments, what they are) of the vLLM that pins this torch and loads with its CUDA: the package index's
    build where it is made for that CUDA, else vLLM's CUDA 12.9 build from its per-CUDA index; ([], why) where none
    fits (no vLLM pins this torch, or the CUDA is unknown and the index's build may not load).

    >>> vllm_source("2.11.0+cu128", "12.8")[0]
    ['vllm==0.26.0+cu129', '--extra-index-url', 'https://wheels.vllm.ai/0.26.0/cu129']
    >>> vllm_source("2.13.0+cu130", "13.0")[0], vllm_source("2.10.0+cu128", "12.8")[0]
    (['vllm==0.32.0'], ['vllm==0.19.1'])
    >>> vllm_source("2.13.0", None)[1]
    'without vLLM: the CUDA of torch 2.13.0 is unknown (no +cuNNN label; pass --cuda)'
    """
    version = VLLM_FOR_TORCH.get(torch_minor(torch_version))
    if version is None:
        return [], (f"without vLLM: none pins torch {torch_minor(torch_version)} beside transformers >= 5 and the "
                    f"lab (known: {', '.join(sorted(VLLM_FOR_TORCH))})")
    cuda13_on_index = tuple(int(x) for x in version.split(".")[:2]) >= INDEX_CUDA_FROM
    if not cuda13_on_index:
        return [f"vllm=={version}"], f"vllm=={version} (its index build is CUDA 12)"
    if cuda is None:
        return [], f"without vLLM: the CUDA of torch {torch_version} is unknown (no +cuNNN label; pass --cuda)"
    if int(cuda.split(".")[0]) >= 13:
        return [f"vllm=={version}"], f"vllm=={version} (the index's CUDA 13 build, for torch's CUDA {cuda})"
    if int(cuda.split(".")[0]) == 12:
        index = VLLM_CUDA12_INDEX.format(version=version)
        return ([f"vllm=={version}+cu129", "--extra-index-url", index],
                f"vllm=={version}+cu129 from {index} (the index's build is CUDA 13; torch's CUDA is {cuda})")
    return [], f"without vLLM: no vLLM build for CUDA {cuda} (cu129 and cu130 only)"


def requirements(profile: str, torch_version: str, cuda: str | None = "13.0") -> list[str]:
    """The GPU requirements (pip arguments) of ``profile`` on a runtime with ``torch_version`` built for ``cuda``
    (the project itself apart; the default ``13.0`` is the package index's own build, which the resolution test
    covers)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; one of {sorted(PROFILES)}")
    reqs = list(UNSLOTH)
    if PROFILES[profile].vllm:
        vllm, why = vllm_source(torch_version, cuda)
        if not vllm:
            raise ValueError(f"{why}; use profile colab-t4")
        reqs += vllm
    return reqs


def choose(capability: tuple[int, int] | None, torch_version: str | None, name: str = "GPU",
           cuda: str | None = None) -> tuple[str | None, str]:
    """(profile, one line that says what was picked and why) for a card of ``capability`` (None: no CUDA GPU) on a
    runtime whose torch is ``torch_version`` (None: not installed) built for ``cuda`` (None: read from the version's
    label)."""
    if capability is None:
        return None, "no CUDA GPU: CPU install (the lab and the hf engine), no Unsloth"
    sm = f"sm{capability[0]}{capability[1]}"
    if torch_version is None:
        return "colab-t4", (f"{name} ({sm}): no torch installed, so no vLLM can be matched to it: profile colab-t4 "
                            "(Unsloth without vLLM); pass --torch to choose for a torch")
    if capability < (8, 0):
        return "colab-t4", (f"{name} ({sm}): profile colab-t4, Unsloth without vLLM (no vLLM for compute capability "
                            f"{capability[0]}.{capability[1]} beside transformers >= 5), float16")
    cuda = cuda or torch_cuda(torch_version)
    vllm, why = vllm_source(torch_version, cuda)
    if not vllm:
        return "colab-t4", f"{name} ({sm}): profile colab-t4, Unsloth {why}, bfloat16"
    return "colab-l4", f"{name} ({sm}): profile colab-l4, Unsloth with {why} (torch {torch_version} kept), bfloat16"


def pip_args(profile: str | None, torch_version: str | None, target: str = "genenv_lab[app]",
             cuda: str | None = None) -> list[str]:
    """``pip install`` arguments (after ``install``): the project ``target`` and the profile's requirements (with
    vLLM's index where its build must match torch's CUDA). The runtime's torch is held apart, by a constraint file
    holding :func:`torch_pin` (``-c``; see :func:`command`)."""
    if not profile or torch_version is None:
        return [target] + (list(UNSLOTH) if profile else [])
    return [target] + requirements(profile, torch_version, cuda or torch_cuda(torch_version))


def command(profile: str | None, torch_version: str | None, target: str = "genenv_lab[app]",
            constraint_file: str = "/tmp/genenv-torch.txt", cuda: str | None = None) -> str:
    """The shell command of a profile: write the torch pin, then one ``pip install`` under it (no pin without a
    torch)."""
    args = " ".join(shlex.quote(a) for a in pip_args(profile, torch_version, target, cuda))
    if torch_version is None:
        return f"pip install {args}"
    pin = shlex.quote(torch_pin(torch_version))
    return f"echo {pin} > {constraint_file} && pip install -c {constraint_file} {args}"


def detect() -> tuple[tuple[int, int] | None, str | None, str]:
    """(compute capability or None, torch version or None, card name) of this runtime, with the standard library
    only: the card from ``nvidia-smi`` (none without it), the torch version from pip's metadata (None when torch
    is not installed)."""
    import shutil
    import subprocess
    from importlib import metadata

    try:
        torch_version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, torch_version, "none"
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout.splitlines()
        name, cap = (x.strip() for x in out[0].rsplit(",", 1))
        major, minor = (int(x) for x in cap.split("."))
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None, torch_version, "none (nvidia-smi gave no card)"
    return (major, minor), torch_version, name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=sorted(PROFILES), help="default: the one this runtime's card needs")
    ap.add_argument("--torch", help="the runtime's torch version, e.g. 2.11.0+cu128 (default: the installed one)")
    ap.add_argument("--cuda", help="torch's CUDA, e.g. 12.8 (default: the torch version's +cuNNN label)")
    ap.add_argument("--capability", help="the card's compute capability, e.g. 8.9 (default: nvidia-smi's)")
    ap.add_argument("--target", default="genenv_lab[app]", help="what to install beside the profile")
    ap.add_argument("--pip-args", action="store_true", help="print the pip arguments only, one per line, after a "
                                                            "first line with the torch constraint (`torch` alone "
                                                            "when none is installed)")
    args = ap.parse_args(argv)
    try:
        capability, torch_version, name = detect()
        if args.capability:
            major, _, minor = args.capability.partition(".")
            capability, name = (int(major), int(minor or 0)), f"a card of compute capability {args.capability}"
        torch_version = args.torch or torch_version
        if torch_version is not None:
            torch_minor(torch_version)  # a version that is none: one line below
        if args.cuda and not re.fullmatch(r"\d+\.\d+", args.cuda):
            raise ValueError(f"not a CUDA version: {args.cuda!r} (e.g. 12.8)")
        if args.profile:
            profile, line = args.profile, f"profile {args.profile}: {PROFILES[args.profile].about}"
            pip_args(profile, torch_version, args.target, args.cuda)  # a torch this profile cannot take: one line
        else:
            profile, line = choose(capability, torch_version, name, args.cuda)
        if args.pip_args:
            print("\n".join([torch_pin(torch_version) if torch_version else "torch",  # no torch: no pin
                             *pip_args(profile, torch_version, args.target, args.cuda)]))
        else:
            print(line)
            print(command(profile, torch_version, args.target, cuda=args.cuda))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
