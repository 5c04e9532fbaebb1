"""The Colab GPU path's pure parts: install profiles (genenv_lab/backends/profiles.py) and the extras that mirror
them, what an engine picks from a card (genenv_lab/backends/card.py), the GPU presets, Qwen3's thinking held off,
the preset shapes (genenv_lab/backends/shapes.py). The profiles' resolution with pip is tests/test_gpu_resolve.py;
the shapes measured are tests/test_gpu_shapes.py."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import pytest

from genenv_lab.backends import card, profiles, shapes
from genenv_lab.config import preset
from genenv_lab.config.presets import notebook_preset

ROOT = Path(__file__).resolve().parent.parent
T4, L4, A100 = card.Card("Tesla T4", (7, 5), 14.7), card.Card("NVIDIA L4", (8, 9), 22.0), card.Card("A100", (8, 0))


def test_the_extras_mirror_the_profiles_and_no_extra_pins_a_vllm_a_t4_cannot_run():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["gpu"] == profiles.requirements("colab-t4", "2.13.0") == list(profiles.UNSLOTH)
    assert extras["gpu-vllm"] == profiles.requirements("colab-l4", profiles.GPU_VLLM_TORCH + ".0")
    assert not any(r.startswith("vllm") for r in extras["gpu"])


@pytest.mark.parametrize("gpu, torch_version, profile, words", [
    (T4, "2.13.0+cu126", "colab-t4", ["sm75", "without vLLM", "float16"]),
    (L4, "2.13.0+cu130", "colab-l4", ["sm89", "vllm==0.32.0 (the index's CUDA 13 build", "torch 2.13.0+cu130 kept"]),
    (L4, "2.13.0+cu126", "colab-l4", ["vllm==0.32.0+cu129 from https://wheels.vllm.ai/0.32.0/cu129"]),
    (A100, "2.11.0+cu128", "colab-l4", ["sm80", "vllm==0.26.0+cu129 from https://wheels.vllm.ai/0.26.0/cu129"]),
    (L4, "2.10.0+cu128", "colab-l4", ["vllm==0.19.1 (its index build is CUDA 12)"]),
    (A100, "2.11.0", "colab-t4", ["without vLLM: the CUDA of torch 2.11.0 is unknown"]),
    (L4, "2.14.0+cu130", "colab-t4", ["without vLLM: none pins torch 2.14"]),
    (L4, "2.12.1+cu128", "colab-t4", ["none pins torch 2.12"]),
    (L4, "2.11.0+cu118", "colab-t4", ["no vLLM build for CUDA 11.8"]),
    (L4, None, "colab-t4", ["no torch installed", "pass --torch"]),
])
def test_the_decision_table_card_torch_and_cuda_to_profile_index_and_pins(gpu, torch_version, profile, words):
    """Issue 67: torch version × its CUDA × compute capability → profile, vLLM source and pins. A CUDA 12 torch
    gets vLLM's CUDA 12.9 build from its per-CUDA index (the package index's is CUDA 13 from 0.20); an unknown CUDA
    or torch goes without vLLM and says why."""
    chosen, line = profiles.choose(gpu.capability, torch_version, gpu.name)
    assert chosen == profile and all(w in line for w in words), line
    assert "\n" not in line
    cmd = profiles.command(chosen, torch_version)
    if torch_version:
        assert f"torch=={torch_version.split('+')[0]}" in cmd and " -c " in cmd  # Colab's torch held
    assert ("vllm==" in cmd) == (profile == "colab-l4")
    assert ("--extra-index-url https://wheels.vllm.ai/" in cmd) == ("+cu129" in line)


def test_no_gpu_installs_the_lab_only_and_an_unknown_profile_is_refused():
    assert profiles.choose(None, "2.13.0") == (None, profiles.choose(None, "2.13.0")[1])
    assert profiles.pip_args(None, "2.13.0") == ["genenv_lab[app]"]
    with pytest.raises(ValueError, match="unknown profile"):
        profiles.requirements("colab-v100", "2.13.0")
    with pytest.raises(ValueError, match="none pins torch 2.12"):
        profiles.requirements("colab-l4", "2.12.0")


def test_the_profile_command_line_prints_the_pip_arguments(capsys):
    assert profiles.main(["--profile", "colab-l4", "--torch", "2.11.0+cu128", "--pip-args"]) == 0
    assert capsys.readouterr().out.split() == ["torch==2.11.0", "genenv_lab[app]", *profiles.UNSLOTH,
                                               "vllm==0.26.0+cu129", "--extra-index-url",
                                               "https://wheels.vllm.ai/0.26.0/cu129"]
    assert profiles.main(["--profile", "colab-l4", "--torch", "2.13.0+cu130", "--pip-args"]) == 0
    assert capsys.readouterr().out.split()[-1] == "vllm==0.32.0"
    for bad in (["--profile", "colab-l4", "--torch", "banana"], ["--profile", "colab-l4", "--torch", "2.12.0+cu128"],
                ["--torch", "2.11.0+cu128", "--cuda", "twelve"]):
        assert profiles.main(bad) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_the_install_cell_runs_before_anything_is_installed(tmp_path):
    """Issue 67: in a venv with no third-party package, the profiles module exits 0 with its line and command, and
    names a CUDA 12 vLLM source (or says without vLLM) when told the runtime is torch 2.11 / CUDA 12.8 on an L4."""
    import subprocess
    import sys
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    py = tmp_path / "bare" / "bin" / "python"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    bare = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('torch'))"], env=env,
                          capture_output=True, text=True, check=True)
    assert bare.stdout.strip() == "None"
    plain = subprocess.run([str(py), "-m", "genenv_lab.backends.profiles"], env=env, capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    assert len(plain.stdout.splitlines()) == 2 and "pip install" in plain.stdout.splitlines()[1]
    told = subprocess.run([str(py), "-m", "genenv_lab.backends.profiles", "--torch", "2.11.0+cu128", "--capability",
                           "8.9"], env=env, capture_output=True, text=True)
    assert told.returncode == 0 and "https://wheels.vllm.ai/0.26.0/cu129" in told.stdout, told.stdout + told.stderr
    assert sys.executable != str(py)


def test_the_engine_picks_dtype_and_fast_inference_from_the_card_and_says_so_in_one_line():
    assert card.pick_dtype("bfloat16", T4) == "float16" and card.pick_dtype("bfloat16", L4) == "bfloat16"
    on, why = card.pick_fast_inference(L4, vllm_installed=False, environ={})
    assert not on and "not installed" in why
    assert card.pick_fast_inference(L4, True, {card.FAST_SWITCH: "0"})[0] is False
    line = card.picked_line("unsloth", T4, "float16", card.pick_fast_inference(T4, True, {})[1], {})
    assert "\n" not in line and "float16" in line and "fast_inference off" in line and "Standby off" in line
    standby = card.picked_line("unsloth", L4, "bfloat16", "x", {card.STANDBY: "1"})
    assert "Standby ON" in standby and "not shown to fit" in standby


def test_the_gpu_presets_are_16_bit_lora_on_current_small_models():
    t4, l4, old = preset("colab-t4"), preset("colab-l4"), preset("colab-t4-qwen2.5")
    assert (t4.model.name_or_path, t4.model.dtype) == ("Qwen/Qwen3-0.6B", "float16")
    assert (l4.model.name_or_path, l4.model.dtype) == ("Qwen/Qwen3-1.7B", "bfloat16")
    assert old.model.name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
    for cfg in (t4, l4, old, preset("a100")):
        assert cfg.model.load_in_4bit is False and cfg.model.engine == "unsloth" and cfg.model.lora_r == 16
        assert cfg.preset in shapes.TARGETS  # each has a shape to measure


def test_the_notebook_picks_the_gpu_preset_by_the_cards_class(monkeypatch):
    """CUDA cannot run here: the card's properties are given, as torch reports them on each card."""
    import importlib.util

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "unsloth" else real(n, *a))
    for (major, minor, gib), want in [((7, 5, 14.7), "colab-t4"), ((8, 9, 22.0), "colab-l4"), ((8, 0, 79.1), "a100"),
                                      ((7, 0, 31.7), "colab-t4")]:  # a V100 32 GB: no bfloat16, no vLLM either
        props = types.SimpleNamespace(major=major, minor=minor, total_memory=gib * 2**30)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i, p=props: p)
        assert notebook_preset({}) == want


