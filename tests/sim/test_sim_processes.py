"""The simulated phone's processes, background jobs, `dumpsys appops`, `find` and `rmdir` -> what a real phone prints (what cleanup reads)."""

from __future__ import annotations

import time

import pytest

from pytest_agentbench.checks.devicewide import parse_appops, parse_files, parse_processes
from pytest_agentbench.sim.phone import Phone


@pytest.fixture
def phone():
    phone = Phone()
    yield phone
    phone.processes.stop_all()


def _out(phone: Phone, line: str, user: str = "shell") -> str:
    result = phone.shell(line, user=user)
    return result.stdout.decode() + result.stderr.decode()


def test_a_nohup_job_outlives_its_line_under_init_and_dies_by_kill(phone: Phone) -> None:
    assert phone.shell("nohup sleep 600 > /dev/null 2>&1 &", user="shell").exit_code == 0
    listing = _out(phone, "ps -A")
    assert listing.splitlines()[0].split() == ["USER", "PID", "PPID", "VSZ", "RSS", "WCHAN", "ADDR", "S", "NAME"]
    (job,) = [line.split() for line in listing.splitlines() if line.endswith(" sleep")]
    assert job[0] == "shell" and job[2] == "1"
    processes = parse_processes(_out(phone, "ps -A -o USER,PID,PPID,PGID,NAME,ARGS"))
    (sleeper,) = [p for p in processes.values() if p.name == "sleep"]
    assert sleeper.args == "sleep 600" and sleeper.pgid not in {p.pid for p in processes.values()}
    assert _out(phone, f"kill -9 {sleeper.pid}") == ""
    assert not any(p.name == "sleep" for p in parse_processes(_out(phone, "ps -A -o USER,PID,PPID,NAME")).values())
    assert _out(phone, f"kill -9 {sleeper.pid}") == f"kill: pid {sleeper.pid}: No such process\n"


def test_a_job_ends_by_itself_and_does_what_it_was_told_meanwhile(phone: Phone) -> None:
    phone.shell("sh -c 'sleep 0.2; echo late > /sdcard/late.txt' &", user="shell")
    assert not phone.fs.exists("/sdcard/late.txt")
    deadline = time.monotonic() + 5
    while phone.processes.live_jobs() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert phone.processes.live_jobs() == [] and phone.fs.read("/sdcard/late.txt") == b"late\n"


def test_a_killed_job_does_not_do_the_rest(phone: Phone) -> None:
    phone.shell("su 0 sh -c 'sleep 1; cmd appops set com.android.chrome WAKE_LOCK ignore' &", user="shell")
    (job,) = phone.processes.live_jobs()
    assert job.user == "root" and job.name == "sh"
    assert _out(phone, f"kill {job.pid}") == f"kill: pid {job.pid}: Operation not permitted\n"
    assert _out(phone, f"su 0 kill -9 {job.pid}") == ""
    time.sleep(1.3)
    assert "com.android.chrome" not in phone.appops.packages


def test_a_background_command_that_ends_at_once_still_prints(phone: Phone) -> None:
    assert phone.shell("echo a & echo b").stdout == b"a\nb\n" and phone.processes.live_jobs() == []


def test_ps_without_A_shows_this_shell_and_ps(phone: Phone) -> None:
    rows = _out(phone, "ps").splitlines()
    assert [row.split()[-1] for row in rows[1:]] == ["sh", "ps"]


def test_dumpsys_appops_lists_package_and_uid_modes(phone: Phone) -> None:
    phone.shell("cmd appops set com.android.chrome WAKE_LOCK ignore; cmd appops set 10123 RUN_ANY_IN_BACKGROUND ignore")
    uid = phone.packages["com.android.chrome"].uid
    dump = _out(phone, "dumpsys appops")
    assert f"  Uid u0a{uid - 10000}:\n" in dump and "      WAKE_LOCK (ignore): \n" in dump
    assert parse_appops(dump) == {"packages": {"com.android.chrome": {"WAKE_LOCK": "ignore"}},
                                  "uids": {"u0a123": {"RUN_ANY_IN_BACKGROUND": "ignore"}}}
    # Setting the op's default mode drops it, for a uid as for a package.
    phone.shell("cmd appops set com.android.chrome WAKE_LOCK allow; cmd appops set 10123 RUN_ANY_IN_BACKGROUND allow")
    assert parse_appops(_out(phone, "dumpsys appops")) == {"packages": {}, "uids": {}}


def test_find_lists_shared_storage_through_its_long_name_and_rmdir_keeps_a_full_directory(phone: Phone) -> None:
    phone.shell("mkdir -p /sdcard/Download/d && echo x > '/sdcard/Download/d/a b'")
    listing = _out(phone, "find /storage/emulated/0 -exec stat -c '%A %s %Y %n' {} +")
    files = parse_files(listing)
    assert files["/storage/emulated/0/Download/d/a b"][:2] == ("-", 2) and files["/storage/emulated/0/Download/d"][0] == "d"
    assert _out(phone, "find /sdcard -type f -name 'a*'") == "/sdcard/Download/d/a b\n"
    assert _out(phone, "rmdir /sdcard/Download/d") == "rmdir: /sdcard/Download/d: Directory not empty\n"
    assert _out(phone, "rm -f '/sdcard/Download/d/a b' && rmdir /sdcard/Download/d && ls /sdcard/Download") == ""
    assert _out(phone, "find /nowhere") == "find: /nowhere: No such file or directory\n"
