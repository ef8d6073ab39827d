"""A server profile name -> the AgentToolMap the model agent uses: which server tools observe and act, and their argument templates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

ObserveFormat = Literal["uiautomator", "mobile-mcp-json"]

#: The model agent's own actions (seed 004's action space) that map onto server tools.
ACTIONS = ("observe", "tap", "type", "swipe", "back", "home", "open_app")


@dataclass(frozen=True)
class ToolTemplate:
    """One server tool call with placeholders: an argument whose value is exactly ``"{x}"`` gets the value of ``x``.

    Placeholders are ``{device}``, ``{x}``, ``{y}``, ``{text}``, ``{direction}`` and ``{package}``;
    a value keeps its type (``{x}`` becomes an int), other arguments are sent as written.
    """

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def fill(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments with every placeholder replaced (a missing value raises KeyError: a profile bug)."""
        filled: dict[str, Any] = {}
        for name, value in self.arguments.items():
            if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
                filled[name] = values[value[1:-1]]
            else:
                filled[name] = value
        return filled


@dataclass(frozen=True)
class AgentToolMap:
    """How the model agent (agentbench-agent) drives one MCP server through the server's own tools.

    Attributes:
        observe_format: What the observe tool returns: ``uiautomator`` (XML, optionally after a
            ``foreground:`` line) or ``mobile-mcp-json`` (mobile-mcp's JSON element listing).
        actions: Action name (``ACTIONS``) -> the server tool call that performs it.
        list_devices: The tool that lists devices, used when the server is not pinned to a serial.
    """

    observe_format: ObserveFormat
    actions: Mapping[str, ToolTemplate]
    list_devices: str | None = None

def _map(observe_format: ObserveFormat, list_devices: str | None = None, **actions: tuple[str, dict[str, Any]]) -> AgentToolMap:
    templates = {name: ToolTemplate(tool, MappingProxyType(dict(arguments))) for name, (tool, arguments) in actions.items()}
    return AgentToolMap(observe_format, MappingProxyType(templates), list_devices)


# The built-in server: observe(raw=true) gives the uiautomator XML, tapOn(x, y) taps a point.
AGENTBENCH_TOOLS = _map(
    "uiautomator",
    observe=("observe", {"raw": True, "device": "{device}"}),
    tap=("tapOn", {"x": "{x}", "y": "{y}", "device": "{device}"}),
    type=("inputText", {"text": "{text}", "device": "{device}"}),
    swipe=("swipeOn", {"direction": "{direction}", "device": "{device}"}),
    back=("pressButton", {"button": "back", "device": "{device}"}),
    home=("homeScreen", {"device": "{device}"}),
    open_app=("launchApp", {"packageName": "{package}", "device": "{device}"}),
)

# mobile-mcp 1.0.4: every tool needs the device id, which mobile_list_available_devices gives.
MOBILE_MCP_TOOLS = _map(
    "mobile-mcp-json",
    list_devices="mobile_list_available_devices",
    observe=("mobile_list_elements_on_screen", {"device": "{device}", "format": "json"}),
    tap=("mobile_click_on_screen_at_coordinates", {"device": "{device}", "x": "{x}", "y": "{y}"}),
    type=("mobile_type_keys", {"device": "{device}", "text": "{text}", "submit": False}),
    swipe=("mobile_swipe_on_screen", {"device": "{device}", "direction": "{direction}"}),
    back=("mobile_press_button", {"device": "{device}", "button": "BACK"}),
    home=("mobile_press_button", {"device": "{device}", "button": "HOME"}),
    open_app=("mobile_launch_app", {"device": "{device}", "packageName": "{package}"}),
)

_BY_PROFILE: Mapping[str, AgentToolMap] = MappingProxyType({"agentbench": AGENTBENCH_TOOLS, "mobile-mcp": MOBILE_MCP_TOOLS})

#: Set it when the MCP server in --mcp-config is not named after its profile.
PROFILE_VARIABLE = "AGENTBENCH_AGENT_SERVER_PROFILE"


def agent_tool_map(server_name: str, environ: Mapping[str, str] | None = None) -> AgentToolMap | None:
    """The tool map for an MCP server: by ``$AGENTBENCH_AGENT_SERVER_PROFILE``, else by the server's name.

    Args:
        server_name: The server's name in ``--mcp-config`` (the harness names it after its profile).
        environ: The agent's environment.

    Returns:
        The map, or None for a profile the model agent cannot drive (auto-mobile, unknown names).
    """
    chosen = (environ or {}).get(PROFILE_VARIABLE) or server_name
    return _BY_PROFILE.get(chosen)


def known_profiles() -> tuple[str, ...]:
    """Profile names that have a tool map."""
    return tuple(_BY_PROFILE)