def test_thinking_is_held_off_in_a_template_that_has_the_switch():
    from genenv_lab.backends.hf import thinking_off

    tok = shapes.build_tokenizer(152000 // 8, template=shapes.QWEN3_TEMPLATE)  # a smaller vocabulary, same template
    msgs = [{"role": "user", "content": "What is 3 + 4?"}]
    assert "<think>" not in tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    thinking_off(thinking_off(tok))
    text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert tok.chat_template.count("set enable_thinking") == 1
    chatml = shapes.build_tokenizer(1000, template=shapes.CHATML_TEMPLATE)
    assert thinking_off(chatml).chat_template == shapes.CHATML_TEMPLATE  # no switch: unchanged


def test_a_shape_tokenizer_covers_its_vocabulary_and_round_trips_generated_ids():
    tok = shapes.build_tokenizer(2000, template=shapes.CHATML_TEMPLATE, words=["Task", "to"])
    assert len(tok) == 2000 and tok.eos_token_id < 2000 and tok.pad_token_id < 2000
    ids = list(range(0, 2000, 7))
    assert tok(tok.decode(ids), add_special_tokens=False)["input_ids"] == ids
    assert tok("Task: 3 to 17", add_special_tokens=False)["input_ids"] == [tok.convert_tokens_to_ids(t)
                                                                          for t in ["Task", ":", "3", "to", "17"]]


def test_the_shapes_are_the_models_true_architectures():
    from transformers import AutoConfig

    for name, fields in shapes.SHAPES.items():
        config = AutoConfig.for_model(**fields)
        assert config.vocab_size == 151936 and config.tie_word_embeddings, name
    sliced = shapes.config_fields("qwen3-0.6b", layers=2)
    assert sliced["num_hidden_layers"] == 2 and sliced["hidden_size"] == 1024 and sliced["vocab_size"] == 151936


def test_the_profile_runs_from_the_wheel_before_anything_is_installed(tmp_path):
    """The quickstart's Colab cell runs ``python -m genenv_lab.backends.profiles`` with the uploaded wheel (a zip) as
    its only copy of the package: the module needs nothing but the standard library (and torch, which Colab has)."""
    import subprocess
    import sys
    import zipfile

    wheel = tmp_path / "genenv_lab-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for part in ("__init__.py", "backends/__init__.py", "backends/profiles.py"):
            z.write(ROOT / "genenv_lab" / part, f"genenv_lab/{part}")
    proc = subprocess.run([sys.executable, "-S", "-m", "genenv_lab.backends.profiles", "--profile", "colab-t4",
                           "--torch", "2.13.0+cu126", "--target", f"{wheel}[app]", "--pip-args"],
                          env={"PYTHONPATH": str(wheel)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["torch==2.13.0", f"{wheel}[app]", *profiles.UNSLOTH]
    notebook = (ROOT / "notebooks" / "00_quickstart.ipynb").read_text()
    assert "genenv_lab.backends.profiles" in notebook and "--pip-args" in notebook


def test_a_vllm_built_for_another_cuda_turns_fast_inference_off_and_says_why(monkeypatch):
    """Issue 67: before fast_inference, the engine checks that vLLM's compiled extension loads; where it needs
    another CUDA runtime than torch's, one line says which (not Unsloth's "Please install vLLM")."""
    import importlib

    def fail(name):
        raise ImportError("libcudart.so.13: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(importlib, "import_module", fail)
    problem = card.vllm_load_problem("12.8")
    assert "needs the CUDA 13 runtime, torch here is built for CUDA 12.8" in problem and "\n" not in problem
    on, why = card.pick_fast_inference(L4, True, {}, vllm_problem=problem)
    assert not on and why == f"fast_inference off: {problem}"
    monkeypatch.setattr(importlib, "import_module", lambda name: None)
    assert card.vllm_load_problem("12.8") is None and card.pick_fast_inference(L4, True, {}, None)[0]
