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
Unsloth's own notebooks do. ``pyproject.toml``'s extras ``gpu`` and ``gpu-vllm`` mirror these pins
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


def vllm_for(torch_version: str) -> str | None:
    """The ``vllm==X`` requirement for this torch, or None where no vLLM fits (see :data:`VLLM_FOR_TORCH`)."""
    v = VLLM_FOR_TORCH.get(torch_minor(torch_version))
    return f"vllm=={v}" if v else None


def requirements(profile: str, torch_version: str) -> list[str]:
    """The GPU requirements of ``profile`` on a runtime with ``torch_version`` (the project itself apart)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; one of {sorted(PROFILES)}")
    reqs = list(UNSLOTH)
    if PROFILES[profile].vllm:
        vllm = vllm_for(torch_version)
        if vllm is None:
            raise ValueError(f"no vLLM pins torch {torch_minor(torch_version)} beside transformers >= 5 and the "
                             f"lab (known: {sorted(VLLM_FOR_TORCH)}); use profile colab-t4")
        reqs.append(vllm)
    return reqs


def choose(capability: tuple[int, int] | None, torch_version: str, name: str = "GPU") -> tuple[str | None, str]:
    """(profile, one line that says what was picked and why) for a card of ``capability`` (None: no CUDA GPU)."""
    if capability is None:
        return None, "no CUDA GPU: CPU install (the lab and the hf engine), no Unsloth"
    sm = f"sm{capability[0]}{capability[1]}"
    if capability < (8, 0):
        return "colab-t4", (f"{name} ({sm}): profile colab-t4, Unsloth without vLLM (no vLLM for compute capability "
                            f"{capability[0]}.{capability[1]} beside transformers >= 5), float16")
    vllm = vllm_for(torch_version)
    if vllm is None:
        return "colab-t4", (f"{name} ({sm}): torch {torch_version} has no vLLM beside transformers >= 5 and the lab: "
                            "profile colab-t4 (Unsloth without vLLM), bfloat16")
    return "colab-l4", f"{name} ({sm}): profile colab-l4, Unsloth with {vllm} (torch {torch_version} kept), bfloat16"


def pip_args(profile: str | None, torch_version: str, target: str = "genenv_lab[app]") -> list[str]:
    """``pip install`` arguments (after ``install``): the project ``target`` and the profile's requirements. The
    runtime's torch is held apart, by a constraint file holding :func:`torch_pin` (``-c``; see :func:`command`)."""
    return [target] + (requirements(profile, torch_version) if profile else [])


def command(profile: str | None, torch_version: str, target: str = "genenv_lab[app]",
            constraint_file: str = "/tmp/genenv-torch.txt") -> str:
    """The shell command of a profile: write the torch pin, then one ``pip install`` under it."""
    args = " ".join(shlex.quote(a) for a in pip_args(profile, torch_version, target))
    pin = shlex.quote(torch_pin(torch_version))
    return f"echo {pin} > {constraint_file} && pip install -c {constraint_file} {args}"


def detect() -> tuple[tuple[int, int] | None, str, str]:
    """(compute capability or None, torch version, card name) of this runtime; torch must be importable."""
    import torch

    if not torch.cuda.is_available():
        return None, torch.__version__, "none"
    return torch.cuda.get_device_capability(0), torch.__version__, torch.cuda.get_device_name(0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=sorted(PROFILES), help="default: the one this runtime's card needs")
    ap.add_argument("--torch", help="the runtime's torch version (default: the installed one)")
    ap.add_argument("--target", default="genenv_lab[app]", help="what to install beside the profile")
    ap.add_argument("--pip-args", action="store_true", help="print the pip arguments only, one per line, after a "
                                                            "first line with the torch constraint")
    args = ap.parse_args(argv)
    capability, torch_version, name = detect() if args.torch is None or args.profile is None else (None, "", "")
    torch_version = args.torch or torch_version
    if args.profile:
        profile, line = args.profile, f"profile {args.profile}: {PROFILES[args.profile].about}"
    else:
        profile, line = choose(capability, torch_version, name)
    if args.pip_args:
        print("\n".join([torch_pin(torch_version), *pip_args(profile, torch_version, args.target)]))
    else:
        print(line)
        print(command(profile, torch_version, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
