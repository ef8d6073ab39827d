"""A simulated Phone behind McpDevice's interface (resolve, observe, call) for in-process tests of the executor and the loop.

No adb and no MCP server: each action goes straight to `sim.phone.Phone`, and observe parses its
real uiautomator XML with `ui_tree`, so indexes and tap points are the ones the agent computes
on the real path. `fail` makes named actions answer like a server tool error.
"""

from __future__ import annotations

from typing import Any

from pytest_agentbench.agents.model.mcp_device import DeviceCallFailed, ServerGone
from pytest_agentbench.agents.model.ui_tree import UiTree, from_uiautomator
from pytest_agentbench.sim.phone import Phone


class SimDevice:
    """McpDevice's interface over an in-process simulated phone."""

    def __init__(self, phone: Phone | None = None, *, fail: dict[str, str] | None = None, gone_after: int | None = None) -> None:
        self.phone = phone or Phone()
        self.fail = dict(fail or {})
        self.gone_after = gone_after
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.device = "sim-serial"

    async def resolve(self) -> str:
        return self.device

    async def observe(self) -> UiTree:
        await self.call("observe")
        return from_uiautomator(self.phone.screen_xml())

    async def call(self, action: str, **values: Any) -> str:
        self.calls.append((action, values))
        if self.gone_after is not None and len(self.calls) > self.gone_after:
            raise ServerGone(f"the MCP server stopped answering during {action}: BrokenPipeError()")
        if action in self.fail:
            raise DeviceCallFailed(f"{action} failed: {self.fail[action]}")
        if action == "tap":
            self.phone.tap(values["x"], values["y"])
        elif action == "back":
            self.phone.press_back()
        elif action == "home":
            self.phone.go_home()
        elif action == "open_app":
            self.phone.launch(values["package"])
        elif action == "type":
            self.phone.type_text(values["text"])
        elif action == "swipe":
            self.phone.swipe(540, 1600, 540, 800) if values["direction"] == "up" else self.phone.swipe(540, 800, 540, 1600)
        return "ok"

    def actions(self) -> list[str]:
        """The actions performed, observes left out."""
        return [name for name, _ in self.calls if name != "observe"]
