"""The plugin's exception tree: every error a user can meet, each with a sentence that says what to do."""

from __future__ import annotations


class AgentbenchError(Exception):
    """Base of every error this plugin raises on purpose."""


class SuiteError(AgentbenchError):
    """A suite file is malformed: names the file, the key path, the value and what was expected."""

    def __init__(self, path: object, problems: list[str] | str) -> None:
        self.path = path
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__(self.format())

    def format(self) -> str:
        if len(self.problems) == 1:
            return f"{self.path}: {self.problems[0]}"
        lines = [f"{self.path}: {len(self.problems)} problems"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


class ConfigError(AgentbenchError):
    """A plugin option or ini setting is invalid."""


class DeviceError(AgentbenchError):
    """An adb command failed; carries the command and what the device printed."""

    def __init__(self, message: str, *, command: str | None = None, output: str = "", exit_code: int | None = None) -> None:
        self.command = command
        self.output = output
        self.exit_code = exit_code
        super().__init__(message)


class DeviceLost(DeviceError):
    """The device or the adb server went away in the middle of a command."""


class DeviceUnavailable(DeviceError):
    """No usable device: none, several, offline, unauthorized, wrong user, or held by someone else."""


class DeviceBusy(DeviceUnavailable):
    """Another session holds the device's claim or benchmark lock."""


class PreflightError(AgentbenchError):
    """Preflight could not put the app into the suite's start state; the agent never ran."""


class AgentProcessError(AgentbenchError):
    """The agent command could not be started."""


class AgentStreamError(AgentProcessError):
    """The agent ran, but the harness could not write its stream to the run directory (a full disk)."""


class TranscriptError(AgentbenchError):
    """A stream-json transcript could not be read at all."""


class VerdictFailed(AgentbenchError):
    """The run completed but a check failed (verdict `failed`)."""

    def __init__(self, verdict: object, message: str) -> None:
        self.verdict = verdict
        super().__init__(message)


class ProveFailed(AgentbenchError):
    """An --agentbench-prove scenario did not prove what it must (a check passes on the fresh state, ...)."""


class SavedRunError(AgentbenchError):
    """A saved run cannot be re-rendered: its result.json or suite is missing or unreadable."""
