"""toybox-style file and text commands (cat, ls, rm, mkdir, mv, cp, echo, printf, ...) -> the simulated fs."""

from __future__ import annotations

import hashlib
import posixpath
import re
import stat as stat_bits
import time
from collections.abc import Callable

from ..shell import Invocation
from . import command


def _flags(args: list[str], known: str) -> tuple[set[str], list[str]]:
    """Split `-rf`-style short flags (only letters in `known`) from operands; `--` ends flags."""
    flags: set[str] = set()
    operands: list[str] = []
    ended = False
    for arg in args:
        if not ended and arg == "--":
            ended = True
        elif not ended and arg.startswith("-") and len(arg) > 1 and set(arg[1:]) <= set(known):
            flags.update(arg[1:])
        else:
            operands.append(arg)
    return flags, operands


def _os_error(inv: Invocation, tool: str, operand: str, error: OSError) -> None:
    inv.err(f"{tool}: {operand}: {error.strerror}\n")


def _each_operand(inv: Invocation, tool: str, operands: list[str], action: Callable[[str], object]) -> int:
    """Apply an action to every operand as toybox does: report each failure, go on, exit 1 if any failed."""
    status = 0
    for operand in operands:
        try:
            action(operand)
        except OSError as error:
            _os_error(inv, tool, operand, error)
            status = 1
    return status


@command("cat")
def cat(inv: Invocation) -> int:
    _, files = _flags(inv.args, "uv")
    if not files:
        inv.out(inv.stdin)
        return 0
    status = 0
    for name in files:
        if name == "-":
            inv.out(inv.stdin)
            continue
        try:
            inv.out(inv.phone.fs.read(inv.path(name), user=inv.user))
        except OSError as error:
            _os_error(inv, "cat", name, error)
            status = 1
    return status


def _ls_line(name: str, mode: int, size: int, mtime: int) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(mtime))
    owner = "shell"
    return f"{stat_bits.filemode(mode)} 1 {owner} {owner} {size:>8} {stamp} {name}\n"


@command("ls")
def ls(inv: Invocation) -> int:
    flags, operands = _flags(inv.args, "laAdR1hFtsSnZ")
    fs = inv.phone.fs
    status = 0
    targets = operands or ["."]
    for position, operand in enumerate(targets):
        path = inv.path(operand)
        info = fs.stat(path)
        if info is None:
            inv.err(f"ls: {operand}: No such file or directory\n")
            status = 1
            continue
        if not info.is_dir or "d" in flags:
            inv.out(_ls_line(operand, info.mode, info.size, info.mtime) if "l" in flags else operand + "\n")
            continue
        try:
            names = fs.listdir(path, user=inv.user)
        except OSError as error:
            _os_error(inv, "ls", operand, error)
            status = 1
            continue
        if len(targets) > 1:
            inv.out(("\n" if position else "") + f"{operand}:\n")
        if "a" in flags:
            names = [".", ".."] + names
        elif "A" not in flags:
            names = [n for n in names if not n.startswith(".")]
        for name in names:
            if "l" in flags:
                child = fs.stat(posixpath.join(path, name)) or fs.stat(path)
                inv.out(_ls_line(name, child.mode, child.size, child.mtime))
            else:
                inv.out(name + "\n")
    return status


@command("rm")
def rm(inv: Invocation) -> int:
    flags, operands = _flags(inv.args, "rRfvi")
    recursive, force = bool(flags & {"r", "R"}), "f" in flags
    if not operands and not force:
        return inv.fail("rm: Needs 1 argument")
    status = 0
    for operand in operands:
        try:
            inv.phone.fs.remove(inv.path(operand), recursive=recursive, user=inv.user)
        except FileNotFoundError as error:
            if not force:
                _os_error(inv, "rm", operand, error)
                status = 1
        except IsADirectoryError:
            inv.err(f"rm: {operand}: is a directory\n")
            status = 1
        except OSError as error:
            _os_error(inv, "rm", operand, error)
            status = 1
    return status


