"""Tests for invocation.py: the agent argv, the scrubbed environment (planted), and the MCP config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.run.invocation import (
    RUN_SHAPING_VARIABLES,
    build_invocation,
    expand_tool_name,
    is_run_shaping_variable,
)
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.run.artifacts import RunArtifacts, write_run_files
from pytest_agentbench.servers import agentbench_profile, auto_mobile_profile, mobile_mcp_profile
from pytest_agentbench.suite import Suite, load_suite


def make_suite(tmp_path: Path, claude: dict | None = None, prompt: str = "Work on {deviceSerial} in {runDirectory}.\n") -> Suite:
    (tmp_path / "suites").mkdir(exist_ok=True)
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "task.txt").write_text(prompt, encoding="utf-8")
    data = {
        "name": "task", "platform": "android", "prompt": "../prompts/task.txt",
        "app": {"packageName": "com.example.app"}, "verify": {"screenIncludes": ["Done"]},
    }
    if claude is not None:
        data["claude"] = claude
    path = tmp_path / "suites" / "task.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_suite(path, tmp_path)


def make_options(**overrides) -> AgentbenchOptions:
    values = dict(
        device=None, model=None, claude="/opt/bin/claude", server_instructions=False, output=Path("/out"),
        dry_run=False, server="agentbench", suite_dirs=("suites",), automobile_dir=None,
    )
    values.update(overrides)
    return AgentbenchOptions(**values)


def invoke(suite: Suite, *, options=None, profile=None, environ=None, **kwargs):
    return build_invocation(
        suite,
        options=options or make_options(),
        profile=profile or agentbench_profile(),
        run_dir=kwargs.pop("run_dir", Path("/runs/task/1")),
        workdir=kwargs.pop("workdir", Path("/tmp/work")),
        serial="emulator-5554",
        environ=environ if environ is not None else {"PATH": "/usr/bin", "HOME": "/home/op"},
        **kwargs,
    )


def test_argv_has_every_flag_in_order(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, {"model": "claude-sonnet-5-5", "maxBudgetUsd": 2, "appendSystemPrompt": "Be brief on {deviceSerial}."})
    argv = invoke(suite).argv
    assert argv[:14] == [
        "/opt/bin/claude", "-p", "--verbose", "--output-format", "stream-json",
        "--mcp-config", "/tmp/work/mcp-config.json", "--strict-mcp-config",
        "--setting-sources", "project,local",
        "--allowedTools", "mcp__agentbench",
        "--disallowedTools", "Bash,PowerShell",
    ]
    assert argv[14:16] == ["--model", "claude-sonnet-5-5"]
    assert argv[16] == "--append-system-prompt"
    assert argv[17].startswith("Be brief on emulator-5554.\n\nUse only the Android device with serial emulator-5554;")
    assert "com.example.app" in argv[17]
    assert argv[18:] == ["--max-budget-usd", "2"]


def test_optional_flags_are_left_out_but_the_device_sentence_stays(tmp_path: Path) -> None:
    argv = invoke(make_suite(tmp_path)).argv
    assert "--model" not in argv and "--max-budget-usd" not in argv
    assert argv[-2] == "--append-system-prompt"
    assert argv[-1].startswith("Use only the Android device with serial emulator-5554")


def test_model_option_overrides_the_suite(tmp_path: Path) -> None:
    argv = invoke(make_suite(tmp_path, {"model": "claude-sonnet-5-5"}), options=make_options(model="claude-opus-5")).argv
    assert argv[argv.index("--model") + 1] == "claude-opus-5"


@pytest.mark.parametrize(
    ("amount", "expected"),
    [(2, "2"), (0.5, "0.5"), (0.0001, "0.0001"), (12.25, "12.25")],
)
def test_budget_is_printed_without_float_noise(tmp_path: Path, amount: float, expected: str) -> None:
    argv = invoke(make_suite(tmp_path, {"maxBudgetUsd": amount})).argv
    assert argv[argv.index("--max-budget-usd") + 1] == expected


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("openLink", "mcp__agentbench__openLink"),
        ("mobile_take_screenshot", "mcp__agentbench__mobile_take_screenshot"),
        ("mcp__agentbench", "mcp__agentbench"),
        ("mcp__other__tapOn", "mcp__other__tapOn"),
        ("Bash", "Bash"),
        ("Write", "Write"),
    ],
)
def test_expand_tool_name(tool: str, expected: str) -> None:
    assert expand_tool_name(tool, "agentbench") == expected


def test_tool_lists_expand_for_the_configured_profile_and_always_deny_shells(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, {"allowedTools": ["observe", "tapOn", "observe"], "disallowedTools": ["openLink", "Bash", "Write"]})
    argv = invoke(suite, profile=mobile_mcp_profile()).argv
    assert argv[argv.index("--allowedTools") + 1] == "mcp__mobile-mcp__observe,mcp__mobile-mcp__tapOn"
    assert argv[argv.index("--disallowedTools") + 1] == "Bash,PowerShell,mcp__mobile-mcp__openLink,Write"


def test_prompt_placeholders_are_filled(tmp_path: Path) -> None:
    invocation = invoke(make_suite(tmp_path), run_dir=Path("/runs/x"))
    assert invocation.prompt == "Work on emulator-5554 in /runs/x.\n"


PLANTED_REMOVED = {
    **{variable.name: "planted" for variable in RUN_SHAPING_VARIABLES},
    "DISABLE_PROMPT_CACHING_SONNET": "1",
    "ENABLE_PROMPT_CACHING_FOO": "1",
    "FORCE_PROMPT_CACHING_1H": "1",
    "CLAUDE_SOMETHING_TIMEOUT_MS": "5",
    "API_REQUEST_TIMEOUT": "5",
    "MCP_REQUEST_TIMEOUT_MS": "5",
    "BASH_IDLE_TIMEOUT_MS": "5",
    "CLAUDE_NEW_WATCHDOG": "0",
    "AUTOMOBILE_DB_PATH": "/elsewhere/db",
    "AUTOMOBILE_DISABLED_TOOLS": "tapOn",
    "AUTO_MOBILE_DATA_DIR": "/elsewhere/data",
    "NODE_ENV": "test",
    # Where the phones' claims live is the server's business (it gets them in its own block).
    "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": "/var/claims",
    "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR": "/var/legacy-claims",
}
PLANTED_KEPT = {
    "PATH": "/usr/local/bin:/usr/bin",
    "HOME": "/home/operator",
    "ANTHROPIC_API_KEY": "sk-ant-planted-secret-0001",
    "ANTHROPIC_AUTH_TOKEN": "planted-token-0002",
    "ANTHROPIC_BASE_URL": "https://gateway.example/v1",
    "ANTHROPIC_MODEL": "claude-sonnet-5-5",
    "ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-5",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "AWS_REGION": "us-east-1",
    "HTTPS_PROXY": "http://proxyuser:planted-proxy-pass@proxy.example:3128",
    "NO_PROXY": "localhost",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
}


def test_planted_environment_is_scrubbed_and_kept(tmp_path: Path) -> None:
    environ = {**PLANTED_REMOVED, **PLANTED_KEPT}
    before = dict(environ)
    invocation = invoke(make_suite(tmp_path), profile=auto_mobile_profile(tmp_path / "auto-mobile"), environ=environ)
    harness_set = {
        "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_POLICY_SKILLS": "1",
        "MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "30000",
    }
    for name in PLANTED_REMOVED:
        if name in harness_set:
            assert invocation.env[name] == harness_set[name], name
        else:
            assert name not in invocation.env, name
    for name, value in PLANTED_KEPT.items():
        assert invocation.env[name] == value, name
    assert set(invocation.env_removed) == set(PLANTED_REMOVED)
    assert invocation.env["AGENTBENCH_SUITE"] == "task"
    # No harness path reaches the agent: the suite file, plans and run directory stay out of its environment.
    assert "AGENTBENCH_SUITE_FILE" not in invocation.env and "AGENTBENCH_PLAN" not in invocation.env
    assert environ == before, "build_invocation must not change the environment it reads"


@pytest.mark.parametrize(
    ("name", "shaping"),
    [
        ("CLAUDE_CODE_EFFORT_LEVEL", True),
        ("MAX_THINKING_TOKENS", True),
        ("CLAUDE_CODE_SUBAGENT_MODEL", True),
        ("CLAUDE_CODE_MAX_TURNS", True),
        ("MCP_TOOL_TIMEOUT", True),
        ("ENABLE_TOOL_SEARCH", True),
        ("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD", True),
        ("DISABLE_PROMPT_CACHING_OPUS", True),
        ("FORCE_PROMPT_CACHING_5M", True),
        ("API_TIMEOUT_MS", True),
        ("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS", True),
        ("CLAUDE_ENABLE_STREAM_WATCHDOG", True),
        ("BASH_DEFAULT_TIMEOUT_MS", True),
        ("ANTHROPIC_BETAS", True),
        ("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", True),
        ("CLAUDE_CODE_USE_POWERSHELL_TOOL", True),
        ("CLAUDE_CODE_MCP_ALLOWLIST_ENV", True),
        ("ANTHROPIC_API_KEY", False),
        ("ANTHROPIC_MODEL", False),
        ("ANTHROPIC_BASE_URL", False),
        ("CLAUDE_CODE_USE_VERTEX", False),
        ("HTTPS_PROXY", False),
        ("DISABLE_TELEMETRY", False),
        ("TIMEOUT", False),
        ("MY_APP_TIMEOUT", False),
    ],
)
def test_run_shaping_predicate(name: str, shaping: bool) -> None:
    assert is_run_shaping_variable(name) is shaping


def test_run_shaping_table_documents_every_entry() -> None:
    for variable in RUN_SHAPING_VARIABLES:
        assert variable.name and variable.family and variable.why, variable
    assert len({variable.name for variable in RUN_SHAPING_VARIABLES}) == len(RUN_SHAPING_VARIABLES)


def test_agent_mcp_config_names_only_the_relay_under_the_server_name(tmp_path: Path) -> None:
    invocation = invoke(make_suite(tmp_path), environ={"HOME": "/home/op", "ANDROID_ADB_SERVER_PORT": "5099"},
                        relay_socket_dir=Path("/tmp/agentbench-relay-x"))
    servers = invocation.mcp_config["mcpServers"]
    assert list(servers) == ["agentbench"]
    entry = servers["agentbench"]
    assert entry == {"type": "stdio", "command": sys.executable,
                     "args": ["-m", "pytest_agentbench.mcp_server.relay", "--socket", "/tmp/agentbench-relay-x/agentbench.sock"],
                     "env": {}}
    assert invocation.relay_socket_dir == Path("/tmp/agentbench-relay-x")
    # No adb endpoint, no private directory, no serial reaches the agent's config.
    text = json.dumps(invocation.mcp_config)
    assert "5099" not in text and "/runs/task/1" not in text and "emulator-5554" not in text


def test_the_agent_environment_names_no_adb_server_nor_phone(tmp_path: Path) -> None:
    # The adb server is the way around the MCP server being measured: only the server learns where it is.
    environ = {"HOME": "/home/op", "ANDROID_ADB_SERVER_PORT": "5099", "ANDROID_ADB_SERVER_ADDRESS": "10.0.0.2",
               "ADB_SERVER_SOCKET": "tcp:10.0.0.2:5099", "ANDROID_SERIAL": "emulator-5554", "ADB_VENDOR_KEYS": "/home/op/k"}
    invocation = invoke(make_suite(tmp_path), environ=environ)
    leaked = {name: value for name, value in invocation.env.items() if "ADB" in name or name == "ANDROID_SERIAL"}
    assert leaked == {}
    assert {"ANDROID_ADB_SERVER_PORT", "ADB_SERVER_SOCKET", "ANDROID_SERIAL"} <= set(invocation.env_removed)
    assert invocation.server_config["mcpServers"]["agentbench"]["env"]["ANDROID_ADB_SERVER_PORT"] == "5099"


def test_server_config_has_exactly_one_pinned_server(tmp_path: Path) -> None:
    invocation = invoke(make_suite(tmp_path), environ={"HOME": "/home/op", "ANDROID_ADB_SERVER_PORT": "5099"})
    servers = invocation.server_config["mcpServers"]
    assert list(servers) == ["agentbench"]
    server = servers["agentbench"]
    assert server["type"] == "stdio"
    assert [server["command"], *server["args"]] == list(agentbench_profile().command)
    assert server["env"] == {
        "AGENTBENCH_DATA_DIR": "/runs/task/1/data",
        "AGENTBENCH_LOG_DIR": "/runs/task/1/logs",
        "AGENTBENCH_DB_DIR": "/runs/task/1/db",
        "AGENTBENCH_SOCKET_DIR": "/runs/task/1/sock",
        "AGENTBENCH_DEVICE_SERIAL": "emulator-5554",
        "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": "/home/op/.auto-mobile/adb-servers",
        "ANDROID_ADB_SERVER_PORT": "5099",
    }
    # The agent reads its config from its workdir; the run directory keeps the artifact copy.
    assert invocation.mcp_config_path == Path("/tmp/work/mcp-config.json")
    assert invocation.mcp_config_artifact == Path("/runs/task/1/mcp-config.json")


def test_server_instructions_switch(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    on = invoke(suite, options=make_options(server_instructions=True)).server_config["mcpServers"]["agentbench"]["env"]
    off = invoke(suite).server_config["mcpServers"]["agentbench"]["env"]
    assert on["AGENTBENCH_MCP_INSTRUCTIONS"] == "1"
    assert "AGENTBENCH_MCP_INSTRUCTIONS" not in off
    with pytest.raises(ConfigError, match="mobile-mcp MCP server has no instructions switch"):
        invoke(suite, options=make_options(server_instructions=True), profile=mobile_mcp_profile())


def test_unpinnable_profiles_get_no_serial_and_their_fixed_env(tmp_path: Path) -> None:
    env = invoke(make_suite(tmp_path), profile=mobile_mcp_profile()).server_config["mcpServers"]["mobile-mcp"]["env"]
    assert env["MOBILEMCP_DISABLE_TELEMETRY"] == "1"
    assert "AGENTBENCH_DEVICE_SERIAL" not in env


def test_auto_mobile_server_env_is_private_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    environ = {
        "HOME": "/home/op", "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR": "claims", "ANDROID_HOME": "sdk",
        "ANDROID_SDK_ROOT": "~/sdk", "ADB_SERVER_SOCKET": "localfilesystem:adb.sock", "ANDROID_ADB_SERVER_ADDRESS": "10.0.0.2",
    }
    invocation = invoke(make_suite(tmp_path), profile=auto_mobile_profile(tmp_path / "am"), environ=environ, run_dir=Path("runs/1"))
    server = invocation.server_config["mcpServers"]["auto-mobile"]
    assert [server["command"], *server["args"]] == ["node", str(tmp_path / "am" / "dist" / "src" / "index.js")]
    env = server["env"]
    assert env["AUTOMOBILE_AUX_SOCKET_DIR"] == str(tmp_path / "runs" / "1" / "sock")
    assert env["AUTOMOBILE_DB_DIR"] == str(tmp_path / "runs" / "1" / "db")
    assert env["AUTOMOBILE_DATA_DIR"] == str(tmp_path / "runs" / "1" / "data")
    assert env["AUTOMOBILE_LOG_DIR"] == str(tmp_path / "runs" / "1" / "logs")
    assert env["AUTOMOBILE_ADB_SERVER_COORDINATION_DIR"] == str(tmp_path / "claims")
    assert env["AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR"] == str(tmp_path / "claims")
    assert env["ANDROID_HOME"] == str(tmp_path / "sdk")
    assert env["ANDROID_SDK_ROOT"] == "/home/op/sdk"
    assert env["ADB_SERVER_SOCKET"] == f"localfilesystem:{tmp_path / 'adb.sock'}"
    assert env["ANDROID_ADB_SERVER_ADDRESS"] == "10.0.0.2"
    assert "AUTOMOBILE_DEVICE_SERIAL" not in env and "AGENTBENCH_DEVICE_SERIAL" not in env
    assert invocation.mcp_config_artifact == tmp_path / "runs" / "1" / "mcp-config.json"


def test_private_dirs_override(tmp_path: Path) -> None:
    dirs = {"AGENTBENCH_SOCKET_DIR": Path("/tmp/s"), "AGENTBENCH_DATA_DIR": Path("/d")}
    env = invoke(make_suite(tmp_path), private_dirs=dirs).server_config["mcpServers"]["agentbench"]["env"]
    assert env["AGENTBENCH_SOCKET_DIR"] == "/tmp/s" and env["AGENTBENCH_DATA_DIR"] == "/d"
    assert "AGENTBENCH_DB_DIR" not in env


def test_describe_masks_secrets_and_shows_changes(tmp_path: Path) -> None:
    environ = {**PLANTED_KEPT, "MCP_TOOL_TIMEOUT": "5", "GITHUB_TOKEN": "planted-gh-token"}
    text = invoke(make_suite(tmp_path), environ=environ).describe()
    assert "environment removed: MCP_TOOL_TIMEOUT" in text
    assert "  MCP_CONNECTION_NONBLOCKING=false" in text
    assert '"mcpServers"' in text and "--strict-mcp-config" in text
    for secret in ("sk-ant-planted-secret-0001", "planted-token-0002", "planted-proxy-pass", "planted-gh-token"):
        assert secret not in text


@pytest.mark.parametrize("inherited", [None, "0", "false"], ids=["unset", "inherited-0", "inherited-false"])
def test_mobile_mcp_telemetry_is_off_in_the_written_config_whatever_the_environment_says(tmp_path: Path, inherited: str | None) -> None:
    # A benchmark run must not phone home: mobile-mcp reads MOBILEMCP_DISABLE_TELEMETRY.
    environ = {"PATH": "/usr/bin", "HOME": "/home/op"}
    if inherited is not None:
        environ["MOBILEMCP_DISABLE_TELEMETRY"] = inherited
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()
    invocation = invoke(make_suite(tmp_path), profile=mobile_mcp_profile(), environ=environ, run_dir=run_dir, workdir=workdir)
    write_run_files(RunArtifacts(run_dir), invocation)
    agent_side = json.loads((run_dir / "mcp-config.json").read_text(encoding="utf-8"))
    assert json.loads((workdir / "mcp-config.json").read_text(encoding="utf-8")) == agent_side
    assert [entry["env"] for entry in agent_side["mcpServers"].values()] == [{}]
    written = json.loads((run_dir / "mcp-servers.json").read_text(encoding="utf-8"))
    (server,) = written["mcpServers"].values()
    assert server["command"] == "npx" and server["args"][-1] == "@mobilenext/mobile-mcp@1.0.4"
    assert server["env"]["MOBILEMCP_DISABLE_TELEMETRY"] == "1"
    # The hub starts the server with the scrubbed environment overlaid by the config's env block.
    assert invocation.server_environ("mobile-mcp")["MOBILEMCP_DISABLE_TELEMETRY"] == "1"


def test_only_the_replay_agent_gets_its_plan_staged_in_its_workdir(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "task.yml").write_text("steps: []\n")
    inherited = {"PATH": "/usr/bin", "HOME": "/home/op", "AGENTBENCH_SUITE_FILE": "/elsewhere/x.yml", "AGENTBENCH_PLAN": "/x/plan.yml"}
    replay = invoke(suite, options=make_options(claude="/venv/bin/agentbench-replay"), environ=inherited)
    assert replay.staged == {Path("/tmp/work/agentbench-plan.yml"): plans / "task.yml"}
    assert replay.env["AGENTBENCH_PLAN"] == "/tmp/work/agentbench-plan.yml"
    assert replay.env["AGENTBENCH_APP_PACKAGE"] == suite.app.package_name
    assert "AGENTBENCH_SUITE_FILE" not in replay.env
    model = invoke(suite, options=make_options(claude="claude"), environ=inherited)
    assert model.staged == {}
    assert not {"AGENTBENCH_PLAN", "AGENTBENCH_SUITE_FILE", "AGENTBENCH_APP_PACKAGE"} & set(model.env)
