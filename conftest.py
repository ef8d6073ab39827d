# The project's own tests drive the plugin through pytester (pytest_plugins may only be set here, in the rootdir conftest).
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    # Slow tests that run the real Claude Code CLI (against tests/fake_anthropic.py): `-m claude_cli`
    # picks them out and `-m "not claude_cli"` leaves them out; CI runs them too.
    config.addinivalue_line(
        "markers", "claude_cli: runs the real Claude Code CLI against the fake Anthropic API (slow, a few seconds each)"
    )
    # The same for the other agent CLIs (Codex CLI, Gemini CLI) against tests/fake_openai_responses.py
    # and tests/fake_gemini.py: `-m agent_cli` picks them out; CI installs them (.ci/run) and runs them.
    config.addinivalue_line(
        "markers", "agent_cli: runs a real agent CLI other than Claude Code against its provider's fake API (slow, seconds each)"
    )
    # tests/conftest.py marks them; `-m "not e2e"` is the quick subset for local iteration.
    config.addinivalue_line(
        "markers", "e2e: starts pytest sessions, a real adb server, a simulated phone, Claude Code or a browser (slow)"
    )
