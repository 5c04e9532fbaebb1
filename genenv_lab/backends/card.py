"""What a GPU engine picks from the card it finds, said in one line: the dtype of the base weights, whether Unsloth
starts vLLM inside the process (``fast_inference``), and Standby.

- dtype: bfloat16 where the card has it (compute capability 8.0 and above: A100, L4, H100); float16 below (a T4,
  sm75, has no bfloat16). A preset's ``bfloat16`` on a T4 becomes float16; ``auto`` is the card's best. On a CPU
  the configured dtype stays (float32 in every CPU preset).
- fast_inference: only at compute capability 8.0 and above with vLLM installed (no vLLM runs on sm75 beside
  transformers >= 5: genenv_lab/backends/profiles.py), and ``GENENV_LAB_FAST_INFERENCE`` not ``0``.
- Standby (``UNSLOTH_VLLM_STANDBY=1``, which lets vLLM take 0.9 of the card and sleep around Unsloth's GRPO steps):
  off. The simulator's RWR update runs outside Unsloth's trainer, and that it fits beside a sleeping vLLM is not
  shown on a device yet (docs/gpu.md); a user who sets it is told so in the same line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

FAST_SWITCH = "GENENV_LAB_FAST_INFERENCE"
STANDBY = "UNSLOTH_VLLM_STANDBY"


@dataclass(frozen=True)
class Card:
    """The device the engine runs on: ``capability`` None for a CPU."""

    name: str
    capability: tuple[int, int] | None = None
    memory_gib: float = 0.0

    @property
    def bf16(self) -> bool:
        return self.capability is not None and self.capability >= (8, 0)

    @property
    def sm(self) -> str:
        return "cpu" if self.capability is None else f"sm{self.capability[0]}{self.capability[1]}"


CPU = Card("CPU")


def detect() -> Card:
    """The first CUDA device, or :data:`CPU`."""
    import torch

    if not torch.cuda.is_available():
        return CPU
    props = torch.cuda.get_device_properties(0)
    return Card(props.name, (props.major, props.minor), round(props.total_memory / 2**30, 1))


def pick_dtype(requested: str, card: Card) -> str:
    """The dtype to load the base in (see the module's docstring).

    >>> t4, l4 = Card("Tesla T4", (7, 5)), Card("NVIDIA L4", (8, 9))
    >>> pick_dtype("bfloat16", t4), pick_dtype("bfloat16", l4), pick_dtype("auto", t4), pick_dtype("auto", l4)
    ('float16', 'bfloat16', 'float16', 'bfloat16')
    >>> pick_dtype("float32", CPU), pick_dtype("float16", l4)
    ('float32', 'float16')
    """
    if card.capability is None:
        return requested
    if requested == "auto":
        return "bfloat16" if card.bf16 else "float16"
    if requested == "bfloat16" and not card.bf16:
        return "float16"
    return requested


def vllm_load_problem(torch_cuda: str | None = None) -> str | None:
    """Why vLLM's compiled extension does not load in this process, in one line, or None when it loads. Checked
    before Unsloth's ``fast_inference``: where vLLM was built for another CUDA than torch's (the package index's
    CUDA 13 build beside Colab's CUDA 12 torch), Unsloth turns vLLM off and then says "Please install vLLM before
    enabling fast_inference!", which names neither cause nor cure.
    """
    import importlib

    try:
        importlib.import_module("vllm._C")
    except ImportError as exc:
        text = (str(exc).splitlines() or [type(exc).__name__])[0]
        found = re.search(r"libcudart\.so\.(\d+)", text)
        need = (f": it needs the CUDA {found.group(1)} runtime, torch here is built for CUDA {torch_cuda or '?'}"
                if found else "")
        return (f"vLLM's compiled extension does not load ({text}){need}; install the vLLM the profile names: "
                "python -m genenv_lab.backends.profiles")
    return None


def pick_fast_inference(card: Card, vllm_installed: bool, environ: Mapping[str, str] | None = None,
                        vllm_problem: str | None = None) -> tuple[bool, str]:
    """(whether Unsloth starts vLLM in the process, why), by the rules of the module's docstring; ``vllm_problem``
    (:func:`vllm_load_problem`) turns it off with that reason.

    >>> pick_fast_inference(Card("Tesla T4", (7, 5)), True, {})
    (False, 'fast_inference off: compute capability 7.5 < 8.0 has no vLLM beside transformers >= 5')
    >>> pick_fast_inference(Card("NVIDIA L4", (8, 9)), True, {})
    (True, 'fast_inference on (vLLM in the process)')
    """
    environ = os.environ if environ is None else environ
    if environ.get(FAST_SWITCH, "1") == "0":
        return False, f"fast_inference off: {FAST_SWITCH}=0"
    if card.capability is None:
        return False, "fast_inference off: no CUDA GPU"
    if not card.bf16:
        major, minor = card.capability
        return False, (f"fast_inference off: compute capability {major}.{minor} < 8.0 has no vLLM beside "
                       "transformers >= 5")
    if not vllm_installed:
        return False, "fast_inference off: vLLM is not installed (profile colab-t4, or pip install -e '.[gpu-vllm]')"
    if vllm_problem:
        return False, f"fast_inference off: {vllm_problem}"
    return True, "fast_inference on (vLLM in the process)"


def standby_note(environ: Mapping[str, str] | None = None) -> str:
    """Standby as the environment sets it, in words (off unless the user turned it on)."""
    environ = os.environ if environ is None else environ
    if environ.get(STANDBY, "0") == "1":
        return f"Standby ON ({STANDBY}=1, set outside the project: the RWR update is not shown to fit under it)"
    return "Standby off"


def picked_line(engine: str, card: Card, dtype: str, fast: str | None = None,
                environ: Mapping[str, str] | None = None) -> str:
    """The one line an engine says when it starts.

    >>> picked_line("unsloth", Card("Tesla T4", (7, 5), 14.7), "float16", "fast_inference off: ...", {})
    'unsloth engine on Tesla T4 (sm75, 14.7 GiB): float16, fast_inference off: ..., Standby off'
    """
    where = "CPU" if card.capability is None else f"{card.name} ({card.sm}, {card.memory_gib} GiB)"
    parts = [dtype] + ([fast] if fast else []) + ([standby_note(environ)] if engine == "unsloth" else [])
    return f"{engine} engine on {where}: " + ", ".join(parts)
