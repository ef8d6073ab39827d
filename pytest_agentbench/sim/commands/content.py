"""`content query|insert|update|delete --uri URI ...` -> the phone's content providers, printed as Android's tool does.

Like Android's `content`, the command exits 0 even when the provider refuses: failures are the
`Error while accessing provider:AUTHORITY` line and the Java exception on stderr, and a usage
mistake is the usage text plus `[ERROR] ...` on stdout.
"""

from __future__ import annotations

from ..providers import ContentError, provider_for
from ..providers.base import Cursor, Value, parse_uri
from ..shell import Invocation
from . import command

USAGE = """usage: adb shell content [subcommand] [options]

usage: adb shell content insert --uri <URI> [--user <USER_ID>] --bind <BINDING> [--bind <BINDING>...] [--extra <BINDING>...]
  <URI> a content provider URI.
  <BINDING> binds a typed value to a column and is formatted:
  <COLUMN_NAME>:<TYPE>:<COLUMN_VALUE> where:
  <TYPE> specifies data type such as:
  b - boolean, s - string, i - integer, l - long, f - float, d - double, n - null
  Note: Omit the value for passing an empty string, e.g column:s:

usage: adb shell content update --uri <URI> [--user <USER_ID>] [--where <WHERE>] [--extra <BINDING>...]
  <WHERE> is a SQL style where clause in quotes (You have to escape single quotes - see example below).

usage: adb shell content delete --uri <URI> [--user <USER_ID>] --bind <BINDING> [--bind <BINDING>...] [--where <WHERE>] [--extra <BINDING>...]

usage: adb shell content query --uri <URI> [--user <USER_ID>] [--projection <PROJECTION>] [--where <WHERE>] [--sort <SORT_ORDER>]  [--extra <BINDING>...]
  <PROJECTION> is a list of colon separated column names and is formatted:
  <COLUMN_NAME>[:<COLUMN_NAME>...]
  <SORT_ORDER> is the order in which rows in the result should be sorted.
"""
_OPERATIONS = ("insert", "update", "delete", "query")


class _Usage(Exception):
    """A command line `content` cannot parse (IllegalArgumentException in Content.Parser)."""


@command("content")
def content(inv: Invocation) -> int:
    try:
        operation, options = _parse(list(inv.args))
    except _Usage as error:
        inv.out(USAGE + f"[ERROR] {error}\n")
        return 0
    uri_text = str(options["uri"])
    authority = uri_text[len("content://"):].split("/", 1)[0] if uri_text.startswith("content://") else uri_text
    try:
        uri = parse_uri(uri_text)
        provider = provider_for(inv.phone, uri.authority)
        binds: dict[str, Value] = options["binds"]  # type: ignore[assignment]
        where = options.get("where")
        if operation == "query":
            inv.out(format_cursor(provider.query(inv.phone, inv.user, uri, options.get("projection"), where,
                                                 options.get("sort"))))
        elif operation == "insert":
            provider.insert(inv.phone, inv.user, uri, binds)
        elif operation == "update":
            provider.update(inv.phone, inv.user, uri, binds, where)
        else:
            provider.delete(inv.phone, inv.user, uri, where)
    except ContentError as error:
        inv.err(f"Error while accessing provider:{authority}\n{error.java_line}\n"
                "\tat android.os.Parcel.createExceptionOrNull(Parcel.java:3057)\n"
                "\tat android.os.Parcel.createException(Parcel.java:3041)\n"
                "\tat android.os.Parcel.readException(Parcel.java:3024)\n"
                "\tat com.android.commands.content.Content.main(Content.java:737)\n")
    return 0


def _parse(args: list[str]) -> tuple[str, dict[str, object]]:
    if not args or args[0] not in _OPERATIONS:
        raise _Usage(f"Unsupported operation: {args[0] if args else None}")
    operation, rest = args[0], args[1:]
    options: dict[str, object] = {"binds": {}}
    i = 0
    while i < len(rest):
        argument = rest[i]
        takes_value = argument in ("--uri", "--user", "--where", "--sort", "--projection", "--bind", "--extra")
        if not takes_value:
            raise _Usage(f"Unsupported argument: {argument}")
        if i + 1 >= len(rest) or not rest[i + 1] or rest[i + 1].startswith("--"):
            raise _Usage(f"No value for argument: {argument}")
        value = rest[i + 1]
        i += 2
        if argument == "--bind":
            if operation not in ("insert", "update"):
                raise _Usage(f"Unsupported argument: {argument}")
            column, typed = parse_binding(value)
            options["binds"][column] = typed  # type: ignore[index]
        elif argument == "--projection":
            if operation != "query":
                raise _Usage(f"Unsupported argument: {argument}")
            options["projection"] = [part.strip() for part in value.split(":")]
        elif argument in ("--where", "--sort"):
            if argument == "--sort" and operation != "query":
                raise _Usage(f"Unsupported argument: {argument}")
            options[argument[2:]] = value
        elif argument == "--uri":
            options["uri"] = value
    if "uri" not in options:
        raise _Usage("Content provider URI not specified. Did you specify --uri argument?")
    if operation in ("insert", "update") and not options["binds"]:
        raise _Usage("Bindings not specified. Did you specify --bind argument(s)?")
    return operation, options


def parse_binding(argument: str) -> tuple[str, Value]:
    """`COLUMN:TYPE:VALUE` (backslash escapes a colon) -> (column, typed value), as Content.parseBindValue does."""
    parts, current, i = [], [], 0
    while i < len(argument):
        char = argument[i]
        if char == "\\":
            if i + 1 >= len(argument):
                raise _Usage("Invalid escaping")
            current.append(argument[i + 1])
            i += 2
            continue
        if char == ":":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    if len(parts) != 3:
        raise _Usage(f"Binding not well formed: {argument}")
    column, kind, value = parts
    try:
        if kind == "s":
            return column, value
        kind = kind.lower()
        if kind == "b":
            return column, value.lower() == "true"
        if kind in ("i", "l"):
            return column, int(value)
        if kind in ("f", "d"):
            return column, float(value)
        if kind == "n":
            return column, None
    except ValueError as error:
        raise _Usage(f"For input string: \"{value}\"") from error
    raise _Usage(f"Unsupported type: {kind}")


def format_cursor(cursor: Cursor) -> str:
    """`Row: 0 _id=1, display_name=Alice` lines, or `No result found.` for an empty result."""
    if not cursor.rows:
        return "No result found.\n"
    lines = []
    for index, row in enumerate(cursor.rows):
        cells = ", ".join(f"{name}={_java_text(value)}" for name, value in zip(cursor.columns, row))
        lines.append(f"Row: {index} {cells}\n")
    return "".join(lines)


def _java_text(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "BLOB"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e7 else f"{value:.1f}"
    return str(value)
