"""Tests for device/claimlog.py and the pool: claim events -> holdings -> overlaps; waiting for sibling workers; ClaimedDevice.environ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_agentbench.device import claimlog
from pytest_agentbench.device.adb import Adb, AdbEndpoint
from pytest_agentbench.device.claims import benchmark_lock_path
from pytest_agentbench.device.pool import Candidate, DevicePool, held_by_sibling
from pytest_agentbench.errors import DeviceBusy


def event(kind: str, holder: str, t: int, serial: str = "s1", pid: int = 10) -> str:
    return json.dumps({"event": kind, "serial": serial, "scope": "tcp-localhost-5037", "holder": holder, "pid": pid, "timeNs": t})


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([event("held", "r1", 1), event("released", "r1", 5), event("held", "r2", 5), event("released", "r2", 9)], []),
        ([event("held", "r1", 1), event("held", "r2", 3, pid=11), event("released", "r1", 5), event("released", "r2", 9, pid=11)],
         ["tcp-localhost-5037/s1: r2 took it while r1 still held it"]),
        ([event("held", "r1", 1), event("released", "r1", 9), event("held", "r2", 2, pid=11), event("released", "r2", 3, pid=11),
          event("held", "r3", 4, pid=12), event("released", "r3", 5, pid=12)],
         ["tcp-localhost-5037/s1: r2 took it while r1 still held it", "tcp-localhost-5037/s1: r3 took it while r1 still held it"]),
        ([event("held", "r1", 1), event("held", "r2", 3, serial="s2", pid=11), event("released", "r1", 5),
          event("released", "r2", 9, serial="s2", pid=11)], []),
        ([event("held", "r1", 1), event("held", "r2", 30, pid=11), event("released", "r2", 40, pid=11)],
         ["tcp-localhost-5037/s1: r2 took it while r1 still held it"]),
    ],
    ids=["one-after-another", "overlap", "nested-inside-a-long-one", "two-devices-at-once", "never-released"],
)
def test_overlaps(lines: list[str], expected: list[str]) -> None:
    assert claimlog.overlaps(claimlog.holdings(lines)) == expected


def test_a_broken_line_names_its_number() -> None:
    with pytest.raises(ValueError, match="claim log line 2: expected a claim event"):
        claimlog.holdings([event("held", "r1", 1), "{not json"])


def test_the_pool_logs_every_holding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", str(tmp_path / "claims"))
    monkeypatch.setenv("AUTOMOBILE_COORDINATION_DIR", str(tmp_path / "coordination"))
    adb = Adb(AdbEndpoint("localhost", 5037))
    log = tmp_path / "out" / claimlog.CLAIM_LOG_NAME
    pool = DevicePool(adb=adb, candidates=[Candidate("s1", adb)], pinnable=True, claim_log=log)
    for holder in ("first", "second"):
        with pool.claim(holder=holder) as device:
            assert device.serial == "s1"
    found = claimlog.read(log)
    assert [(h.holder, h.device) for h in found] == [("first", "tcp-localhost-5037/s1"), ("second", "tcp-localhost-5037/s1")]
    assert all(h.end_ns is not None for h in found) and claimlog.overlaps(found) == []


def test_a_device_on_another_adb_server_points_the_run_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", str(tmp_path / "claims"))
    monkeypatch.setenv("AUTOMOBILE_COORDINATION_DIR", str(tmp_path / "coordination"))
    remote = Adb(AdbEndpoint("10.0.0.5", 5038))
    pool = DevicePool(adb=Adb(AdbEndpoint("localhost", 5037)), candidates=[Candidate("R58M", remote)], pinnable=True)
    base = {"ANDROID_ADB_SERVER_PORT": "5037", "HOME": "/home/me"}
    with pool.claim() as device:
        assert device.scope == "tcp-10.0.0.5-5038"
        assert device.environ(base) == {
            "HOME": "/home/me", "ADB_SERVER_SOCKET": "tcp:10.0.0.5:5038", "ANDROID_ADB_SERVER_ADDRESS": "10.0.0.5",
            "ANDROID_ADB_SERVER_PORT": "5038",
        }
        # A device on the server the environment already names leaves it as it is.
        assert device.environ({"ADB_SERVER_SOCKET": "tcp:10.0.0.5:5038"}) == {"ADB_SERVER_SOCKET": "tcp:10.0.0.5:5038"}


@pytest.fixture
def claim_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", str(tmp_path / "claims"))
    monkeypatch.setenv("AUTOMOBILE_COORDINATION_DIR", str(tmp_path / "coordination"))
    return tmp_path / "claims"


def _locked_by_a_live_process(root: Path) -> tuple[Path, subprocess.Popen]:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lock = benchmark_lock_path("s1", scope="tcp-localhost-5037", root=root)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(f"{holder.pid}\nsibling-token\n{json.dumps({'socketPath': '', 'acquiredAt': 0})}", encoding="utf-8")
    return lock, holder


@pytest.mark.parametrize("sibling", [True, False], ids=["a-sibling-worker-holds-it", "another-session-holds-it"])
def test_a_run_waits_only_for_its_siblings(claim_dirs: Path, sibling: bool) -> None:
    adb = Adb(AdbEndpoint("localhost", 5037))
    lock, holder = _locked_by_a_live_process(claim_dirs)
    pool = DevicePool(adb=adb, candidates=[Candidate("s1", adb)], pinnable=True, sibling_wait_s=30, is_sibling=lambda pid: sibling)
    releaser = threading.Timer(0.5, lock.unlink)
    releaser.start()
    started = time.monotonic()
    try:
        if sibling:
            with pool.claim() as device:
                assert device.serial == "s1" and time.monotonic() - started >= 0.4
        else:
            with pytest.raises(DeviceBusy, match="held by another session: benchmark lock"):
                with pool.claim():
                    pass
            assert time.monotonic() - started < 0.4  # refused at once, not after the release
    finally:
        releaser.join()
        holder.kill()
        holder.wait()


def test_a_sibling_that_never_lets_go_ends_in_a_refusal(claim_dirs: Path) -> None:
    adb = Adb(AdbEndpoint("localhost", 5037))
    _, holder = _locked_by_a_live_process(claim_dirs)
    pool = DevicePool(adb=adb, candidates=[Candidate("s1", adb)], pinnable=True, sibling_wait_s=0.5, is_sibling=lambda pid: True)
    try:
        with pytest.raises(DeviceBusy, match="benchmark lock"):
            with pool.claim():
                pass
    finally:
        holder.kill()
        holder.wait()


def test_only_children_of_the_same_controller_are_siblings(monkeypatch: pytest.MonkeyPatch) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
        assert not held_by_sibling(child.pid)  # not a worker: nothing is a sibling
        monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
        # The child's parent is this process, not this process's parent: not a sibling.
        assert not held_by_sibling(child.pid) and not held_by_sibling(os.getpid())
    finally:
        child.kill()
        child.wait()
