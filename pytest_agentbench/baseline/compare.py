"""A run's metrics, tool sequence and fingerprints + a recorded baseline -> metric deltas, an LCS sequence diff, comparability flags."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_agentbench.records.comparison import (  # noqa: F401 (re-exported: the report formats with them)
    BaselineComparison, ComparabilityFlag, DiffLine, FlagKind, MetricRow, format_delta, format_number,
)
from pytest_agentbench.baseline.fingerprints import flat_fields, is_unknown

# Scalar metrics in the order the report shows them; per-tool counts follow as `toolCounts.<tool>`.
SCALAR_METRICS: tuple[str, ...] = (
    "toolCalls",
    "mcpCalls",
    "deviceAwareCalls",
    "turns",
    "inputTokens",
    "outputTokens",
    "cacheCreationInputTokens",
    "cacheReadInputTokens",
    "costUsd",
    "wallClockSeconds",
    "stumbles",
    "recoveries",
)


# --------------------------------------------------------------------------- metric rows


def _delta(actual: Any, baseline: Any) -> tuple[float | int | None, float | None]:
    if not _is_number(actual) or not _is_number(baseline):
        return None, None
    delta = actual - baseline
    if isinstance(delta, float):
        # Floats such as cost subtract to 0.30000000000000004; round so the sign and zero are honest.
        delta = round(delta, 6)
    percent = None if baseline == 0 else round(delta / baseline * 100, 1)
    return delta, percent


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def metric_rows(actual: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> tuple[MetricRow, ...]:
    """Every metric of a run as a row of actual, baseline and signed delta.

    Args:
        actual: The run's metrics (the `metrics` shape of the baseline block).
        baseline: The baseline's `metrics`, or None when the suite has no baseline.

    Returns:
        The scalar metrics in `SCALAR_METRICS` order, then `toolCounts.<tool>` rows for every
        tool seen on either side, sorted by name. A tool the run never called has actual 0.
    """
    baseline = baseline or {}
    has_baseline = bool(baseline)
    rows = []
    for name in SCALAR_METRICS:
        actual_value = actual.get(name)
        baseline_value = baseline.get(name) if has_baseline else None
        rows.append(MetricRow(name, actual_value, baseline_value, *_delta(actual_value, baseline_value)))
    actual_counts = actual.get("toolCounts") or {}
    baseline_counts = (baseline.get("toolCounts") or {}) if has_baseline else {}
    for tool in sorted(set(actual_counts) | set(baseline_counts)):
        actual_value = actual_counts.get(tool, 0)
        baseline_value = baseline_counts.get(tool, 0) if has_baseline else None
        rows.append(MetricRow(f"toolCounts.{tool}", actual_value, baseline_value, *_delta(actual_value, baseline_value)))
    return tuple(rows)


# --------------------------------------------------------------------------- sequence diff


def sequence_diff(baseline: Sequence[str], actual: Sequence[str]) -> tuple[DiffLine, ...]:
    """Longest-common-subsequence diff of two tool sequences.

    Ties are broken the same way every time: where skipping a baseline call and adding an extra
    call keep the same common length, the skipped baseline call (`-`) is listed first.

    Args:
        baseline: The baseline's short tool names, in call order.
        actual: This run's short tool names, in call order.

    Returns:
        The diff lines in order; `" "` lines spell the common subsequence.
    """
    n, m = len(baseline), len(actual)
    # suffix[i][j] = LCS length of baseline[i:] and actual[j:]; walking forwards on it gives a
    # diff that reads top to bottom in call order.
    suffix = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if baseline[i] == actual[j]:
                suffix[i][j] = suffix[i + 1][j + 1] + 1
            else:
                suffix[i][j] = max(suffix[i + 1][j], suffix[i][j + 1])
    lines: list[DiffLine] = []
    i = j = 0
    while i < n and j < m:
        if baseline[i] == actual[j]:
            lines.append(DiffLine(" ", baseline[i]))
            i += 1
            j += 1
        elif suffix[i + 1][j] >= suffix[i][j + 1]:
            lines.append(DiffLine("-", baseline[i]))
            i += 1
        else:
            lines.append(DiffLine("+", actual[j]))
            j += 1
    lines.extend(DiffLine("-", tool) for tool in baseline[i:])
    lines.extend(DiffLine("+", tool) for tool in actual[j:])
    return tuple(lines)


# --------------------------------------------------------------------------- comparability


FLAG_ABBREVIATIONS: dict[str, str] = {
    "app-build": "app",
    "suite-digest": "suite",
    "device": "dev",
    "cli-version": "cli",
    "server-build": "srv",
    "model": "model",
}


def _show(value: Any) -> str:
    if value is None or value == "":
        return "not recorded"
    return str(value)


def _differing_fields(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """`field old -> new` for each field that differs, nested ones by their dotted name; an unknown value never matches.

    The other apps a job uses (`appBuild.otherApps`) are compared field by field: an app whose
    build reads unknown on both runs is flagged, never taken as the same build.
    """
    old = flat_fields(old)
    new = flat_fields(new)
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if is_unknown(before) or is_unknown(after) or str(before) != str(after):
            changes.append(f"{key} {_show(before)} -> {_show(after)}")
    return changes


def comparability_flags(
    baseline: Mapping[str, Any] | None,
    current: Mapping[str, Any],
) -> tuple[ComparabilityFlag, ...]:
    """Flags for every way this run differs from the run that recorded the baseline.

    Args:
        baseline: The suite's `baseline` block, or None (then nothing is flagged: there is
            nothing to compare with).
        current: This run's fingerprints under the same keys (`appBuild`, `suiteDigest`,
            `deviceFingerprint`, `claudeCodeVersion`, `serverBuild`, `observedModel`).

    Returns:
        Flags in the order app build, suite, device, CLI, server build, model. An unknown value
        on either side always flags, even unknown against unknown.
    """
    if not baseline:
        return ()
    flags: list[ComparabilityFlag] = []

    app_changes = _differing_fields(baseline.get("appBuild"), current.get("appBuild"))
    if app_changes:
        flags.append(ComparabilityFlag("app-build", "app build differs: " + "; ".join(app_changes)))

    old_digest, new_digest = baseline.get("suiteDigest"), current.get("suiteDigest")
    if is_unknown(old_digest) or is_unknown(new_digest) or old_digest != new_digest:
        flags.append(
            ComparabilityFlag(
                "suite-digest",
                f"suite differs (prompt, settings or requested model): {_show(old_digest)} -> {_show(new_digest)}",
            )
        )

    device_changes = _differing_fields(baseline.get("deviceFingerprint"), current.get("deviceFingerprint"))
    if device_changes:
        flags.append(ComparabilityFlag("device", "device differs: " + "; ".join(device_changes)))

    old_cli, new_cli = baseline.get("claudeCodeVersion"), current.get("claudeCodeVersion")
    if is_unknown(old_cli) or is_unknown(new_cli) or str(old_cli) != str(new_cli):
        flags.append(ComparabilityFlag("cli-version", f"agent CLI version differs: {_show(old_cli)} -> {_show(new_cli)}"))

    old_build, new_build = baseline.get("serverBuild"), current.get("serverBuild")
    if is_unknown(old_build) or is_unknown(new_build) or old_build != new_build:
        # The baseline block keeps only the digest; result.json's serverBuildComponents say which part moved.
        flags.append(ComparabilityFlag("server-build", f"server build differs: {_show(old_build)} -> {_show(new_build)}"))

    old_model, new_model = baseline.get("observedModel"), current.get("observedModel")
    if is_unknown(old_model) or is_unknown(new_model) or old_model != new_model:
        flags.append(ComparabilityFlag("model", f"observed model differs: {_show(old_model)} -> {_show(new_model)}"))
    return tuple(flags)


def compare(
    baseline: Mapping[str, Any] | None,
    baseline_tool_sequence: Sequence[str],
    metrics: Mapping[str, Any],
    tool_sequence: Sequence[str],
    current: Mapping[str, Any],
) -> BaselineComparison:
    """A run against the suite's recorded baseline: metric rows, the sequence diff, comparability flags.

    Args:
        baseline: The suite's `baseline` block, or None/empty (then nothing is compared, but the
            metric rows still list this run's metrics).
        baseline_tool_sequence: The suite's `baselineToolSequence`.
        metrics: This run's metrics.
        tool_sequence: This run's short tool names, in call order.
        current: This run's fingerprints (`Fingerprints.comparable()`).
    """
    has_baseline = bool(baseline)
    return BaselineComparison(
        flags=comparability_flags(baseline, current),
        metric_rows=metric_rows(metrics, (baseline or {}).get("metrics") if has_baseline else None),
        sequence_diff=sequence_diff(list(baseline_tool_sequence), list(tool_sequence)) if has_baseline else (),
    )
