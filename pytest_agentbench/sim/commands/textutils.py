"""toybox `base64`, `which`, `getenforce` and a small `sqlite3` -> bytes and answers a batched reader relies on."""

from __future__ import annotations

import base64 as b64
import binascii
import sqlite3

from ..shell import Invocation
from ..sqlitefile import DatabaseError, open_db
from . import COMMANDS, command
from .coreutils import _flags


@command("base64")
def base64(inv: Invocation) -> int:
    """`base64 [-d] [-i] [-w COLUMNS] [FILE]`: wraps at 76 columns by default, `-w 0` for one unterminated line."""
    args = list(inv.args)
    wrap = 76
    if "-w" in args:
        index = args.index("-w")
        if index + 1 >= len(args) or not args[index + 1].isdigit():
            return inv.fail("base64: -w needs a number")
        wrap = int(args[index + 1])
        del args[index:index + 2]
    for arg in list(args):
        if arg.startswith("-w") and arg[2:].isdigit():
            wrap = int(arg[2:])
            args.remove(arg)
    flags, files = _flags(args, "di")
    if len(files) > 1:
        return inv.fail("base64: max 1 input file")
    try:
        data = inv.stdin if not files or files[0] == "-" else inv.phone.fs.read(inv.path(files[0]), user=inv.user)
    except OSError as error:
        return inv.fail(f"base64: {files[0]}: {error.strerror}")
    if "d" in flags:
        text = b"".join(data.split())
        try:
            inv.out(b64.b64decode(text, validate="i" not in flags))
        except (binascii.Error, ValueError):
            return inv.fail("base64: bad input")
        return 0
    encoded = b64.b64encode(data)
    if wrap:
        encoded = b"\n".join(encoded[i:i + wrap] for i in range(0, len(encoded), wrap))
    # Like GNU base64, `-w 0` prints one line with no newline after it.
    inv.out(encoded + (b"\n" if wrap else b""))
    return 0


@command("which")
def which(inv: Invocation) -> int:
    status = 0
    for name in inv.args:
        if name == "su" and inv.phone.debuggable_build:
            inv.out("/system/xbin/su\n")
        elif name in COMMANDS and name != "su":
            inv.out(f"/system/bin/{name}\n")
        else:
            status = 1
    return status


@command("getenforce")
def getenforce(inv: Invocation) -> int:
    inv.out("Enforcing\n")
    return 0


@command("sqlite3")
def sqlite3_(inv: Invocation) -> int:
    """`sqlite3 [-header] [-separator S] DB [SQL]` on a userdebug build, printing rows as `a|b` lines."""
    if not inv.phone.debuggable_build:
        return inv.fail("/system/bin/sh: sqlite3: inaccessible or not found", 127)
    args = list(inv.args)
    header = "-header" in args
    separator = "|"
    if "-separator" in args:
        index = args.index("-separator")
        separator = args[index + 1] if index + 1 < len(args) else "|"
        del args[index:index + 2]
    args = [arg for arg in args if arg not in ("-header", "-noheader", "-list", "-batch")]
    if not args:
        return inv.fail("sqlite3: no database given (the sim has no interactive sqlite3)")
    path = inv.path(args[0])
    sql = " ".join(args[1:]) if len(args) > 1 else inv.stdin.decode(errors="replace")
    try:
        inv.phone.fs.read(path, user=inv.user) if inv.phone.fs.exists(path) else inv.phone.fs.listdir(
            path.rsplit("/", 1)[0] or "/", user=inv.user)
    except OSError as error:
        return inv.fail(f"Error: unable to open database \"{args[0]}\": {error.strerror}")
    try:
        with open_db(inv.phone.fs, path, lambda connection: None) as connection:
            for statement in _statements(sql):
                cursor = connection.execute(statement)
                if cursor.description and header:
                    inv.out(separator.join(d[0] for d in cursor.description) + "\n")
                for row in cursor.fetchall():
                    inv.out(separator.join("" if value is None else str(value) for value in tuple(row)) + "\n")
    except (sqlite3.Error, DatabaseError) as error:
        return inv.fail(f"Error: {error}")
    return 0


def _statements(sql: str) -> list[str]:
    """Split a script into complete statements (sqlite3.complete_statement decides where one ends)."""
    statements, current = [], ""
    for part in sql.split(";"):
        current += part + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" ;\n"):
                statements.append(current)
            current = ""
    if current.strip(" ;\n"):
        statements.append(current)
    return statements
