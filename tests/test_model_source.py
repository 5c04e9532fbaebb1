"""``--model`` that cannot load fails in seconds with one line, before any run folder is written."""

from __future__ import annotations

import pytest

from genenv_lab.cli.commands import main
from genenv_lab.models.loading import check_model_source


def test_project_models_and_a_model_folder_pass(tmp_path):
    check_model_source("tiny")
    check_model_source("tiny-world")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    check_model_source(str(tmp_path / "m"))


@pytest.mark.parametrize("name, match", [
    ("./does/not-exist", "no such model folder"),
    ("/nowhere/at/all", "no such model folder"),
    ("not a model id!", "not a Hugging Face id"),
])
def test_missing_folders_and_bad_ids_are_one_line_errors(name, match):
    with pytest.raises(FileNotFoundError, match=match) as info:
        check_model_source(name)
    assert "\n" not in str(info.value)


def test_folder_without_config_json(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        check_model_source(str(tmp_path))


def test_uncached_hub_id_offline_makes_no_request(monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants

    def no_network(*args, **kwargs):
        raise AssertionError("the hub must not be contacted when HF_HUB_OFFLINE is set")

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub, "model_info", no_network)
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE"):
        check_model_source("genenv-lab-tests/no-such-model")


def test_unreachable_hub_is_one_request_and_one_line(monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants

    calls = []

    def unreachable(repo_id, *, timeout=None, **kwargs):
        calls.append(timeout)
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    with pytest.raises(FileNotFoundError, match="hub cannot be reached"):
        check_model_source("genenv-lab-tests/no-such-model")
    assert len(calls) == 1 and calls[0] is not None


def test_cli_run_with_missing_model_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--model", str(tmp_path / "missing"), "--out", str(out)]) == 1
    assert not out.exists()
    assert "no such model folder" in capsys.readouterr().out


def test_cli_offline_teacher_with_a_missing_teacher_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--variant", "offline_teacher", "--set",
                 f"env.teacher_model={tmp_path / 'no-teacher'}", "--out", str(out)]) == 1
    assert not out.exists()
    assert "no such model folder" in capsys.readouterr().out


def test_lora_targets_the_model_lacks_leave_no_folder(tmp_path, capsys):
    """Round 4, L3: ``--model.target_modules no_such_module`` failed only after the model loaded, leaving a
    ``failed`` run folder; the model's layout (meta device, from its config) is checked before anything is written."""
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--model.target_modules", "no_such_module", "--out", str(out)]) == 1
    assert not out.exists()
    printed = " ".join(capsys.readouterr().out.split())
    assert "LoRA target module(s) ['no_such_module'] are not linear layers of this model" in printed
    assert "q_proj" in printed


def test_target_modules_are_checked_against_a_model_folders_own_layout(tmp_path):
    from transformers import GPT2Config

    from genenv_lab.models.loading import check_target_modules

    GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16).save_pretrained(tmp_path / "gpt2")
    check_target_modules(str(tmp_path / "gpt2"), ("c_attn", "q_proj"))  # the default's rule: what is there is kept
    with pytest.raises(ValueError, match=r"target module\(s\) \['q_proj', 'v_proj'\] are not linear.*c_attn"):
        check_target_modules(str(tmp_path / "gpt2"), ("q_proj", "v_proj"))
    with pytest.raises(ValueError, match=r"\['q_proj'\] are not linear"):  # a list of one's own: every name
        check_target_modules(str(tmp_path / "gpt2"), ("c_attn", "q_proj"), strict=True)
    check_target_modules("genenv-lab-tests/not-cached", ("anything",))  # no config at hand: checked when it loads


@pytest.mark.parametrize("targets", ["act_fn", "input_layernorm", "layers", "embed_tokens", "0", "q_proj,nope",
                                     "lm_head"])  # round 6: the output head, which peft refuses
def test_only_linear_layers_are_offered_or_accepted_as_lora_targets(targets, tmp_path, capsys):
    """Round 5: names the preflight listed (an activation, a norm, the layer list, the embeddings) passed it and
    failed after the model loaded, and ``q_proj,nope`` dropped ``nope`` without a word. Only linear layers are
    targets, and every name of a list of one's own must be one; refused before any folder is written."""
    out = tmp_path / "run"
    assert main(["run", "--preset", "tiny", "--model.target_modules", targets, "--out", str(out)]) == 1
    assert not out.exists()
    printed = " ".join(capsys.readouterr().out.split())
    offered = printed.split("some of")[1]
    assert "are not linear layers of this model" in printed and "input_layernorm" not in offered
    assert "lm_head" not in offered
