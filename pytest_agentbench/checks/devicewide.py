"""The whole phone's app-ops, shared storage and processes: their reads, before/after -> undo commands, a re-read -> leftovers.

Pure. Every run watches these, whatever its checks name, because a run can change them for any
package (issue 19 E): `dumpsys appops` (every package's and uid's op modes), a `find` of shared
storage (`/storage/emulated/0`, what `/sdcard` points at; `Android/` is the apps' own and is left
out) and `ps -A`. Undo: an op back to its baseline mode (the op's own default mode when nothing
had set it, never MODE_DEFAULT), files the run added removed (then the directories it added,
deepest first), processes an adb shell started killed: every new process of the shell user, and a
new root process (`su`) whose process group is an adb shell's (its leader is gone, or is adbd's
child). A changed or removed file cannot be put back and is reported, as is any other new root
process (init may have started it; it is not killed).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks import appops as appops_kind
from pytest_agentbench.checks.base import RawRead, Read
from pytest_agentbench.device.shellscript import Script, sh

STORAGE = "/storage/emulated/0"
#: App-specific external storage (Android/data, Android/obb, Android/media): the apps' own, cleared with them.
_APP_SPECIFIC = STORAGE + "/Android"
APPOPS_READ = Read("device:appops", sh("dumpsys", "appops"))
FILES_READ = Read("device:shared-storage", sh("find", STORAGE, "-exec", "stat", "-c", "%A %s %Y %n", "{}", "+"))
PROCESSES_READ = Read("device:processes", sh("ps", "-A", "-o", "USER,PID,PPID,PGID,NAME,ARGS"))
#: Users whose new processes the run may have started: adb's shell user, and root through `su`.
SHELL_USER, ROOT_USER = "shell", "root"
_FIRST_APPLICATION_UID = 10000


@dataclass(frozen=True)
class Undo:
    """One undo command; `must_succeed` False when a failure is harmless (the re-read tells what stayed)."""

    description: str
    script: Script
    must_succeed: bool = True


# ----------------------------------------------------------------------------- app-ops


_UID_LINE = re.compile(r"^  Uid (\S+):\s*$")
_PACKAGE_LINE = re.compile(r"^    Package (\S+):\s*$")
_UID_MODE = re.compile(r"^\s+([A-Z][A-Z0-9_]*): mode=(\w+)")
_PACKAGE_MODE = re.compile(r"^\s+([A-Z][A-Z0-9_]*) \((\w+)")


def parse_appops(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """`dumpsys appops` -> {"packages": {PKG: {OP: mode}}, "uids": {UID: {OP: mode}}}.

    Android 10-14 print `  Uid u0a123:` blocks; a uid mode is `      OP: mode=ignore`, a package's
    `    Package PKG:` block lists `      OP (mode):` (or `OP (allow / switch OTHER=allow):`), each
    followed by its access lines. Only modes are kept: access times change on their own.

    Raises:
        ValueError: The output is not an app-ops dump (an error, or a phone without the service).
    """
    if "Current AppOps Service state:" not in text:
        raise ValueError(f"not an app-ops dump: {text.strip()[:200] or '(no output)'}")
    packages: dict[str, dict[str, str]] = {}
    uids: dict[str, dict[str, str]] = {}
    uid: str | None = None
    package: str | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        found = _UID_LINE.match(line)
        if found:
            uid, package = found.group(1), None
            continue
        if indent <= 2:
            uid = package = None
            continue
        if uid is None:
            continue
        found = _PACKAGE_LINE.match(line)
        if found:
            package = found.group(1)
            packages.setdefault(package, {})
            continue
        if indent <= 4:
            package = None
            continue
        if package is not None:
            mode = _PACKAGE_MODE.match(line)
            if mode and indent == 6:
                packages[package][mode.group(1)] = mode.group(2)
        else:
            mode = _UID_MODE.match(line)
            if mode:
                uids.setdefault(uid, {})[mode.group(1)] = mode.group(2)
    return {"packages": {name: ops for name, ops in packages.items() if ops}, "uids": uids}


def uid_number(uid: str) -> str:
    """`u0a123` (UserHandle.formatUid) -> `10123`; `1000` stays: the form `cmd appops set UID` takes."""
    found = re.fullmatch(r"u(\d+)a(\d+)", uid)
    if found:
        return str(int(found.group(1)) * 100000 + _FIRST_APPLICATION_UID + int(found.group(2)))
    return uid


def _op_changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[tuple[str, str, str, str]]:
    """(owner, op, mode before, mode after) for every op whose mode in force differs; unset = the op's default."""
    changes = []
    for owner in sorted(set(before) | set(after)):
        was, now = before.get(owner, {}), after.get(owner, {})
        for op in sorted(set(was) | set(now)):
            default = appops_kind.default_mode(op)
            old, new = was.get(op, default), now.get(op, default)
            if old != new:
                changes.append((owner, op, old, new))
    return changes


