"""Cleanup of the whole phone (issue 19 E): `dumpsys appops`, shared storage and `ps -A` before/after -> undo commands and leftovers, both sides; then the simulated phone put back for real."""

from __future__ import annotations

from pathlib import Path

import pytest
from checklab import lab_phone
from phoneadb import PhoneAdb

from pytest_agentbench.checks import suite_checks
from pytest_agentbench.checks.base import DeviceReads, RawRead
from pytest_agentbench.checks.cleanup import device_wide_trackers, leftovers, plan_cleanup
from pytest_agentbench.checks.devicewide import parse_appops, parse_files, parse_processes, uid_number
from pytest_agentbench.checks.read import read_device
from pytest_agentbench.run.cleanup import run_cleanup

PROCESSES, APPOPS, FILES = device_wide_trackers()

# As an Android 14 phone prints it (trimmed): settings, a system uid, an app uid with a uid mode,
# a package op with a switch op and access lines, and the watchers section that follows.
REAL_APPOPS = """Current AppOps Service state:
  Settings:
    top_state_settle_time=+5s0ms
    fg_service_state_settle_time=+5s0ms
    bg_state_settle_time=+1s0ms

  Uid 1000:
    state=pers
    capability=LCMNFB
    appWidgetVisible=false
    Package android:
      RUN_IN_BACKGROUND (allow):
        Access: [pers-s] 2026-12-01 09:00:00.123 (-2h1m3s) duration=+12ms
  Uid u0a158:
    state=cch
    capability=LCMN
    appWidgetVisible=false
      LEGACY_STORAGE: mode=ignore
    Package com.google.android.youtube:
      COARSE_LOCATION (allow / switch FINE_LOCATION=allow): 
        Access: [fg-s] 2026-12-01 10:13:08.129 (-8m3s544ms)
      WAKE_LOCK (allow):
        Access: [bg-tpd] 2026-12-01 10:20:00.000 (-1m) duration=+15ms
      RUN_ANY_IN_BACKGROUND (ignore): 
  Op mode watchers:
    Op RUN_ANY_IN_BACKGROUND:
      #0: ModeCallback{b8f1 watchinguid=-1 flags=0x1 from uid=1000 pid=1234}
"""


def _appops(*lines: str) -> str:
    return "Current AppOps Service state:\n  Settings:\n    top_state_settle_time=+5s0ms\n\n" + "".join(lines)


def _package(uid: str, package: str, *ops: str) -> str:
    return f"  Uid {uid}:\n    state=cch\n    Package {package}:\n" + "".join(f"      {op}: \n" for op in ops)


def test_a_real_phones_app_ops_dump_parses_to_modes_only() -> None:
    assert parse_appops(REAL_APPOPS) == {
        "packages": {"android": {"RUN_IN_BACKGROUND": "allow"},
                     "com.google.android.youtube": {"COARSE_LOCATION": "allow", "WAKE_LOCK": "allow",
                                                    "RUN_ANY_IN_BACKGROUND": "ignore"}},
        "uids": {"u0a158": {"LEGACY_STORAGE": "ignore"}}}
    assert (uid_number("u0a158"), uid_number("u10a3"), uid_number("1000")) == ("10158", "1010003", "1000")
    with pytest.raises(ValueError, match="not an app-ops dump"):
        parse_appops("Can't find service: appops\n")


REAL_PS = """USER           PID  PPID     VSZ    RSS WCHAN            ADDR S NAME
root             1     0 10782796  9564 do_epoll_wait       0 S init
root             2     0       0      0 kthreadd            0 S [kthreadd]
root            77     2       0      0 worker_thread       0 I [kworker/u8:3-events_unbound]
shell          437     1 10786664  3812 do_epoll_wait       0 S adbd
u0_a158       4567   310 14219456 99840 do_epoll_wait       0 S com.google.android.youtube
shell         9001     1 10764880  2616 hrtimer_nanosleep   0 S sleep
shell         9100   437 10768320  3196 do_wait             0 S sh
shell         9101  9100 10781144  3632 0                   0 R ps
"""


