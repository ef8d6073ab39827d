"""Preflight's start-screen wait: a bounded poll for `startScreenIncludes` with `settleSeconds` as its deadline, on a simulated phone.

Time is a fake clock that moves only when the wait sleeps, so each case is exact and untimed. A
slow start is the real simulated phone with the launcher in front until the fake clock reaches
the app's draw time, as a real phone shows the launcher until the app's first frame.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from phoneadb import PhoneAdb
from pytest_agentbench.device.capture import capture_screen
from pytest_agentbench.errors import DeviceLost, PreflightError
from pytest_agentbench.run.preflight import run_preflight
from pytest_agentbench.run.start_screen import START_POLL_S, app_signature, wait_for_start_screen
from pytest_agentbench.sim.phone import LAUNCHER_PACKAGE
from pytest_agentbench.suite import AppSpec, PreflightSpec

PLAYGROUND = "dev.jasonpearson.automobile.playground"
SEEDS = {"onboarding_prefs": {"onboarding_completed": True}, "auth_prefs": {"is_guest_mode": True}}
INCLUDES = ("Bug Reproduction Demo",)


class FakeTime:
    """A monotonic clock that moves only when the code under test sleeps; `at(t, action)` runs an action once t is reached."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.actions: list[tuple[float, object]] = []

    def clock(self) -> float:
        return self.now

    def at(self, when: float, action) -> None:
        self.actions.append((when, action))

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        due = [action for when, action in self.actions if when <= self.now + 1e-9]
        self.actions = [(when, action) for when, action in self.actions if when > self.now + 1e-9]
        for action in due:
            action()


class SlowDrawAdb(PhoneAdb):
    """A phone whose launched app stays behind the launcher until the fake clock reaches `draw_s` (a cold start)."""

    def __init__(self, time: FakeTime, draw_s: float | None) -> None:
        super().__init__()
        self.time, self.draw_s = time, draw_s

    def shell(self, serial, args, *, timeout_s=30, check=True):
        result = super().shell(serial, args, timeout_s=timeout_s, check=check)
        if "am start" in self.commands[-1]:
            self.phone.launch(LAUNCHER_PACKAGE)  # launched, not drawn yet
            if self.draw_s is not None:
                self.time.at(self.draw_s, lambda: self.phone.launch(PLAYGROUND))
        return result


