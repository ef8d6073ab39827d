"""An MCP server's config entry -> its device-aware and its shell tool names, read from the server's own `tools/list`."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.servers.mcpclient import McpClientError, McpTimeout, StdioClient

#: Inventory and control tools that never count as device use, even with a `device` property:
#: AutoMobile's listDevices / setToolEnabled and mobile-mcp's device fleet and account tools
#: (releasing a remote device names one, but does nothing on it).
NEVER_DEVICE_AWARE = frozenset({
    "listDevices",
    "setToolEnabled",
    "mobile_list_available_devices",
    "mobile_list_remote_devices",
    "mobile_allocate_remote_device",
    "mobile_release_remote_device",
    "mobile_login_to_cloud_provider",
})
_MAX_REF_DEPTH = 16
#: A tool runs commands when its input schema has one of these string properties: the rule for
#: "any MCP tool whose schema runs commands" (`verify.noShell`). No UI tool of the built-in
#: server, AutoMobile or mobile-mcp 1.0.4 takes one.
SHELL_ARGUMENTS = ("command", "cmd", "shellCommand", "shell_command", "script")


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """Follow a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) to the schema it names."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and depth < _MAX_REF_DEPTH:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return None
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        schema, depth = target, depth + 1
    return schema


def _accepts_string(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    schema = _resolve(schema, root, depth)
    if not isinstance(schema, Mapping) or depth > _MAX_REF_DEPTH:
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    # pydantic renders `str | None` as anyOf: [{type: string}, {type: null}]; oneOf likewise.
    options = [*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ())]
    return any(_accepts_string(option, root, depth + 1) for option in options)


def is_device_aware_schema(name: str, input_schema: Mapping[str, Any] | None) -> bool:
    """A tool is device-aware when its input schema has a property `device` that takes a string.

    The property may sit behind a local `$ref` (pydantic's `$defs`), and its string type may be
    one branch of `anyOf`/`oneOf` (`str | None`). Inventory and control tools never count.

    Args:
        name: The tool's short name (as the server lists it).
        input_schema: The tool's JSON Schema for its arguments.

    Returns:
        True for tools that act on a phone.
    """
    if name in NEVER_DEVICE_AWARE or not isinstance(input_schema, Mapping):
        return False
    root = input_schema
    schema = _resolve(input_schema, root)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or "device" not in properties:
        return False
    return _accepts_string(properties["device"], root)


def is_shell_schema(input_schema: Mapping[str, Any] | None) -> bool:
    """A tool is a shell when its input schema has a string property named in SHELL_ARGUMENTS.

    Args:
        input_schema: The tool's JSON Schema for its arguments.

    Returns:
        True for tools that take a command line to run.
    """
    if not isinstance(input_schema, Mapping):
        return False
    schema = _resolve(input_schema, input_schema)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return False
    return any(name in properties and _accepts_string(properties[name], input_schema) for name in SHELL_ARGUMENTS)


@dataclass(frozen=True)
class ToolClasses:
    """A server's tools as the audit needs them: full names of the device-aware ones and of the shells."""

    device_aware: frozenset[str]
    shell: frozenset[str]


def classify_tools(server_name: str, tools: Iterable[tuple[str, Mapping[str, Any] | None]]) -> ToolClasses:
    """Full agent-side names (`mcp__<server>__<tool>`) of the device-aware and the shell tools in a listing."""
    listed = list(tools)
    return ToolClasses(
        device_aware_tool_names(server_name, listed),
        frozenset(f"mcp__{server_name}__{name}" for name, schema in listed if is_shell_schema(schema)),
    )


def device_aware_tool_names(server_name: str, tools: Iterable[tuple[str, Mapping[str, Any] | None]]) -> frozenset[str]:
    """Full agent-side names (`mcp__<server>__<tool>`) of the device-aware tools in a listing."""
    return frozenset(f"mcp__{server_name}__{name}" for name, schema in tools if is_device_aware_schema(name, schema))


def list_server_tools(server: Mapping[str, Any], *, environ: Mapping[str, str], timeout_s: float = 60.0) -> list[tuple[str, dict]]:
    """Start the server from its MCP config entry, list its tools, and stop it.

    The probe runs with private state in a throwaway directory so it touches no run's files.

    Args:
        server: One `mcpServers` entry (`command`, `args`, `env`).
        environ: The environment the server inherits (its own `env` is laid over it).
        timeout_s: Seconds for start-up and the listing together.

    Returns:
        (tool name, input schema) pairs.

    Raises:
        AgentbenchError: The server did not start or did not answer `tools/list` in time.
    """
    with tempfile.TemporaryDirectory(prefix="agentbench-probe-") as scratch:
        env = {**environ, **_redirect_state(server.get("env") or {}, Path(scratch))}
        command, args = server["command"], [str(arg) for arg in server.get("args") or []]
        deadline = time.monotonic() + timeout_s
        try:
            with open(Path(scratch) / "server.stderr", "w") as errlog:
                with StdioClient(command, args, env=env, cwd=scratch, errlog=errlog) as client:
                    client.initialize(timeout_s=deadline - time.monotonic())
                    listing = client.list_tools(timeout_s=deadline - time.monotonic())
        except McpTimeout:
            raise AgentbenchError(f"the MCP server `{command}` did not list its tools within {timeout_s:.0f}s") from None
        except McpClientError as exc:
            raise AgentbenchError(f"could not list the tools of the MCP server `{command} {' '.join(args)}`: {exc}") from None
    return [(tool["name"], dict(tool.get("inputSchema") or {})) for tool in listing]


def _redirect_state(server_env: Mapping[str, str], scratch: Path) -> dict[str, str]:
    # Private-state directories in the config point at a run directory; the probe must not write there.
    redirected = {}
    for name, value in server_env.items():
        if name.endswith(("_DIR", "_DATA_DIR", "_DB_DIR", "_LOG_DIR", "_SOCKET_DIR")) and "COORDINATION" not in name:
            target = scratch / name.lower()
            target.mkdir(parents=True, exist_ok=True)
            redirected[name] = str(target)
        else:
            redirected[name] = value
    return redirected


def probe_tools(mcp_config: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> ToolClasses:
    """The device-aware and the shell tools of the single server in an MCP config (one `tools/list`).

    Args:
        mcp_config: The generated config (`{"mcpServers": {name: entry}}`).
        environ: The inherited environment (default `os.environ`).

    Returns:
        Full names, e.g. `mcp__agentbench__tapOn`, `mcp__adb-shell__shell`.
    """
    ((name, entry),) = mcp_config["mcpServers"].items()
    tools = list_server_tools(entry, environ=dict(os.environ if environ is None else environ))
    return classify_tools(name, tools)
