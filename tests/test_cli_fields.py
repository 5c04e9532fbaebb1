"""The run command's --section.field flags are generated from the config dataclasses: every field of config.json
is settable, with its docstring as help and its constants as choices; values go through the config's validation."""

import json
import subprocess
import sys

import pytest

from genenv_lab.cli.commands import build_parser
from genenv_lab.cli.flags import run_config_from
from genenv_lab.config import SECTIONS, config_fields, preset


def test_every_config_json_field_has_a_flag_with_help():
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" run"))
    flags = {o for action in run._actions for o in action.option_strings}
    saved = json.loads(preset("tiny").to_json())
    for section in SECTIONS:
        for name in saved[section]:
            assert f"--{section}.{name}" in flags, f"{section}.{name} cannot be set from the command line"
    assert all(doc for *_, doc in config_fields()), [f"{s}.{n}" for s, n, _, doc in config_fields() if not doc]


def test_flags_reach_the_config_with_their_types():
    args = build_parser().parse_args(["run", "--curriculum.alpha", "0.3", "--curriculum.k_min", "0.125",
                                      "--agent.num_generations", "8", "--loop.save_adapters", "false",
                                      "--model.target_modules", "q_proj, v_proj", "--loop.variant", "static"])
    cfg = run_config_from(args)
    assert (cfg.curriculum.alpha, cfg.curriculum.k_min, cfg.agent.num_generations) == (0.3, 0.125, 8)
    assert cfg.loop.save_adapters is False and cfg.model.target_modules == ("q_proj", "v_proj")
    assert cfg.loop.variant == "static"


@pytest.mark.parametrize("argv, message", [
    (["--curriculum.alpha", "2"], "CurriculumConfig.alpha=2.0 is invalid"),
    (["--loop.save_adapters", "maybe"], "expected true or false"),
    (["--loop.variant", "best"], "invalid choice"),
    (["--agent.num_generations", "many"], "invalid int value"),
])
def test_bad_values_are_one_line_errors(argv, message, tmp_path):
    out = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "run", "--out", str(tmp_path / "r"), *argv],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and message in (out.stdout + out.stderr)
    assert "Traceback" not in out.stderr and not (tmp_path / "r").exists()


def test_every_number_field_declares_its_range_and_the_help_shows_it(capsys):
    """Bounds are declared on the fields, one mechanism (``bounded``), not written by hand in each ``__post_init__``:
    every int or float field of the config has one, the config refuses a value outside it in one line, and the
    generated flag's help says it."""
    import dataclasses
    import typing

    from genenv_lab.config import ConfigError, RunConfig, bounds_of, preset

    hints = typing.get_type_hints(RunConfig)
    missing = [f"{section}.{f.name}" for section in SECTIONS
               for f in dataclasses.fields(hints[section])
               if typing.get_type_hints(hints[section])[f.name] in (int, float) and bounds_of(hints[section], f.name)
               is None]
    assert not missing, f"number fields without a declared range: {missing}"
    with pytest.raises(ConfigError, match=r"ModelConfig.lora_r=0 is invalid: accepted an integer ≥ 1 and ≤ 1024"):
        preset("tiny").replace(model={"lora_r": 0})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    assert "LoRA rank of each adapter. (an integer ≥ 1 and ≤ 1024)" in " ".join(capsys.readouterr().out.split())


