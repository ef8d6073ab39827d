"""The pinned Codex CLI -> a test fixture (or a skip saying how to install it), and the config.toml that confines it to one MCP server and a fake API.

The config is the one tests/data/codex-stream/ was recorded with and docs/agent-clis-facts.md
explains: Codex's own tools off, nothing phoning home, MCP calls unprompted.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

#: Where CI installs the pinned agent CLIs (`.ci/run`); tests skip with this hint without it.
NPM_CACHE = Path(os.environ.get("AGENTBENCH_NPM_CACHE", Path.home() / ".cache" / "agentbench" / "npm"))
CODEX = NPM_CACHE / "node_modules" / ".bin" / "codex"
CODEX_VERSION = "0.171.0"
#: A model Codex 0.171.0 knows (no "model metadata not found" warning) that takes plain function
#: tools; it defers MCP tools behind `tool_search` (tests/data/codex-stream/README.md).
CODEX_MODEL = "gpt-5.5"
#: The provider entry's name in config.toml and the variable its key is read from.
CODEX_PROVIDER = "agentbench"
CODEX_KEY_VARIABLE = "AGENTBENCH_FAKE_OPENAI_KEY"


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    """The pinned Codex CLI, or a skip that says how to install it."""
    install = f"run `npm install --prefix {NPM_CACHE} @openai/codex@{CODEX_VERSION}` or set AGENTBENCH_NPM_CACHE"
    if not CODEX.exists():
        pytest.skip(f"Codex CLI not installed at {CODEX}: {install}")
    # The launcher is JavaScript; the program is a native binary from an optional npm package
    # (@openai/codex-linux-x64 and the like), which an install without optional packages lacks.
    with tempfile.TemporaryDirectory(prefix="codex-version-") as home:
        # Even `--version` writes helper links under $CODEX_HOME/tmp: keep them out of the real home.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "CODEX_HOME": home}
        try:
            version = subprocess.run([str(CODEX), "--version"], capture_output=True, text=True, timeout=30, check=False, env=env)
            problem = "" if version.returncode == 0 else version.stderr.strip()[-300:] or f"exit {version.returncode}"
        except (OSError, subprocess.TimeoutExpired) as error:
            problem = str(error)
    if problem:
        pytest.skip(f"Codex CLI at {CODEX} does not run (is its native binary package missing?): {problem}; {install}")
    return CODEX


def codex_config(*, base_url: str, mcp_command: str, mcp_args: list[str], model: str = CODEX_MODEL, retries: int = 1) -> str:
    """A `$CODEX_HOME/config.toml` that points Codex at the fake, with only the MCP server `dev` as a way out.

    Codex's own shell, patch-writing (read-only sandbox), web search, image, sub-agent, plugin and
    skill features are off, nothing phones home (analytics, plugin sync, update check), MCP calls
    need no approval, and the first model request waits for the MCP server (`required`).
    """
    quoted = json.dumps
    return f"""model = {quoted(model)}
model_provider = {quoted(CODEX_PROVIDER)}
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
web_search = "disabled"
project_doc_max_bytes = 0

[tools]
experimental_request_user_input.enabled = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
shell_tool = false
view_image = false
goals = false
shell_snapshot = false
image_generation = false
browser_use = false
computer_use = false
hooks = false
memories = false
skill_search = false
tool_suggest = false
remote_plugin = false
in_app_browser = false

[agents]
enabled = false

[skills]
include_instructions = false

[skills.bundled]
enabled = false

[model_providers.{CODEX_PROVIDER}]
name = "agentbench fake"
base_url = {quoted(base_url)}
env_key = {quoted(CODEX_KEY_VARIABLE)}
wire_api = "responses"
request_max_retries = {retries}
stream_max_retries = {retries}

[mcp_servers.dev]
command = {quoted(mcp_command)}
args = {quoted(mcp_args)}
required = true
default_tools_approval_mode = "approve"
startup_timeout_sec = 30
"""
