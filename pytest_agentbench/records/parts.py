"""result.json's nested blocks (instance, metrics, timing, cleanup, sandbox) -> typed read-only views the reports read.

`RunResult` keeps these blocks as the JSON it writes, so `to_json(from_json(doc)) == doc` holds
for any document; its properties (`RunResult.instance_ref`, `.run_metrics`, `.times`,
`.cleanup_report`, `.confinement`) parse them here, once, so no report reads a string key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")


def _number(value: Any) -> float | None:
    """A JSON number as a float; None for a missing value, a bool, a string or NaN."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class InstanceRef:
    """Which seeded task instance a run was: `r3`, `r3-42-Bob` (see `suite.params.Instance`)."""

    id: str
    repeat: int | None
    seed: int | None
    values: Mapping[str, Any]

    @property
    def seeded(self) -> bool:
        """The instance had param values, so its id names distinct task contents (paired across sessions)."""
        return bool(self.values) and bool(self.id)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> InstanceRef | None:
        if not data:
            return None
        repeat, seed = data.get("repeat"), data.get("seed")
        return cls(str(data.get("id") or ""), repeat if isinstance(repeat, int) else None,
                   seed if isinstance(seed, int) else None, dict(data.get("values") or {}))


@dataclass(frozen=True)
class RunMetrics:
    """The metrics the reports show, as numbers (None when the run did not measure one)."""

    tool_calls: int | None
    turns: int | None
    wall_clock_seconds: float | None
    cost_usd: float | None
    tokens: int | None
    tokens_unknown: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunMetrics:
        calls, turns = _number(data.get("toolCalls")), _number(data.get("turns"))
        # A server that sent no token counts for some call leaves the keys present and null.
        unknown = all(data.get(key) is None for key in TOKEN_KEYS) and any(key in data for key in TOKEN_KEYS)
        return cls(
            tool_calls=None if calls is None else int(calls),
            turns=None if turns is None else int(turns),
            wall_clock_seconds=_number(data.get("wallClockSeconds")),
            cost_usd=_number(data.get("costUsd")),
            tokens=None if unknown else sum(int(_number(data.get(key)) or 0) for key in TOKEN_KEYS),
            tokens_unknown=unknown,
        )


@dataclass(frozen=True)
class ToolTimes:
    """One tool's calls in the time split: how many, how long the answered ones took."""

    tool: str
    count: int
    unanswered: int
    total_seconds: float
    median_seconds: float | None


@dataclass(frozen=True)
class AgentTimes:
    """Where the agent's wall clock went (`timing.agent`); the four parts add up to `wall_clock_seconds`."""

    wall_clock_seconds: float | None
    startup_seconds: float | None
    model_seconds: float | None
    tool_seconds: float | None
    after_result_seconds: float | None
    tools: tuple[ToolTimes, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentTimes:
        return cls(
            _number(data.get("wallClockSeconds")), _number(data.get("startupSeconds")), _number(data.get("modelSeconds")),
            _number(data.get("toolSeconds")), _number(data.get("afterResultSeconds")),
            tuple(ToolTimes(str(tool.get("tool") or "?"), int(tool.get("count") or 0), int(tool.get("unanswered") or 0),
                            _number(tool.get("totalSeconds")) or 0.0, _number(tool.get("medianSeconds")))
                  for tool in data.get("tools") or () if isinstance(tool, Mapping)),
        )


@dataclass(frozen=True)
class Times:
    """A run's `timing`: the agent's split (None without a timing sidecar) and the harness's own seconds by part."""

    agent: AgentTimes | None
    harness: Mapping[str, float]

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Times:
        data = data or {}
        agent = data.get("agent")
        harness = {str(key): number for key, value in (data.get("harness") or {}).items()
                   if (number := _number(value)) is not None}
        return cls(AgentTimes.from_json(agent) if isinstance(agent, Mapping) and agent else None, harness)


@dataclass(frozen=True)
class CleanupAction:
    """One thing cleanup did, and its exit status (0: done)."""

    action: str
    status: int | None


@dataclass(frozen=True)
class CleanupReport:
    """What cleanup did (`actions`), what failed, and what it `left` not as before the run."""

    actions: tuple[CleanupAction, ...]
    failed: tuple[str, ...]
    left: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> CleanupReport | None:
        if not data:
            return None
        return cls(
            tuple(CleanupAction(str(action.get("action")), action.get("status"))
                  for action in data.get("actions") or () if isinstance(action, Mapping)),
            tuple(str(item) for item in data.get("failed") or ()),
            tuple(str(item) for item in data.get("left") or ()),
        )


@dataclass(frozen=True)
class Confinement:
    """How the agent was confined (`sandbox`): its mode (`off` when it ran unconfined) and why."""

    mode: str | None
    reason: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Confinement | None:
        if not data:
            return None
        return cls(data.get("mode"), data.get("reason"))
