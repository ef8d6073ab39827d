"""Tests for device claim files, benchmark locks and the ownership check (device/claims.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentbench.device import claims
from pytest_agentbench.device.claims import (
    acquire_benchmark_lock,
    acquire_claim,
    check_device_ownership,
    reclaim_after_agent,
)
from pytest_agentbench.errors import DeviceBusy, DeviceError

SERIAL = "emulator-5554"
SCOPE = "tcp-localhost-5037"


@pytest.fixture
def dead_pid() -> int:
    """A pid that belonged to a process which has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not claims.pid_is_alive(child.pid)
    return child.pid


@pytest.fixture
def live_pid():
    """A pid of another live process, stopped after the test."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child.pid
    child.kill()
    child.wait()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"AUTOMOBILE_COORDINATION_DIR": str(tmp_path / "coord")}


def write_lock(path: Path, pid: int, token: str = "their-token", socket_path: str = "/tmp/am/daemon.sock") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f'{pid}\n{token}\n{json.dumps({"socketPath": socket_path, "acquiredAt": 1_790_000_000_000})}'
    path.write_text(body, encoding="utf-8")


@pytest.mark.parametrize(
    ("serial", "expected"),
    [
        ("emulator-5554", "ZW11bGF0b3ItNTU1NA"),
        ("127.0.0.1:5555", "MTI3LjAuMC4xOjU1NTU"),
        ("R58M42ABCDE", "UjU4TTQyQUJDREU"),
        # bytes 0xfb 0xff encode to '+' and '/' in plain base64; base64url uses '-' and '_'
        ("\u00fb\u00ff", "w7vDvw"),
        ("ab?>", "YWI_Pg"),
    ],
    ids=["an emulator serial", "a tcp serial", "a usb serial", "a non-ascii serial", "a serial needing url-safe characters"],
)
def test_serial_is_encoded_as_node_base64url_without_padding(serial: str, expected: str) -> None:
    assert claims.encode_serial(serial) == expected


@pytest.mark.parametrize(
    ("host", "port", "scope"),
    [
        ("localhost", 5037, "tcp-localhost-5037"),
        ("127.0.0.1", 5037, "tcp-localhost-5037"),
        ("::1", 5038, "tcp-localhost-5038"),
        ("LocalHost", "5037", "tcp-localhost-5037"),
        ("Build-Host.example", 5037, "tcp-build-host.example-5037"),
        ("fe80::1", 5037, "tcp-fe80__1-5037"),
    ],
    ids=[
        "the default endpoint",
        "ipv4 loopback shares the localhost scope",
        "ipv6 loopback shares the localhost scope",
        "host case does not matter",
        "a remote host keeps its name",
        "unsafe characters become underscores",
    ],
)
def test_scope_names_the_adb_endpoint(host: str, port: object, scope: str) -> None:
    assert claims.scope_for_endpoint(host, port) == scope


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("tcp-localhost-5037", "tcp-localhost-5037"),
        (SimpleNamespace(scope="tcp-localhost-6000"), "tcp-localhost-6000"),
        (SimpleNamespace(host="127.0.0.1", port=7000), "tcp-localhost-7000"),
    ],
    ids=["a scope string is used as is", "an endpoint's scope attribute is used", "host and port make the scope"],
)
def test_scope_accepts_strings_and_endpoints(scope: object, expected: str) -> None:
    assert claims.resolve_scope(scope) == expected


@pytest.mark.parametrize("bad", ["", "..", "a/b", 42], ids=["empty", "parent dir", "a path", "a number"])
def test_scope_that_is_not_one_path_segment_is_rejected(bad: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        claims.resolve_scope(bad)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": "/srv/am"}, "/srv/am"),
        ({"AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR": "/srv/legacy"}, "/srv/legacy"),
        ({"AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": "/srv/am", "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR": "/x"}, "/srv/am"),
        ({"AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": "  ", "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR": "/srv/legacy"}, "/srv/legacy"),
        ({}, str(Path.home() / ".auto-mobile" / "adb-servers")),
    ],
    ids=[
        "the current variable sets the root",
        "the legacy spelling sets the root",
        "the current variable wins over the legacy one",
        "a blank current variable falls back to the legacy one",
        "the default is under the home directory",
    ],
)
def test_claim_root_comes_from_the_environment(environ: dict[str, str], expected: str) -> None:
    assert str(claims.claim_root(environ)) == expected


def test_claim_file_layout_matches_automobile(tmp_path: Path) -> None:
    path = claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path)
    assert path == tmp_path / SCOPE / "device-allocations" / "ZW11bGF0b3ItNTU1NA.lock"
    lock = claims.benchmark_lock_path(SERIAL, scope=SCOPE, root=tmp_path)
    assert lock == path.with_name("ZW11bGF0b3ItNTU1NA.lock.agent-benchmark")


def test_acquired_claim_has_the_three_line_body_and_private_permissions(tmp_path: Path) -> None:
    root = tmp_path / "fresh-root"
    before_ms = int(time.time() * 1000)
    claim = acquire_claim(SERIAL, scope=SCOPE, root=root, socket_path="/run/agentbench.sock", token="tok-1")
    lines = claim.path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == str(os.getpid())
    assert lines[1] == "tok-1"
    metadata = json.loads(lines[2])
    assert metadata["socketPath"] == "/run/agentbench.sock"
    assert metadata["acquiredAt"] >= before_ms
    assert stat.S_IMODE(claim.path.stat().st_mode) == 0o600
    for directory in (root, root / SCOPE, claim.path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert not [p for p in claim.path.parent.iterdir() if p != claim.path], "temp files must not be left behind"


def test_claim_held_by_another_live_process_is_refused_naming_the_holder(tmp_path: Path, live_pid: int) -> None:
    path = claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path)
    write_lock(path, live_pid, socket_path="/tmp/am/daemon.sock")
    with pytest.raises(DeviceBusy) as refused:
        acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    message = str(refused.value)
    for part in (SERIAL, f"pid {live_pid} (alive)", "/tmp/am/daemon.sock", "since 2026-09-21T", str(path), "Stop that"):
        assert part in message
    assert path.read_text(encoding="utf-8").startswith(f"{live_pid}\n"), "a live claim must stay untouched"


def test_claim_of_a_dead_process_is_reclaimed(tmp_path: Path, dead_pid: int) -> None:
    path = claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path)
    write_lock(path, dead_pid)
    claim = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path, token="mine")
    assert claim.still_held()
    assert path.read_text(encoding="utf-8").startswith(f"{os.getpid()}\nmine\n")
    # Only the claim and the reclaimers' flock file remain: no temp or stale copies.
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".reclaim"]


@pytest.mark.parametrize(
    "body",
    ["", "   \n", "not-a-pid\ntoken\n{}", "0\ntoken\n{}", "-1\ntoken\n{}"],
    ids=["an empty file", "a blank file", "a file without a pid", "pid 0", "pid -1"],
)
def test_unreadable_claim_is_refused_because_nobody_can_tell_who_holds_it(tmp_path: Path, body: str) -> None:
    path = claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DeviceBusy, match="Cannot tell who holds the device"):
        acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    assert path.read_text(encoding="utf-8") == body


def test_claim_path_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    path = claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path)
    path.mkdir(parents=True)  # a directory where the file should be: reading it fails
    with pytest.raises(DeviceBusy, match="cannot be read"):
        acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)


def test_claim_that_cannot_be_written_raises_device_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the claim root should be", encoding="utf-8")
    with pytest.raises(DeviceError) as failed:
        acquire_claim(SERIAL, scope=SCOPE, root=blocker)
    assert not isinstance(failed.value, DeviceBusy)
    assert "cannot create the device claim directory" in str(failed.value)


def test_symlinked_claim_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "root" / SCOPE).mkdir(parents=True)
    (tmp_path / "root" / SCOPE / "device-allocations").symlink_to(elsewhere)
    with pytest.raises(DeviceError, match="symbolic link"):
        acquire_claim(SERIAL, scope=SCOPE, root=tmp_path / "root")
    assert list(elsewhere.iterdir()) == []


def test_a_second_claim_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    with pytest.raises(DeviceBusy, match=f"pid {os.getpid()} \\(alive\\)"):
        acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    assert first.still_held()


def test_taking_back_a_claim_with_the_same_token_returns_it(tmp_path: Path) -> None:
    first = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path, token="same")
    again = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path, token="same")
    assert again.still_held() and first.still_held()


@pytest.mark.parametrize(
    ("replace_with", "released", "file_left"),
    [
        (None, True, False),
        ("someone-else", False, True),
        ("missing", False, False),
    ],
    ids=[
        "releasing our own claim removes it",
        "a claim someone else took over is left alone",
        "releasing a vanished claim reports false",
    ],
)
def test_release_only_removes_a_claim_that_is_still_ours(
    tmp_path: Path, live_pid: int, replace_with: str | None, released: bool, file_left: bool
) -> None:
    claim = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    if replace_with == "someone-else":
        write_lock(claim.path, live_pid)
    elif replace_with == "missing":
        claim.path.unlink()
    assert claim.release() is released
    assert claim.path.exists() is file_left
    assert claim.still_held() is False


def test_same_pid_with_another_token_is_not_ours_to_release(tmp_path: Path) -> None:
    claim = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path, token="ours")
    write_lock(claim.path, os.getpid(), token="a-later-incarnation")
    assert claim.release() is False
    assert claim.path.exists()


@pytest.mark.parametrize("stale_first", [False, True], ids=["on a free device", "on a stale claim"])
def test_threads_racing_for_one_claim_exactly_one_wins(tmp_path: Path, dead_pid: int, stale_first: bool) -> None:
    if stale_first:
        write_lock(claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path), dead_pid)
    racers = 8
    barrier = threading.Barrier(racers)
    won: list[claims.Claim] = []
    refused: list[Exception] = []

    def race() -> None:
        barrier.wait()
        try:
            won.append(acquire_claim(SERIAL, scope=SCOPE, root=tmp_path))
        except DeviceBusy as exc:
            refused.append(exc)

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(refused) == racers - 1
    assert won[0].still_held()


RACER = """
import sys
from pytest_agentbench.device.claims import acquire_claim, acquire_benchmark_lock
from pytest_agentbench.errors import DeviceBusy
take = acquire_benchmark_lock if sys.argv[2] == "lock" else acquire_claim
sys.stdin.readline()  # start together
try:
    take("emulator-5554", scope="tcp-localhost-5037", root=sys.argv[1])
    print("won", flush=True)
