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


def test_old_spellings_of_moved_fields_still_load_with_a_one_line_notice(tmp_path):
    """``loop.eval_*`` moved to ``eval.*`` and ``model.world_*`` to ``world.*``: the old names still work for one
    release (a flag, ``--set``, ``replace``, a config file, an old run's config.json), each with a notice naming the
    new spelling; one field given two values under its two names is refused."""
    from genenv_lab.config import ConfigError, RenamedField, load_config

    parse = build_parser().parse_args
    with pytest.warns(RenamedField, match=r"--loop.eval_every is now --eval.every"):
        cfg = run_config_from(parse(["run", "--loop.eval_every", "2"]))
    assert cfg.eval.every == 2 and cfg == run_config_from(parse(["run", "--eval.every", "2"]))
    with pytest.warns(RenamedField, match=r"model.world_anchor is now world.anchor"):
        assert run_config_from(parse(["run", "--set", "model.world_anchor=seed"])).world.anchor == "seed"
    with pytest.warns(RenamedField, match=r"loop.eval_limit → eval.limit"):
        assert preset("tiny").replace(loop={"eval_limit": 3}).eval.limit == 3
    with pytest.raises(ConfigError, match="eval.every is given different values"):  # its notice was said above
        run_config_from(parse(["run", "--loop.eval_every", "2", "--eval-every", "3"]))
    old = json.loads(preset("cpu-demo").to_json())  # the layout before the move
    old["loop"].update({f"eval_{k}": v for k, v in old.pop("eval").items()})
    old["model"].update({f"world_{k}": v for k, v in old.pop("world").items()})
    (tmp_path / "config.json").write_text(json.dumps(old))
    with pytest.warns(RenamedField, match=r"loop.eval_\* → eval.\*, model.world_\* → world.\*") as said:
        assert load_config(tmp_path / "config.json") == preset("cpu-demo")
    assert len(said) == 1 and "\n" not in str(said[0].message)
    import warnings
    with warnings.catch_warnings(record=True) as again:  # said once a process, whatever filters a library changes
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=FutureWarning)
        assert load_config(tmp_path / "config.json") == preset("cpu-demo")
    assert not [w for w in again if issubclass(w.category, RenamedField)]
    old["eval"] = {"every": 3}
    (tmp_path / "config.json").write_text(json.dumps(old))
    with pytest.raises(ConfigError, match="loop.eval_every .* and its new name eval.every"):
        load_config(tmp_path / "config.json")
