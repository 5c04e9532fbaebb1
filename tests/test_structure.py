"""The package has no import cycle, counting imports inside functions and under TYPE_CHECKING too (they hide a
cycle from the interpreter, not from a reader)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "genenv_lab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    # a package's __init__ importing its own submodules is how packages are built, not a cycle
    return {n: {t for t in ts if not t.startswith(n + ".")} for n, ts in graph.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert "genenv_lab.backends.factory" in graph["genenv_lab.coevolution.session"]  # the graph sees relative imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


LAYERS = [
    ["core", "safe_io", "style"],  # 0. the method's pure math and types; bounded reading; the figures' colours
    ["evaluation"],  # 1. the benchmarks' scorers (pure: predictions in, scores out)
    ["domains"],  # 2. domains (they may score with a benchmark's scorer) and each domain's world
    ["models"],  # 3. models built here (a world model is pre-trained on its domain's world) and loaded
    ["config"],  # 4. the configuration: fields, bounds, presets, variants
    ["rundir"],  # 5. the run directory: layout, writer, reader, the metric registry
    ["backends"],  # 6. the engines: a base model, two adapters, generation; the process group
    ["trainers"],  # 7. the two roles' updates, built from what an engine lends
    ["coevolution"],  # 8. Algorithm 1: the loop and its steps; exporting what it trained
    ["trl"],  # 9. the same epoch as a TRL user's curriculum
    ["compare"],  # 10. comparisons of runs
    ["lab"],  # 11. the lab's readers and views
    ["cli"],  # 12. the command line
]
"""The package's floors, lowest first, one folder each (floor 0 also holds the two flat utility modules). A module
may import from its own folder or any floor below it, never above: a scorer does not load a model, a domain does not
read a run, an engine does not know a trainer, the loop does not know the lab."""

FLAT_MODULES = {"genenv_lab", "genenv_lab.safe_io", "genenv_lab.style"}
"""The modules outside a folder: the front door (``genenv_lab/__init__``) and floor 0's two utilities."""


def layer_of(module: str) -> int:
    top = module.split(".")[1] if module.count(".") else ""
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} is on no floor of tests/test_structure.py:LAYERS; add its folder where it belongs")


def test_the_folders_are_the_floors():
    """Every module sits in a folder of LAYERS, except the front door and floor 0's utilities; every folder of the
    package is a floor."""
    flat = {m for m in import_graph() if m.count(".") <= 1 and not (PACKAGE / m.split(".")[-1]).is_dir()}
    assert flat == FLAT_MODULES, flat ^ FLAT_MODULES
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders == {n for names in LAYERS for n in names} - {"safe_io", "style"}


def test_no_import_climbs_to_a_higher_floor():
    graph = import_graph()
    climbs = [f"{m} (floor {layer_of(m)}) imports {t} (floor {layer_of(t)})"
              for m, targets in sorted(graph.items()) if m != "genenv_lab"
              for t in sorted(targets) if t != "genenv_lab" and layer_of(t) > layer_of(m)]
    assert not climbs, "\n".join(climbs)


def test_a_climbing_import_is_found():
    assert layer_of("genenv_lab.evaluation.bfcl") < layer_of("genenv_lab.backends.hf")
    with pytest.raises(AssertionError, match="no floor"):
        layer_of("genenv_lab.somewhere_new")


def test_every_test_file_has_one_tier_and_the_quick_tier_is_its_marker_expression():
    """Tests are in tiers by marker (tests/conftest.py: TIERS), and ``bash scripts/test.sh --quick`` selects the
    quick tier by conftest's expression, not by a list of files to ignore."""
    import re

    from conftest import QUICK, TIERS

    tests = PACKAGE.parent / "tests"
    files = sorted(p.stem for p in tests.glob("test_*.py"))
    placed = [name for names in TIERS.values() for name in names]
    assert sorted(placed) == files, (set(files) ^ set(placed))  # each file once, none missing, none stale
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text()
    assert all(re.search(rf'"{tier}: ', pyproject) for tier in TIERS)  # every tier a registered marker
    script = (PACKAGE.parent / "scripts" / "test.sh").read_text()
    assert f'-m "{QUICK}"' in script and "--ignore=" not in script


