"""Helpers for the check-kind tables: a suite entry + canned device output -> the Check its validator returns."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.checks import CheckContext, DeviceReads, RawRead, evaluate, parse_device_checks
from pytest_agentbench.checks.base import Check


def reads_of(entry: Mapping[str, Any], outputs: list[RawRead | None]) -> DeviceReads:
    """The entry's reads, in order, answered by `outputs` (None: the read is missing from the batch)."""
    (check,) = parse_device_checks([entry])
    return DeviceReads({read.key: raw for read, raw in zip(check.reads(), outputs) if raw is not None})


def ok(text: str) -> RawRead:
    return RawRead(0, text)


def fail(text: str, status: int = 1) -> RawRead:
    return RawRead(status, text)


def blob(data: bytes) -> RawRead:
    return RawRead(0, "", data)


def judge(entry: Mapping[str, Any], after: list[RawRead | None], before: list[RawRead | None] | None = None,
          *, answer: str | None = None) -> Check:
    """Run one entry's snapshot + validator on canned outputs."""
    (check,) = parse_device_checks([entry])
    after_reads = reads_of(entry, after)
    before_reads = reads_of(entry, before) if before is not None else None
    (result,) = evaluate([check], before_reads, after_reads, CheckContext(answer=answer))
    return result


def database(script: str) -> bytes:
    """An SQLite database file's bytes, built by a script."""
    connection = sqlite3.connect(":memory:")
    connection.executescript(script)
    connection.commit()
    data = connection.serialize()
    connection.close()
    return data


def rows_output(columns: list[str], rows: list[list[str | None]]) -> str:
    """What `content query --projection a:b` prints for these rows."""
    if not rows:
        return "No result found.\n"
    lines = []
    for index, row in enumerate(rows):
        cells = ", ".join(f"{column}={'NULL' if value is None else value}" for column, value in zip(columns, row))
        lines.append(f"Row: {index} {cells}")
    return "\n".join(lines) + "\n"


def prefs_xml(*entries: str) -> str:
    return "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n" + "\n".join(entries) + "\n</map>\n"
