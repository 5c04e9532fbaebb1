"""Config dataclasses: validation messages, presets, round trip through config.json."""

import dataclasses
import json
import subprocess
import sys

import pytest

from genenv_lab.coevolution.resolve import for_domain, load_run_config, resolve
from genenv_lab.config import (PRESETS, AgentConfig, ConfigError, CurriculumConfig, EnvConfig, RunConfig, load_config,
                               preset)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_build_and_round_trip(name):
    cfg = preset(name)
    assert cfg.preset == name
    again = RunConfig.from_dict(json.loads(cfg.to_json()))
    assert again == cfg


def test_configs_are_frozen():
    cfg = preset("tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.agent.num_generations = 3


@pytest.mark.parametrize("factory, field, bad, needle", [
    (lambda v: AgentConfig(num_generations=v), "num_generations", 1, "≥ 2"),
    (lambda v: CurriculumConfig(alpha=v), "alpha", 1.5, "≤ 1.0"),
    (lambda v: CurriculumConfig(shape=v), "shape", "cubic", "gaussian"),
    (lambda v: EnvConfig(kl_cap=v), "kl_cap", 0.0, "> 0.0"),
    (lambda v: EnvConfig(n_variations=v), "n_variations", 2.5, "an integer"),
])
def test_bad_values_name_field_and_range(factory, field, bad, needle):
    with pytest.raises(ConfigError) as err:
        factory(bad)
    assert field in str(err.value) and needle in str(err.value)


def test_replace_validates_and_rejects_unknown_fields():
    cfg = preset("tiny").replace(loop={"epochs": 5})
    assert cfg.loop.epochs == 5 and cfg.agent == preset("tiny").agent
    with pytest.raises(ConfigError, match="epochz"):
        preset("tiny").replace(loop={"epochz": 5})
    unknown = preset("tiny").replace(loop={"domain": "chess"})  # the config checks its own fields only
    with pytest.raises(ConfigError, match=r"LoopConfig.domain='chess' is invalid"):
        resolve(unknown)  # the registry's names are checked at the edge (run, preflight, the CLI, compare)


def test_cli_bad_value_fails_before_any_model_loads(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "tiny", "--epochs", "0",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "LoopConfig.epochs=0" in proc.stdout and "≥ 1" in proc.stdout
    assert not out.exists()  # nothing written, nothing loaded


def test_gpu_preset_without_gpu_fails_at_once_naming_cpu_presets(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "run", "--preset", "colab-t4", "--out",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "needs a CUDA GPU" in proc.stdout and "tiny" in proc.stdout and "cpu-demo" in proc.stdout
    assert not (tmp_path / "r").exists()


def test_a_gpu_engine_run_resumed_without_a_gpu_is_told_where_it_resumes(tmp_path, monkeypatch, capsys):
    """Round 5, P10: an unsloth run resumed from the core venv was told ``use a CPU preset: tiny, ...`` although it
    was a tiny run: a resumed run keeps its engine. The line says where it resumes (a GPU, or Unsloth's CPU
    fallback in its own venv) and writes nothing."""
    import torch

    from genenv_lab.cli.commands import main

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.delenv("GENENV_LAB_UNSLOTH_CPU", raising=False)
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(preset("tiny").replace(model={"engine": "unsloth"}).to_json())
    assert main(["run", "--out", str(run), "--resume"]) == 1
    printed = " ".join(capsys.readouterr().out.split())
    assert "a resumed run keeps its engine" in printed and "GENENV_LAB_UNSLOTH_CPU=1" in printed
    assert "setup_unsloth_cpu.sh" in printed and "use a CPU preset" not in printed
    assert sorted(p.name for p in run.iterdir()) == ["config.json"]


def test_for_domain_applies_recommendations_without_shrinking():
    tools = for_domain(preset("cpu-smollm2"), "tools")
    assert tools.loop.domain == "tools" and tools.env.max_new_tokens == 512
    # cpu-smollm2 scores the domain's own held-out set every epoch: tools ships none, so that is turned off
    assert preset("cpu-smollm2").eval.every == 1 and tools.eval.every == 0
    assert for_domain(preset("cpu-smollm2"), "arith").eval.every == 1  # arith ships one
    qa = for_domain(preset("tiny"), "qa")
    assert qa.agent.success_threshold == 0.5
    big = preset("cpu-smollm2").replace(env={"max_new_tokens": 2048})
    assert for_domain(big, "tools").env.max_new_tokens == 2048
    with pytest.raises(ConfigError, match="domain"):
        for_domain(preset("tiny"), "chess")


def test_cli_set_reaches_any_field_and_is_validated():
    from genenv_lab.cli.flags import run_config_from
    from genenv_lab.cli.commands import build_parser

    parse = build_parser().parse_args
    cfg = run_config_from(parse(["run", "--preset", "cpu-demo", "--set", "curriculum.alpha=0.3", "--set",
                             "env.kl_coef=2", "--set", "model.target_modules=[\"q_proj\"]", "--epochs", "4"]))
    assert (cfg.curriculum.alpha, cfg.env.kl_coef, cfg.model.target_modules, cfg.loop.epochs) == \
        (0.3, 2, ("q_proj",), 4)
    for bad, message in (("curriculum.alpha=1.5", "alpha"), ("env.nope=1", "no field"), ("foo.bar=1", "section"),
                         ("alpha=0.3", "SECTION.FIELD=VALUE"), ("preset.x=1", "no config section 'preset'"),
                         ("loop.epochs=2.5", "whole number"), ("model.separate_adapters=maybe", "true or false"),
                         ("curriculum.alpha=high", "a number")):
        with pytest.raises(ConfigError, match=message):
            run_config_from(parse(["run", "--set", bad]))
    # a boolean is a boolean however it is spelt ("False" used to be stored as the text, and run as true)
    for spelling, expected in (("False", False), ("false", False), ("0", False), ("True", True), ("on", True)):
        cfg = run_config_from(parse(["run", "--preset", "tiny", "--set", f"model.separate_adapters={spelling}"]))
        assert cfg.model.separate_adapters is expected


@pytest.mark.parametrize("argv, message", [
    (["compare", "--presets", "tiny", "--epochs", "0", "--out", "x"], "--epochs: 0 is below 1"),
    (["compare", "--presets", "tiny", "--seeds", "0", "--out", "x"], "--seeds: 0 is below 1"),
    (["compare", "--presets", "tiny", "--seeds", "-1", "--out", "x"], "--seeds: -1 is below 1"),
    (["compare", "--presets", "tiny", "--first-seed", "-1", "--out", "x"], "--first-seed: -1 is below 0"),
    (["sweep", "--first-seed", "two", "--out", "x"], "--first-seed: 'two' is not an integer"),
    (["eval", "--benchmark", "bfcl", "--limit", "-1"], "--limit: -1 is below 1"),
    (["run", "--model", ""], "--model: an empty value names nothing"),
    (["eval", "--benchmark", "bfcl", "--model", " "], "--model: an empty value names nothing"),
    (["run", "--out", ""], "--out: an empty value names nothing"),
    (["compare", "--presets", "tiny", "--out", ""], "--out: an empty value names nothing"),
    (["eval", "--benchmark", "bfcl", "--out", " "], "--out: an empty value names nothing"),
])
def test_cli_refuses_values_that_cannot_be_right(argv, message, capsys):
    from genenv_lab.cli.commands import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_compare_refuses_a_run_folder_as_its_out(tmp_path, capsys):
    """``compare --out <a run>`` used to turn the run into a comparison folder; now it is refused, untouched."""
    from genenv_lab.cli.commands import main

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")
    (run_dir / "state.json").write_text("{}")
    before = sorted(p.name for p in run_dir.iterdir())
    assert main(["compare", "--presets", "tiny", "--seeds", "1", "--out", str(run_dir)]) == 2
    assert "is a run folder" in capsys.readouterr().out
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_one_field_two_spellings_two_values_is_refused_and_a_domain_is_a_domain_however_written():
    """``--epochs 2 --loop.epochs 5 --set loop.epochs=7`` used to run 5 epochs; ``--loop.domain tools`` skipped the
    domain's recommended settings that ``--domain tools`` applies."""
    from genenv_lab.cli.flags import run_config_from
    from genenv_lab.cli.commands import build_parser

    parse = build_parser().parse_args
    with pytest.raises(ConfigError, match=r"loop.epochs is given different values .*--epochs 2.*give it once"):
        run_config_from(parse(["run", "--epochs", "2", "--loop.epochs", "5", "--set", "loop.epochs=7"]))
    assert run_config_from(parse(["run", "--epochs", "3", "--loop.epochs", "3"])).loop.epochs == 3  # agreeing: fine
    by_flag = run_config_from(parse(["run", "--domain", "tools"]))
    assert run_config_from(parse(["run", "--loop.domain", "tools"])) == by_flag
    assert run_config_from(parse(["run", "--set", "loop.domain=tools"])) == by_flag
    assert by_flag.env.max_new_tokens > preset("tiny").env.max_new_tokens  # the domain's recommendation applied
    explicit = run_config_from(parse(["run", "--domain", "tools", "--agent.max_completion_length", "200"]))
    assert explicit.agent.max_completion_length == 200  # an explicit field still wins over the recommendation


def test_a_config_file_starts_a_run_and_resume_alone_continues_one(tmp_path, capsys):
    """``--config runs/X/config.json`` reproduces X's configuration (flags still override it); ``--resume`` with
    only ``--out`` continues a run with its own configuration, whatever preset it came from."""
    from genenv_lab.cli.flags import run_config_from
    from genenv_lab.cli.commands import build_parser, main

    parse = build_parser().parse_args
    first = tmp_path / "x"
    assert main(["run", "--preset", "tiny", "--epochs", "1", "--set", "curriculum.alpha=0.4",
                 "--out", str(first)]) == 0
    saved = json.loads((first / "config.json").read_text())
    assert json.loads(run_config_from(parse(["run", "--config", str(first / "config.json")])).to_json()) == saved
    again = run_config_from(parse(["run", "--config", str(first / "config.json"), "--epochs", "3"]))
    assert again.loop.epochs == 3 and again.curriculum.alpha == 0.4
    assert main(["run", "--out", str(first), "--resume", "--epochs", "2"]) == 0
    assert len((first / "epochs.jsonl").read_text().splitlines()) == 2
    (tmp_path / "c.yaml").write_text("preset: mine\nloop:\n  epochs: 2\ncurriculum:\n  alpha: 0.3\n")
    from_yaml = run_config_from(parse(["run", "--config", str(tmp_path / "c.yaml")]))
    assert (from_yaml.preset, from_yaml.loop.epochs, from_yaml.curriculum.alpha) == ("mine", 2, 0.3)
    for bad, message in (("[1, 2]", "not a configuration"), ('{"loop": {"nope": 1}}', "no field"),
                         ("{not json", "cannot be read")):
        (tmp_path / "bad.json").write_text(bad)
        with pytest.raises(ConfigError, match=message):
            run_config_from(parse(["run", "--config", str(tmp_path / "bad.json")]))
    with pytest.raises(ConfigError, match="not both"):
        run_config_from(parse(["run", "--config", str(first / "config.json"), "--preset", "tiny"]))


@pytest.mark.parametrize("text, message", [
    ('{"model": {"separate_adapters": "false"}}', "separate_adapters.*true or false"),
    ('{"model": {"load_in_4bit": 1}}', "load_in_4bit.*true or false"),
    ('{"loop": {"save_adapters": "no"}}', "save_adapters.*true or false"),
    ('{"preset": {"a": 1}}', "preset="),
    ('{"preset": "' + "x" * 1000 + '"}', "preset="),
    ('{"model": {"target_modules": "q_proj"}}', "target_modules.*list of strings"),
    ('{"model": {"target_modules": [["q_proj"]]}}', "target_modules.*list of strings"),
    ('{"loop": {"epochs": true}}', "epochs.*whole number"),
    ('{"loop": null}', "LoopConfig section is NoneType"),
])
def test_config_files_are_typed_like_flags(tmp_path, text, message):
    """Round 4, failure 10: config-file values were not type-checked where ``--set`` values are."""
    path = tmp_path / "cfg.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_config_files_preset_is_applied_under_its_values_and_named_exactly(tmp_path):
    """Round 5, P8: ``{"preset": "tiny", "loop": {"epochs": 1}}`` loaded the defaults (16 fields other than tiny's:
    lora_r 8, env.lr 1e-4, ...) labelled tiny, and fullwidth or dotless-i spellings of a name were accepted. The
    preset is applied, the file's values over it; the name must be a preset's, exactly, or "custom"."""
    from genenv_lab.cli.commands import build_parser
    from genenv_lab.cli.flags import run_config_from

    path = tmp_path / "tiny_partial.json"
    path.write_text('{"preset": "tiny", "loop": {"epochs": 1}}')
    cfg = load_config(path)
    assert cfg == preset("tiny").replace(loop={"epochs": 1}) and cfg.preset == "tiny"
    assert (cfg.model.lora_r, cfg.env.lr) == (preset("tiny").model.lora_r, preset("tiny").env.lr)
    assert run_config_from(build_parser().parse_args(["run", "--config", str(path), "--epochs", "2"])) == \
        preset("tiny").replace(loop={"epochs": 2})  # the command line's options over the file's
    path.write_text('{"preset": "cpu-demo", "env": {"lr": 0.001}, "agent": {"max_completion_length": 9}}')
    assert load_config(path) == preset("cpu-demo").replace(env={"lr": 0.001}, agent={"max_completion_length": 9})
    path.write_text('{"preset": "tiny", "loop": {"domain": "count"}, "agent": {"max_completion_length": 7}}')
    assert load_config(path) == preset("tiny").replace(loop={"domain": "count"}, agent={"max_completion_length": 7})
    path.write_text('{"preset": "tiny", "loop": {"domain": "tools"}, "agent": {"max_completion_length": 7}}')
    assert load_config(path).env == preset("tiny").env  # the file as written: load_config imports no domain
    given = {"agent": {"max_completion_length": 7}}
    assert load_run_config(path) == for_domain(preset("tiny").replace(**given), "tools", given=given)
    assert load_run_config(path).env.max_new_tokens == 512  # run --config: the new domain's settings, but the file's
    for name in PRESETS:  # a run's own config.json gives every field: it reads as it was written
        written = preset(name).replace(loop={"epochs": 3}, curriculum={"alpha": 0.3})
        path.write_text(written.to_json())
        assert load_config(path) == written
    for text in ('{"loop": {"epochs": 1}}', '{"preset": "custom", "loop": {"epochs": 1}}',
                 '{"preset": "mine", "loop": {"epochs": 1}}'):  # no preset: the defaults, under the file's label
        path.write_text(text)
        cfg = load_config(path)
        assert cfg.replace(preset="custom") == RunConfig().replace(loop={"epochs": 1})
        assert cfg.preset == json.loads(text).get("preset", "custom")
    for spelling, shown in (("\uff54\uff49\uff4e\uff59", "\\uff54"), ("t\u0131ny", "\\u0131"), ("Tiny", "'Tiny'"),
                            ("tiny ", "'tiny '"), ("CPU-demo", "did you mean 'cpu-demo'"), ("m\u00e9", "\\xe9"),
                            ("a\nb", "\\n")):
        path.write_text(json.dumps({"preset": spelling}))
        with pytest.raises(ConfigError, match="is not a preset's name as written") as refused:
            load_config(path)
        assert shown in str(refused.value) and "\n" not in str(refused.value)
    pytest.importorskip("yaml")
    path = tmp_path / "tiny_partial.yaml"
    path.write_text("preset: tiny\nloop:\n  epochs: 1\n")
    assert load_config(path) == preset("tiny").replace(loop={"epochs": 1})


def test_yaml_config_reads_numbers_as_json_does_and_refuses_aliases(tmp_path):
    """Round 4, failures 7 and 10: ``seed: 010`` was octal 8 and ``1:20`` was 80; a 1 kB file of nested aliases
    cost 30-40 s and 2.3 GB. Numbers read as YAML 1.2 and JSON read them; anchors and aliases are refused at once."""
    pytest.importorskip("yaml")
    path = tmp_path / "cfg.yaml"
    path.write_text("preset: tiny\nloop:\n  seed: 010\nagent:\n  lr: 5e-5\n")
    cfg = load_config(path)
    assert cfg.loop.seed == 10 and cfg.agent.lr == 5e-5
    path.write_text("preset: tiny\nloop:\n  domain: 1:20\n")
    assert load_config(path).loop.domain == "1:20"  # a string, not 80
    with pytest.raises(ConfigError, match="domain='1:20' is invalid"):
        load_run_config(path)
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="aliases"):  # refused from the event stream, before anything expands
        load_config(path)


def test_a_domain_brings_its_recommended_settings_at_the_edge_and_replace_changes_only_what_it_names():
    """A domain's recommended settings are resolved at the edge (:func:`for_domain`: the CLI, ``run --config``,
    compare, the lab, the TRL integration), with the fields given in the same change kept; ``replace`` is the
    config's own and changes only the fields it names."""
    tiny = preset("tiny")
    assert tiny.replace(loop={"domain": "tools"}).env == tiny.env
    switched = for_domain(tiny, "tools")
    assert switched.env.max_new_tokens == 512 and switched.agent.max_completion_length == 128
    told = for_domain(tiny.replace(env={"max_new_tokens": 300}), "tools", given={"env": {"max_new_tokens": 300}})
    assert told.env.max_new_tokens == 300 and told.agent.max_completion_length == 128
    assert tiny.replace(loop={"epochs": 2}).env == tiny.env  # no domain change: nothing else moves


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_resolved_as_they_are(name):
    """``run(preset(name))`` runs the preset as it is: resolving a preset changes nothing."""
    assert resolve(preset(name)) == preset(name)


def test_names_against_registries_are_checked_at_the_edge_in_one_line(tmp_path):
    """A bad domain, world, benchmark or task file is a config the dataclasses accept (they check their own fields)
    and :func:`resolve` refuses in one line naming the field, before any model loads."""
    tiny = preset("tiny")
    for cfg, message in (
            (tiny.replace(model={"name_or_path": "tiny-world"}, loop={"domain": "tools"}),
             "ModelConfig.name_or_path='tiny-world' is invalid here: .*'tools' has none"),
            (tiny.replace(eval={"every": 1, "benchmark": "nope"}), "EvalConfig.benchmark='nope' is invalid"),
            (tiny.replace(loop={"seeds": str(tmp_path / "none.jsonl")}), "LoopConfig.seeds=.* is invalid")):
        with pytest.raises(ConfigError, match=message) as refused:
            resolve(cfg)
        assert "\n" not in str(refused.value)
    assert resolve(tiny.replace(eval={"every": 0, "benchmark": "nope"}))  # not evaluated: not looked up


def test_the_config_package_imports_no_domain_model_or_engine():
    """genenv_lab/config/ holds fields, bounds and the checks between its own fields (as TRL's GRPOConfig does): no
    module of it imports genenv_lab.domains, .models or .backends, at the top or inside a function."""
    import ast
    from pathlib import Path

    found = []
    for path in sorted((Path(__file__).resolve().parent.parent / "genenv_lab" / "config").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names
                      if n.split(".")[:2] in (["genenv_lab", "domains"], ["genenv_lab", "models"],
                                              ["genenv_lab", "backends"])]
    assert not found, found


@pytest.mark.parametrize("name, text", [
    ("deep.yaml", "preset: tiny\nloop: " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ("deep.json", '{"loop": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("indent.yaml", "loop:\n" + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1, 80))),
    ("items.yaml", "loop:\n  epochs:\n" + "  " + "- " * 50 + "1\n"),
])
def test_a_deeply_nested_config_file_is_refused_before_parsing(tmp_path, name, text):
    """Round 6, C1: nesting is bounded by one linear scan before any parser sees the file (a 200 kB YAML file held
    `run --config` for 211 s before), for YAML and JSON alike, in one line naming the file."""
    import time

    from genenv_lab.config import load_config

    path = tmp_path / name
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=f"{name} is not read as a configuration: .*(nested|deep)"):
        load_config(path)
    assert time.perf_counter() - start < 5


def test_a_preset_typo_in_a_config_file_says_did_you_mean(tmp_path):
    """Round 6, C2: a preset a letter or two from a preset's name is refused with the name; any other label stays a
    label of the defaults."""
    from genenv_lab.config import load_config

    for typo, meant in (("tinyy", "tiny"), ("cpu-dry-hint-lon", "cpu-dry-hint-long"), ("cpu-dmeo", "cpu-demo")):
        path = tmp_path / f"{typo}.json"
        path.write_text(json.dumps({"preset": typo}))
        with pytest.raises(ConfigError, match=f"did you mean '{meant}'"):
            load_config(path)
    path = tmp_path / "label.json"
    path.write_text(json.dumps({"preset": "my-study", "loop": {"epochs": 2}}))
    assert load_config(path).preset == "my-study" and load_config(path).loop.epochs == 2