def appops_undo(before: dict, after: dict) -> list[Undo]:
    """`cmd appops set` back to the baseline mode for every package and uid op that moved."""
    actions = [Undo(f"set {op} of {package} back to {old} (the run left {new})", sh("cmd", "appops", "set", package, op, old))
               for package, op, old, new in _op_changes(before["packages"], after["packages"])]
    actions += [Undo(f"set uid {uid}'s {op} back to {old} (the run left {new})",
                     sh("cmd", "appops", "set", uid_number(uid), op, old))
                for uid, op, old, new in _op_changes(before["uids"], after["uids"])]
    return actions


def appops_left(before: dict, reread: dict) -> list[str]:
    left = [f"app-op {op} of {package} is {new}, was {old}"
            for package, op, old, new in _op_changes(before["packages"], reread["packages"])]
    left += [f"app-op {op} of uid {uid} is {new}, was {old}" for uid, op, old, new in _op_changes(before["uids"], reread["uids"])]
    return left


# ----------------------------------------------------------------------------- shared storage


_STAT_LINE = re.compile(r"^([-dlcbps])[-rwxsStT]{9}\S* (\d+) (\d+) (/.*)$")


def parse_files(text: str) -> dict[str, tuple[str, int, int]]:
    """`find STORAGE -exec stat -c '%A %s %Y %n' {} +` -> {path: (type, size, mtime)}; type `d`, `-` or another `ls` letter.

    Lines that are not stat lines (`find: ...: Permission denied`) are skipped, as is `Android/`.
    A path that climbs (`..`) or leaves shared storage is never kept, so no undo can reach outside it.

    Raises:
        ValueError: Nothing was listed, not even the storage root (no shared storage, or no `find`).
    """
    files: dict[str, tuple[str, int, int]] = {}
    for line in text.splitlines():
        found = _STAT_LINE.match(line)
        if not found:
            continue
        kind, size, mtime, path = found.group(1), int(found.group(2)), int(found.group(3)), found.group(4)
        path = path.rstrip("/") or "/"
        if ".." in path.split("/") or not (path == STORAGE or path.startswith(STORAGE + "/")):
            continue
        if path == _APP_SPECIFIC or path.startswith(_APP_SPECIFIC + "/"):
            continue
        files[path] = (kind, size, mtime)
    if STORAGE not in files:
        raise ValueError(f"shared storage ({STORAGE}) was not listed: {text.strip()[:200] or '(no output)'}")
    return files


def files_undo(before: dict, after: dict) -> list[Undo]:
    """`rm -f` every file the run added, then `rmdir` every directory it added, deepest first."""
    added = [path for path in after if path not in before]
    files = sorted(path for path in added if after[path][0] != "d")
    directories = sorted((path for path in added if after[path][0] == "d"), key=lambda p: (-p.count("/"), p))
    actions = [Undo(f"remove {path} (added to shared storage by the run)", sh("rm", "-f", path), must_succeed=False)
               for path in files]
    actions += [Undo(f"remove the directory {path} (added by the run)", sh("rmdir", path), must_succeed=False)
                for path in directories]
    return actions


def files_left(before: dict, reread: dict) -> list[str]:
    left = [f"shared storage: {path} added by the run is still there" for path in sorted(reread) if path not in before]
    for path in sorted(before):
        kind, size, mtime = before[path]
        if path not in reread:
            left.append(f"shared storage: {path} was removed by the run")
        elif kind != "d" and reread[path] != before[path]:
            now_size, now_mtime = reread[path][1], reread[path][2]
            left.append(f"shared storage: {path} was changed by the run (size {size} -> {now_size}, mtime {mtime} -> {now_mtime})")
    return left


# ----------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Process:
    user: str
    pid: int
    ppid: int
    name: str
    args: str
    pgid: int | None = None


