"""Progress under -v (progress.py): the per-run line, and the live tool-call count on a terminal line or as plain lines."""

from __future__ import annotations

import pytest

from pytest_agentbench.progress import (
    PLAIN_INTERVAL_S,
    TTY_INTERVAL_S,
    LiveCount,
    PlainCount,
    SessionCount,
    duration,
    live_text,
    run_line,
)
from pytest_agentbench.run.runner import StreamProgress


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("bug-repro", "emulator-5554", "passed", 7, 4.25), "agentbench: bug-repro on emulator-5554: passed, 7 tool calls, 4.2 s"),
        (("bug-repro[r3]", "127.0.0.1:40211", "failed", 1, 12), "agentbench: bug-repro[r3] on 127.0.0.1:40211: failed, 1 tool call, 12.0 s"),
        (("wifi-on", None, "incomplete", None, None), "agentbench: wifi-on: incomplete, ? tool calls, ? s"),
        (("wifi-on", "s", "passed", "0", "3.5"), "agentbench: wifi-on on s: passed, 0 tool calls, 3.5 s"),
    ],
    ids=["plain", "repeat-node-name", "unknowns", "from-junit-strings"],
)
def test_run_line(args: tuple, line: str) -> None:
    name, device, verdict, calls, seconds = args
    assert run_line(name, device=device, verdict=verdict, tool_calls=calls, seconds=seconds) == line


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def progress(calls: int, seconds: float) -> StreamProgress:
    return StreamProgress(tool_calls=calls, lines=calls * 2, seconds=seconds)


class Screen:
    """A one-line terminal: applies writes with backspaces, tracking the cursor."""

    def __init__(self, prefix: str) -> None:
        self.cells = list(prefix)
        self.cursor = len(prefix)

    def write(self, text: str) -> None:
        for char in text:
            if char == "\b":
                self.cursor -= 1
                continue
            if self.cursor == len(self.cells):
                self.cells.append(char)
            else:
                self.cells[self.cursor] = char
            self.cursor += 1

    @property
    def text(self) -> str:
        return "".join(self.cells).rstrip()


def test_live_count_rewrites_itself_and_leaves_the_cursor_after_the_node_id() -> None:
    prefix = "benchmark/agent/suites/bug-repro.yml::bug-repro "
    screen, clock = Screen(prefix), Clock()
    live = LiveCount(screen.write, lambda: 80, clock=clock)
    live.update(progress(12, 30))
    assert screen.text == prefix + "[12 tool calls so far, 30 s]" and screen.cursor == len(prefix)
    clock.now += TTY_INTERVAL_S
    live.update(progress(1, 31))
    assert screen.text == prefix + "[1 tool call so far, 31 s]" and screen.cursor == len(prefix)
    live.clear()
    assert screen.text == prefix.rstrip() and screen.cursor == len(prefix)
    # pytest then writes the outcome where the cursor is.
    screen.write("PASSED")
    assert screen.text == prefix + "PASSED"


def test_live_count_is_throttled_and_skips_a_line_too_narrow() -> None:
    writes: list[str] = []
    clock, room = Clock(), [80]
    live = LiveCount(writes.append, lambda: room[0], clock=clock)
    live.update(progress(1, 1))
    live.update(progress(2, 1))  # within the interval: not shown
    assert len(writes) == 1
    clock.now += TTY_INTERVAL_S
    room[0] = 5
    live.update(progress(3, 2))  # does not fit: what was shown is blanked instead
    assert writes[-1].strip("\b") == " " * len(live_text(progress(1, 1)))
    live.clear()
    assert len(writes) == 2


def test_plain_count_prints_a_line_only_every_interval() -> None:
    lines: list[str] = []
    clock = Clock()
    plain = PlainCount(lines.append, "bug-repro[r2]", clock=clock)
    plain.update(progress(3, 5))
    assert lines == []
    clock.now = PLAIN_INTERVAL_S
    plain.update(progress(9, PLAIN_INTERVAL_S))
    plain.update(progress(10, PLAIN_INTERVAL_S + 1))
    assert lines == ["agentbench: bug-repro[r2] running: 9 tool calls so far, 30 s"]


def test_the_session_line_counts_runs_failures_elapsed_and_eta() -> None:
    clock = Clock()
    count = SessionCount(80, clock=clock)
    assert count.text() == "[0/80 runs, 0 failed, 0s]"
    count.start()
    clock.now = 130.0
    for passed in [True] * 9 + [False] * 3:
        count.finish(passed)
    # 12 runs in 130 s: 68 more take about 737 s.
    assert count.texts() == ("[12/80 runs, 3 failed, 2m10s, ETA 12m17s]", "[12/80, 3 failed, ETA 12m17s]", "[12/80]")
    for _ in range(68):
        count.finish(True)
    assert count.text() == "[80/80 runs, 3 failed, 2m10s]"  # no ETA when every run is done


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0s"), (59.4, "59s"), (61, "1m01s"), (3600 * 2 + 300, "2h05m")])
def test_duration(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_the_live_line_takes_the_longest_form_that_fits() -> None:
    screen = Screen("file.yml ..")
    room = [30]
    line = LiveCount(screen.write, lambda: room[0], clock=Clock())
    forms = ("[12/80 runs, 3 failed, 2m10s, ETA 12m17s]", "[12/80, 3 failed, ETA 12m17s]", "[12/80]")
    line.show(forms, now=True)
    assert screen.text == "file.yml ..[12/80, 3 failed, ETA 12m17s]" and screen.cursor == len("file.yml ..")
    room[0] = 5
    line.show(forms, now=True)  # nothing fits: the line is erased, not overflowed
    assert screen.text == "file.yml .."
