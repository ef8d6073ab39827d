"""`content query` output -> rows (column -> text or None), and the provider's failure as a sentence.

Android prints `Row: 0 _id=1, display_name=Alice` per row and `No result found.` for none. The
format is ambiguous when a value holds `, `; with the projection known (every read here passes
`--projection`), a value runs until `, <next column>=`, which is exact unless a value contains that
very text. A value with a line break continues on the next lines. `content` exits 0 even when the
provider fails: the failure is `Error while accessing provider:AUTHORITY` and a Java exception.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_agentbench.checks.base import Read, cut
from pytest_agentbench.device.shellscript import sh

_ROW = re.compile(r"^Row: \d+ ")
_EXCEPTION = re.compile(r"^([\w.$]+(?:Exception|Error)):?\s*(.*)$")


def query_read(uri: str, projection: Sequence[str], *, where: str | None = None, root: bool = False) -> Read:
    """The Read of one `content query` (as root with `su 0` for providers only root may read)."""
    args = ["content", "query", "--uri", uri, "--projection", ":".join(projection)]
    if where:
        args += ["--where", where]
    if root:
        args = ["su", "0", *args]
    key = f"content:{'root:' if root else ''}{uri}|{':'.join(projection)}|{where or ''}"
    return Read(key, sh(*args))


def provider_error(text: str) -> str | None:
    """The provider's failure in a `content` output, as a sentence; None when the output is rows."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    if any(line.startswith("[ERROR]") for line in lines):
        message = next(line for line in lines if line.startswith("[ERROR]"))
        return f"the content command refused the query: {cut(message, 200)}"
    failing = next((line for line in lines if line.startswith("Error while accessing provider")), None)
    if failing is None:
        return None
    authority = failing.split(":", 1)[1].strip() if ":" in failing else "?"
    exception = next((_EXCEPTION.match(line) for line in lines if _EXCEPTION.match(line)), None)
    detail = f"{exception.group(1).rsplit('.', 1)[-1]}: {exception.group(2)}" if exception else "no exception text"
    if "Could not find provider" in detail or "Unknown authority" in detail:
        return f"the content provider {authority} is not on this device ({cut(detail, 200)})"
    return f"the content provider {authority} failed: {cut(detail, 240)}"


def parse_rows(text: str, columns: Sequence[str]) -> list[dict[str, str | None]]:
    """Rows of a `content query --projection a:b:c` output.

    Args:
        text: The command's output.
        columns: The projection, in order.

    Returns:
        One dict per row; `NULL` becomes None.

    Raises:
        ValueError: A row line does not show the projection's columns in order.
    """
    rows: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if _ROW.match(line):
            rows.append(_ROW.sub("", line, count=1))
        elif rows and line and not line.startswith("No result found."):
            rows[-1] += "\n" + line
    return [_split_row(row, columns) for row in rows]


def _split_row(row: str, columns: Sequence[str]) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    position = 0
    for index, column in enumerate(columns):
        head = f"{column}="
        if not row.startswith(head, position):
            raise ValueError(f"expected column {column!r} at {row[position:position + 40]!r} in row {row[:120]!r}")
        start = position + len(head)
        if index + 1 < len(columns):
            end = row.find(f", {columns[index + 1]}=", start)
            if end < 0:
                raise ValueError(f"column {columns[index + 1]!r} is missing from row {row[:120]!r}")
            position = end + 2
        else:
            end = len(row)
        value = row[start:end]
        values[column] = None if value == "NULL" else value
    return values