def test_every_short_flag_is_an_alias_of_a_field_read_by_the_same_path(capsys):
    """The short flags are one table of aliases (issue 40): each names a real field, its help is the field's, and
    ``--epochs 3``, ``--loop.epochs 3`` and ``--set loop.epochs=3`` give the same configuration."""
    from genenv_lab.config import ALIASES, field_docs
    from genenv_lab.cli.flags import field_of

    fields = {f"{section}.{name}": doc for section, name, _, doc in config_fields()}
    assert set(ALIASES.values()) <= set(fields), set(ALIASES.values()) - set(fields)
    assert all(field_of(flag) == path for flag, path in ALIASES.items())
    parse = build_parser().parse_args
    spelt = [run_config_from(parse(["run", *argv])) for argv in (
        ["--epochs", "3"], ["--loop.epochs", "3"], ["--set", "loop.epochs=3"])]
    assert spelt[0] == spelt[1] == spelt[2] and spelt[0].loop.epochs == 3
    both = run_config_from(parse(["run", "--eval-limit", "5", "--set", "eval.limit=5", "--model", "tiny"]))
    assert both.eval.limit == 5 and both.model.name_or_path == "tiny"
    with pytest.raises(SystemExit):
        parse(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    from genenv_lab.config import EvalConfig

    assert f"--eval-every N = --eval.every: {field_docs(EvalConfig)['every'].replace('``', '')}" in shown


def _old_layout(cfg) -> dict:
    """``cfg``'s config.json in 0.1.0's layout before fields moved section (``loop.eval_*``, ``model.world_*``)."""
    old = json.loads(cfg.to_json())
    old["loop"].update({f"eval_{k}": v for k, v in old.pop("eval").items()})
    old["model"].update({f"world_{k}": v for k, v in old.pop("world").items()})
    return old


def test_old_spellings_of_moved_fields_are_not_a_second_dialect(tmp_path, capsys):
    """``loop.eval_*`` moved to ``eval.*`` and ``model.world_*`` to ``world.*`` (0.1.0, never released): no read
    path translates the old names any more. A flag, ``--set`` or ``replace`` under an old name is an unknown field;
    a stored config in the old layout fails in one line that says to run ``genenv-lab upgrade RUN_DIR``."""
    from genenv_lab.cli.commands import main
    from genenv_lab.config import ConfigError, RunConfig, load_config

    parse = build_parser().parse_args
    with pytest.raises(SystemExit):
        parse(["run", "--loop.eval_every", "2"])
    with pytest.raises(ConfigError, match="loop has no field 'eval_every'"):
        run_config_from(parse(["run", "--set", "loop.eval_every=2"]))
    with pytest.raises(ConfigError, match=r"LoopConfig has no field\(s\) \['eval_limit'\]"):
        preset("tiny").replace(loop={"eval_limit": 3})
    old = _old_layout(preset("cpu-demo"))
    run = tmp_path / "old_run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(old))
    for read in (lambda: load_config(run / "config.json"), lambda: RunConfig.from_dict(old),
                 lambda: run_config_from(parse(["run", "--config", str(run / "config.json")]))):
        with pytest.raises(ConfigError, match=r"loop.eval_every.*run `genenv-lab upgrade RUN_DIR`") as refused:
            read()
        assert "\n" not in str(refused.value)
    (tmp_path / "partial.json").write_text('{"preset": "tiny", "loop": {"eval_every": 1}}')
    with pytest.raises(ConfigError, match="genenv-lab upgrade RUN_DIR"):
        load_config(tmp_path / "partial.json")
    assert main(["run", "--out", str(run), "--resume"]) == 2  # a resumed old run: the same line, nothing written
    said = " ".join(capsys.readouterr().out.split())
    assert "genenv-lab upgrade RUN_DIR" in said and sorted(p.name for p in run.iterdir()) == ["config.json"]


def test_upgrade_config_dict_rewrites_the_old_layout_and_only_the_upgrade_command_calls_it():
    """The old layout's rewrite is one pure function, :func:`genenv_lab.config.spellings.upgrade_config_dict`, and
    the ``upgrade`` verb (genenv_lab/cli/run_tools.py) is the only code that calls it."""
    from pathlib import Path

    from genenv_lab.config import ConfigError, RunConfig
    from genenv_lab.config.spellings import upgrade_config_dict

    old = _old_layout(preset("cpu-demo"))
    kept = json.dumps(old, sort_keys=True)
    assert RunConfig.from_dict(upgrade_config_dict(old)) == preset("cpu-demo")
    assert json.dumps(old, sort_keys=True) == kept  # pure: its argument is left as it was
    current = json.loads(preset("tiny").to_json())
    assert upgrade_config_dict(current) == current
    with pytest.raises(ConfigError, match="loop.eval_every .* and its new name eval.every"):
        upgrade_config_dict({**old, "eval": {"every": 3}})
    package = Path(__file__).resolve().parent.parent / "genenv_lab"
    callers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                     if "upgrade_config_dict(" in p.read_text() and p.name != "spellings.py")
    assert set(callers) <= {"cli/run_tools.py", "rundir/upgrade.py"}, callers  # the verb, or upgrade_run under it


def test_upgrade_verb_takes_run_folders(tmp_path):
    """``genenv-lab upgrade RUN_DIR [RUN_DIR ...]`` parses one or more folders (and needs one)."""
    parse = build_parser().parse_args
    args = parse(["upgrade", str(tmp_path / "a"), str(tmp_path / "b")])
    assert args.command == "upgrade" and args.run_dirs == [str(tmp_path / "a"), str(tmp_path / "b")]
    with pytest.raises(SystemExit):
        parse(["upgrade"])


def test_upgrade_verb_rewrites_an_old_run_folder_which_then_reads(tmp_path, capsys):
    """``genenv-lab upgrade RUN_DIR`` prints upgrade_run's one line per folder; the folder then reads and resumes."""
    from genenv_lab.cli.commands import main
    from genenv_lab.config import load_config

    run = tmp_path / "old_run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(_old_layout(preset("cpu-demo"))))
    (run / "epochs.jsonl").write_text("")
    assert main(["upgrade", str(run)]) == 0
    assert "upgraded" in capsys.readouterr().out
    assert load_config(run / "config.json") == preset("cpu-demo")
    assert main(["upgrade", str(tmp_path / "missing")]) == 1
