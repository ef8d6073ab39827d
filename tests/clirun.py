"""An agent CLI run in its own process group -> its JSON-lines events, stderr, exit code and timing (for the fake-API CLI tests).

Shared by the Codex CLI and Gemini CLI tests against tests/fake_openai_responses.py and
tests/fake_gemini.py: the tiny MCP stdio server they drive, and a runner that always kills the
CLI's whole process group (the CLI and the MCP server it started) when it returns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A tiny MCP stdio server named `dev`: observe(device) (raises for device "broken") and listDevices().
MCP_SERVER = textwrap.dedent(
    '''
    """A tiny MCP stdio server for CLI tests: observe(device) and listDevices()."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("dev")


    @server.tool()
    def observe(device: str) -> str:
        """Describe what is on the device screen."""
        if device == "broken":
            raise ToolError("device broken is offline; call listDevices and use a listed serial")
        return f"device {device}: Expected count: 3"


    @server.tool()
    def listDevices() -> str:
        """List connected devices."""
        return "emulator-5554"


    server.run()
    '''
)

PROMPT = "Count the items on emulator-5554."


@dataclass
class CliRun:
    """What one CLI run printed and how it ended."""

    exit_code: int | None
    events: list[dict]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    process_group: int

    def of_type(self, event_type: str) -> list[dict]:
        """The events whose `type` is `event_type`, in order."""
        return [event for event in self.events if event.get("type") == event_type]


def run_cli(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    wait_for_hang: Callable[[float], bool] | None = None,
    kill_after_hang_s: float = 5.0,
) -> CliRun:
    """Run `argv` in a new session, stdin closed; its process group is killed when this returns.

    With `wait_for_hang` (a fake's `wait_for_hang`), the group is killed `kill_after_hang_s`
    after the fake started holding a request, not a fixed time after the start: on a loaded
    machine the CLI can take longer than any short timeout to get that far.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    killed_after_hang: list[bool] = []
    killer = None
    if wait_for_hang is not None:
        def kill_once_hung() -> None:
            if wait_for_hang(timeout_s) and process.poll() is None:
                time.sleep(kill_after_hang_s)
                if process.poll() is None:
                    killed_after_hang.append(True)
                    kill_group(process.pid)

        killer = threading.Thread(target=kill_once_hung, name="kill-after-hang", daemon=True)
        killer.start()
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(process.pid)
        stdout, stderr = process.communicate()
    finally:
        kill_group(process.pid)
    if killer is not None:
        killer.join(timeout=1)
    text = stdout.decode(errors="replace")
    events = [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
    return CliRun(
        process.returncode, events, text, stderr.decode(errors="replace"), time.monotonic() - started,
        timed_out or bool(killed_after_hang), process.pid,
    )


def kill_group(process_group: int) -> None:
    """SIGKILL a process group (the CLI and everything it started); gone already is fine."""
    try:
        os.killpg(process_group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def group_gone(process_group: int, within_s: float = 10.0) -> bool:
    """Whether no process of the group is left (killed children may need a moment to be reaped)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(process_group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False