def test_a_real_phones_process_list_parses_without_the_reader_itself() -> None:
    found = parse_processes(REAL_PS)
    assert sorted(found) == ["1 init", "2 [kthreadd]", "437 adbd", "4567 com.google.android.youtube",
                             "77 [kworker/u8:3-events_unbound]", "9001 sleep"]
    with_args = parse_processes("USER PID PPID NAME ARGS\nshell 9001 1 sleep sleep 600\nshell 9100 437 sh sh -c\n"
                                "shell 9101 9100 ps ps -A -o USER,PID,PPID,NAME,ARGS\n")
    assert list(with_args) == ["9001 sleep"] and with_args["9001 sleep"].args == "sleep 600"
    with pytest.raises(ValueError, match="not a process list"):
        parse_processes("/system/bin/sh: ps: inaccessible or not found\n")


def test_shared_storage_listing_skips_what_is_not_a_stat_line_and_what_leaves_the_storage() -> None:
    text = ("drwxrwx--x 3488 1700000000 /storage/emulated/0\n"
            "drwxrws--- 3488 1700000000 /storage/emulated/0/Android\n"
            "-rw-rw---- 10 1700000000 /storage/emulated/0/Android/data/x/cache.bin\n"
            "find: /storage/emulated/0/Android/data: Permission denied\n"
            "-rw-rw---- 5 1700000001 /storage/emulated/0/Download/a b.txt\n"
            "-rw-rw---- 5 1700000001 /storage/emulated/0/../../data/local/tmp/x\n"
            "-rw-rw---- 5 1700000001 /data/local/tmp/y\n")
    assert parse_files(text) == {"/storage/emulated/0": ("d", 3488, 1700000000),
                                 "/storage/emulated/0/Download/a b.txt": ("-", 5, 1700000001)}
    with pytest.raises(ValueError, match="was not listed"):
        parse_files("find: /storage/emulated/0: No such file or directory\n")


def _read(tracker, text: str, status: int = 0) -> DeviceReads:
    return DeviceReads({tracker.read.key: RawRead(status, text)})


ROOT = "drwxrwx--x 3488 1700000000 /storage/emulated/0\n"
DOWNLOAD = "drwxrwx--x 3488 1700000000 /storage/emulated/0/Download\n"
PS_HEAD = "USER PID PPID NAME ARGS\nroot 1 0 init /system/bin/init\n"
PG_HEAD = "USER PID PPID PGID NAME ARGS\nroot 1 0 0 init /system/bin/init\nshell 437 1 437 adbd adbd\n"


