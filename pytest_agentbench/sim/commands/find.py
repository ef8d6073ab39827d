"""`find PATH... [-type f|d] [-name GLOB] [-exec CMD {} +|;] [-print]`, `rmdir DIR...` -> the phone's file tree as toybox walks and prunes it."""

from __future__ import annotations

import fnmatch
import posixpath

from ..shell import Invocation
from . import command


def _walk(inv: Invocation, shown: str, errors: list[str]) -> list[tuple[str, bool]]:
    """(path as shown, is a directory) for `shown` and everything under it, parents first, names sorted."""
    fs = inv.phone.fs
    path = inv.path(shown)
    info = fs.stat(path)
    if info is None:
        errors.append(f"find: {shown}: No such file or directory")
        return []
    found = [(shown, info.is_dir)]
    if info.is_dir:
        try:
            names = fs.listdir(path, user=inv.user)
        except OSError as error:
            errors.append(f"find: {shown}: {error.strerror}")
            return found
        for name in names:
            found += _walk(inv, posixpath.join(shown, name), errors)
    return found


@command("find")
def find(inv: Invocation) -> int:
    args = list(inv.args)
    roots = []
    while args and not args[0].startswith("-"):
        roots.append(args.pop(0))
    kind = name = None
    execute: list[str] | None = None
    batch = False
    while args:
        option = args.pop(0)
        if option == "-type" and args:
            kind = args.pop(0)
        elif option == "-name" and args:
            name = args.pop(0)
        elif option == "-exec":
            end = next((i for i, arg in enumerate(args) if arg in (";", "+")), None)
            if end is None:
                return inv.fail("find: '-exec' needs ';' or '+'")
            execute, batch, args = args[:end], args[end] == "+", args[end + 1:]
        elif option == "-print":
            continue
        else:
            return inv.fail(f"find: bad arg '{option}'")
    errors: list[str] = []
    matched = []
    for root in roots or ["."]:
        for shown, is_dir in _walk(inv, root, errors):
            if kind == "f" and is_dir or kind == "d" and not is_dir:
                continue
            if name is not None and not fnmatch.fnmatchcase(posixpath.basename(shown), name):
                continue
            matched.append(shown)
    status = 1 if errors else 0
    if execute is None:
        inv.out("".join(f"{path}\n" for path in matched))
    elif batch:
        if matched:
            status |= inv.run_argv([arg for part in execute for arg in (matched if part == "{}" else [part])]) != 0
    else:
        for path in matched:
            status |= inv.run_argv([path if part == "{}" else part for part in execute]) != 0
    for error in errors:
        inv.err(error + "\n")
    return int(bool(status))


@command("rmdir")
def rmdir(inv: Invocation) -> int:
    if not inv.args:
        return inv.fail("rmdir: Needs 1 argument")
    fs = inv.phone.fs
    status = 0
    for operand in inv.args:
        path = inv.path(operand)
        try:
            if not fs.is_dir(path):
                raise NotADirectoryError(20, "Not a directory" if fs.exists(path) else "No such file or directory", path)
            if fs.listdir(path, user=inv.user):
                inv.err(f"rmdir: {operand}: Directory not empty\n")
                status = 1
                continue
            fs.remove(path, recursive=True, user=inv.user)
        except OSError as error:
            inv.err(f"rmdir: {operand}: {error.strerror}\n")
            status = 1
    return status