def parse_processes(text: str) -> dict[str, Process]:
    """`ps -A [-o USER,PID,PPID,PGID,NAME,ARGS]` -> {"PID NAME": Process}, without the reader itself.

    The header names the columns (toybox's default `USER PID PPID VSZ RSS WCHAN ADDR S NAME`, or
    the `-o` fields); the last column may hold spaces. The `ps` row and the shell that ran it (its
    parent) are the read's own and are dropped.

    Raises:
        ValueError: No `PID` header (not a process list).
    """
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if "PID" in line.split() and "USER" in line.split()), None)
    if header_at is None:
        raise ValueError(f"not a process list: {text.strip()[:200] or '(no output)'}")
    header = lines[header_at].split()
    rows = []
    for line in lines[header_at + 1:]:
        cells = line.split(None, len(header) - 1)
        if len(cells) < len(header) - 1:
            continue
        row = dict(zip(header, cells))
        try:
            pid, ppid = int(row["PID"]), int(row.get("PPID", "0"))
            pgid = int(row["PGID"]) if "PGID" in row else None
        except ValueError:
            continue
        name = row.get("NAME") or row.get("CMD") or ""
        args = row.get("ARGS") or row.get("CMDLINE") or name
        rows.append(Process(row.get("USER", ""), pid, ppid, name.split()[0] if name else "", args.strip(), pgid))
    own = {row.pid for row in rows if row.name == "ps"} | {row.ppid for row in rows if row.name == "ps"}
    return {f"{row.pid} {row.name}": row for row in rows if row.pid not in own}


def _started(before: dict[str, Process], after: dict[str, Process]) -> list[Process]:
    """Processes in `after` that were not in `before`, started through adb (shell or root), not kernel threads."""
    new = [process for key, process in after.items() if key not in before]
    return sorted((process for process in new if process.user in (SHELL_USER, ROOT_USER)
                   and process.ppid != 2 and process.pid > 2 and not process.name.startswith("[")),
                  key=lambda process: process.pid)


def _from_adb(process: Process, listing: dict[str, Process]) -> bool:
    """Whether a process was started by an adb shell: the shell user's, or in an adb shell's process group.

    adbd starts each shell in a session and group of its own; a job it put in the background keeps
    that group after the shell exited (the leader is gone), and `su` keeps it too. A service init
    starts leads a group of its own, under init.
    """
    if process.name == "adbd":
        return False  # adbd restarted (`adb root`, `adb unroot`): killing it would take the device away
    if process.user == SHELL_USER:
        return True
    if not process.pgid:
        return False
    adbd = {row.pid for row in listing.values() if row.name == "adbd"}
    leader = next((row for row in listing.values() if row.pid == process.pgid), None)
    return leader is None or leader.ppid in adbd


def processes_undo(before: dict, after: dict) -> list[Undo]:
    """`kill -9 PID` for every new process an adb shell started (`su 0 kill -9 PID` for a root one)."""
    return [Undo(f"kill process {process.pid} ({process.args}), started by the run as {process.user}",
                 sh(*(["su", "0"] if process.user == ROOT_USER else []), "kill", "-9", str(process.pid)), must_succeed=False)
            for process in _started(before, after) if _from_adb(process, after)]


def processes_left(before: dict, reread: dict) -> list[str]:
    return [f"process {process.pid} ({process.args}) started during the run as {process.user} is still running"
            + ("" if _from_adb(process, reread) else " (not killed: it is not in an adb shell's process group, so init "
                                                     "may have started it)")
            for process in _started(before, reread)]


# ----------------------------------------------------------------------------- dispatch


#: Source name -> (read, parse, undo, left).
SOURCES: dict[str, tuple[Read, Any, Any, Any]] = {
    "processes": (PROCESSES_READ, parse_processes, processes_undo, processes_left),
    "appops-all": (APPOPS_READ, parse_appops, appops_undo, appops_left),
    "files": (FILES_READ, parse_files, files_undo, files_left),
}
LABELS = {"processes": "device processes", "appops-all": "every package's app-ops", "files": "shared storage"}


def parse_source(source: str, raw: RawRead) -> Any:
    """A device-wide source's read -> its state. A `find` that met an unreadable directory exits 1 and still counts.

    Raises:
        ValueError: The read shows no usable state.
    """
    if raw.status not in (0, 1) or (raw.status == 1 and source != "files"):
        raise ValueError(f"exited {raw.status}: {raw.text.strip()[:200] or '(no output)'}")
    return SOURCES[source][1](raw.text)