@pytest.mark.parametrize(
    ("tracker", "before", "after", "commands"),
    [
        # Another package's op set during the run goes back to the op's own default mode, never `default`.
        (APPOPS, _appops(), _appops(_package("u0a12", "com.other", "WAKE_LOCK (ignore)")),
         ["cmd appops set com.other WAKE_LOCK allow"]),
        (APPOPS, _appops(), _appops(_package("u0a12", "com.other", "RUN_ANY_IN_BACKGROUND (default)")),
         ["cmd appops set com.other RUN_ANY_IN_BACKGROUND allow"]),
        # A mode the phone had before the run is what it gets back, MODE_DEFAULT included.
        (APPOPS, _appops(_package("u0a12", "com.other", "RUN_ANY_IN_BACKGROUND (default)")),
         _appops(_package("u0a12", "com.other", "RUN_ANY_IN_BACKGROUND (allow)")),
         ["cmd appops set com.other RUN_ANY_IN_BACKGROUND default"]),
        (APPOPS, _appops(_package("u0a12", "com.other", "RUN_ANY_IN_BACKGROUND (ignore)")), _appops(),
         ["cmd appops set com.other RUN_ANY_IN_BACKGROUND ignore"]),
        # An op whose default is not allow; an op the app merely used (an access record at its default) is no change.
        (APPOPS, _appops(), _appops(_package("u0a12", "com.other", "WRITE_SMS (allow)", "WAKE_LOCK (allow)")),
         ["cmd appops set com.other WRITE_SMS ignore"]),
        (APPOPS, _appops(), _appops("  Uid u0a12:\n    state=cch\n      RUN_ANY_IN_BACKGROUND: mode=ignore\n"),
         ["cmd appops set 10012 RUN_ANY_IN_BACKGROUND allow"]),
        (APPOPS, REAL_APPOPS, REAL_APPOPS, []),
        (FILES, ROOT, ROOT + DOWNLOAD + "-rw-rw---- 5 1 /storage/emulated/0/Download/it's here.txt\n",
         ["rm -f '/storage/emulated/0/Download/it'\"'\"'s here.txt'", "rmdir /storage/emulated/0/Download"]),
        # A changed file cannot be put back (it is reported), and a removed one neither.
        (FILES, ROOT + "-rw-rw---- 5 1 /storage/emulated/0/a.txt\n", ROOT + "-rw-rw---- 9 2 /storage/emulated/0/a.txt\n", []),
        (FILES, ROOT + "-rw-rw---- 5 1 /storage/emulated/0/a.txt\n", ROOT, []),
        (PROCESSES, PS_HEAD, PS_HEAD + "shell 9001 1 sleep sleep 600\nroot 9002 1 sh sh -c x\nu0_a3 9003 310 com.x com.x\n"
                                        "root 9004 2 [kworker/0:2] [kworker/0:2]\n",
         ["kill -9 9001"]),
        (PROCESSES, PS_HEAD + "shell 9001 1 sleep sleep 600\n", PS_HEAD + "shell 9001 1 sleep sleep 600\n", []),
        # With process groups: a root job in a gone adb shell's group is the run's (su); a group leader under init is not,
        # nor a restarted adbd.
        (PROCESSES, PG_HEAD, PG_HEAD + "root 9002 1 9000 sh sh -c sleep 30; cmd appops set x\n"
                                       "root 9005 1 9005 vold /system/bin/vold\nshell 9006 1 9006 adbd adbd\n"
                                       "root 9007 9100 9100 sleep sleep 5\nshell 9100 437 9100 sh sh\n",
         ["su 0 kill -9 9002", "su 0 kill -9 9007", "kill -9 9100"]),
    ],
    ids=["other-package-op", "mode-default-is-a-change", "back-to-mode-default", "back-to-a-mode", "op-default-not-allow",
         "uid-mode", "real-dump-unchanged", "file-and-dir-added", "file-changed", "file-removed", "process-started",
         "process-that-was-there", "root-processes-by-group"],
)
def test_undo_commands_from_the_difference(tracker, before: str, after: str, commands: list[str]) -> None:
    plan = plan_cleanup([tracker], [], _read(tracker, before), _read(tracker, after))
    assert [action.script.text for action in plan.actions] == commands and plan.unknown == ()


