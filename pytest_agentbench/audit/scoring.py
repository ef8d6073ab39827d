"""This package's source -> the `scoringCode` digest: every module that can change a verdict, a check or a comparison.

The module list is derived, not written down: the audit's entry points and every module of this
package they import (transitively, read from the source with `ast`), so a rule moved into a new
helper module is covered the day it moves. A re-render compares the digest a run recorded with
today's, and says so when they differ.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from pytest_agentbench.baseline.fingerprints import digest_files

PACKAGE = "pytest_agentbench"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent

#: Where scoring starts: the verdict, how a saved run is rebuilt for it, which tools count as
#: device use, and the baseline comparison a report shows beside the verdict.
SCORING_ENTRY_POINTS: tuple[str, ...] = (
    "audit/verdict.py",
    "run/saved.py",
    "servers/probe.py",
    "baseline/compare.py",
)


def _module_file(module: str, package_root: Path) -> Path | None:
    parts = module.split(".")[1:]
    base = package_root.joinpath(*parts) if parts else package_root
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_files(path: Path, package_root: Path) -> set[Path]:
    found: set[Path] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.startswith(PACKAGE + ".")]
        else:
            continue
        for name in names:
            file = _module_file(name, package_root)
            if file is not None:
                found.add(file)
    return found


def scoring_modules(package_root: Path = PACKAGE_ROOT, entry_points: tuple[str, ...] = SCORING_ENTRY_POINTS) -> tuple[Path, ...]:
    """The entry points and every package module they import (and their packages' `__init__`), transitively, sorted.

    Args:
        package_root: The package's source directory.
        entry_points: Paths relative to it where scoring starts.

    Returns:
        Absolute paths of the modules whose code the `scoringCode` digest covers.
    """
    pending = [package_root / entry for entry in entry_points]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        pending.extend(_imported_files(path, package_root) - seen)
        # Importing a module runs its packages' __init__ first, so they are part of what runs.
        for parent in path.parents:
            if parent == package_root.parent:
                break
            pending.append(parent / "__init__.py")
    return tuple(sorted(seen))


@cache
def _cached_digest(package_root: Path) -> str:
    return digest_files(scoring_modules(package_root), relative_to=package_root)


def scoring_code_digest(package_root: Path = PACKAGE_ROOT) -> str:
    """Digest of the scoring modules, recorded in result.json as `scoringCode`.

    Args:
        package_root: The package's source directory (tests pass a copy to edit).

    Returns:
        `sha256:<16 hex>`.
    """
    if package_root == PACKAGE_ROOT:
        return _cached_digest(package_root)
    return digest_files(scoring_modules(package_root), relative_to=package_root)