def test_docs_architecture_names_every_module_on_its_floor():
    """docs/architecture.md reads the house floor by floor: every module of the package is named there, with its
    job, under the floor LAYERS puts it on (a new module, or one that moved floors, needs its line)."""
    import re

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    floors = {int(m.group(1)): m.start() for m in re.finditer(r"^## Floor (\d+)", page, re.M)}
    assert sorted(floors) == list(range(len(LAYERS))), "one section per floor of LAYERS, in order"
    bounds = sorted(floors.values()) + [len(page)]
    section = {n: page[bounds[i]:bounds[i + 1]] for i, n in enumerate(sorted(floors))}
    modules = sorted(import_graph())
    missing = [m for m in modules if f"- `{m}`" not in page]
    assert not missing, f"docs/architecture.md does not name {missing}"
    misplaced = [f"{m} (floor {layer_of(m)})" for m in modules if m != "genenv_lab"
                 and f"- `{m}`" not in section[layer_of(m)]]
    assert not misplaced, f"named under another floor than LAYERS says: {misplaced}"
    named = set(re.findall(r"^- `(genenv_lab[\w.]*)`", page, re.M))
    assert named <= set(modules), f"the page names modules that do not exist: {sorted(named - set(modules))}"


def test_no_function_over_80_lines_and_no_module_over_500_outside_evaluation():
    """What a maintainer can hold in view: functions of at most 80 lines anywhere in the package, modules of at most
    500 lines outside the benchmark scorers (evaluation/, which follow the official checkers' own layout)."""
    long_functions, long_modules = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(PACKAGE.parent)
        if "evaluation" not in path.parts and len(text.splitlines()) > 500:
            long_modules.append(f"{where} ({len(text.splitlines())} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > 80:
                    long_functions.append(f"{where}:{node.lineno} {node.name} ({size} lines)")
    assert not long_functions and not long_modules, long_functions + long_modules


def test_the_front_door_names_resolve_and_import_no_model_library():
    """``from genenv_lab import preset, run, load_run`` works, every public name resolves, and ``import genenv_lab``
    alone loads neither torch nor transformers (each name is imported on first use)."""
    code = ("import sys, genenv_lab; assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
            "from genenv_lab import preset, run, load_run; "
            "assert all(getattr(genenv_lab, n) is not None for n in genenv_lab.__all__); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_front_doors_type_checking_block_names_what_its_lazy_table_serves():
    """Issue 68: ``genenv_lab/__init__.py``'s ``TYPE_CHECKING`` imports are exactly the lazy table's names, each from
    the module the table names, so a type checker sees the same front door a notebook gets."""
    import ast

    import genenv_lab

    tree = ast.parse((Path(genenv_lab.__file__)).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imported = {(a.asname or a.name): f"{n.module}:{a.name}" for n in block.body for a in n.names}
    wanted = {name: where if ":" in where else f"{where}:{name}" for name, where in genenv_lab._WHERE.items()}
    assert imported == wanted and set(genenv_lab.__all__) == set(wanted) | {"__version__"}


MYPY_SKIPPED = ("torch", "transformers", "pandas", "numpy", "datasets", "trl", "peft", "accelerate", "plotly",
                "gradio", "pyarrow", "scipy", "huggingface_hub", "tqdm", "rich", "safetensors", "tokenizers", "yaml",
                "jinja2", "nbformat", "nbclient", "sklearn", "matplotlib")
"""Libraries the front-door check does not analyse (seconds instead of minutes: their types are not what it checks)."""


def test_a_type_checker_sees_the_front_doors_names_and_their_signatures(tmp_path):
    """Issue 68: mypy, run over a script that imports the 13 names from ``genenv_lab``, finds every one, and sees the
    real signatures behind them: a wrong argument to ``preset`` is its only error (a name served as ``Any`` would
    pass silently)."""
    pytest.importorskip("mypy")
    names = sorted(n for n in __import__("genenv_lab").__all__ if n != "__version__")
    (tmp_path / "front.py").write_text(
        f"from genenv_lab import {', '.join(names)}\n\n"
        "cfg: RunConfig = preset('tiny')\n"
        f"everything = ({', '.join(names)})\n"
        "wrong = preset(3)\n")
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nfollow_imports = silent\nignore_missing_imports = True\nincremental = False\n\n"
        f"[mypy-{','.join(f'{m}.*' for m in MYPY_SKIPPED)}]\nfollow_imports = skip\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "front.py"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MYPYPATH": str(PACKAGE.parent)})
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "front.py:5:" in errors[0] and 'Argument 1 to "preset"' in errors[0], out.stdout
