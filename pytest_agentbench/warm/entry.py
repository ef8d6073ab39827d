"""The console scripts `agentbench-mcp` and `agentbench-replay` -> a warm start through the fork server, else the program in process.

Nothing heavy is imported before the hand-off: that is the time a warm start saves.
"""

from __future__ import annotations

from pytest_agentbench.warm.launch import handoff


def mcp() -> int:
    """`agentbench-mcp`: the built-in MCP server."""
    code = handoff("agentbench-mcp")
    if code is not None:
        return code
    from pytest_agentbench.mcp_server.__main__ import main

    return main()


def replay() -> int:
    """`agentbench-replay`: the scripted agent."""
    code = handoff("agentbench-replay")
    if code is not None:
        return code
    from pytest_agentbench.agents.replay import main

    return main()