@pytest.mark.parametrize(
    ("tracker", "before", "reread", "left"),
    [
        (APPOPS, _appops(), _appops(_package("u0a12", "com.other", "WAKE_LOCK (ignore)")),
         ["app-op WAKE_LOCK of com.other is ignore, was allow"]),
        (APPOPS, _appops(), _appops(_package("u0a12", "com.other", "WAKE_LOCK (allow)")), []),
        (FILES, ROOT, ROOT + "-rw-rw---- 5 1 /storage/emulated/0/x\n",
         ["shared storage: /storage/emulated/0/x added by the run is still there"]),
        (FILES, ROOT + "-rw-rw---- 5 1 /storage/emulated/0/a\n", ROOT + "-rw-rw---- 9 2 /storage/emulated/0/a\n",
         ["shared storage: /storage/emulated/0/a was changed by the run (size 5 -> 9, mtime 1 -> 2)"]),
        (FILES, ROOT + "-rw-rw---- 5 1 /storage/emulated/0/a\n", ROOT,
         ["shared storage: /storage/emulated/0/a was removed by the run"]),
        (FILES, ROOT, ROOT, []),
        (PROCESSES, PS_HEAD, PS_HEAD + "shell 9001 1 sleep sleep 600\n",
         ["process 9001 (sleep 600) started during the run as shell is still running"]),
        (PROCESSES, PS_HEAD, PS_HEAD + "root 9002 1 sh sh -c x\n",
         ["process 9002 (sh -c x) started during the run as root is still running "
          "(not killed: it is not in an adb shell's process group, so init may have started it)"]),
        (PROCESSES, PG_HEAD, PG_HEAD + "root 9002 1 9000 sh sh -c x\n",
         ["process 9002 (sh -c x) started during the run as root is still running"]),
        (PROCESSES, PS_HEAD, PS_HEAD + "u0_a3 9003 310 com.x com.x\n", []),
    ],
    ids=["op", "op-used-at-default", "file-added", "file-changed", "file-removed", "storage-same", "shell-process",
         "root-process", "root-process-of-adb", "app-process"],
)
def test_leftovers(tracker, before: str, reread: str, left: list[str]) -> None:
    assert leftovers([tracker], _read(tracker, before), _read(tracker, reread)) == left


def test_a_find_that_met_an_unreadable_directory_still_counts_and_a_failed_read_is_said() -> None:
    listing = ROOT + "find: /storage/emulated/0/Android/data: Permission denied\n"
    plan = plan_cleanup([FILES], [], _read(FILES, listing, 1), _read(FILES, listing + "-rw-rw---- 5 1 /storage/emulated/0/n\n", 1))
    assert [action.script.text for action in plan.actions] == ["rm -f /storage/emulated/0/n"]
    plan = plan_cleanup([APPOPS], [], _read(APPOPS, "cmd: Can't find service: appops\n", 255), _read(APPOPS, _appops()))
    assert plan.actions == () and plan.unknown[0].startswith("every package's app-ops was not compared")