class BusyDumpAdb(PhoneAdb):
    """A phone whose first `uiautomator dump`s fail as a real one does while the app animates."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def exec_out(self, serial, args, *, timeout_s=30):
        output = super().exec_out(serial, args, timeout_s=timeout_s)
        if self.commands[-1] == "uiautomator dump /dev/tty" and self.failures:
            self.failures -= 1
            return b"ERROR: could not get idle state.\n"
        return output


def _preflight(settle_seconds: float, includes: tuple[str, ...] = INCLUDES) -> PreflightSpec:
    return PreflightSpec(clear_app_data=True, shared_preferences=SEEDS, launch_uri="automobile://playground/demos/bugs/repro",
                         settle_seconds=settle_seconds, start_screen_includes=includes)


def _run(adb, time: FakeTime, run_dir: Path, settle_seconds: float = 2.0, includes=INCLUDES):
    return run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(settle_seconds, includes),
                         run_dir=run_dir, sleep=time.sleep, clock=time.clock)


def _log(run_dir: Path) -> str:
    return (run_dir / "preflight.log").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- the pure part

def _dump(*nodes: tuple[str, str, str]) -> str:
    body = "".join(f'<node index="{i}" text="{text}" content-desc="{desc}" package="{package}" class="android.widget.TextView" '
                   f'bounds="[0,{i * 10}][100,{i * 10 + 10}]" />' for i, (package, text, desc) in enumerate(nodes))
    return f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{body}</hierarchy>"


@pytest.mark.parametrize(("xml", "shown"), [
    (_dump((PLAYGROUND, "Bug Reproduction Demo", "")), True),
    (_dump((PLAYGROUND, "", "Bug Reproduction Demo")), True),  # a content-desc counts, as in the start-screen check
    (None, False),  # the device gave no hierarchy
    ("ERROR: could not get idle state.", False),
    (_dump((PLAYGROUND, "Welcome", "")), False),
    (_dump(("com.android.systemui", "Bug Reproduction Demo", "")), False),  # another window's text is not the app's
    (_dump((PLAYGROUND, "Bug Reproduction Demo (draft)", "")), True),  # a standalone match, as verify.screenIncludes
    (_dump((PLAYGROUND, "NotBug Reproduction Demo", "")), False),
], ids=["text", "content-desc", "no-dump", "dump-error", "other-screen", "other-package", "standalone-in-longer", "glued"])
def test_a_dump_shows_the_start_screen_only_with_every_include_in_the_apps_own_nodes(xml, shown) -> None:
    assert (app_signature(xml, PLAYGROUND, INCLUDES) is not None) is shown


def test_the_signature_tells_a_moved_node_from_a_still_one() -> None:
    still = _dump((PLAYGROUND, "Bug Reproduction Demo", ""), (PLAYGROUND, "Count: 1", ""))
    moved = still.replace("[0,10][100,20]", "[0,12][100,22]")
    assert app_signature(still, PLAYGROUND, INCLUDES) == app_signature(still, PLAYGROUND, INCLUDES)
    assert app_signature(moved, PLAYGROUND, INCLUDES) != app_signature(still, PLAYGROUND, INCLUDES)


# ----------------------------------------------------------------------------- on the simulated phone

def test_a_screen_drawn_at_once_is_kept_after_one_dump_and_one_capture_without_a_sleep(tmp_path: Path) -> None:
    time, adb = FakeTime(), PhoneAdb()
    result = _run(adb, time, tmp_path, settle_seconds=2.0)
    assert time.sleeps == []
    assert result.start_screen_texts[0] == "Bug Reproduction Demo"
    assert "start screen settled after 0.00s (2 looks; settleSeconds 2 is the deadline)" in _log(tmp_path)
    # The wait's dump is the one round trip it adds to the fixed sleep's preflight.
    assert adb.commands.count("uiautomator dump /dev/tty") == 1


def test_a_slow_start_is_polled_until_it_is_drawn_and_the_capture_kept_shows_it(tmp_path: Path) -> None:
    time = FakeTime()
    adb = SlowDrawAdb(time, draw_s=0.35)
    result = _run(adb, time, tmp_path, settle_seconds=2.0)
    assert time.sleeps == [START_POLL_S] * 4 and time.now < 2.0
    assert "Bug Reproduction Demo" in result.start_screen_texts
    assert "Bug Reproduction Demo" in (tmp_path / "start-screen.xml").read_text(encoding="utf-8")
    assert "start screen settled after 0.40s (6 looks;" in _log(tmp_path)


def test_a_start_screen_never_drawn_fails_the_check_at_the_deadline_as_after_the_fixed_sleep(tmp_path: Path) -> None:
    time = FakeTime()
    with pytest.raises(PreflightError, match="does not show 'Bug Reproduction Demo'"):
        _run(SlowDrawAdb(time, draw_s=None), time, tmp_path, settle_seconds=1.0)
    assert sum(time.sleeps) == pytest.approx(1.0) and all(0 <= s <= START_POLL_S for s in time.sleeps)
    assert "start screen not settled after 1.00s" in _log(tmp_path)
    assert (tmp_path / "start-screen.xml").is_file() and (tmp_path / "start-screen.png").is_file()


def test_a_start_screen_drawn_just_after_the_deadline_still_fails(tmp_path: Path) -> None:
    time = FakeTime()
    with pytest.raises(PreflightError, match="does not show"):
        _run(SlowDrawAdb(time, draw_s=1.05), time, tmp_path, settle_seconds=1.0)


def test_settle_zero_takes_the_one_capture_at_once_as_before(tmp_path: Path) -> None:
    time, adb = FakeTime(), PhoneAdb()
    _run(adb, time, tmp_path, settle_seconds=0)
    assert time.sleeps == [] and "uiautomator dump /dev/tty" not in adb.commands
    assert "start screen not settled after 0.00s (1 look;" in _log(tmp_path)


def test_failing_dumps_while_the_app_animates_are_polled_past(tmp_path: Path) -> None:
    time = FakeTime()
    _run(BusyDumpAdb(failures=3), time, tmp_path, settle_seconds=2.0)
    assert time.sleeps == [START_POLL_S] * 3
    assert "start screen settled after 0.30s (5 looks;" in _log(tmp_path)


def test_a_suite_without_start_screen_includes_sleeps_the_whole_settle_time(tmp_path: Path) -> None:
    time = FakeTime()
    _run(PhoneAdb(), time, tmp_path, settle_seconds=1.5, includes=())
    assert time.sleeps == [1.5]
    assert "settling 1.5s" in _log(tmp_path)


def test_settle_sleep_keeps_the_whole_fixed_wait_before_the_one_capture(tmp_path: Path) -> None:
    # For a start state whose asynchronous work the start screen does not show (preflight.settleSleep).
    time, adb = FakeTime(), PhoneAdb()
    spec = dataclasses.replace(_preflight(1.5), settle_sleep=True)
    run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=spec, run_dir=tmp_path, sleep=time.sleep, clock=time.clock)
    assert time.sleeps == [1.5] and "uiautomator dump /dev/tty" not in adb.commands
    assert "settling 1.5s" in _log(tmp_path) and "start screen shows ['Bug Reproduction Demo']" in _log(tmp_path)


def test_a_screen_that_changes_between_the_dump_and_the_capture_is_looked_at_again(tmp_path: Path) -> None:
    time, adb = FakeTime(), PhoneAdb()
    _run(adb, FakeTime(), tmp_path)  # the app on its start screen
    ctx = adb.phone.context(PLAYGROUND)
    takes = []

    def take():
        if not takes:  # the app redraws between the dump and the kept capture
            ctx.app.tap_add_item(ctx, "")
        takes.append(1)
        return capture_screen(adb, "sim"), len(takes)

    settled = wait_for_start_screen(adb, "sim", package=PLAYGROUND, includes=INCLUDES, settle_s=2.0, take=take,
                                    sleep=time.sleep, clock=time.clock)
    assert settled.settled and settled.taken == 2 and settled.looks == 3
    assert time.sleeps == [START_POLL_S]
    assert b"Displayed count: 1" in settled.capture.xml.encode()


def test_a_lost_device_during_the_wait_is_not_taken_for_a_slow_start() -> None:
    class LostAdb(PhoneAdb):
        def exec_out(self, serial, args, *, timeout_s=30):
            raise DeviceLost("sim: device offline")

    time = FakeTime()
    with pytest.raises(DeviceLost):
        wait_for_start_screen(LostAdb(), "sim", package=PLAYGROUND, includes=INCLUDES, settle_s=2.0,
                              take=lambda: pytest.fail("no capture after a lost device"), sleep=time.sleep, clock=time.clock)
    assert time.sleeps == []
