"""Runs as they happen -> a live session line on a terminal (runs done/total, failed, elapsed, ETA); under `-v` a line per finished run and the agent's tool-call count.

At the default verbosity a session of more than `SESSION_LINE_MIN_RUNS` runs shows one live
line after pytest's own progress (`[12/80 runs, 3 failed, 2m10s, ETA 12m]`), rewritten in place
and erased before pytest writes anything, so it is written only to a terminal (`isatty`) and
never reaches a log, a pipe or JUnit.

The per-run line comes from the run's report (its result.json), so it works under xdist too, on
the controller. The live count needs the terminal of the process that runs the agent, so it is
shown only without xdist: on a terminal it is rewritten in place after pytest's `nodeid ` (and
erased before pytest writes the outcome), elsewhere (CI logs) a plain line is printed every
`PLAIN_INTERVAL_S` seconds of a long run. The node id is printed as pytest names the item,
so repeats (`suite[r3]`) and seeded instances show without being parsed here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.errors import SavedRunError
from pytest_agentbench.records.result import RunResult
from pytest_agentbench.run.execute import StreamProgress
from pytest_agentbench.session import RESULT_PROPERTY

PLUGIN_NAME = "agentbench-progress"
#: Seconds between plain progress lines when the terminal cannot be rewritten.
PLAIN_INTERVAL_S = 30.0
#: Seconds between rewrites of the live count on a terminal.
TTY_INTERVAL_S = 0.25
# Room kept for pytest's " PASSED [100%]" when deciding whether the live count fits the line.
_OUTCOME_ROOM = 16
# At the default verbosity pytest adds a "." and, at the end of a file's line, " [100%]".
_DOT_ROOM = 9
#: A session of more runs than this shows the live session line at the default verbosity.
SESSION_LINE_MIN_RUNS = 3


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


def duration(seconds: float) -> str:
    """`42s`, `2m10s`, `1h05m`."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class SessionCount:
    """Runs done out of the total, how many did not pass, the time since the first run and the ETA."""

    def __init__(self, total: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._clock = clock
        self._started: float | None = None

    def start(self) -> None:
        if self._started is None:
            self._started = self._clock()

    def finish(self, passed: bool) -> None:
        self.done += 1
        self.failed += 0 if passed else 1

    def text(self) -> str:
        """`[12/80 runs, 3 failed, 2m10s, ETA 12m40s]`; the ETA once a run has finished."""
        return self.texts()[0]

    def texts(self) -> tuple[str, str, str]:
        """The line, then shorter forms of it for a narrow terminal: `[12/80, 3 failed, ETA 12m40s]`, `[12/80]`."""
        elapsed = self._clock() - self._started if self._started is not None else 0.0
        eta = (f"ETA {duration(elapsed / self.done * (self.total - self.done))}"
               if self.done and self.done < self.total else None)
        full = [f"{self.done}/{self.total} runs", f"{self.failed} failed", duration(elapsed), *([eta] if eta else [])]
        short = [f"{self.done}/{self.total}", f"{self.failed} failed", *([eta] if eta else [])]
        return f"[{', '.join(full)}]", f"[{', '.join(short)}]", f"[{self.done}/{self.total}]"


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
        self.show(live_text(progress))

    def show(self, text: str | Sequence[str], *, now: bool = False) -> None:
        """Write text after the cursor (throttled to `TTY_INTERVAL_S` unless `now`).

        Given several texts, longest first, it writes the first that fits the room left on the line.
        """
        moment = self._clock()
        if not now and moment - self._last < TTY_INTERVAL_S:
            return
        self._last = moment
        room = self._room()
        text = next((choice for choice in ([text] if isinstance(text, str) else text) if len(choice) <= room), "")
        if text == self._shown:
            return
        if not text:
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
        self._session: SessionCount | None = None
        self._session_line: LiveCount | None = None
        self._runs: set[str] = set()
        self._not_passed: set[str] = set()

    def _terminal(self) -> Any:
        if self.config.get_verbosity() <= 0:
            return None
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _uncaptured(self, write: Callable[[str], None]) -> Callable[[str], None]:
        capture = self.config.pluginmanager.get_plugin("capturemanager")

        def emit(text: str) -> None:
            if capture is None:
                write(text)
                return
            with capture.global_and_fixture_disabled():
                write(text)
        return emit

    def _tty_line(self, terminal: Any, reserve: int = _OUTCOME_ROOM) -> LiveCount | None:
        """A LiveCount writing after the cursor of pytest's terminal, or None when it is no terminal."""
        writer = getattr(terminal, "_tw", None)
        stream = getattr(writer, "_file", None)
        if terminal is None or not terminal.isatty() or stream is None:
            return None

        def raw(text: str) -> None:
            stream.write(text)
            stream.flush()

        def room() -> int:
            return writer.fullwidth - writer.width_of_current_line - reserve

        return LiveCount(self._uncaptured(raw), room)

    # ---------------------------------------------------------------- the session line (default verbosity)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.get_verbosity() != 0 or hasattr(self.config, "workerinput"):
            return
        self._count_runs({item.nodeid for item in session.items if item.get_closest_marker("agentbench") is not None})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist the controller collects nothing; every worker collects the same items, and
        # a suite item is named after its suite file.
        if self._session is None and self.config.get_verbosity() == 0:
            self._count_runs({nodeid for nodeid in ids if nodeid.split("::", 1)[0].endswith((".yml", ".yaml"))})

    def _count_runs(self, runs: set[str]) -> None:
        self._runs = runs
        if len(runs) <= SESSION_LINE_MIN_RUNS:
            return
        line = self._tty_line(self.config.pluginmanager.get_plugin("terminalreporter"), _DOT_ROOM)
        if line is not None:
            self._session, self._session_line = SessionCount(len(runs)), line

    def _hide_session_line(self) -> None:
        if self._session_line is not None:
            self._session_line.clear()

    def _show_session_line(self) -> None:
        if self._session_line is not None and self._session is not None:
            self._session_line.show(self._session.texts(), now=True)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> Generator[None]:
        self._hide_session_line()
        if self._session is not None and nodeid in self._runs:
            self._session.start()
        outcome = yield
        self._show_session_line()
        return outcome

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> Generator[None]:
        self._hide_session_line()
        if self._session is not None and nodeid in self._runs:
            self._session.finish(nodeid not in self._not_passed)
        outcome = yield
        self._show_session_line()
        return outcome

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Generator[None]:
        self._hide_session_line()
        self._session_line = None
        return (yield)

    # ---------------------------------------------------------------- the running agent

    def live(self, item: pytest.Item) -> Callable[[StreamProgress], None] | None:
        """The runner's progress callback for this item, or None when nothing is to be shown."""
        if hasattr(self.config, "workerinput"):
            return None
        if self._session_line is not None and self._session is not None:
            line, count = self._session_line, self._session
            return lambda progress: line.show(count.texts())
        terminal = self._terminal()
        if terminal is None:
            return None
        name = item.nodeid.rsplit("::", 1)[-1]
        self._live = self._tty_line(terminal) or PlainCount(self._uncaptured(terminal.write_line), name)
        return self._live.update

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None]:
        # Before pytest writes the outcome on the line the live count used: erase the count.
        self._hide_session_line()
        if report.when == "call" and self._live is not None:
            live, self._live = self._live, None
            live.clear()
        if report.failed or dict(report.user_properties).get("agentbench_verdict") not in (None, "passed"):
            self._not_passed.add(report.nodeid)
        outcome = yield
        # After it: the run's own line.
        line = self._run_line(report)
        if line is not None:
            self._terminal().write_line(line)
        self._show_session_line()
        return outcome

    def _run_line(self, report: pytest.TestReport) -> str | None:
        if report.when != "call" or self._terminal() is None:
            return None
        properties = dict(report.user_properties)
        verdict = properties.get("agentbench_verdict")
        if verdict is None:
            return None
        result = _load(properties.get(RESULT_PROPERTY))
        metrics = result.run_metrics if result is not None else None
        calls = metrics.tool_calls if metrics is not None and metrics.tool_calls is not None else properties.get("agentbench_toolCalls")
        wall = (metrics.wall_clock_seconds if metrics is not None and metrics.wall_clock_seconds is not None
                else properties.get("agentbench_wallClockSeconds"))
        return run_line(
            report.nodeid.rsplit("::", 1)[-1],
            device=result.device_serial if result is not None else None,
            verdict=str(verdict),
            tool_calls=calls,
            seconds=wall,
        )


def live_progress(item: pytest.Item) -> Callable[[StreamProgress], None] | None:
    """The progress callback for a suite item's agent run (None at -q, on xdist workers, and off a terminal at the default verbosity)."""
    reporter = item.config.pluginmanager.get_plugin(PLUGIN_NAME)
    return reporter.live(item) if isinstance(reporter, ProgressReporter) else None


def _load(path: str | None) -> RunResult | None:
    if not path:
        return None
    try:
        return RunResult.read(Path(path))
    except SavedRunError:
        return None
