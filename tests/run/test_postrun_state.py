"""Post-run state: take the claim back, then the screen dump and the device checks' after-reads in one round trip (or the reason there are none)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from checklab import FIVE_CHECKS, lab_phone
from phoneadb import PhoneAdb
from auditfakes import make_suite

from pytest_agentbench.checks import suite_checks
from pytest_agentbench.device.claims import Reclaim
from pytest_agentbench.errors import DeviceLost
from pytest_agentbench.run.artifacts import RunArtifacts
from pytest_agentbench.run.postrun import read_post_run_state


@dataclass
class FakeDevice:
    adb: PhoneAdb
    serial: str = "sim"
    reclaim: Reclaim = field(default_factory=lambda: Reclaim(object(), None, ""))  # type: ignore[arg-type]

    def take_back(self) -> Reclaim:
        return self.reclaim


READS = suite_checks(FIVE_CHECKS).after_reads()


def test_screen_and_reads_share_one_round_trip_and_the_reads_are_saved(tmp_path: Path) -> None:
    device = FakeDevice(PhoneAdb(lab_phone()))
    state = read_post_run_state(device, make_suite(screen_includes=("Home",)), RunArtifacts(tmp_path), READS)  # type: ignore[arg-type]
    assert device.adb.round_trips == 1
    assert state.screen is not None and state.screen.nodes and state.device_after is not None
    assert set(state.device_after.reads) == {read.key for read in READS}
    assert (tmp_path / "screen.xml").read_text().startswith("<?xml") and (tmp_path / "screen.png").is_file()
    assert set(json.loads((tmp_path / "device-after.json").read_text())["reads"]) == {read.key for read in READS}


def test_without_screen_checks_the_screen_is_saved_but_not_judged(tmp_path: Path) -> None:
    device = FakeDevice(PhoneAdb(lab_phone()))
    state = read_post_run_state(device, make_suite(screen_includes=()), RunArtifacts(tmp_path), READS)  # type: ignore[arg-type]
    assert state.screen is None and state.device_after is not None and device.adb.round_trips == 1
    assert (tmp_path / "screen.xml").is_file() and (tmp_path / "screen.png").read_bytes().startswith(b"\x89PNG")


def test_a_phone_someone_else_claimed_is_not_read_and_says_why(tmp_path: Path) -> None:
    device = FakeDevice(PhoneAdb(lab_phone()), reclaim=Reclaim(None, None, "pid 77 claimed the device"))
    state = read_post_run_state(device, make_suite(screen_includes=()), RunArtifacts(tmp_path), READS)  # type: ignore[arg-type]
    assert (state.device_after, state.device_unavailable) == (None, "pid 77 claimed the device")
    assert device.adb.round_trips == 0


def test_a_phone_that_went_away_is_device_lost(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())

    def gone(*args, **kwargs):
        raise DeviceLost("sim: the device went offline")

    adb.exec_out = gone  # type: ignore[method-assign]
    state = read_post_run_state(FakeDevice(adb), make_suite(), RunArtifacts(tmp_path), READS)  # type: ignore[arg-type]
    assert state.device_lost == "sim: the device went offline"
    assert state.device_unavailable == "the device went away: sim: the device went offline"
    assert state.screen is not None and state.screen.nodes is None
