"""The package has no import cycle, counting imports inside functions and under TYPE_CHECKING too (they hide a
cycle from the interpreter, not from a reader)."""

from __future__ import annotations

import ast
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
    assert "genenv_lab.backends.factory" in graph["genenv_lab.loop"]  # the graph sees relative imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


LAYERS = [
    # 0. pure modules: types, math, bounded reading, small registries with no package imports
    ["genenv_lab.types", "genenv_lab.efficiency", "genenv_lab.curriculum", "genenv_lab.rwr", "genenv_lab.screening",
     "genenv_lab.safe_io", "genenv_lab.distributed", "genenv_lab.trackers",
     "genenv_lab.plots", "genenv_lab.dryrun", "genenv_lab.paired", "genenv_lab.seeds",
     "genenv_lab.style", "genenv_lab.metric_names"],
    # 1. the benchmarks' scorers (pure: predictions in, scores out)
    ["genenv_lab.evaluation"],
    # 2. domains (they may score with a benchmark's scorer) and each domain's world
    ["genenv_lab.domains"],
    # 3. models built here (a world model is pre-trained on its domain's world); the rewards of a scored rollout
    ["genenv_lab.models", "genenv_lab.rewards"],
    # 4. the configuration: it names the pieces above (domain, world, benchmark) and asks their registries
    ["genenv_lab.config"],
    # 5. the run directory and what is computed from a run's numbers
    ["genenv_lab.runfiles", "genenv_lab.runread", "genenv_lab.runlog", "genenv_lab.epoch_stats",
     "genenv_lab.diagnostics"],
    # 6. the loop's state, the engines, and the agent's trainers by name
    ["genenv_lab.state", "genenv_lab.backends", "genenv_lab.agent_trainers"],
    # 7. the loop's steps that need an engine: the simulator's side of an epoch, held-out evaluation of a model
    ["genenv_lab.simulator", "genenv_lab.heldout"],
    # 8. the co-evolution loop, the same epoch as a TRL user's curriculum, and exporting what it trained
    ["genenv_lab.loop", "genenv_lab.export", "genenv_lab.trl"],
    # 9. comparisons of runs
    ["genenv_lab.compare"],
    # 10. what users drive: the lab's readers and views, the command line
    ["genenv_lab.lab", "genenv_lab.flags", "genenv_lab.run_summary", "genenv_lab.cli"],
]
"""The package's floors, lowest first. A module may import from its own floor or any floor below it, never above:
a scorer does not load a model, a domain does not read a run, the loop does not know the lab."""


def layer_of(module: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{module} is on no floor of tests/test_structure.py:LAYERS; add it where it belongs")


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
