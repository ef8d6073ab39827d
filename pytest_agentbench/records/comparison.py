"""A run measured against its recorded baseline (metric rows, sequence diff, flags) and the snippet decision <-> their result.json form.

`baseline.compare.compare` makes a `BaselineComparison`; `pipeline.conclude` decides the `Snippet`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

FlagKind = Literal["app-build", "suite-digest", "device", "cli-version", "server-build", "model"]


def format_delta(delta: float | int | None, delta_percent: float | None) -> str:
    """Signed delta with percent, e.g. `+2 (+40.0%)`, `0`, `-0.013 (-10.0%)`, `n/a` when either side is missing."""
    if delta is None:
        return "n/a"
    if delta == 0:
        return "0"
    text = format_number(delta, signed=True)
    return text if delta_percent is None else f"{text} ({delta_percent:+.1f}%)"


def format_number(value: float | int | None, *, signed: bool = False) -> str:
    """Render a metric value: integers as is, floats with at most 4 decimals (no float noise)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and not value.is_integer():
        text = f"{value:+.4f}" if signed else f"{value:.4f}"
        return text.rstrip("0").rstrip(".")
    number = int(value)
    return f"{number:+d}" if signed else str(number)


@dataclass(frozen=True)
class MetricRow:
    """One metric of a run next to its baseline value; `delta` is None when either side is missing."""

    name: str
    actual: float | int | None
    baseline: float | int | None
    delta: float | int | None
    delta_percent: float | None

    def format_delta(self) -> str:
        """Signed delta with percent, e.g. `+2 (+40.0%)`, `0`, `-0.013 (-10.0%)`, `n/a`."""
        return format_delta(self.delta, self.delta_percent)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.name, "actual": self.actual, "baseline": self.baseline,
                "delta": self.delta, "deltaPercent": self.delta_percent}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricRow:
        return cls(data.get("metric", ""), data.get("actual"), data.get("baseline"), data.get("delta"), data.get("deltaPercent"))


@dataclass(frozen=True)
class DiffLine:
    """One line of the tool-sequence diff: `" "` in both, `"-"` baseline call skipped, `"+"` extra call."""

    op: Literal[" ", "-", "+"]
    tool: str

    def render(self) -> str:
        """The line as the report prints it (`"  observe"`, `"- tapOn"`, `"+ swipeOn"`)."""
        return f"{self.op} {self.tool}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "tool": self.tool}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DiffLine:
        return cls(data.get("op", " "), data.get("tool", ""))


@dataclass(frozen=True)
class ComparabilityFlag:
    """A reason a run's deltas may not compare like with like; `message` says what differs, old -> new."""

    kind: FlagKind
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ComparabilityFlag:
        return cls(data.get("kind", "suite-digest"), data.get("message", ""))


@dataclass(frozen=True)
class BaselineComparison:
    """This run against the suite's recorded baseline (all empty when the suite records none)."""

    flags: tuple[ComparabilityFlag, ...] = ()
    metric_rows: tuple[MetricRow, ...] = ()
    sequence_diff: tuple[DiffLine, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "flags": [flag.to_json() for flag in self.flags],
            "metricRows": [row.to_json() for row in self.metric_rows],
            "sequenceDiff": [line.to_json() for line in self.sequence_diff],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> BaselineComparison:
        data = data or {}
        return cls(
            flags=tuple(ComparabilityFlag.from_json(flag) for flag in data.get("flags") or ()),
            metric_rows=tuple(MetricRow.from_json(row) for row in data.get("metricRows") or ()),
            sequence_diff=tuple(DiffLine.from_json(line) for line in data.get("sequenceDiff") or ()),
        )


@dataclass(frozen=True)
class Snippet:
    """Whether this run wrote baseline.yml: where, or why not (`baseline.snippet.snippet_blockers`)."""

    path: str | None
    suppressed_because: tuple[str, ...] = ()

    @property
    def written(self) -> bool:
        return self.path is not None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "written": self.written, "suppressedBecause": list(self.suppressed_because)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Snippet:
        data = data or {}
        return cls(data.get("path"), tuple(data.get("suppressedBecause") or ()))
