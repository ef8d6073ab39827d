"""The package layout as a contract: a stage imports only earlier stages, and no stage imports the pytest glue or a product."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "pytest_agentbench"

# The run's stages in order, each a package, with the shared helpers below them and the pytest
# glue above them. A module may import its own layer and the layers before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "text", "redact", "__init__"),
    ("device",),
    # A suite is loaded with its device checks typed and each kind's rules checked, so the checks
    # (typed specs, reads, validators; the seed steps cleanup watches) sit below the suite stage.
    ("checks",),
    ("suite",),
    ("servers",),
    # The records that cross stage boundaries hold a Suite, screen nodes and device reads, so they
    # sit just above the stages that make those parts and below every stage that passes a run on.
    ("records",),
    # What a run ran on (the fingerprints and the server build, measured by the run) and how that
    # compares with a recorded baseline: it needs only the records, and the run measures with it.
    ("baseline",),
    ("run",),
    ("audit",),
    ("report",),
    # The one path from a finished run to its result: above the report, below the glue.
    ("pipeline",),
    ("plugin", "session", "options", "fixtures", "items", "outcome", "htmlreport", "prove", "progress", "doctor", "usage",
     "interruption", "failures", "sessionseed", "wake"),
)
# Products that stand alone: they may use the stages (the MCP server drives devices, the agents
# parse transcripts), but no stage below the glue may depend on them.
PRODUCTS = ("sim", "mcp_server", "agents", "warm")
GLUE = LAYERS[-1]


def _unit(module: str) -> str:
    """`pytest_agentbench.run.preflight` -> `run`; the top-level module or package a name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(unit: str) -> int | None:
    return next((index for index, units in enumerate(LAYERS) if unit in units), None)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_agentbench"):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("pytest_agentbench")]
    return found


def _modules() -> list[Path]:
    return sorted(path for path in PACKAGE_ROOT.rglob("*.py") if "__pycache__" not in path.parts)


def _violations(path: Path, root: Path = PACKAGE_ROOT) -> list[str]:
    own = _unit("pytest_agentbench." + ".".join(path.relative_to(root).with_suffix("").parts))
    own_layer = _layer(own)
    problems = []
    for line, module in _imports(path):
        target = _unit(module)
        if target == own:
            continue
        where = f"{path.relative_to(root)}:{line} imports {module}"
        if own in PRODUCTS:
            if target in GLUE:
                problems.append(f"{where}: a product must not import the pytest glue")
            continue
        if target in PRODUCTS:
            if own not in GLUE:
                problems.append(f"{where}: only the pytest glue may use a product")
            continue
        target_layer = _layer(target)
        if own_layer is None or target_layer is None:
            problems.append(f"{where}: {own if own_layer is None else target} is not in LAYERS; add it where it belongs")
        elif target_layer > own_layer:
            problems.append(f"{where}: {own} (stage {own_layer}) must not import the later {target} (stage {target_layer})")
    return problems


def test_every_top_level_unit_has_a_place() -> None:
    units = {_unit("pytest_agentbench." + ".".join(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)) for path in _modules()}
    placed = {unit for layer in LAYERS for unit in layer} | set(PRODUCTS)
    assert units - placed == set(), "modules outside the layout: add them to LAYERS or PRODUCTS"


def test_no_stage_imports_a_later_stage() -> None:
    problems = [problem for path in _modules() for problem in _violations(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("from pytest_agentbench.report.document import scrub\n", "must not import the later report"),
        ("from pytest_agentbench.sim.fleet import SimFleet\n", "only the pytest glue may use a product"),
        ("from pytest_agentbench.plugin import SuiteItem\n", "must not import the later plugin"),
    ],
    ids=["device imports report", "device imports the simulated phone", "device imports the glue"],
)
def test_the_contract_catches_an_upward_import(tmp_path: Path, source: str, message: str) -> None:
    module = tmp_path / "device" / "bad.py"
    module.parent.mkdir()
    module.write_text(source, encoding="utf-8")
    problems = _violations(module, root=tmp_path)
    assert len(problems) == 1 and message in problems[0]


