"""The pinned Gemini CLI -> a test fixture (or a skip saying how to install it), and the settings.json that confines it to one MCP server and a fake API.

The settings are the ones tests/data/gemini-stream/ was recorded with and
docs/agent-clis-facts.md explains: no built-in tool, nothing phoning home, MCP calls unprompted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Where CI installs the pinned agent CLIs (`.ci/run`); tests skip with this hint without it.
NPM_CACHE = Path(os.environ.get("AGENTBENCH_NPM_CACHE", Path.home() / ".cache" / "agentbench" / "npm"))
GEMINI = NPM_CACHE / "node_modules" / ".bin" / "gemini"
GEMINI_VERSION = "0.61.0"
#: Named explicitly: the default `auto` first asks a router model to choose one.
GEMINI_MODEL = "gemini-2.5-pro"
#: An empty file in the workdir that stops the upward search for GEMINI.md files
#: (settings `context.memoryBoundaryMarkers`).
BOUNDARY_MARKER = ".agentbench-workdir"


@pytest.fixture(scope="module")
def gemini_bin() -> Path:
    """The pinned Gemini CLI, or a skip that says how to install it."""
    if not GEMINI.exists():
        pytest.skip(
            f"Gemini CLI not installed at {GEMINI}: run `npm install --prefix {NPM_CACHE} "
            f"@google/gemini-cli@{GEMINI_VERSION}` or set AGENTBENCH_NPM_CACHE"
        )
    return GEMINI


def gemini_settings(*, mcp_command: str, mcp_args: list[str], max_attempts: int = 2) -> dict:
    """A `~/.gemini/settings.json` with only the MCP server `dev` as a way out, for a fresh GEMINI_CLI_HOME.

    `tools.core` is an allowlist that registers no built-in tool (shell, file, web, agents) and
    denies every tool but dev's; its tools run without prompting (`trust`). Usage statistics,
    telemetry and update checks are off; the API key auth type is chosen explicitly because
    `GOOGLE_GEMINI_BASE_URL` alone selects the `gateway` type, which headless mode rejects.
    """
    return {
        "mcpServers": {"dev": {"command": mcp_command, "args": list(mcp_args), "trust": True}},
        "mcp": {"allowed": ["dev"]},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "enableAutoUpdate": False, "enableAutoUpdateNotification": False, "plan": {"enabled": False},
            "checkpointing": {"enabled": False}, "maxAttempts": max_attempts,
        },
        "tools": {"core": ["mcp_dev_*"]},
        "experimental": {"enableAgents": False},
        "useWriteTodos": False,
        "skills": {"enabled": False},
        "hooksConfig": {"enabled": False},
        "context": {"includeDirectoryTree": False, "memoryBoundaryMarkers": [BOUNDARY_MARKER]},
        "advanced": {"ignoreLocalEnv": True},
    }