except DeviceBusy:
    print("busy", flush=True)
sys.stdin.readline()  # hold until every racer has answered
"""


@pytest.mark.parametrize("what", ["claim", "lock"], ids=["allocation claim", "benchmark lock"])
def test_processes_racing_for_one_claim_exactly_one_wins(tmp_path: Path, what: str) -> None:
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path), what],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for racer in racers:
            racer.stdin.write("go\n")
            racer.stdin.flush()
        answers = sorted(racer.stdout.readline().strip() for racer in racers)
    finally:
        for racer in racers:
            racer.communicate("done\n", timeout=30)
    assert answers == ["busy", "busy", "busy", "won"]


def test_benchmark_lock_is_separate_from_the_claim(tmp_path: Path) -> None:
    lock = acquire_benchmark_lock(SERIAL, scope=SCOPE, root=tmp_path)
    assert lock.path.name.endswith(".lock.agent-benchmark")
    claim = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    assert claim.release()
    assert lock.still_held(), "handing the claim over must not drop the benchmark lock"
    with pytest.raises(DeviceBusy, match="Another benchmark run is using this device"):
        acquire_benchmark_lock(SERIAL, scope=SCOPE, root=tmp_path)
    assert lock.release()


def test_benchmark_lock_of_a_crashed_run_is_reclaimed(tmp_path: Path, dead_pid: int) -> None:
    write_lock(claims.benchmark_lock_path(SERIAL, scope=SCOPE, root=tmp_path), dead_pid, socket_path="")
    lock = acquire_benchmark_lock(SERIAL, scope=SCOPE, root=tmp_path)
    assert lock.still_held()


def test_benchmark_lock_of_a_live_run_is_refused(tmp_path: Path, live_pid: int) -> None:
    write_lock(claims.benchmark_lock_path(SERIAL, scope=SCOPE, root=tmp_path), live_pid, socket_path="")
    with pytest.raises(DeviceBusy, match=f"benchmark lock .* names pid {live_pid} \\(alive\\)"):
        acquire_benchmark_lock(SERIAL, scope=SCOPE, root=tmp_path)


def _ownership_file(tmp_path: Path, where: str) -> Path:
    key = f"{claims.encode_serial(SERIAL)}.lock"
    return {
        "current claim": claims.claim_path(SERIAL, scope=SCOPE, root=tmp_path / "root"),
        "legacy claim": tmp_path / "coord" / "device-allocations" / key,
        "CtrlProxy lease": tmp_path / "coord" / "ctrlproxy-forwards" / key,
    }[where]


@pytest.mark.parametrize(
    ("where", "owner", "refusal"),
    [
        ("current claim", "live", "allocation claim .* names pid {pid} \\(alive\\)"),
        ("current claim", "dead", None),
        ("current claim", "self", None),
        ("current claim", "unreadable", "allocation claim that is empty"),
        ("legacy claim", "live", "legacy allocation claim .* names pid {pid} \\(alive\\)"),
        ("legacy claim", "dead", None),
        ("legacy claim", "unreadable", "legacy allocation claim that names no pid"),
        ("CtrlProxy lease", "live", "CtrlProxy forwarding lease .* names pid {pid} \\(alive\\)"),
        ("CtrlProxy lease", "dead", None),
        ("CtrlProxy lease", "unreadable", "CtrlProxy forwarding lease that names no pid"),
    ],
    ids=[
        "a live current claim refuses the device",
        "a dead current claim is stale and ignored",
        "our own claim is not a foreign owner",
        "an unreadable current claim refuses the device",
        "a live legacy claim refuses the device",
        "a dead legacy claim is ignored",
        "an unreadable legacy claim refuses the device",
        "a live CtrlProxy forwarding lease refuses the device",
        "a dead CtrlProxy forwarding lease is ignored",
        "an unreadable CtrlProxy forwarding lease refuses the device",
    ],
)
def test_ownership_check_before_preflight(
    tmp_path: Path, env: dict[str, str], live_pid: int, dead_pid: int, where: str, owner: str, refusal: str | None
) -> None:
    path = _ownership_file(tmp_path, where)
    if owner == "unreadable":
        path.parent.mkdir(parents=True)
        path.write_text("" if where == "current claim" else "garbage\n", encoding="utf-8")
    else:
        write_lock(path, {"live": live_pid, "dead": dead_pid, "self": os.getpid()}[owner])
    if refusal is None:
        check_device_ownership(SERIAL, scope=SCOPE, root=tmp_path / "root", env=env)
        return
    with pytest.raises(DeviceBusy, match=refusal.format(pid=live_pid)) as refused:
        check_device_ownership(SERIAL, scope=SCOPE, root=tmp_path / "root", env=env)
    assert str(path) in str(refused.value)


def test_ownership_check_passes_with_no_files_and_creates_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    check_device_ownership(SERIAL, scope=SCOPE, root=tmp_path / "root", env=env)
    assert list(tmp_path.iterdir()) == []


def test_another_device_is_not_affected_by_a_claim(tmp_path: Path, env: dict[str, str], live_pid: int) -> None:
    write_lock(claims.claim_path("emulator-5556", scope=SCOPE, root=tmp_path / "root"), live_pid)
    check_device_ownership(SERIAL, scope=SCOPE, root=tmp_path / "root", env=env)
    acquire_claim(SERIAL, scope=SCOPE, root=tmp_path / "root").release()


@pytest.mark.parametrize(
    ("between", "readable"),
    [("nobody", True), ("server died holding it", True), ("another live session", False)],
    ids=[
        "the claim is taken back when nobody claimed the device",
        "a claim left by the run's dead server is reclaimed",
        "another session's live claim means the screen must not be read",
    ],
)
def test_handover_and_take_back_around_the_agent(
    tmp_path: Path, live_pid: int, dead_pid: int, between: str, readable: bool
) -> None:
    claim = acquire_claim(SERIAL, scope=SCOPE, root=tmp_path)
    assert claim.release(), "the harness hands the claim over just before the agent starts"
    if between == "server died holding it":
        write_lock(claim.path, dead_pid)
    elif between == "another live session":
        write_lock(claim.path, live_pid, socket_path="/tmp/other.sock")
    taken_back = reclaim_after_agent(SERIAL, scope=SCOPE, root=tmp_path)
    assert taken_back.screen_readable is readable
    if readable:
        assert taken_back.claim is not None and taken_back.claim.still_held()
        assert taken_back.reason == ""
    else:
        assert taken_back.claim is None
        assert taken_back.interloper is not None and taken_back.interloper.pid == live_pid
        assert f"pid {live_pid} (alive)" in taken_back.reason
        assert "screen was not read" in taken_back.reason
