"""The test modules -> no fixture imported from another module: shared fixtures live in a conftest.py, so `pytest --fixtures` works.

A fixture function imported into two test modules is registered once per module. `pytest
--fixtures` sorts every registration by (length of the node id, module, path, name, FixtureDef):
two modules whose node ids have the same length tie on all four, pytest compares the FixtureDefs
and stops with `INTERNALERROR ... TypeError: '<' not supported between instances of
'FixtureDef' and 'FixtureDef'`, which `pytest --fixtures` at the project root did.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture") or (isinstance(target, ast.Name) and target.id == "fixture")


def fixtures_by_module(root: Path) -> dict[str, set[str]]:
    """Module name (as the tests import it: its file's stem) -> the fixture functions it defines."""
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.name for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(_is_fixture, node.decorator_list))}
        if names:
            found.setdefault(path.stem, set()).update(names)
    return found


def imported_fixtures(root: Path) -> list[str]:
    """`path:line imports module.fixture` for every fixture a test module (not a conftest.py) imports from another module."""
    fixtures = fixtures_by_module(root)
    problems = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "conftest.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in fixtures and node.level == 0:
                problems += [f"{path.relative_to(root)}:{node.lineno} imports {node.module}.{alias.name}"
                             for alias in node.names if alias.name in fixtures[node.module]]
    return problems


def test_no_test_module_imports_a_fixture() -> None:
    assert imported_fixtures(TESTS) == [], "register shared fixtures in a conftest.py instead"


def test_the_check_catches_an_imported_fixture(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("import pytest\n\n@pytest.fixture(scope='module')\ndef server():\n    yield 1\n\n"
                                         "def free_port():\n    return 1\n", encoding="utf-8")
    (tmp_path / "test_a.py").write_text("from helpers import free_port, server  # noqa: F401\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text("from helpers import server  # noqa: F401\n", encoding="utf-8")
    assert imported_fixtures(tmp_path) == ["test_a.py:1 imports helpers.server"]
