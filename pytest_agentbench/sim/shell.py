"""A device command line -> tokens -> pipelines -> (stdout, stderr, status), like Android's /system/bin/sh."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from collections.abc import Callable

if TYPE_CHECKING:
    from .phone import Phone

SHELL_NAME = "/system/bin/sh"
_OPERATORS = ("&&", "||", ">>", "&>", ";", "|", "&", ">", "<", "\n")


_DEFAULT_ENV = {"HOME": "/", "USER": "shell", "SHELL": SHELL_NAME,
                "PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin"}


class ShellSyntaxError(Exception):
    """The command line cannot be parsed (unterminated quote, operator without a command)."""


@dataclass(frozen=True)
class _Var:
    name: str


Word = tuple  # segments: str literals and _Var references, expanded when the command runs


@dataclass
class _Redirect:
    fd: int
    op: str  # ">", ">>", "<", "dup" (target is the fd number as text)
    target: Word


@dataclass
class _Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[_Redirect] = field(default_factory=list)


@dataclass
class _Pipeline:
    commands: list[_Command]
    connector: str  # the operator that precedes it: ";", "&&" or "||"
    background: bool = False  # it ended with `&`: a job of its own (system/processes.py)


@dataclass
class ShellSession:
    """The state one `sh` process keeps across the commands of a line: cwd, user, variables, `$?`."""

    phone: Phone
    user: str = "shell"
    cwd: str = "/"
    env: dict[str, str] = field(default_factory=lambda: dict(_DEFAULT_ENV))
    last_status: int = 0
    exited: bool = False  # set by `exit`: the rest of the line is skipped
    process: object | None = None  # the background job this session runs in (its `killed` ends the line)

    def resolve(self, path: str) -> str:
        """Make a path absolute against the session's working directory."""
        return posixpath.normpath(posixpath.join(self.cwd, path)) if path else self.cwd


class Invocation:
    """One command being run: its argv, stdin bytes, output sinks and session; handlers return the exit code."""

    def __init__(self, session: ShellSession, argv: list[str], stdin: bytes, out: bytearray, err: bytearray) -> None:
        self.session = session
        self.phone = session.phone
        self.argv = argv
        self.stdin = stdin
        self._out = out
        self._err = err

    @property
    def name(self) -> str:
        return posixpath.basename(self.argv[0])

    @property
    def args(self) -> list[str]:
        return self.argv[1:]

    @property
    def user(self) -> str:
        return self.session.user

    def path(self, value: str) -> str:
        return self.session.resolve(value)

    def out(self, data: str | bytes) -> None:
        self._out.extend(data.encode() if isinstance(data, str) else data)

    def err(self, data: str | bytes) -> None:
        self._err.extend(data.encode() if isinstance(data, str) else data)

    def fail(self, message: str, code: int = 1) -> int:
        """Print `message` (one line) on stderr and return `code`."""
        self.err(message.rstrip("\n") + "\n")
        return code

    def run_argv(self, argv: list[str], *, user: str | None = None, cwd: str | None = None) -> int:
        """Run another command in a child session (run-as, sh -c) sharing this one's streams."""
        child = ShellSession(self.phone, user=user or self.session.user, cwd=cwd or self.session.cwd,
                             env=dict(self.session.env), process=self.session.process)
        return _run_simple(child, argv, self.stdin, self._out, self._err)

    def run_line(self, line: str) -> int:
        """Run a whole command line (`sh -c`) in a child session sharing this one's streams."""
        child = ShellSession(self.phone, user=self.session.user, cwd=self.session.cwd, env=dict(self.session.env),
                             process=self.session.process)
        try:
            return run_line(child, line, self.stdin, self._out, self._err)
        except ShellSyntaxError as error:
            return self.fail(f"{SHELL_NAME}: syntax error: {error}", 2)


Handler = Callable[[Invocation], int]


def run(phone: Phone, command: str, *, user: str = "shell") -> tuple[bytes, bytes, int]:
    """Run one command line as `adb shell` would; returns (stdout, stderr, exit code)."""
    out, err = bytearray(), bytearray()
    session = ShellSession(phone, user=user)
    try:
        status = run_line(session, command, b"", out, err)
    except ShellSyntaxError as error:
        err.extend(f"{SHELL_NAME}: syntax error: {error}\n".encode())
        status = 2
    return bytes(out), bytes(err), status