# The glue adapts results to pytest; it does not assemble a run or a verdict. It reaches the run,
# the audit and the baseline only through these two front doors, so the hub cannot grow back.
FRONT_DOORS = ("pytest_agentbench.pipeline", "pytest_agentbench.run.execute")
BEHIND_THE_FRONT_DOORS = ("run", "audit", "baseline")


def _front_door_violations(path: Path, root: Path = PACKAGE_ROOT) -> list[str]:
    problems = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_agentbench"):
            # `from pytest_agentbench.run import execute` names the front door too.
            modules = [f"{node.module}.{alias.name}" if node.module.count(".") <= 1 else node.module for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names if alias.name.startswith("pytest_agentbench")]
        else:
            continue
        for module in modules:
            if _unit(module) in BEHIND_THE_FRONT_DOORS and not module.startswith(FRONT_DOORS):
                problems.append(f"{path.relative_to(root)}:{node.lineno} imports {module}: the glue reaches "
                                f"{_unit(module)}/ only through pipeline.py or run/execute.py")
    return problems


def test_the_glue_reaches_the_stages_through_the_front_doors() -> None:
    units = {path: _unit("pytest_agentbench." + ".".join(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)) for path in _modules()}
    glue = [path for path, unit in units.items() if unit in GLUE]
    assert {units[path] for path in glue} == set(GLUE)
    problems = [problem for path in glue for problem in _front_door_violations(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "problems"),
    [
        ("from pytest_agentbench.run.artifacts import new_run_dir\n", 1),
        ("from pytest_agentbench.run import shutdown\n", 1),
        ("import pytest_agentbench.audit.verdict\n", 1),
        ("if TYPE_CHECKING:\n    from pytest_agentbench.baseline.compare import compare\n", 1),
        ("from pytest_agentbench.run.execute import measure_run\n", 0),
        ("from pytest_agentbench.run import execute\n", 0),
        ("from pytest_agentbench.pipeline import conclude\n", 0),
        ("from pytest_agentbench.records.result import RunResult\n", 0),
    ],
    ids=["run module", "run package member", "plain import", "type-checking import", "execute", "execute by name", "pipeline", "records"],
)
def test_the_front_door_rule_catches_a_back_door(tmp_path: Path, source: str, problems: int) -> None:
    module = tmp_path / "outcome.py"
    module.write_text(source, encoding="utf-8")
    assert len(_front_door_violations(module, root=tmp_path)) == problems


def _module_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in it: inside functions and TYPE_CHECKING too)."""
    names = {}
    for path in _modules():
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("pytest_agentbench"):
                targets |= {found for alias in node.names if (found := resolve(f"{node.module}.{alias.name}"))}
            elif isinstance(node, ast.Import):
                targets |= {found for alias in node.names if alias.name.startswith("pytest_agentbench") and (found := resolve(alias.name))}
        graph[name] = targets - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


# The only import circle allowed: `python -m pytest_agentbench.mcp_server` and the warm-start
# entry table name each other on purpose (the table lists the entry points it can fork).
ALLOWED_CYCLES = [["pytest_agentbench.mcp_server.__main__", "pytest_agentbench.warm.entry"]]


def test_no_import_circles_but_the_entry_pair() -> None:
    cycles = [cycle for cycle in _cycles(_module_graph()) if cycle not in ALLOWED_CYCLES]
    assert cycles == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_nothing_below_the_glue_imports_pytest() -> None:
    # The pipeline and every stage run without pytest (a script, a notebook, another runner).
    below = [path for path in _modules() if _unit("pytest_agentbench." + ".".join(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)) not in GLUE]
    offenders = []
    for path in below:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name == "pytest" or name.startswith(("pytest.", "_pytest")) for name in names):
                offenders.append(str(path.relative_to(PACKAGE_ROOT)))
    assert offenders == []


def test_test_module_names_are_unique() -> None:
    # The tests are not packages: pytest imports each test file by its base name, so a second
    # tests/<stage>/test_x.py stops the whole collection ("import file mismatch") on a clean checkout.
    tests_root = Path(__file__).resolve().parent
    by_name: dict[str, list[str]] = {}
    for path in sorted(tests_root.rglob("test_*.py")):
        by_name.setdefault(path.name, []).append(str(path.relative_to(tests_root)))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
