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
    ("suite",),
    ("device",),
    ("servers",),
    ("checks",),
    ("run",),
    ("audit",),
    ("baseline",),
    ("report",),
    ("plugin", "session", "options", "fixtures", "outcome", "rerender", "htmlreport", "prove", "progress"),
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
