"""`logcat [-d] [-c] [-v FORMAT] [-s] [-b BUF] [-t N] [-e RE] [--pid PID] [FILTERSPEC...]` and `log` -> the log buffer.

Without `-d` a real logcat keeps streaming; the sim prints what the buffer holds and exits, so a
client that forgets `-d` still gets its answer instead of a command that never ends.
"""

from __future__ import annotations

import re
import time

from ..shell import Invocation
from ..system.logbuffer import BUFFERS, DEFAULT_BUFFERS, FORMATS, MODIFIERS, LogEntry, parse_filters, render
from ..users import ROOT, SHELL, SYSTEM, uid_of
from . import command

_WITH_VALUE = ("-v", "-b", "-t", "-T", "-m", "-e", "--pid", "-f", "-r", "-n", "-G", "--format", "--regex", "--max-count")


@command("logcat")
def logcat(inv: Invocation) -> int:
    try:
        options, specs = _parse(list(inv.args))
    except ValueError as error:
        return inv.fail(f"logcat: {error}")
    logs = inv.phone.logs
    buffers = options["buffers"]
    if options["clear"]:
        logs.clear(buffers)
        return 0
    if options["sizes"]:
        inv.out("".join(f"{name}: ring buffer is 256 KiB (0 B consumed), max entry is 5120 B, max payload is 4068 B\n"
                        for name in buffers))
        return 0
    try:
        filters = parse_filters(specs, silent_default=options["silent"])
    except ValueError as error:
        return inv.fail(f"logcat: {error}")
    entries = logs.entries(buffers)
    if inv.user not in (ROOT, SHELL, SYSTEM):
        # An app reads only its own lines, as logd filters by uid for callers without READ_LOGS.
        uid = uid_of(inv.phone, inv.user)
        entries = [entry for entry in entries if entry.uid == uid]
    inv.out(render(entries, fmt=options["format"], zone_name=inv.phone.timezone, filters=filters,
                   regex=options["regex"], pid=options["pid"], tail=options["tail"], max_count=options["max_count"]))
    return 0


def _parse(args: list[str]) -> tuple[dict, list[str]]:
    options: dict = {"clear": False, "sizes": False, "silent": False, "format": "threadtime", "buffers": None,
                     "regex": None, "pid": None, "tail": None, "max_count": None}
    specs: list[str] = []
    chosen_buffers: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, value = arg, None
        if arg.startswith("--") and "=" in arg:
            name, value = arg.split("=", 1)
        elif len(arg) > 2 and arg[:2] in ("-v", "-b", "-t", "-T", "-m", "-e") and not arg.startswith("--"):
            name, value = arg[:2], arg[2:]
        if name in _WITH_VALUE and value is None:
            if i + 1 >= len(args):
                raise ValueError(f"option requires an argument -- '{name.lstrip('-')}'")
            value = args[i + 1]
            i += 1
        i += 1
        if name in ("-d", "-D", "--dividers"):
            continue
        if name == "-c" or name == "--clear":
            options["clear"] = True
        elif name == "-g" or name == "--buffer-size":
            options["sizes"] = True
        elif name == "-s":
            options["silent"] = True
        elif name in ("-v", "--format"):
            for word in re.split(r"[,\s]+", value or ""):
                if word in FORMATS:
                    options["format"] = word
                elif word and word not in MODIFIERS:
                    raise ValueError(f"Invalid parameter \"{word}\" to -v")
        elif name in ("-b", "--buffer"):
            for word in (value or "").split(","):
                if word == "all":
                    chosen_buffers.extend(BUFFERS)
                elif word == "default":
                    chosen_buffers.extend(DEFAULT_BUFFERS)
                elif word in BUFFERS:
                    chosen_buffers.append(word)
                else:
                    raise ValueError(f"unknown buffer '{word}'")
        elif name in ("-t", "-T"):
            if not (value or "").isdigit():
                raise ValueError(f"-{name[-1]} \"{value}\" not in time format")
            options["tail"] = int(value or 0)
        elif name in ("-m", "--max-count"):
            options["max_count"] = int(value or 0)
        elif name in ("-e", "--regex"):
            try:
                options["regex"] = re.compile(value or "")
            except re.error as error:
                raise ValueError(f"invalid regex: {error}") from error
        elif name == "--pid":
            if not (value or "").isdigit():
                raise ValueError(f"--pid \"{value}\" is not a pid")
            options["pid"] = int(value or 0)
        elif name in ("-f", "-r", "-n", "-G"):
            continue  # file rotation and sizes: nothing to do for a dump
        elif arg.startswith("-") and arg != "-":
            raise ValueError(f"invalid option -- '{arg.lstrip('-')}'")
        else:
            specs.append(arg)
    options["buffers"] = tuple(dict.fromkeys(chosen_buffers)) or DEFAULT_BUFFERS
    return options, specs


@command("log")
def log(inv: Invocation) -> int:
    """`log [-p v|d|i|w|e|f] [-t TAG] MESSAGE...`: a line in the main buffer from the calling user."""
    args = list(inv.args)
    priority, tag = "I", "log"
    while args[:1] and args[0] in ("-p", "-t") and len(args) > 1:
        if args[0] == "-p":
            priority = args[1][:1].upper()
            if priority not in "VDIWEF":
                return inv.fail(f"log: invalid priority '{args[1]}'")
        else:
            tag = args[1]
        args = args[2:]
    if not args:
        return inv.fail("usage: log [-p <priority>] [-t <tag>] <message>")
    uid = uid_of(inv.phone, inv.user)
    pid = inv.phone.process_pid(inv.user) if inv.user in inv.phone.packages else 4242
    inv.phone.logs.write(LogEntry(time.time(), pid, pid, uid, priority, tag, " ".join(args)))
    return 0
