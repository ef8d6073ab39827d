"""Tests for audit/scoring.py: the scoringCode digest covers every module that can change a verdict, and only those."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentbench.audit.scoring import PACKAGE_ROOT, scoring_code_digest, scoring_modules

VERDICT_RULES = (
    "audit/verdict.py",          # the verdict
    "audit/matching.py",         # the answer rules
    "audit/transcript.py",       # what a stream says
    "text.py",                   # standalone matches
    "device/uiautomator.py",     # the screen rules and parser
    "servers/probe.py",          # which tools count as device use
    "baseline/compare.py",       # the comparison shown beside the verdict
    "run/saved.py",              # how a saved run is rebuilt for a re-audit
    "records/run.py",            # the audit's inputs
    "suite/load.py",             # what a suite asks for
)
NOT_SCORING = ("report/summary.py", "sim/phone.py", "mcp_server/server.py", "run/runner.py")


def test_every_verdict_rule_is_a_scoring_module() -> None:
    covered = {path.relative_to(PACKAGE_ROOT).as_posix() for path in scoring_modules()}
    assert set(VERDICT_RULES) <= covered
    assert covered.isdisjoint(NOT_SCORING)


def test_what_the_audit_imports_at_run_time_is_covered() -> None:
    # The derived list must hold everything the verdict really loads, not only what the source names.
    probe = (
        "import sys, json; before = set(sys.modules); import pytest_agentbench.audit.verdict, pytest_agentbench.servers.probe; "
        "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('pytest_agentbench'))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    covered = {path.relative_to(PACKAGE_ROOT).with_suffix("").as_posix().replace("/", ".") for path in scoring_modules()}
    covered = {name.removesuffix(".__init__") for name in covered}
    missing = [name for name in loaded if name.removeprefix("pytest_agentbench.") not in covered | {"pytest_agentbench"} and name != "pytest_agentbench"]
    assert missing == []


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("package") / "pytest_agentbench"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("module", VERDICT_RULES)
def test_editing_a_scoring_module_changes_the_digest(package_copy: Path, module: str) -> None:
    before = scoring_code_digest(package_copy)
    path = package_copy / module
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + "\n# a rule changed\n", encoding="utf-8")
        assert scoring_code_digest(package_copy) != before
    finally:
        path.write_text(original, encoding="utf-8")
    assert scoring_code_digest(package_copy) == before


@pytest.mark.parametrize("module", NOT_SCORING)
def test_editing_other_code_keeps_the_digest(package_copy: Path, module: str) -> None:
    before = scoring_code_digest(package_copy)
    path = package_copy / module
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + "\n# not a rule\n", encoding="utf-8")
        assert scoring_code_digest(package_copy) == before
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_new_helper_module_is_covered_the_day_a_rule_moves_into_it(package_copy: Path) -> None:
    helper = package_copy / "audit" / "new_rule.py"
    verdict = package_copy / "audit" / "verdict.py"
    original = verdict.read_text(encoding="utf-8")
    try:
        helper.write_text("RULE = 1\n", encoding="utf-8")
        verdict.write_text(original + "\nfrom pytest_agentbench.audit.new_rule import RULE  # noqa\n", encoding="utf-8")
        assert helper in scoring_modules(package_copy)
        before = scoring_code_digest(package_copy)
        helper.write_text("RULE = 2\n", encoding="utf-8")
        assert scoring_code_digest(package_copy) != before
    finally:
        verdict.write_text(original, encoding="utf-8")
        helper.unlink()
