"""`ps [-A] [-o FIELDS]`, `kill [-9|-s SIG] PID...`, `nohup CMD` -> the phone's processes as toybox prints and ends them."""

from __future__ import annotations

from ..shell import Invocation
from ..system.processes import ADBD_PID, ZYGOTE_PID, DeviceProcess
from ..users import name_of
from . import command

# toybox's field widths: a negative width is left-aligned; the last column is never padded.
_FIELDS = {"USER": -10, "PID": 8, "PPID": 6, "PGID": 6, "VSZ": 8, "RSS": 6, "WCHAN": -16, "ADDR": 5, "S": 1, "NAME": -27,
           "ARGS": -27, "CMDLINE": -27, "CMD": -15}
_DEFAULT = ("USER", "PID", "PPID", "VSZ", "RSS", "WCHAN", "ADDR", "S", "NAME")


def _rows(inv: Invocation) -> list[DeviceProcess]:
    phone = inv.phone
    table = phone.processes
    rows = table.system(name_of(phone, phone.adbd_user))
    # App processes, and the background processes whose pids wake locks and logcat show.
    pids = {package: phone.process_pid(package) for package in phone.runtimes}
    pids.update({package: pid for package, pid in phone.background_pids().items() if package not in pids})
    for package, pid in pids.items():
        if package in phone.packages:
            rows.append(DeviceProcess(pid, ZYGOTE_PID, name_of(phone, package), package, package, vsz=13924548, rss=120000))
    rows += [DeviceProcess(job.pid, job.ppid, name_of(phone, job.user), job.name, job.args, pgid=job.pgid, wchan=job.wchan,
                           rss=2616)
             for job in table.live_jobs()]
    # The shell adbd started for this command, and ps itself (the reader sees itself, as on a phone).
    user = name_of(phone, inv.user)
    shell_pid = phone._new_pid()  # noqa: SLF001 - the phone hands out pids
    rows.append(DeviceProcess(shell_pid, ADBD_PID, user, "sh", "sh -c",
                              wchan="do_wait", rss=3012))
    rows.append(DeviceProcess(phone._new_pid(), shell_pid, user, "ps", "ps " + " ".join(inv.args), pgid=shell_pid, wchan="0",
                              rss=3400))  # noqa: SLF001
    return sorted(rows, key=lambda row: row.pid)


def _cell(row: DeviceProcess, field: str) -> str:
    return {"USER": row.user, "PID": str(row.pid), "PPID": str(row.ppid), "PGID": str(row.pgid), "VSZ": str(row.vsz), "RSS": str(row.rss),
            "WCHAN": row.wchan, "ADDR": "0", "S": "R" if row.name == "ps" else "S", "NAME": row.name,
            "ARGS": row.args, "CMDLINE": row.args, "CMD": row.name}[field]


def _line(cells: list[tuple[str, str]]) -> str:
    out = []
    for index, (field, text) in enumerate(cells):
        width = _FIELDS[field]
        if index == len(cells) - 1:
            out.append(text)
        else:
            out.append(text.ljust(-width) if width < 0 else text.rjust(width))
    return " ".join(out).rstrip() + "\n"


@command("ps")
def ps(inv: Invocation) -> int:
    args = list(inv.args)
    fields = list(_DEFAULT)
    if "-o" in args:
        index = args.index("-o")
        if index + 1 >= len(args):
            return inv.fail("ps: Missing argument to -o (see \"ps --help\")")
        fields = [field.strip().upper() for field in args[index + 1].split(",") if field.strip()]
        unknown = [field for field in fields if field not in _FIELDS]
        if unknown:
            return inv.fail(f"ps: bad -o {unknown[0]}")
        del args[index:index + 2]
    rows = _rows(inv)
    if not any(arg in ("-A", "-e") for arg in args):
        # Without -A toybox lists the processes of this user on this terminal: here, this shell and ps.
        rows = [row for row in rows if (row.name == "sh" and row.ppid == ADBD_PID) or row.name == "ps"]
    inv.out(_line([(field, field) for field in fields]))
    for row in rows:
        inv.out(_line([(field, _cell(row, field)) for field in fields]))
    return 0


@command("kill")
def kill(inv: Invocation) -> int:
    args = list(inv.args)
    if args[:1] == ["-l"]:
        inv.out("1 HUP 2 INT 3 QUIT 9 KILL 15 TERM\n")
        return 0
    if args[:1] == ["-s"]:
        args = args[2:]
    elif args and args[0].startswith("-"):
        args = args[1:]  # -9, -KILL, -TERM: every signal ends a job here
    if not args:
        return inv.fail("kill: Needs 1 argument")
    status = 0
    for operand in args:
        if not operand.isdigit():
            inv.err(f"kill: not a pid: {operand}\n")
            status = 1
            continue
        why = inv.phone.processes.kill(int(operand), user=inv.user)
        if why is not None and why == "No such process" and _is_other_process(inv, int(operand)):
            why = "Operation not permitted" if inv.user != "root" else None
        if why is not None:
            inv.err(f"kill: pid {operand}: {why}\n")
            status = 1
    return status


def _is_other_process(inv: Invocation, pid: int) -> bool:
    """A system or app process: only root may signal it (and nothing here restarts it)."""
    phone = inv.phone
    return any(row.pid == pid for row in phone.processes.system("shell")) or pid in phone.background_pids().values() or any(
        phone.process_pid(package) == pid for package in phone.runtimes)


@command("nohup")
def nohup(inv: Invocation) -> int:
    if not inv.args:
        return inv.fail("nohup: Needs 1 argument", 127)
    return inv.run_argv(list(inv.args))