@command("mkdir")
def mkdir(inv: Invocation) -> int:
    flags, operands = _flags(inv.args, "pv")
    if not operands:
        return inv.fail("mkdir: Needs 1 argument")
    return _each_operand(
        inv, "mkdir", operands, lambda operand: inv.phone.fs.mkdir(inv.path(operand), parents="p" in flags, user=inv.user)
    )


@command("mv")
def mv(inv: Invocation) -> int:
    _, operands = _flags(inv.args, "finv")
    if len(operands) < 2:
        return inv.fail("mv: Needs 2 arguments")
    target = inv.path(operands[-1])
    return _each_operand(inv, "mv", operands[:-1], lambda operand: inv.phone.fs.rename(inv.path(operand), target, user=inv.user))


@command("cp")
def cp(inv: Invocation) -> int:
    flags, operands = _flags(inv.args, "rRfpaniv")
    if len(operands) < 2:
        return inv.fail("cp: Needs 2 arguments")
    fs = inv.phone.fs
    target = inv.path(operands[-1])

    def copy(operand: str) -> None:
        source = inv.path(operand)
        destination = posixpath.join(target, posixpath.basename(source)) if fs.is_dir(target) else target
        _copy(inv, source, destination, recursive=bool(flags & {"r", "R", "a"}))

    return _each_operand(inv, "cp", operands[:-1], copy)


def _copy(inv: Invocation, source: str, destination: str, *, recursive: bool) -> None:
    fs = inv.phone.fs
    if fs.is_dir(source):
        if not recursive:
            raise IsADirectoryError(21, "Is a directory (use -r)", source)
        fs.mkdir(destination, parents=True, user=inv.user)
        for name in fs.listdir(source, user=inv.user):
            _copy(inv, posixpath.join(source, name), posixpath.join(destination, name), recursive=True)
        return
    data = fs.read(source, user=inv.user)
    info = fs.stat(source)
    fs.write(destination, data, mode=info.mode & 0o7777 if info else 0o644, user=inv.user, make_parents=False)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}


