"""The per-call screenshot contract: a server's call order + tool -> file names under the run's data directory, and their index.

The built-in server (`AGENTBENCH_SCREENSHOTS=1`) writes, after each device call,
`<AGENTBENCH_DATA_DIR>/screenshots/<order:04d>-<tool>.png` and appends one line to
`screenshots/calls.jsonl`:

    {"order": 3, "tool": "tapOn", "arguments": {"text": "Add"}, "ok": true, "file": "0003-tapOn.png", "problem": null}

`order` counts every call the server received (1-based), with or without a screenshot, so the
index is the server's own view of the run; the report pairs it with the transcript's calls by
tool name and arguments, in order (a call the agent's permissions stopped never reaches the
server, so the transcript can hold calls the index does not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The environment variable that turns the screenshots on (the harness sets it for `--agentbench-html`).
SCREENSHOTS_ENV = "AGENTBENCH_SCREENSHOTS"
#: The private-state variable whose directory holds them, and the subdirectory.
DATA_DIR_ENV = "AGENTBENCH_DATA_DIR"
DATA_SUBDIR = "data"
SCREENSHOTS_DIR = "screenshots"
INDEX_NAME = "calls.jsonl"


def screenshot_name(order: int, tool: str) -> str:
    """`3, "tapOn"` -> `0003-tapOn.png` (characters outside `[A-Za-z0-9_-]` become `_`)."""
    return f"{order:04d}-{re.sub(r'[^A-Za-z0-9_-]', '_', tool) or 'tool'}.png"


@dataclass(frozen=True)
class CallShot:
    """One line of `calls.jsonl`: a call the server received and its screenshot file, if any."""

    order: int
    tool: str
    arguments: Mapping[str, Any]
    ok: bool
    file: str | None
    problem: str | None = None

    def to_json(self) -> str:
        """The index line (no newline)."""
        return json.dumps({"order": self.order, "tool": self.tool, "arguments": dict(self.arguments), "ok": self.ok,
                           "file": self.file, "problem": self.problem}, ensure_ascii=False, sort_keys=True)


def read_index(directory: Path) -> list[CallShot]:
    """`<directory>/calls.jsonl` -> its entries in order; a missing file or a damaged line is skipped, never raised."""
    path = directory / INDEX_NAME
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    shots = []
    for line in lines:
        try:
            value = json.loads(line)
            shots.append(CallShot(int(value["order"]), str(value["tool"]), dict(value.get("arguments") or {}),
                                  bool(value.get("ok")), value.get("file"), value.get("problem")))
        except (ValueError, KeyError, TypeError):
            continue
    return shots


def pair_calls(calls: Sequence[tuple[str, Mapping[str, Any]]], shots: Iterable[CallShot]) -> list[CallShot | None]:
    """Pair the transcript's calls with the server's index, in order (pure).

    Args:
        calls: Each transcript call's short tool name and arguments, in stream order.
        shots: The index entries, in the server's order.

    Returns:
        For each call, its index entry, or None when the server never saw it (another server's
        tool, a call the permissions stopped). Each entry pairs at most once, and order is kept:
        a call is matched to the next unpaired entry with its tool and arguments.
    """
    remaining = list(shots)
    start = 0
    paired: list[CallShot | None] = []
    for tool, arguments in calls:
        match = next((i for i in range(start, len(remaining))
                      if remaining[i].tool == tool and dict(remaining[i].arguments) == dict(arguments)), None)
        if match is None:
            paired.append(None)
            continue
        paired.append(remaining[match])
        start = match + 1
    return paired
