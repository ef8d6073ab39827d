"""Screens as XML and PNG in one round trip: the split, the PNG check, and what preflight and the post-run read save."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from phoneadb import PhoneAdb
from pytest_agentbench.device.capture import CAPTURE_MARK, PNG_SIGNATURE, capture_screen, capture_script, hierarchy_of, png_problem, split_capture
from pytest_agentbench.errors import DeviceError
from pytest_agentbench.run.preflight import run_preflight
from pytest_agentbench.sim.png import render_png
from pytest_agentbench.suite import AppSpec, PreflightSpec

PLAYGROUND = "dev.jasonpearson.automobile.playground"
XML = b"<?xml version='1.0' encoding='UTF-8' ?><hierarchy rotation=\"0\"><node text=\"Hi\" /></hierarchy>"
PNG = render_png([], 4, 4)
MARK = CAPTURE_MARK.encode() + b"\n"


def _size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


@pytest.mark.parametrize(
    ("raw", "xml", "png", "problem"),
    [
        (XML + b"UI hierchary dumped to: /dev/tty\n" + MARK + PNG, True, True, None),
        # An agent typed the marker into a field: it sits in an attribute, before </hierarchy>.
        (XML.replace(b'text="Hi"', b'text="' + CAPTURE_MARK.encode() + b'"') + b"\n" + MARK + PNG, True, True, None),
        (b"ERROR: could not get idle state.\n" + MARK + PNG, False, True, "uiautomator printed no hierarchy"),
        (XML + b"\n" + MARK + PNG[:40], True, False, "cut off after 40 bytes"),
        (XML + b"\n" + MARK + b"/system/bin/sh: screencap: not found\n", True, False, "screencap printed no PNG"),
        (XML + b"\n" + MARK, True, False, "screencap printed nothing"),
        (XML, False, False, "printed no marker line"),
    ],
    ids=["dump-then-png", "marker-text-on-screen", "no-hierarchy", "png-cut-off", "no-screencap", "empty-png", "no-marker"],
)
def test_a_capture_splits_into_its_parts(raw: bytes, xml: bool, png: bool, problem: str | None) -> None:
    capture = split_capture(raw)
    assert (capture.xml is not None, capture.png is not None) == (xml, png)
    if xml:
        assert capture.xml.startswith("<?xml") and capture.xml.endswith("</hierarchy>")
    if png:
        assert capture.png == PNG
    if problem is None:
        assert capture.problems == ()
    else:
        assert any(problem in text for text in capture.problems), capture.problems


def test_a_png_only_capture_needs_no_hierarchy() -> None:
    capture = split_capture(MARK + PNG, hierarchy=False)
    assert capture.xml is None and capture.png == PNG and capture.problems == ()
    assert "uiautomator" not in capture_script(hierarchy=False).text


@pytest.mark.parametrize(
    ("data", "problem"),
    [(PNG, None), (PNG + b"\n", None), (b"", "printed nothing"), (b"GIF89a", "no PNG"), (PNG_SIGNATURE + b"x" * 30, "cut off")],
    ids=["whole", "trailing-newline", "empty", "not-png", "signature-only"],
)
def test_png_problem(data: bytes, problem: str | None) -> None:
    found = png_problem(data)
    assert found is None if problem is None else problem in found


def test_the_simulated_phone_gives_both_in_one_round_trip() -> None:
    adb = PhoneAdb()
    adb.phone.shell(f"am start -a android.intent.action.VIEW -d automobile://playground/demos/bugs/repro")
    capture = capture_screen(adb, "sim")
    assert adb.round_trips == 1 and capture.problems == ()
    assert "</hierarchy>" in capture.xml and _size(capture.png) == adb.phone.size


def test_no_hierarchy_raises_the_dump_error_for_a_screen_check() -> None:
    capture = split_capture(b"ERROR: could not get idle state.\n" + MARK + PNG)
    with pytest.raises(DeviceError, match="sim: uiautomator printed no hierarchy"):
        hierarchy_of(capture, "sim")


def _preflight(**overrides) -> PreflightSpec:
    values = dict(clear_app_data=True, shared_preferences={"onboarding_prefs": {"onboarding_completed": True},
                                                           "auth_prefs": {"is_guest_mode": True}},
                  launch_uri="automobile://playground/demos/bugs/repro", settle_seconds=0,
                  start_screen_includes=("Bug Reproduction Demo",))
    values.update(overrides)
    return PreflightSpec(**values)


@pytest.mark.parametrize(
    ("start_screen_includes", "trips"),
    # The start-screen check's dump carries the PNG (no extra trip); a suite without the check pays one exec-out for both.
    [(("Bug Reproduction Demo",), 4), ((), 4)],
    ids=["with-start-check", "without-start-check"],
)
def test_preflight_ends_by_saving_the_start_screen_as_xml_and_png(tmp_path: Path, start_screen_includes, trips: int) -> None:
    adb = PhoneAdb()
    result = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(start_screen_includes=start_screen_includes),
                           run_dir=tmp_path)
    assert result.round_trips == trips, adb.commands
    assert [command for command in adb.commands if "screencap" in command] == [capture_script().text]
    assert png_problem((tmp_path / "start-screen.png").read_bytes()) is None
    assert _size((tmp_path / "start-screen.png").read_bytes()) == adb.phone.size
    assert "Bug Reproduction Demo" in (tmp_path / "start-screen.xml").read_text(encoding="utf-8")


def test_a_failed_start_check_still_leaves_both_files(tmp_path: Path) -> None:
    from pytest_agentbench.errors import PreflightError

    adb = PhoneAdb()
    with pytest.raises(PreflightError, match="does not show"):
        run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(shared_preferences={}), run_dir=tmp_path)
    assert (tmp_path / "start-screen.xml").is_file() and (tmp_path / "start-screen.png").is_file()


# ----------------------------------------------------------------------------- the post-run read


class _Reclaim:
    def __init__(self, readable: bool) -> None:
        self.screen_readable = readable
        self.reason = None if readable else "another session claimed the device during the run, so the screen was not read"


class _Device:
    """What read_post_run_state uses of a ClaimedDevice: the take-back, its adb and serial."""

    def __init__(self, adb: PhoneAdb, readable: bool = True) -> None:
        self.adb, self.serial, self._readable = adb, "sim", readable

    def take_back(self) -> _Reclaim:
        return _Reclaim(self._readable)


class _LostAdb(PhoneAdb):
    def exec_out(self, serial, args, *, timeout_s=30):
        from pytest_agentbench.errors import DeviceLost

        raise DeviceLost("sim: gone")


def _suite(screen_includes: tuple[str, ...]):
    import dataclasses

    from pytest_agentbench.suite import load_suite
    from fakeagents import REPO

    suite = load_suite(REPO / "benchmark" / "agent" / "suites" / "bug-repro.yml", REPO)
    return dataclasses.replace(suite, verify=dataclasses.replace(suite.verify, screen_includes=screen_includes))


@pytest.mark.parametrize(
    ("screen_includes", "readable", "adb_class", "snapshot", "lost", "files"),
    [
        (("Expected count: 3",), True, PhoneAdb, "nodes", None, {"screen.xml", "screen.png"}),
        ((), True, PhoneAdb, None, None, {"screen.xml", "screen.png"}),
        (("Expected count: 3",), False, PhoneAdb, "unreadable", None, set()),
        ((), False, PhoneAdb, None, None, set()),
        (("Expected count: 3",), True, _LostAdb, "unreadable", "sim: gone", set()),
        # Without screen checks a lost device changes no verdict: it is only written down.
        ((), True, _LostAdb, None, None, {"postrun.log"}),
    ],
    ids=["judged", "not-judged-still-saved", "judged-interloper", "not-judged-interloper", "judged-lost", "not-judged-lost"],
)
def test_the_post_run_read_saves_the_screen_for_every_suite(tmp_path: Path, screen_includes, readable, adb_class, snapshot, lost, files) -> None:
    from pytest_agentbench.run.artifacts import RunArtifacts
    from pytest_agentbench.run.postrun import read_post_run_state

    adb = adb_class()
    state = read_post_run_state(_Device(adb, readable), _suite(screen_includes), RunArtifacts(tmp_path))  # type: ignore[arg-type]
    got, device_lost = state.screen, state.device_lost
    assert {"nodes": lambda s: s is not None and s.nodes, "unreadable": lambda s: s is not None and s.nodes is None,
            None: lambda s: s is None}[snapshot](got), got
    assert device_lost == lost
    assert {path.name for path in tmp_path.iterdir()} == files
    assert adb.round_trips == (1 if readable and adb_class is PhoneAdb else 0)
