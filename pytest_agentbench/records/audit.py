"""An audit's conclusions (verdict, checks, stumbles, metrics, tool sequence) <-> their result.json form.

`audit.verdict.audit_run` makes them; the pipeline, the reports and a re-render read them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_agentbench.checks.base import Check

VerdictStatus = Literal["passed", "failed", "incomplete"]
#: Who an incomplete run's stop is down to (see `audit.verdict`): the agent's count as not passed.
IncompleteCause = Literal["agent", "harness"]
INCOMPLETE_CAUSES: tuple[str, ...] = ("agent", "harness")
StumbleKind = Literal["tool-error", "failure-pattern", "permission-denial", "recovery"]


@dataclass(frozen=True)
class Stumble:
    """A reported, unscored difficulty: an error result, a failure pattern, a permission denial."""

    kind: StumbleKind
    tool: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "tool": self.tool, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stumble:
        return cls(data.get("kind", "tool-error"), data.get("tool", ""), data.get("detail", ""))


@dataclass(frozen=True)
class Verdict:
    """The run's verdict, the reasons for it (empty when passed) and, when incomplete, whose doing it was.

    ``cause`` (JSON ``incompleteCause``) is ``"agent"`` or ``"harness"`` on an incomplete verdict
    and ``None`` otherwise. A document written before causes were recorded has none; it reads
    back as ``None`` (and writes back without the key), and the statistics treat an unknown
    cause as the harness's, as every incomplete run was counted then.
    """

    status: VerdictStatus
    reasons: tuple[str, ...]
    cause: IncompleteCause | None = None

    def __post_init__(self) -> None:
        if self.cause is not None and (self.status != "incomplete" or self.cause not in INCOMPLETE_CAUSES):
            raise ValueError(f"verdict: expected incompleteCause agent or harness on an incomplete verdict only, got {self.cause!r}")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "reasons": list(self.reasons)}
        if self.cause is not None:
            data["incompleteCause"] = self.cause
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Verdict:
        if not data:
            return cls("incomplete", ("no audit",))
        status = data.get("status", "incomplete")
        cause = data.get("incompleteCause")
        return cls(status, tuple(data.get("reasons") or ()), cause if status == "incomplete" and cause in INCOMPLETE_CAUSES else None)


def check_to_json(check: Check) -> dict[str, Any]:
    """A check as result.json lists it."""
    return {"kind": check.kind, "expected": check.expected, "passed": check.passed, "seen": check.seen, "name": check.name}


def check_from_json(data: Mapping[str, Any]) -> Check:
    return Check(kind=data.get("kind", ""), expected=data.get("expected", ""), passed=bool(data.get("passed")),
                 seen=data.get("seen", ""), name=data.get("name"))


@dataclass(frozen=True)
class Audit:
    """Everything the audit concluded about one run.

    Attributes:
        metrics: Metric name -> number, and `toolCounts` (short tool name -> calls); the keys of
            a baseline's `metrics` block.
    """

    verdict: Verdict
    checks: tuple[Check, ...]
    stumbles: tuple[Stumble, ...]
    metrics: Mapping[str, Any]
    tool_sequence: tuple[str, ...]

    def metrics_json(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.metrics))
