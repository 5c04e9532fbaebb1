"""A domain from outside the package, as docs/domains.md writes it: the doc's code is extracted and run, checked
by check_domain, and trained on by the real CLI (--domain module:Class --loop.seeds FILE)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from genenv_lab.coevolution.resolve import resolve
from genenv_lab.config import ConfigError, preset
from genenv_lab.domains import domain_class, get_domain
from genenv_lab.domains.base import HELDOUT_REASON
from genenv_lab.domains.check import check_domain

DOC = Path(__file__).resolve().parents[1] / "docs" / "domains.md"


@pytest.fixture
def add_domain(tmp_path, monkeypatch):
    """The doc's add_domain.py and seed lines written to tmp_path, importable."""
    text = DOC.read_text()
    code = re.search(r"```python\n(# add_domain\.py\n.*?)```", text, re.S).group(1)
    seeds = re.search(r"```\n(\{\"id\": \"add-0\".*?)```", text, re.S).group(1)
    (tmp_path / "add_domain.py").write_text(code)
    (tmp_path / "add_seeds.jsonl").write_text(seeds)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("add_domain", None)
    return tmp_path


def test_the_docs_example_is_about_thirty_lines_and_passes_the_checks(add_domain):
    assert len((add_domain / "add_domain.py").read_text().splitlines()) <= 40
    domain = get_domain("add_domain:AddDomain", seeds=str(add_domain / "add_seeds.jsonl"))
    assert check_domain(domain) == []
    assert [t.spec.answer for t in domain.seed_tasks()] == ["5", "41"]


def test_check_domain_names_what_is_wrong(add_domain):
    from add_domain import AddDomain

    class Broken(AddDomain):
        def score(self, spec, completion):
            return 2.0 if completion == spec.answer else int(completion)  # out of range, and raises on text

    (add_domain / "held.jsonl").write_text('{"id": "h", "text": "Task: 2 + 3"}\n')
    broken = Broken()
    broken.seeds_file = str(add_domain / "add_seeds.jsonl")
    broken.heldout_file = str(add_domain / "held.jsonl")
    problems = check_domain(broken)
    assert any("reward outside [0, 1]" in p for p in problems) and any("raises ValueError" in p for p in problems)
    assert any("also a seed task" in p for p in problems)
    assert check_domain(AddDomain()) == [check_domain(AddDomain())[0]]  # no seeds file: one sentence
    assert "do not load" in check_domain(AddDomain())[0]


def test_a_domain_is_named_by_registry_name_class_path_or_refused_in_one_line(add_domain):
    assert domain_class("count").name == "count"
    assert domain_class("add_domain:AddDomain").name == "add"
    for bad, message in (("nope", "unknown domain"), ("os:path", "not a subclass"), ("no_such_mod:X", "imported"),
                         ("add_domain:Missing", "imported")):
        with pytest.raises(ValueError, match=message):
            domain_class(bad)
        with pytest.raises(ConfigError, match="LoopConfig.domain"):
            resolve(preset("tiny").replace(loop={"domain": bad}))  # names are checked at the edge
    with pytest.raises(ConfigError, match="loop.seeds|seeds"):
        resolve(preset("tiny").replace(loop={"seeds": str(add_domain / "missing.jsonl")}))


@pytest.mark.parametrize("body, shown", [("1 / 0", "ZeroDivisionError"), ("import sys\nsys.exit(0)", "SystemExit"),
                                         ("raise BaseException('bare')", "BaseException")])  # round 5
def test_a_domain_module_that_raises_or_exits_at_import_is_one_line(add_domain, body, shown):
    """Round 4, failure 12: a module raising at import gave a traceback; one calling sys.exit(0) made ``run`` and
    ``check-domain`` exit 0 with no output. Both are a one-line refusal, from the library and from the CLI."""
    (add_domain / "bad_domain.py").write_text(body + "\n")
    sys.modules.pop("bad_domain", None)
    with pytest.raises(ValueError, match=shown):
        domain_class("bad_domain:X")
    env = {**os.environ, "PYTHONPATH": f"{add_domain}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for args in (["run", "--preset", "tiny", "--domain", "bad_domain:X", "--out", str(add_domain / "r")],
                 ["check-domain", "bad_domain:X"]):
        proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", *args], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode != 0 and shown in proc.stdout + proc.stderr, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stdout + proc.stderr
    assert not (add_domain / "r").exists()