def run_line(session: ShellSession, line: str, stdin: bytes, out: bytearray, err: bytearray) -> int:
    """Parse and run a command line in `session`, writing into the given sinks."""
    for pipeline in parse(line):
        if getattr(session.process, "killed", False):
            break
        if pipeline.connector == "&&" and session.last_status != 0:
            continue
        if pipeline.connector == "||" and session.last_status == 0:
            continue
        if pipeline.background:
            from .jobs import lasts, spawn  # noqa: PLC0415 - jobs builds on this module

            if lasts(session, pipeline):
                session.last_status = spawn(session, pipeline, stdin)
                continue
        session.last_status = _run_pipeline(session, pipeline, stdin, out, err)
        if session.exited:
            break
    return session.last_status


def tokenize(line: str) -> list[tuple[str, object]]:
    """Split a line into ("word", segments) and ("op", operator) tokens with POSIX quoting rules."""
    tokens: list[tuple[str, object]] = []
    segments: list[object] = []
    literal: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def flush_literal() -> None:
        if literal:
            segments.append("".join(literal))
            literal.clear()

    def end_word() -> None:
        nonlocal in_word
        flush_literal()
        if in_word:
            tokens.append(("word", tuple(segments)))
        segments.clear()
        in_word = False

    def read_var(start: int) -> tuple[_Var | None, int]:
        # $? $# $$ $NAME ${NAME}; a lone "$" stays literal.
        if start + 1 >= n:
            return None, start + 1
        nxt = line[start + 1]
        if nxt in "?#$!0123456789":
            return _Var(nxt), start + 2
        if nxt == "{":
            close = line.find("}", start + 2)
            if close < 0:
                raise ShellSyntaxError("missing '}'")
            return _Var(line[start + 2:close]), close + 1
        j = start + 1
        while j < n and (line[j].isalnum() or line[j] == "_"):
            j += 1
        if j == start + 1:
            return None, start + 1
        return _Var(line[start + 1:j]), j

    while i < n:
        ch = line[i]
        if ch in " \t":
            end_word()
            i += 1
            continue
        if ch == "#" and not in_word:
            while i < n and line[i] != "\n":
                i += 1
            continue
        if ch == "\\":
            in_word = True
            if i + 1 < n and line[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                literal.append(line[i + 1])
            i += 2
            continue
        if ch == "'":
            close = line.find("'", i + 1)
            if close < 0:
                raise ShellSyntaxError("unterminated quoted string")
            in_word = True
            literal.append(line[i + 1:close])
            i = close + 1
            continue
        if ch == '"':
            in_word = True
            i += 1
            while True:
                if i >= n:
                    raise ShellSyntaxError("unterminated quoted string")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and line[i + 1] in '"\\$`\n':
                    if line[i + 1] != "\n":
                        literal.append(line[i + 1])
                    i += 2
                    continue
                if c == "$":
                    var, i = read_var(i)
                    if var is None:
                        literal.append("$")
                    else:
                        flush_literal()
                        segments.append(var)
                    continue
                literal.append(c)
                i += 1
            continue
        if ch == "$":
            var, i = read_var(i)
            in_word = True
            if var is None:
                literal.append("$")
            else:
                flush_literal()
                segments.append(var)
            continue
        # An unquoted run of digits directly before '>' or '<' is a file descriptor number.
        if ch in "><" and in_word and not segments and literal and "".join(literal).isdigit():
            fd = "".join(literal)
            literal.clear()
            in_word = False
            op, i = _read_operator(line, i)
            tokens.append(("op", _fd_operator(fd, op)))
            continue
        op, j = _read_operator(line, i)
        if op:
            end_word()
            tokens.append(("op", op))
            i = j
            continue
        in_word = True
        literal.append(ch)
        i += 1
    end_word()
    return tokens


def _read_operator(line: str, i: int) -> tuple[str, int]:
    # ">&N" duplicates a descriptor; it must win over the plain ">" that starts it.
    if line.startswith(">&", i) and i + 2 < len(line) and line[i + 2].isdigit():
        return ">&" + line[i + 2], i + 3
    for op in _OPERATORS:
        if line.startswith(op, i):
            return op, i + len(op)
    return "", i


def _fd_operator(fd: str, op: str) -> str:
    return f"{fd}{op}"


def parse(line: str) -> list[_Pipeline]:
    """Turn a command line into pipelines joined by `;`, `&&`, `||` and `&` (which puts the one before it in the background)."""
    pipelines: list[_Pipeline] = []
    current = _Command()
    commands: list[_Command] = []
    connector = ";"
    tokens = tokenize(line)
    i = 0

    def close_pipeline(next_connector: str, op: str) -> None:
        nonlocal current, commands, connector
        if current.words or current.redirects:
            commands.append(current)
        elif commands or next_connector in ("&&", "||") or op == "|":
            raise ShellSyntaxError(f"'{op}' unexpected")
        if commands:
            pipelines.append(_Pipeline(commands, connector, background=op == "&"))
        elif next_connector in ("&&", "||"):
            raise ShellSyntaxError(f"'{op}' unexpected")
        current, commands, connector = _Command(), [], next_connector

    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "word":
            current.words.append(value)
            i += 1
            continue
        op = str(value)
        if op in (";", "&", "\n"):
            close_pipeline(";", op)
        elif op in ("&&", "||"):
            close_pipeline(op, op)
        elif op == "|":
            if not (current.words or current.redirects):
                raise ShellSyntaxError("'|' unexpected")
            commands.append(current)
            current = _Command()
        else:
            redirect, i = _parse_redirect(tokens, i, op)
            current.redirects.append(redirect)
            continue
        i += 1
    if current.words or current.redirects:
        commands.append(current)
    elif commands:
        raise ShellSyntaxError("'|' unexpected")
    elif connector in ("&&", "||"):
        raise ShellSyntaxError(f"'{connector}' unexpected")
    if commands:
        pipelines.append(_Pipeline(commands, connector))
    return pipelines


def _parse_redirect(tokens: list[tuple[str, object]], i: int, op: str) -> tuple[_Redirect, int]:
    # Duplications ("2>&1", ">&2") carry their target in the operator itself.
    if len(op) >= 3 and op[-2] == "&" and op[-1].isdigit():
        fd_text = op[:-3]
        return _Redirect(int(fd_text) if fd_text else 1, "dup", (op[-1],)), i + 1
    if i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
        raise ShellSyntaxError(f"'{op}' needs a file name")
    target = tokens[i + 1][1]
    if op == "&>":
        return _Redirect(-1, ">", target), i + 2
    fd_text = op.rstrip("<>")
    base = op[len(fd_text):]
    fd = int(fd_text) if fd_text else (0 if base == "<" else 1)
    return _Redirect(fd, base, target), i + 2


def _expand(session: ShellSession, word: Word) -> str:
    parts: list[str] = []
    for segment in word:
        if isinstance(segment, _Var):
            if segment.name == "?":
                parts.append(str(session.last_status))
            elif segment.name == "$":
                parts.append("4242")
            elif segment.name == "#":
                parts.append("0")
            else:
                parts.append(session.env.get(segment.name, ""))
        else:
            parts.append(segment)
    return "".join(parts)


class _FileSink(bytearray):
    """Output bound for a file: written when the command finishes (after the file was created)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


_NULL_PATHS = ("/dev/null",)


def _run_pipeline(session: ShellSession, pipeline: _Pipeline, stdin: bytes, out: bytearray, err: bytearray) -> int:
    # Commands of a pipe run one after another: each one's stdout is the next one's stdin.
    status = 0
    data = stdin
    last = len(pipeline.commands) - 1
    for position, command in enumerate(pipeline.commands):
        target_out = out if position == last else bytearray()
        status = _run_command(session, command, data, target_out, err)
        data = bytes(target_out)
    return status


def _run_command(session: ShellSession, command: _Command, stdin: bytes, out: bytearray,
                 err: bytearray) -> int:
    fds: dict[int, bytearray] = {1: out, 2: err}
    file_sinks: list[_FileSink] = []
    for redirect in command.redirects:
        if redirect.op == "dup":
            fds[redirect.fd] = fds.get(int(_expand(session, redirect.target)), err)
            continue
        target = _expand(session, redirect.target)
        path = session.resolve(target)
        if redirect.op == "<":
            if path in _NULL_PATHS:
                stdin = b""
                continue
            try:
                stdin = session.phone.fs.read(path, user=session.user)
            except OSError as error:
                err.extend(f"{SHELL_NAME}: can't open {target}: {error.strerror}\n".encode())
                return 1
            continue
        if path in _NULL_PATHS:
            sink: bytearray = bytearray()  # discarded
        else:
            sink = _FileSink(path)
            append = redirect.op == ">>"
            try:
                _open_for_write(session, path, append)
            except OSError as error:
                err.extend(f"{SHELL_NAME}: can't create {target}: {error.strerror}\n".encode())
                return 1
            file_sinks.append(sink)
        for fd in ((1, 2) if redirect.fd == -1 else (redirect.fd,)):
            fds[fd] = sink
    argv = [_expand(session, word) for word in command.words]
    # Leading NAME=value words are assignments; alone they set shell variables.
    while argv and "=" in argv[0] and argv[0].split("=", 1)[0].isidentifier():
        name, value = argv.pop(0).split("=", 1)
        session.env[name] = value
    status = 0
    if argv:
        status = _run_simple(session, argv, stdin, fds[1], fds[2])
    for sink in file_sinks:
        try:
            session.phone.fs.write(sink.path, bytes(sink), user=session.user, append=True, make_parents=False)
        except OSError as error:
            err.extend(f"{SHELL_NAME}: can't write {sink.path}: {error.strerror}\n".encode())
            status = 1
    return status


def _open_for_write(session: ShellSession, path: str, append: bool) -> None:
    fs = session.phone.fs
    if fs.is_dir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    if not fs.is_dir(posixpath.dirname(path)):
        # Reading through the guard first gives "Permission denied" for another app's storage.
        fs.listdir(posixpath.dirname(path), user=session.user)
        raise FileNotFoundError(2, "No such file or directory", path)
    if not append or not fs.exists(path):
        fs.write(path, b"", user=session.user, make_parents=False)


def _run_simple(session: ShellSession, argv: list[str], stdin: bytes, out: bytearray, err: bytearray) -> int:
    from .commands import lookup  # late import: command modules import this module

    name = argv[0]
    builtin = _BUILTINS.get(name)
    if builtin is not None:
        return builtin(Invocation(session, argv, stdin, out, err))
    handler = lookup(name, session.phone.fs)
    if handler is None:
        err.extend(f"{SHELL_NAME}: {name}: inaccessible or not found\n".encode())
        return 127
    return handler(Invocation(session, argv, stdin, out, err))


def _builtin_cd(inv: Invocation) -> int:
    target = inv.path(inv.args[0] if inv.args else "/")
    if not inv.phone.fs.is_dir(target):
        return inv.fail(f"{SHELL_NAME}: cd: {target}: No such file or directory", 2)
    inv.session.cwd = target
    return 0


def _builtin_exit(inv: Invocation) -> int:
    code = int(inv.args[0]) if inv.args and inv.args[0].isdigit() else inv.session.last_status
    inv.session.exited = True
    return code


def _builtin_export(inv: Invocation) -> int:
    for item in inv.args:
        if "=" in item:
            name, value = item.split("=", 1)
            inv.session.env[name] = value
    return 0


def _builtin_pwd(inv: Invocation) -> int:
    inv.out(inv.session.cwd + "\n")
    return 0


def _builtin_sh(inv: Invocation) -> int:
    if len(inv.args) >= 2 and inv.args[0] == "-c":
        return inv.run_line(inv.args[1])
    if not inv.args:
        return inv.run_line(inv.stdin.decode(errors="replace"))
    try:
        script = inv.phone.fs.read(inv.path(inv.args[0]), user=inv.user)
    except OSError as error:
        return inv.fail(f"{SHELL_NAME}: {inv.args[0]}: {error.strerror}", 127)
    return inv.run_line(script.decode(errors="replace"))


def _builtin_exec(inv: Invocation) -> int:
    # `exec CMD` replaces the shell: CMD runs and nothing after it on the line does (`adb logcat` sends this).
    inv.session.exited = True
    if not inv.args:
        return 0
    return _run_simple(inv.session, list(inv.args), inv.stdin, inv._out, inv._err)


_BUILTINS: dict[str, Handler] = {"cd": _builtin_cd, "exit": _builtin_exit, "export": _builtin_export,
                                 "pwd": _builtin_pwd, "sh": _builtin_sh, "/system/bin/sh": _builtin_sh,
                                 "exec": _builtin_exec}