def _unescape(text: str) -> tuple[str, bool]:
    """Backslash escapes as `echo -e`/`printf %b` read them; True when `\\c` stops output."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "c":
                return "".join(out), True
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "0" or nxt.isdigit():
                match = re.match(r"0?([0-7]{1,3})", text[i + 1:])
                out.append(chr(int(match.group(1), 8)))
                i += 1 + len(match.group(0))
                continue
        out.append(ch)
        i += 1
    return "".join(out), False


@command("echo")
def echo(inv: Invocation) -> int:
    args = list(inv.args)
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0] or (escapes and "E" not in args[0])
        args.pop(0)
    text = " ".join(args)
    if escapes:
        text, stop = _unescape(text)
        newline = newline and not stop
    inv.out(text + ("\n" if newline else ""))
    return 0


@command("printf")
def printf(inv: Invocation) -> int:
    if not inv.args:
        return inv.fail("printf: Needs 1 argument")
    fmt, values = inv.args[0], list(inv.args[1:])
    spec = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)([sdibxXoucf%])")
    output: list[str] = []
    while True:
        consumed = 0

        def substitute(match: re.Match[str]) -> str:
            nonlocal consumed
            flags, kind = match.group(1), match.group(2)
            if kind == "%":
                return "%"
            value = values[consumed] if consumed < len(values) else ""
            consumed += 1
            if kind == "b":
                return _unescape(value)[0]
            if kind == "c":
                return value[:1]
            if kind in "dixXou":
                return f"%{flags}{'d' if kind in 'iu' else kind}" % int(value or 0, 0)
            if kind == "f":
                return f"%{flags}f" % float(value or 0)
            return f"%{flags}s" % value

        try:
            output.append(spec.sub(substitute, _unescape(fmt)[0]))
        except ValueError as error:
            return inv.fail(f"printf: invalid number: {error}")
        values = values[consumed:]
        if not values or consumed == 0:
            break
    inv.out("".join(output))
    return 0


@command("sha256sum", "md5sum", "sha1sum")
def checksum(inv: Invocation) -> int:
    algorithm = {"sha256sum": "sha256", "md5sum": "md5", "sha1sum": "sha1"}[inv.name]
    _, files = _flags(inv.args, "b")
    status = 0
    for name in files or ["-"]:
        try:
            data = inv.stdin if name == "-" else inv.phone.fs.read(inv.path(name), user=inv.user)
        except OSError as error:
            _os_error(inv, inv.name, name, error)
            status = 1
            continue
        inv.out(f"{hashlib.new(algorithm, data).hexdigest()}  {name}\n")
    return status


@command("true")
def true(inv: Invocation) -> int:
    return 0


@command("false")
def false(inv: Invocation) -> int:
    return 1


@command("sleep")
def sleep(inv: Invocation) -> int:
    try:
        seconds = float(inv.args[0]) if inv.args else 0.0
    except ValueError:
        return inv.fail(f"sleep: invalid number '{inv.args[0]}'")
    # Other adb streams must keep being served while this one sleeps, so the phone's lock is let go.
    job = inv.session.process
    with inv.phone.unlocked():
        if job is not None:  # a background job sleeps as long as it is told, and wakes when it is killed
            job.ended.wait(max(0.0, seconds))  # type: ignore[attr-defined]
        else:
            time.sleep(max(0.0, min(seconds, 60.0)))
    return 0


@command("touch")
def touch(inv: Invocation) -> int:
    _, operands = _flags(inv.args, "acm")
    fs = inv.phone.fs

    def touch_one(operand: str) -> None:
        path = inv.path(operand)
        data = fs.read(path, user=inv.user) if fs.exists(path) else b""
        fs.write(path, data, user=inv.user, make_parents=False)

    return _each_operand(inv, "touch", operands, touch_one)


@command("chmod")
def chmod(inv: Invocation) -> int:
    _, operands = _flags(inv.args, "R")
    if len(operands) < 2 or not re.fullmatch(r"[0-7]{3,4}", operands[0]):
        return inv.fail("chmod: only octal modes are supported")
    mode = int(operands[0], 8)
    return _each_operand(inv, "chmod", operands[1:], lambda operand: inv.phone.fs.chmod(inv.path(operand), mode))


def _lines_of(inv: Invocation, files: list[str]) -> tuple[list[bytes], int]:
    chunks, status = [], 0
    for name in files or ["-"]:
        try:
            chunks.append(inv.stdin if name == "-" else inv.phone.fs.read(inv.path(name), user=inv.user))
        except OSError as error:
            _os_error(inv, inv.name, name, error)
            status = 1
    return b"".join(chunks).splitlines(keepends=True), status


def _count_option(args: list[str]) -> tuple[int, bool, list[str]]:
    """(count, count is bytes (-c), operands) from `-n N`, `-N`, `-nN`, `-c N`."""
    count, in_bytes, rest, i = 10, False, [], 0
    while i < len(args):
        if args[i] in ("-n", "-c") and i + 1 < len(args):
            count, in_bytes, i = int(args[i + 1]), args[i] == "-c", i + 2
        elif re.fullmatch(r"-[nc]?\d+", args[i]):
            count, in_bytes, i = int(args[i].lstrip("-nc")), args[i].startswith("-c"), i + 1
        else:
            rest.append(args[i])
            i += 1
    return count, in_bytes, rest


@command("head")
def head(inv: Invocation) -> int:
    count, in_bytes, files = _count_option(list(inv.args))
    lines, status = _lines_of(inv, files)
    inv.out(b"".join(lines)[:count] if in_bytes else b"".join(lines[:count]))
    return status


@command("tail")
def tail(inv: Invocation) -> int:
    count, in_bytes, files = _count_option(list(inv.args))
    lines, status = _lines_of(inv, files)
    if in_bytes:
        inv.out(b"".join(lines)[-count:] if count else b"")
    else:
        inv.out(b"".join(lines[-count:] if count else []))
    return status


@command("wc")
def wc(inv: Invocation) -> int:
    flags, files = _flags(inv.args, "lcw")
    lines, status = _lines_of(inv, files)
    data = b"".join(lines)
    counts = {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
    chosen = [k for k in "lwc" if k in flags] or ["l", "w", "c"]
    inv.out(" ".join(str(counts[k]) for k in chosen) + "\n")
    return status


@command("grep")
def grep(inv: Invocation) -> int:
    flags, operands = _flags(inv.args, "qvicFEn")
    if not operands:
        return inv.fail("grep: Needs 1 argument", 2)
    pattern, files = operands[0], operands[1:]
    regex = re.compile(re.escape(pattern) if "F" in flags else pattern, re.IGNORECASE if "i" in flags else 0)
    lines, status = _lines_of(inv, files)
    matched = [line for line in lines if bool(regex.search(line.decode(errors="replace"))) != ("v" in flags)]
    if "c" in flags:
        inv.out(f"{len(matched)}\n")
    elif "q" not in flags:
        inv.out(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in matched))
    return 2 if status else (0 if matched else 1)


@command("basename")
def basename(inv: Invocation) -> int:
    inv.out(posixpath.basename(inv.args[0].rstrip("/")) + "\n" if inv.args else "\n")
    return 0


@command("dirname")
def dirname(inv: Invocation) -> int:
    inv.out((posixpath.dirname(inv.args[0].rstrip("/")) or ".") + "\n" if inv.args else ".\n")
    return 0


@command("date")
def date(inv: Invocation) -> int:
    # The device's time zone (persist.sys.timezone) decides the wall clock, as on a phone.
    fmt = next((a[1:] for a in inv.args if a.startswith("+")), "%a %b %d %H:%M:%S %Z %Y")
    inv.out(inv.phone.now_local().strftime(fmt.replace("%s", str(int(time.time())))) + "\n")
    return 0


@command("stat")
def stat(inv: Invocation) -> int:
    fmt = None
    args = list(inv.args)
    if "-c" in args:
        index = args.index("-c")
        fmt = args[index + 1] if index + 1 < len(args) else ""
        del args[index:index + 2]
    status = 0
    for operand in args:
        info = inv.phone.fs.stat(inv.path(operand))
        if info is None:
            inv.err(f"stat: '{operand}': No such file or directory\n")
            status = 1
            continue
        if fmt is None:
            inv.out(f"  File: {operand}\n  Size: {info.size}\n Access: ({info.mode & 0o7777:04o}/"
                    f"{stat_bits.filemode(info.mode)})\nModify: {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(info.mtime))}\n")
        else:
            values = {"s": str(info.size), "Y": str(info.mtime), "a": f"{info.mode & 0o7777:o}", "n": operand,
                      "A": stat_bits.filemode(info.mode), "F": "directory" if info.is_dir else "regular file"}
            inv.out(re.sub(r"%([sYanAF])", lambda m: values[m.group(1)], fmt) + "\n")
    return status


@command("test", "[")
def test(inv: Invocation) -> int:
    args = list(inv.args)
    if inv.name == "[":
        if not args or args[-1] != "]":
            return inv.fail("[: missing ]", 2)
        args = args[:-1]
    negate = bool(args) and args[0] == "!"
    if negate:
        args = args[1:]
    fs = inv.phone.fs
    if len(args) == 2 and args[0] in ("-e", "-f", "-d", "-s", "-z", "-n", "-r", "-w", "-x"):
        op, value = args
        path = inv.path(value)
        result = {"-e": fs.exists(path), "-r": fs.exists(path), "-w": fs.exists(path), "-x": fs.exists(path),
                  "-f": fs.exists(path) and not fs.is_dir(path), "-d": fs.is_dir(path),
                  "-s": bool((fs.stat(path) or None) and fs.stat(path).size), "-z": value == "", "-n": value != ""}[op]
    elif len(args) == 3 and args[1] in ("=", "==", "!=", "-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        left, op, right = args
        if op in ("=", "=="):
            result = left == right
        elif op == "!=":
            result = left != right
        else:
            try:
                a, b = int(left), int(right)
            except ValueError:
                return inv.fail(f"{inv.name}: bad number", 2)
            result = {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-gt": a > b, "-le": a <= b, "-ge": a >= b}[op]
    elif len(args) == 1:
        result = args[0] != ""
    elif not args:
        result = False
    else:
        return inv.fail(f"{inv.name}: unknown condition", 2)
    return 0 if result != negate else 1
