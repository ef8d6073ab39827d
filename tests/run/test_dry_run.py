"""Tests for the dry run (dryrun.py + the session summary): what it prints, what it hides, what it never touches."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_agentbench.run.dryrun import dry_run_text
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.servers import agentbench_profile
from pytest_agentbench.suite import load_suite

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMITTED = tuple(sorted(path.stem for path in (REPO_ROOT / "benchmark" / "agent" / "suites").glob("*.yml")))
SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-dryrun-planted-1111",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret-2222",
    "HTTPS_PROXY": "http://proxyuser:planted-proxy-3333@proxy.example:3128",
    "AUTOMOBILE_API_TOKEN": "planted-automobile-4444",
}


def run_committed(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(str(REPO_ROOT / "benchmark"), f"--rootdir={REPO_ROOT}", "-p", "no:cacheprovider", *args)


def test_committed_suites_dry_run(pytester: pytest.Pytester) -> None:
    result = run_committed(pytester, "--agentbench-dry-run")
    result.assert_outcomes(passed=len(COMMITTED))
    assert result.ret == 0
    output = result.stdout.str()
    result.stdout.fnmatch_lines(["*= agentbench dry run =*"])
    for name in COMMITTED:
        result.stdout.fnmatch_lines([
            f"*- benchmark/agent/suites/{name}.yml::{name}*-*",  # a suite with params: {name}[r1-<instance id>]
            f"suite: {name} (*)",
            "argv:",
            "  claude -p --verbose --output-format stream-json --mcp-config "
            "*/agentbench-<timestamp>-<id>/mcp-config.json* --strict-mcp-config"
            " --setting-sources project,local --allowedTools mcp__agentbench --disallowedTools Bash,PowerShell*"
            " --append-system-prompt *",
            "environment removed: *",
            "environment set:",
            "  CLAUDE_CODE_DISABLE_CLAUDE_MDS=1",
            "  CLAUDE_CODE_DISABLE_POLICY_SKILLS=1",
            "  MCP_CONNECTION_NONBLOCKING=false",
            "  MCP_CONNECT_TIMEOUT_MS=30000",
            f"  AGENTBENCH_SUITE={name}",
            "mcp config (*):",
        ])
    # Per suite: the agent's config (the relay) and the server the harness starts behind it.
    assert output.count('"mcpServers": {') == 2 * len(COMMITTED)
    assert output.count('"type": "stdio"') == 2 * len(COMMITTED), "exactly one server per suite"
    assert output.count('"pytest_agentbench.mcp_server.relay"') == len(COMMITTED)
    assert output.count("servers the harness starts behind the relay") == len(COMMITTED)
    assert "mcp__agentbench__openLink,mcp__agentbench__navigateTo,mcp__agentbench__executePlan" in output


def test_k_runs_exactly_one_and_junit_has_one_case_per_suite(pytester: pytest.Pytester) -> None:
    run_committed(pytester, "--agentbench-dry-run", "-k", "bug_repro").assert_outcomes(passed=1, deselected=len(COMMITTED) - 1)
    run_committed(pytester, "--agentbench-dry-run", "--junitxml=report.xml").assert_outcomes(passed=len(COMMITTED))
    cases = ET.parse(pytester.path / "report.xml").getroot().findall(".//testcase")
    assert sorted(case.get("name").split("[r1", 1)[0] for case in cases) == sorted(COMMITTED)


def test_secret_values_never_appear(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "1234")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gw-user:planted-url-5555@gateway.example")
    result = run_committed(pytester, "--agentbench-dry-run", "-rA", "--junitxml=report.xml")
    result.assert_outcomes(passed=len(COMMITTED))
    everything = result.stdout.str() + result.stderr.str() + (pytester.path / "report.xml").read_text()
    for value in [*SECRETS.values(), "planted-url-5555"]:
        assert value not in everything
    assert "environment removed: MCP_TOOL_TIMEOUT" in everything


def test_quiet_runs_print_no_dry_run_section(pytester: pytest.Pytester) -> None:
    result = run_committed(pytester, "--agentbench-dry-run", "-qq")
    assert result.ret == 0
    assert "agentbench dry run" not in result.stdout.str()
    assert "argv:" not in result.stdout.str()


def test_dry_run_touches_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # An adb endpoint nobody listens on: any device access would fail the run.
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "1")
    output = tmp_path / "artifacts"
    result = run_committed(pytester, "--agentbench-dry-run", f"--agentbench-output={output}", "--device", "emulator-5554")
    result.assert_outcomes(passed=len(COMMITTED))
    assert not output.exists()
    result.stdout.fnmatch_lines(["*--mcp-config */agentbench-<timestamp>-<id>/mcp-config.json*"])
    result.stdout.fnmatch_lines(['*"AGENTBENCH_DEVICE_SERIAL": "emulator-5554"*', '*"ANDROID_ADB_SERVER_PORT": "1"*'])


def test_dry_run_text_uses_placeholders_and_options(tmp_path: Path) -> None:
    suite = load_suite(REPO_ROOT / "benchmark" / "agent" / "suites" / "ux-flow.yml", REPO_ROOT)
    options = AgentbenchOptions(
        device=None, model="claude-opus-5", claude="agentbench-replay", server_instructions=True, output=tmp_path,
        dry_run=True, server="agentbench", suite_dirs=("suites",), automobile_dir=None,
    )
    text = dry_run_text(suite, options=options, profile=agentbench_profile(), environ={"HOME": "/home/op", "TMPDIR": "/scratch/tmp"})
    assert text.startswith("suite: ux-flow (")
    assert "agentbench-replay -p --verbose" in text
    assert "--model claude-opus-5" in text
    assert "workdir: /scratch/tmp/agentbench-<timestamp>-<id>" in text
    assert '"AGENTBENCH_DEVICE_SERIAL": "<serial>"' in text
    assert '"AGENTBENCH_MCP_INSTRUCTIONS": "1"' in text
    assert "environment removed: (none)" in text
    assert not (tmp_path / "ux-flow").exists()


def test_a_suite_without_a_replay_plan_is_warned_about_before_any_run(pytester: pytest.Pytester) -> None:
    # A new user's first suite: the replay agent would end it incomplete; the dry run says why first.
    root = pytester.path / "benchmark" / "agent"
    (root / "suites").mkdir(parents=True)
    (root / "prompts").mkdir()
    for part in ("suites", "prompts"):
        name = "bug-repro.yml" if part == "suites" else "bug-repro.txt"
        (root / part / name).write_bytes((REPO_ROOT / "benchmark" / "agent" / part / name).read_bytes())
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--claude", "agentbench-replay", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"warning: no replay plan at {root / 'plans' / 'bug-repro.yml'}: agentbench-replay would end this run incomplete*"])
    (root / "plans").mkdir()
    (root / "plans" / "bug-repro.yml").write_bytes((REPO_ROOT / "benchmark" / "agent" / "plans" / "bug-repro.yml").read_bytes())
    again = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--claude", "agentbench-replay", "-p", "no:cacheprovider")
    assert "no replay plan" not in again.stdout.str()
    # Another agent plays no plan: nothing to warn about.
    assert "no replay plan" not in pytester.runpytest("benchmark/", "--agentbench-dry-run", "-p", "no:cacheprovider").stdout.str()
