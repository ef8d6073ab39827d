"""Shell-use detection: which tools are shells (profile, schema rule, Claude's own), the noShell check and verdict, the adb-shell server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from checklab import FIVE_CHECKS, lab_phone
from mcp import Client
from phoneadb import PhoneAdb
from auditfakes import call, make_run, make_suite, transcript

from pytest_agentbench.audit.transcript import ToolCall
from pytest_agentbench.audit.verdict import audit_run, no_shell_check
from pytest_agentbench.mcp_server.adb_shell import build_server
from pytest_agentbench.mcp_server.config import ServerConfig
from pytest_agentbench.servers import get_profile
from pytest_agentbench.servers.probe import classify_tools, is_shell_schema
from pytest_agentbench.suite import VerifySpec

SHELL = "mcp__adb-shell__shell"
MOBILE_MCP_TOOLS = Path(__file__).parents[1] / "data" / "mobile-mcp-1.0.4-tools.json"


def shell_call(name: str, command: str = "cat /data/data/x/files/code.txt", *, result: str | None = "1234",
               is_error: bool = False) -> ToolCall:
    return ToolCall(id=name, name=name, input={"command": command}, result_text=result, is_error=is_error)


@pytest.mark.parametrize(
    ("calls", "shell_tools", "passed", "seen"),
    [
        ((call(),), frozenset(), True, "no shell tool was called"),
        ((call(), shell_call("Bash")), frozenset(), False, 'Bash({"command": "cat /data/data/x/files/code.txt"}) (ok)'),
        # A denied or failed call is shell use all the same: the agent reached for the shell.
        ((shell_call("Bash", result="Claude requested permissions to use Bash", is_error=True),), frozenset(), False, "(error)"),
        ((shell_call("PowerShell", "Get-ChildItem", result=None),), frozenset(), False, "PowerShell"),
        ((shell_call(SHELL),), frozenset({SHELL}), False, "mcp__adb-shell__shell"),
        ((shell_call(SHELL),), frozenset(), True, "no shell tool was called"),
        ((shell_call("Bash"), shell_call(SHELL, "dumpsys power")), frozenset({SHELL}), False, '"dumpsys power"'),
    ],
    ids=["no-shell", "bash", "denied-bash", "powershell", "server-shell", "unlisted-tool", "both"],
)
def test_no_shell_check(calls: tuple[ToolCall, ...], shell_tools: frozenset[str], passed: bool, seen: str) -> None:
    check = no_shell_check(calls, shell_tools)
    assert (check.kind, check.passed) == ("no-shell", passed) and seen in check.seen, check


def test_a_no_shell_suite_fails_a_run_that_used_the_shell_and_the_reason_names_the_call() -> None:
    suite = make_suite()
    noshell = dataclasses.replace(suite, verify=dataclasses.replace(suite.verify, no_shell=True))
    calls = (*transcript().tool_calls, shell_call("Bash", "run-as com.x cat files/code"))
    shelled = transcript(tool_calls=calls)
    assert audit_run(make_run(suite), shelled).verdict.status == "passed"
    audit = audit_run(make_run(noshell), shelled)
    assert audit.verdict.status == "failed"
    assert audit.verdict.reasons == ('shell use (verify.noShell): the run called Bash({"command": "run-as com.x cat files/code"}) (ok)',)
    assert audit_run(make_run(noshell), transcript()).verdict.status == "passed"


def test_device_checks_reach_the_verdict_and_a_missing_after_read_fails_them() -> None:
    from pytest_agentbench.records.run import DeviceState

    suite = make_suite()
    with_device = dataclasses.replace(suite, verify=VerifySpec(("EXPECTED_COUNT: 3",), (), device=(FIVE_CHECKS[3],)))
    audit = audit_run(make_run(with_device, screen=None, device_state=DeviceState(None, None, "the device went away")),
                      transcript())
    (device,) = [check for check in audit.checks if check.kind == "appops"]
    assert device.name == "restricted" and not device.passed and device.seen == "the device went away"
    assert audit.verdict.reasons == ("appops check 'restricted' failed: expected dev.agentbench.checklab newly in "
                                     "RUN_ANY_IN_BACKGROUND mode ignore, and no other package changed; the device went away",)


@pytest.mark.parametrize(
    ("schema", "shell"),
    [
        ({"type": "object", "properties": {"command": {"type": "string"}, "device": {"type": "string"}}}, True),
        ({"type": "object", "properties": {"cmd": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}, True),
        ({"type": "object", "properties": {"script": {"$ref": "#/$defs/S"}}, "$defs": {"S": {"type": "string"}}}, True),
        ({"type": "object", "properties": {"command": {"type": "integer"}}}, False),
        ({"type": "object", "properties": {"text": {"type": "string"}, "device": {"type": "string"}}}, False),
        ({"type": "object", "properties": {"steps": {"type": "array"}}}, False),
        (None, False),
    ],
    ids=["command", "optional-cmd", "ref-script", "numeric-command", "typing-text", "batch-steps", "no-schema"],
)
def test_a_tool_whose_schema_takes_a_command_is_a_shell(schema: dict | None, shell: bool) -> None:
    assert is_shell_schema(schema) is shell


def test_no_mobile_mcp_tool_counts_as_a_shell() -> None:
    listing = json.loads(MOBILE_MCP_TOOLS.read_text())
    tools = listing["tools"] if isinstance(listing, dict) else listing
    classes = classify_tools("mobile-mcp", [(tool["name"], tool.get("inputSchema")) for tool in tools])
    assert classes.shell == frozenset() and classes.device_aware


def _client_calls(server, body):
    async def run():
        async with Client(server) as client:
            return await body(client)

    return asyncio.run(run())


def test_the_adb_shell_server_has_one_device_aware_shell_tool_that_runs_on_the_pinned_phone(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    config = ServerConfig.from_environ({"AGENTBENCH_DEVICE_SERIAL": "sim",
                                        "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path / "claims")})
    server = build_server(config, adb=adb)  # type: ignore[arg-type]

    async def body(client: Client):
        tools = (await client.list_tools()).tools
        ran = await client.call_tool("shell", {"command": "settings put global wifi_on 1; settings get global wifi_on"})
        failed = await client.call_tool("shell", {"command": "cat /data/data/dev.agentbench.checklab/x"})
        other = await client.call_tool("shell", {"command": "id", "device": "emulator-5554"})
        return tools, ran, failed, other

    tools, ran, failed, other = _client_calls(server, body)
    assert [tool.name for tool in tools] == ["shell"]
    classes = classify_tools("adb-shell", [(tool.name, tool.input_schema) for tool in tools])
    assert classes.shell == classes.device_aware == frozenset({SHELL})
    assert not ran.is_error and ran.content[0].text.strip() == "1" and adb.phone.settings["global"]["wifi_on"] == "1"
    assert failed.is_error and "Permission denied" in failed.content[0].text and "(exit 1)" in failed.content[0].text
    assert other.is_error and "pinned to sim" in other.content[0].text
    # The agent's command reached the device as one quoted word for `sh -c`.
    assert "sh -c 'settings put global wifi_on 1; settings get global wifi_on'" in adb.commands


def test_the_adb_shell_profile_pins_the_phone_and_lists_its_shell() -> None:
    profile = get_profile("adb-shell")
    assert (profile.name, profile.pinnable, profile.pin_env, profile.shell_tools) == (
        "adb-shell", True, "AGENTBENCH_DEVICE_SERIAL", ("shell",))
    assert profile.command[1:] == ("-m", "pytest_agentbench.mcp_server.adb_shell")