def test_ctrl_c_while_a_domain_module_hangs_at_import_is_one_line_and_exit_130(add_domain):
    """Round 5, P9: Ctrl-C while a ``--domain`` module hung at import printed a KeyboardInterrupt traceback through
    importlib. It is one line, exit 130, and no run folder is left."""
    import signal
    import time

    (add_domain / "sleeper.py").write_text("import pathlib, time\n"  # a module whose import never returns
                                           f"pathlib.Path({str(add_domain / 'importing')!r}).touch()\n"
                                           "time.sleep(10 ** 6)\n")
    env = {**os.environ, "PYTHONPATH": f"{add_domain}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for args in (["run", "--preset", "tiny", "--domain", "sleeper:X", "--epochs", "1", "--out", str(add_domain / "s")],
                 ["compare", "--presets", "tiny", "--variants", "genenv", "--domain", "sleeper:X", "--seeds", "1",
                  "--out", str(add_domain / "c")]):
        (add_domain / "importing").unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-m", "genenv_lab.cli", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)
        try:
            deadline = time.time() + 120
            while not (add_domain / "importing").exists():
                assert proc.poll() is None and time.time() < deadline, proc.communicate()[0]
                time.sleep(0.05)
            time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            printed, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130 and "Traceback" not in printed, printed
        assert printed.strip().splitlines() == ["interrupted (Ctrl-C or a signal)"]
    assert not (add_domain / "s").exists() and not (add_domain / "c").exists()


