"""Tests for servers/probe.py: which tools count as device use (real tools/list schemas), and the probe's environment.

The classifier alone decides the device-use check, so it is table-tested on what real servers
list: the built-in server's own schemas, mobile-mcp 1.0.4's (recorded from the real server in
tests/data), and the shapes pydantic and other generators produce.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from fakeautomobile import make_checkout
from mcp import Client

from pytest_agentbench.mcp_server import ServerConfig, build_server
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.run.execute import server_tools
from pytest_agentbench.run.invocation import build_invocation
from pytest_agentbench.servers import auto_mobile_profile
from pytest_agentbench.servers.probe import device_aware_tool_names, is_device_aware_schema
from pytest_agentbench.suite import load_suite

DATA = Path(__file__).parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


def _builtin_schemas(tmp_path: Path) -> dict[str, dict]:
    config = ServerConfig.from_environ({"AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path), "ANDROID_ADB_SERVER_PORT": "1"})

    async def listing() -> dict[str, dict]:
        async with Client(build_server(config)) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return asyncio.run(listing())


def test_the_builtin_servers_device_tools_are_exactly_those_that_act_on_the_phone(tmp_path: Path) -> None:
    schemas = _builtin_schemas(tmp_path)
    aware = {name for name, schema in schemas.items() if is_device_aware_schema(name, schema)}
    assert aware == set(schemas) - {"listDevices"}
    assert {"observe", "tapOn", "inputText", "swipeOn", "pressButton", "launchApp", "terminateApp", "openLink", "homeScreen"} <= aware


MOBILE_MCP_CONTROL = {
    "mobile_list_available_devices", "mobile_login_to_cloud_provider", "mobile_list_remote_devices",
    "mobile_allocate_remote_device", "mobile_release_remote_device",
}


def test_mobile_mcp_104_device_tools_from_its_recorded_listing() -> None:
    recorded = json.loads((DATA / "mobile-mcp-1.0.4-tools.json").read_text(encoding="utf-8"))
    schemas = {tool["name"]: tool["inputSchema"] for tool in recorded["tools"]}
    aware = device_aware_tool_names("mobile-mcp", schemas.items())
    assert {name.removeprefix("mcp__mobile-mcp__") for name in aware} == set(schemas) - MOBILE_MCP_CONTROL
    assert "mcp__mobile-mcp__mobile_click_on_screen_at_coordinates" in aware
    # Releasing a remote device names one but does nothing on it.
    assert "device" in schemas["mobile_release_remote_device"]["properties"]
    assert "mcp__mobile-mcp__mobile_release_remote_device" not in aware


DEFS = {"DeviceLabel": {"type": "string", "description": "serial"}, "Count": {"type": "integer"}}


@pytest.mark.parametrize(
    ("name", "schema", "aware"),
    [
        ("observe", {"type": "object", "properties": {"device": {"type": "string"}}}, True),
        ("observe", {"type": "object", "properties": {"device": {"type": ["string", "null"]}}}, True),
        ("observe", {"type": "object", "properties": {"device": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}}, True),
        ("observe", {"type": "object", "properties": {"device": {"oneOf": [{"type": "null"}, {"type": "string"}]}}}, True),
        ("observe", {"type": "object", "$defs": DEFS, "properties": {"device": {"$ref": "#/$defs/DeviceLabel"}}}, True),
        ("observe", {"type": "object", "definitions": DEFS, "properties": {"device": {"$ref": "#/definitions/DeviceLabel"}}}, True),
        ("observe", {"$defs": {**DEFS, "Args": {"type": "object", "properties": {"device": {"$ref": "#/$defs/DeviceLabel"}}}},
                     "$ref": "#/$defs/Args"}, True),
        ("observe", {"type": "object", "$defs": DEFS, "properties": {"device": {"anyOf": [{"$ref": "#/$defs/DeviceLabel"}, {"type": "null"}]}}}, True),
        ("observe", {"type": "object", "properties": {"device": {"type": "integer"}}}, False),
        ("observe", {"type": "object", "properties": {"device": {"type": "object", "properties": {"serial": {"type": "string"}}}}}, False),
        ("observe", {"type": "object", "$defs": DEFS, "properties": {"device": {"$ref": "#/$defs/Count"}}}, False),
        ("observe", {"type": "object", "properties": {"device": {"$ref": "#/$defs/Missing"}}}, False),
        ("observe", {"type": "object", "properties": {"device": {"$ref": "https://example.com/schema.json"}}}, False),
        ("observe", {"type": "object", "$defs": {"Loop": {"$ref": "#/$defs/Loop"}}, "properties": {"device": {"$ref": "#/$defs/Loop"}}}, False),
        ("observe", {"type": "object", "properties": {"serial": {"type": "string"}}}, False),
        ("observe", {"type": "object", "properties": {}}, False),
        ("observe", {}, False),
        ("observe", None, False),
        ("listDevices", {"type": "object", "properties": {"device": {"type": "string"}}}, False),
        ("setToolEnabled", {"type": "object", "properties": {"device": {"type": "string"}, "enabled": {"type": "boolean"}}}, False),
        ("mobile_release_remote_device", {"type": "object", "properties": {"device": {"type": "string"}}}, False),
    ],
    ids=[
        "string", "string-or-null type list", "anyOf with null (pydantic str | None)", "oneOf with null",
        "$ref into $defs", "$ref into definitions", "whole schema behind $ref", "anyOf of a $ref and null",
        "integer device", "object device", "$ref to an integer", "dangling $ref", "remote $ref not followed",
        "self-referencing $ref", "no device property", "no properties", "empty schema", "no schema",
        "inventory tool listDevices", "control tool setToolEnabled", "mobile-mcp fleet release",
    ],
)
def test_classifier_table(name: str, schema: dict | None, aware: bool) -> None:
    assert is_device_aware_schema(name, schema) is aware


def test_the_probe_gets_the_environment_the_agents_server_gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An inherited AUTOMOBILE_DISABLED_TOOLS would hide tapOn from a probe run with os.environ,
    # while the agent's server (scrubbed) offers it: the two must see the same toolset.
    checkout = make_checkout(tmp_path / "auto-mobile")
    monkeypatch.setenv("AUTOMOBILE_DISABLED_TOOLS", "tapOn")
    monkeypatch.setenv("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", str(tmp_path / "claims"))
    suite = load_suite(REPO / "benchmark" / "agent" / "suites" / "bug-repro.yml", REPO)
    options = AgentbenchOptions(device=None, model=None, claude="claude", server_instructions=False, output=tmp_path / "out",
                                dry_run=False, server="auto-mobile", suite_dirs=("suites",), automobile_dir=checkout)
    profile = auto_mobile_profile(checkout)
    invocation = build_invocation(suite, options=options, profile=profile, run_dir=tmp_path / "run", workdir=tmp_path / "work",
                                  serial="emulator-5554", environ=dict(os.environ))
    assert "AUTOMOBILE_DISABLED_TOOLS" in invocation.env_removed
    classes, error = server_tools({}, invocation)
    assert error is None
    assert classes.device_aware == {"mcp__auto-mobile__observe", "mcp__auto-mobile__tapOn"}
