"""Runs as they happen -> under `-v`, one line per finished run and the running agent's tool-call count; nothing extra at `-q`.

The per-run line comes from the run's report (its result.json), so it works under xdist too, on
the controller. The live count needs the terminal of the process that runs the agent, so it is
shown only without xdist: on a terminal it is rewritten in place after pytest's `nodeid ` (and
erased before pytest writes the outcome), elsewhere (CI logs) a plain line is printed every
`PLAIN_INTERVAL_S` seconds of a long run. The node id is printed as pytest names the item,
so repeats (`suite[r3]`) and seeded instances show without being parsed here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run.execute import StreamProgress
from pytest_agentbench.session import RESULT_PROPERTY

PLUGIN_NAME = "agentbench-progress"
#: Seconds between plain progress lines when the terminal cannot be rewritten.
PLAIN_INTERVAL_S = 30.0
#: Seconds between rewrites of the live count on a terminal.
TTY_INTERVAL_S = 0.25
# Room kept for pytest's " PASSED [100%]" when deciding whether the live count fits the line.
_OUTCOME_ROOM = 16


def run_line(name: str, *, device: str | None, verdict: str, tool_calls: Any, seconds: Any) -> str:
    """The `-v` line of one finished run.

    Args:
        name: The item's name as pytest shows it (`bug-repro`, `bug-repro[r3]`).
        device: The serial the run used, if known.
        verdict: passed, failed or incomplete.
        tool_calls: The run's tool calls (None when unknown).
        seconds: The agent's wall clock (None when unknown).

    Returns:
        For example `agentbench: bug-repro[r3] on emulator-5554: passed, 7 tool calls, 4.2 s`.
    """
    calls = "? tool calls" if tool_calls is None else f"{tool_calls} tool call{'' if str(tool_calls) == '1' else 's'}"
    wall = "? s" if seconds is None else f"{float(seconds):.1f} s"
    where = f" on {device}" if device else ""
    return f"agentbench: {name}{where}: {verdict}, {calls}, {wall}"


def live_text(progress: StreamProgress) -> str:
    """The running count shown after a running item's node id."""
    calls = progress.tool_calls
    return f"[{calls} tool call{'' if calls == 1 else 's'} so far, {progress.seconds:.0f} s]"


class LiveCount:
    """The running count on a terminal line: written after the cursor, which it leaves where it was.

    Each update writes its text, pads over a longer previous one and backspaces to where it
    started, so pytest's own bookkeeping of the line stays true; `clear()` blanks it.
    """

    def __init__(self, write: Callable[[str], None], room: Callable[[], int], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self._room = room
        self._clock = clock
        self._shown = ""
        self._last = float("-inf")

    def update(self, progress: StreamProgress) -> None:
        now = self._clock()
        if now - self._last < TTY_INTERVAL_S:
            return
        self._last = now
        text = live_text(progress)
        if text == self._shown:
            return
        if len(text) > self._room():
            self.clear()
            return
        width = max(len(text), len(self._shown))
        self._write(text.ljust(width) + "\b" * width)
        self._shown = text

    def clear(self) -> None:
        if self._shown:
            width = len(self._shown)
            self._write(" " * width + "\b" * width)
            self._shown = ""


class PlainCount:
    """The running count as a plain line every `PLAIN_INTERVAL_S` seconds (CI logs, pipes)."""

    def __init__(self, write_line: Callable[[str], None], name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._write_line = write_line
        self._name = name
        self._clock = clock
        self._next = clock() + PLAIN_INTERVAL_S

    def update(self, progress: StreamProgress) -> None:
        if self._clock() < self._next:
            return
        self._next = self._clock() + PLAIN_INTERVAL_S
        self._write_line(f"agentbench: {self._name} running: {live_text(progress)[1:-1]}")

    def clear(self) -> None:
        pass


class ProgressReporter:
    """The plugin object (registered as `agentbench-progress`)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._live: LiveCount | PlainCount | None = None

    def _terminal(self) -> Any:
        if self.config.get_verbosity() <= 0:
            return None
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def live(self, item: pytest.Item) -> Callable[[StreamProgress], None] | None:
        """The runner's progress callback for this item, or None when nothing is to be shown."""
        terminal = self._terminal()
        if terminal is None or hasattr(self.config, "workerinput"):
            return None
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        name = item.nodeid.rsplit("::", 1)[-1]

        def uncaptured(write: Callable[[str], None]) -> Callable[[str], None]:
            def emit(text: str) -> None:
                if capture is None:
                    write(text)
                    return
                with capture.global_and_fixture_disabled():
                    write(text)
            return emit

        writer = getattr(terminal, "_tw", None)
        stream = getattr(writer, "_file", None)
        if terminal.isatty() and stream is not None:
            def raw(text: str) -> None:
                stream.write(text)
                stream.flush()

            def room() -> int:
                return writer.fullwidth - writer.width_of_current_line - _OUTCOME_ROOM

            self._live = LiveCount(uncaptured(raw), room)
        else:
            self._live = PlainCount(uncaptured(terminal.write_line), name)
        return self._live.update

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None]:
        # Before pytest writes the outcome on the line the live count used: erase the count.
        if report.when == "call" and self._live is not None:
            live, self._live = self._live, None
            live.clear()
        outcome = yield
        # After it: the run's own line.
        line = self._run_line(report)
        if line is not None:
            self._terminal().write_line(line)
        return outcome

    def _run_line(self, report: pytest.TestReport) -> str | None:
        if report.when != "call" or self._terminal() is None:
            return None
        properties = dict(report.user_properties)
        verdict = properties.get("agentbench_verdict")
        if verdict is None:
            return None
        result = _load(properties.get(RESULT_PROPERTY))
        metrics = result.get("metrics") or {}
        return run_line(
            report.nodeid.rsplit("::", 1)[-1],
            device=(result.get("device") or {}).get("serial"),
            verdict=str(verdict),
            tool_calls=metrics.get("toolCalls", properties.get("agentbench_toolCalls")),
            seconds=metrics.get("wallClockSeconds", properties.get("agentbench_wallClockSeconds")),
        )


def live_progress(item: pytest.Item) -> Callable[[StreamProgress], None] | None:
    """The progress callback for a suite item's agent run (None at -q, at default verbosity, on xdist workers)."""
    reporter = item.config.pluginmanager.get_plugin(PLUGIN_NAME)
    return reporter.live(item) if isinstance(reporter, ProgressReporter) else None


def _load(path: str | None) -> Mapping[str, Any]:
    if not path:
        return {}
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}