@pytest.mark.parametrize("error", ["TypeError", "AttributeError", "IndexError"])
def test_check_domain_names_a_parser_that_raises_on_the_seed_file(add_domain, error):
    """Round 5: a ``parse`` raising while the seed file was read gave ``check-domain`` a traceback (the tasks were
    read a second time, outside the check); it is one problem line."""
    (add_domain / "raising_domain.py").write_text(
        "from add_domain import AddDomain\n\n\nclass Raises(AddDomain):\n"
        f"    def parse(self, text):\n        raise {error}('parser bug')\n")
    sys.modules.pop("raising_domain", None)
    env = {**os.environ, "PYTHONPATH": f"{add_domain}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "check-domain", "raising_domain:Raises",
                           "--seeds", str(add_domain / "add_seeds.jsonl")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "do not load" in proc.stdout and error in proc.stdout


FEATURE_DOMAINS = """
import time

import numpy as np

from add_domain import AddDomain


def _with(features):
    class D(AddDomain):
        def parse(self, text):
            result = super().parse(text)
            if result.spec is not None:
                object.__setattr__(result.spec, "features", features)
            return result
    return D


NumpyFeatures = _with({"digits": np.int64(2)})
SetFeatures = _with({"digits": {1, 2}})
ListFeatures = _with([1, 2])


class Slow(AddDomain):
    def score(self, spec, completion):
        if completion != spec.answer:
            time.sleep(0.6)
        return super().score(spec, completion)


class Exits(AddDomain):
    def score(self, spec, completion):
        raise SystemExit(0)
"""


@pytest.mark.parametrize("name, shown", [("NumpyFeatures", "cannot be committed"), ("SetFeatures", "cannot be "
                                         "committed"), ("ListFeatures", "not a dict"), ("Slow", "took"),
                                         ("Exits", "raises SystemExit")])
def test_check_domain_refuses_domains_that_cannot_train(add_domain, name, shown):
    """Round 4, failure 13: features holding numpy values or a set passed check-domain and failed the run at its
    first commit; a scorer taking seconds a call, or calling sys.exit(), passed too."""
    (add_domain / "feature_domains.py").write_text(FEATURE_DOMAINS)
    env = {**os.environ, "PYTHONPATH": f"{add_domain}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "genenv_lab.cli", "check-domain", f"feature_domains:{name}",
                           "--seeds", str(add_domain / "add_seeds.jsonl")], capture_output=True, text=True, env=env,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and shown in out and "Traceback" not in out, out


def test_a_generated_held_out_question_is_rejected_whatever_the_parser(add_domain):
    (add_domain / "held.jsonl").write_text('{"id": "h", "text": "Task: 40 + 2"}\n')
    domain = get_domain("add_domain:AddDomain", seeds=str(add_domain / "add_seeds.jsonl"),
                        heldout=str(add_domain / "held.jsonl"))
    assert domain.safe_parse("Task: 40 + 2").reason == HELDOUT_REASON
    assert domain.safe_parse("Task: 40 + 3").valid


def test_the_cli_trains_on_a_domain_from_outside_the_package(add_domain, tmp_path):
    (add_domain / "held.jsonl").write_text('{"id": "h", "text": "Task: 40 + 2"}\n')
    env = dict(os.environ, PYTHONPATH=str(add_domain) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "run"
    cli = [sys.executable, "-m", "genenv_lab.cli"]
    check = subprocess.run(cli + ["check-domain", "add_domain:AddDomain", "--seeds", "add_seeds.jsonl"],
                           cwd=add_domain, env=env, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "passes" in check.stdout, check.stdout + check.stderr
    proc = subprocess.run(cli + ["run", "--preset", "tiny", "--domain", "add_domain:AddDomain", "--loop.seeds",
                                 "add_seeds.jsonl", "--loop.heldout", "held.jsonl", "--epochs", "1",
                                 "--eval.every", "1", "--eval.benchmark", "domain",
                                 "--out", str(out)], cwd=add_domain, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["loop"]["domain"] == "add_domain:AddDomain" and cfg["loop"]["seeds"] == "add_seeds.jsonl"
    record = json.loads((out / "epochs.jsonl").read_text().splitlines()[0])
    assert "eval/domain" in record["extra"]
    bad = subprocess.run(cli + ["run", "--preset", "tiny", "--domain", "add_domain:AddDomain", "--epochs", "1",
                                "--out", str(tmp_path / "no-seeds")], cwd=add_domain, env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "config error" in bad.stdout and not (tmp_path / "no-seeds").exists()


def test_an_installed_package_registers_a_domain_by_name(add_domain, monkeypatch):
    """An entry point in the group genenv_lab.domains (what `pip install` of a package declaring one leaves: a
    dist-info folder with entry_points.txt) makes its name a domain like a shipped one."""
    from genenv_lab.domains import ENTRY_POINT_GROUP, known_domains

    info = add_domain / "add_domain-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: add-domain\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nadd = add_domain:AddDomain\n")
    assert "add" in known_domains()
    assert domain_class("add").name == "add"
    cfg = preset("tiny").replace(loop={"domain": "add", "seeds": str(add_domain / "add_seeds.jsonl")})
    assert cfg.loop.domain == "add"
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbroken = add_domain:Nope\n")
    with pytest.raises(ValueError, match="could not be loaded"):
        domain_class("broken")


@pytest.mark.parametrize("name", sorted(__import__("genenv_lab.domains", fromlist=["DOMAINS"]).DOMAINS))
def test_every_shipped_domain_passes_the_checks_a_users_domain_must(name):
    """``check-domain`` is what a user's domain must pass; each domain the project ships passes it too (its seeds
    parse back to themselves, a seed task commits as a run would, its scorer is fast, its held-out set loads)."""
    assert check_domain(get_domain(name)) == [], name


@pytest.mark.parametrize("wrapped", [False, True])
def test_an_interrupt_a_library_hands_on_wrapped_is_still_one_line_and_exit_130(monkeypatch, capsys, wrapped):
    """A Ctrl-C met inside a library's import (``__set_name__``, an import hook) arrives as a RuntimeError whose
    cause is the KeyboardInterrupt; the command line reads it as the interrupt it is, not as an error."""
    import argparse

    from genenv_lab.cli import commands

    def command(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            if not wrapped:
                raise
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from inner

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(debug=False, func=command)

    monkeypatch.setattr(commands, "build_parser", Parser)
    assert commands.main([]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["interrupted (Ctrl-C or a signal)"]