def test_the_whole_phone_is_put_back_in_one_round_trip(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    checks = suite_checks([], device_wide=True)
    assert [tracker.source for tracker in checks.trackers] == ["processes", "appops-all", "files"]
    assert checks.before_reads() == ()  # compared with the baseline only: never an audit input
    phone = adb.phone
    baseline = read_device(adb, "sim", checks.baseline_reads()).reads
    phone.shell("cmd appops set com.android.chrome WAKE_LOCK ignore; cmd appops set com.android.chrome "
                "RUN_ANY_IN_BACKGROUND default; mkdir -p /sdcard/Download/left/deep && echo x > '/sdcard/Download/left/deep/a b'"
                " && nohup sleep 600 > /dev/null 2>&1 &", user="shell")
    phone.shell("sh -c 'sleep 30; cmd appops set com.android.chrome WAKE_LOCK deny' > /dev/null 2>&1 &", user="shell")
    after = read_device(adb, "sim", checks.after_reads()).reads
    trips = adb.round_trips
    report = run_cleanup(adb, "sim", checks, before=baseline, after=after, run_dir=tmp_path)
    assert adb.round_trips == trips + 1
    assert report is not None and report["left"] == [] and report["failed"] == [], report
    commands = [action["command"] for action in report["actions"]]
    # The two jobs are killed first, before anything is put back (a daemon cannot undo the undo).
    assert [command.startswith("kill -9 ") for command in commands] == [True, True] + [False] * (len(commands) - 2)
    assert phone.processes.live_jobs() == [] and "com.android.chrome" not in phone.appops.packages
    assert not phone.fs.exists("/sdcard/Download/left")
    # The same files, each as it was (a directory's mtime moves when an entry comes and goes: not a change).
    now = parse_files(read_device(adb, "sim", checks.after_reads()).reads.reads[FILES.read.key].text)
    was = parse_files(baseline.reads[FILES.read.key].text)
    assert set(now) == set(was) and {p: v for p, v in now.items() if v[0] != "d"} == {p: v for p, v in was.items() if v[0] != "d"}


def test_what_a_runs_cleanup_could_not_undo_the_next_preflight_retries_before_its_baseline(tmp_path: Path,
                                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from test_preflight import PLAYGROUND, _preflight

    from pytest_agentbench.run.preflight import run_preflight
    from pytest_agentbench.suite import AppSpec

    adb = PhoneAdb(lab_phone())
    phone = adb.phone
    checks = suite_checks([], device_wide=True)
    baseline = read_device(adb, "sim", checks.baseline_reads()).reads
    phone.shell("cmd appops set com.android.chrome WAKE_LOCK ignore", user="shell")
    after = read_device(adb, "sim", checks.after_reads()).reads
    # The app-ops service refuses once (a busy system server): cleanup's undo fails, the op is left and said.
    real_set = phone.appops.set_mode
    monkeypatch.setattr(phone.appops, "set_mode", lambda *args: None)
    unfinished: list = []
    report = run_cleanup(adb, "sim", checks, before=baseline, after=after, run_dir=tmp_path, unfinished=unfinished)
    assert report["left"] == ["app-op WAKE_LOCK of com.android.chrome is ignore, was allow"]
    assert [action.script.text for action in unfinished] == ["cmd appops set com.android.chrome WAKE_LOCK allow"]
    monkeypatch.setattr(phone.appops, "set_mode", real_set)
    # The next run's preflight retries it in its reset round trip, before its baseline read: no trip of its own.
    plain = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path / "plain",
                          baseline_reads=checks.baseline_reads())
    assert "com.android.chrome" in phone.appops.packages
    result = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path / "next",
                           baseline_reads=checks.baseline_reads(), unfinished_cleanup=unfinished)
    assert result.round_trips == plain.round_trips
    assert [(entry["command"], entry["status"]) for entry in result.retried_cleanup] == [
        ("cmd appops set com.android.chrome WAKE_LOCK allow", 0)]
    assert "com.android.chrome" not in phone.appops.packages
    assert "com.android.chrome" not in result.device_baseline.reads[APPOPS.read.key].text
    assert "retried the last run's unfinished cleanup: set WAKE_LOCK of com.android.chrome back to allow" in (
        tmp_path / "next" / "preflight.log").read_text()


def test_unfinished_cleanup_passes_from_one_claim_of_a_device_to_the_next_once() -> None:
    from pytest_agentbench.device.pool import ClaimedDevice

    shared: dict = {}
    first = ClaimedDevice("sim", None, "scope", None, None, unfinished=shared)  # type: ignore[arg-type]
    other = ClaimedDevice("other", None, "scope", None, None, unfinished=shared)  # type: ignore[arg-type]
    first.leave_unfinished_cleanup(("undo",))
    assert other.take_unfinished_cleanup() == ()
    second = ClaimedDevice("sim", None, "scope", None, None, unfinished=shared)  # type: ignore[arg-type]
    assert second.take_unfinished_cleanup() == ("undo",) and second.take_unfinished_cleanup() == ()
    second.leave_unfinished_cleanup(())
    assert shared == {}


def test_a_process_that_survived_its_kill_is_reported_and_never_killed_by_the_next_run(tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    adb = PhoneAdb(lab_phone())
    phone = adb.phone
    checks = suite_checks([], device_wide=True)
    baseline = read_device(adb, "sim", checks.baseline_reads()).reads
    phone.shell("nohup sleep 600 > /dev/null 2>&1 &", user="shell")
    after = read_device(adb, "sim", checks.after_reads()).reads
    monkeypatch.setattr(phone.processes, "kill", lambda pid, user: None)  # a process that ignores SIGKILL (uninterruptible)
    unfinished: list = []
    report = run_cleanup(adb, "sim", checks, before=baseline, after=after, run_dir=tmp_path, unfinished=unfinished)
    (left,) = report["left"]
    assert left.endswith("(sleep 600) started during the run as shell is still running") and report["failed"] == []
    assert unfinished == []
