"""Run metrics and fingerprints + a recorded baseline -> metric deltas, sequence diff, comparability flags, baseline.yml."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

UNKNOWN = "unknown"

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

# Keys of the `baseline` block, in the order the contract in docs/architecture.md writes them.
BASELINE_KEYS: tuple[str, ...] = (
    "recordedAt",
    "metrics",
    "appBuild",
    "suiteDigest",
    "deviceFingerprint",
    "claudeCodeVersion",
    "serverBuild",
    "observedModel",
)

# Suite keys that are the baseline itself and so never feed the suite digest.
_BASELINE_SUITE_KEYS = frozenset({"baseline", "baselineToolSequence"})

FlagKind = Literal["app-build", "suite-digest", "device", "cli-version", "server-build", "model"]


def sha256_prefix(data: bytes, length: int = 16) -> str:
    """Hex prefix of the SHA-256 of `data` (the form `apkSha256` is recorded in).

    Args:
        data: The bytes to hash.
        length: How many hex characters to keep.

    Returns:
        The first `length` hex characters of the digest.
    """
    return hashlib.sha256(data).hexdigest()[:length]


def digest_json(value: Any) -> str:
    """`sha256:<16 hex>` over a canonical JSON form of `value` (sorted keys, so key order never matters).

    Args:
        value: Any JSON-serialisable value.

    Returns:
        The digest string as suites record it (`suiteDigest`, `serverBuild`).
    """
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + sha256_prefix(canonical.encode("utf-8"))


# --------------------------------------------------------------------------- metric rows


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
        if self.delta is None:
            return "n/a"
        text = format_number(self.delta, signed=True)
        if self.delta == 0:
            return "0"
        if self.delta_percent is None:
            return text
        return f"{text} ({self.delta_percent:+.1f}%)"


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


@dataclass(frozen=True)
class DiffLine:
    """One line of the tool-sequence diff: `" "` in both, `"-"` baseline call skipped, `"+"` extra call."""

    op: Literal[" ", "-", "+"]
    tool: str

    def render(self) -> str:
        """The line as the report prints it (`"  observe"`, `"- tapOn"`, `"+ swipeOn"`)."""
        return f"{self.op} {self.tool}"


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


def short_tool_names(names: Sequence[str]) -> tuple[str, ...]:
    """Drop the `mcp__<server>__` prefix from full tool names (`mcp__agentbench__observe` -> `observe`)."""
    return tuple(_short_tool_name(name) for name in names)


def _short_tool_name(name: str) -> str:
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        if len(parts) == 3 and parts[2]:
            return parts[2]
    return name


# --------------------------------------------------------------------------- app build and suite digest


def app_build(
    *,
    version_name: str | None,
    version_code: int | str | None,
    last_update_time: str | None = None,
    apk_sha256: str | None = None,
) -> dict[str, Any]:
    """The `appBuild` fingerprint: version name and code, plus install time or, with `apkPath`, the APK hash.

    With an `apkPath` preflight reinstalls the APK on every run, which resets the install time,
    so the APK's SHA-256 prefix takes its place.

    Args:
        version_name: `versionName` from `dumpsys package`, None if unread.
        version_code: `versionCode`, None if unread.
        last_update_time: `lastUpdateTime`, None if unread (ignored when `apk_sha256` is given).
        apk_sha256: SHA-256 prefix of the suite's APK when the suite sets `app.apkPath`.

    Returns:
        `{versionName, versionCode, lastUpdateTime}` or `{versionName, versionCode, apkSha256}`;
        unread values are "unknown".
    """
    build: dict[str, Any] = {
        "versionName": version_name if version_name not in (None, "") else UNKNOWN,
        "versionCode": _version_code(version_code),
    }
    if apk_sha256 is not None:
        build["apkSha256"] = apk_sha256 or UNKNOWN
    else:
        build["lastUpdateTime"] = last_update_time if last_update_time not in (None, "") else UNKNOWN
    return build


def _version_code(value: int | str | None) -> int | str:
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, int):
        return value
    return int(value) if str(value).isdigit() else str(value)


def requested_model(suite_raw: Mapping[str, Any], model_override: str | None) -> str | None:
    """The model a run asks for: the `--model` override if given, else the suite's `claude.model`."""
    if model_override:
        return model_override
    claude = suite_raw.get("claude") or {}
    return claude.get("model") or None


def suite_digest(suite_raw: Mapping[str, Any], *, prompt_text: str, model_override: str | None = None) -> str:
    """`suiteDigest`: the task a baseline measured, as a digest.

    Covers the prompt text, every suite setting as written except `baseline` and
    `baselineToolSequence`, and the requested model. The `prompt` key (a file path) is replaced
    by the text it points to, because the agent reads the text, not the path.

    Args:
        suite_raw: The suite mapping as loaded from YAML (`Suite.raw`).
        prompt_text: The prompt file's text (before placeholders are filled in).
        model_override: The `--model` option, if given.

    Returns:
        `sha256:<16 hex>`, independent of key order.
    """
    settings = {key: value for key, value in suite_raw.items() if key not in _BASELINE_SUITE_KEYS and key != "prompt"}
    document = {
        "prompt": prompt_text,
        "settings": settings,
        "requestedModel": requested_model(suite_raw, model_override),
    }
    return digest_json(document)


# --------------------------------------------------------------------------- snippet rules


def _is_unknown(value: Any) -> bool:
    return value is None or value == "" or value == UNKNOWN


def unknown_fields(mapping: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of the fields of a fingerprint mapping that could not be read (sorted)."""
    if not mapping:
        return ()
    return tuple(sorted(key for key, value in mapping.items() if _is_unknown(value)))


def snippet_blockers(
    *,
    verdict_status: str,
    stumble_count: int,
    clear_app_data: bool,
    device_fingerprint: Mapping[str, Any] | None,
    app_build: Mapping[str, Any] | None,
    claude_code_version: str | None,
    observed_model: str | None,
) -> tuple[str, ...]:
    """Every reason this run must not write `baseline.yml`; empty means write it.

    A snippet is for clean, passing runs only, and only when it records enough to flag a later
    run on a different device, app build, CLI or model: an unknown field never matches, so a
    baseline holding one would flag every later run.

    Args:
        verdict_status: `passed`, `failed` or `incomplete`.
        stumble_count: Number of stumbles the audit found.
        clear_app_data: The suite's `preflight.clearAppData`.
        device_fingerprint: The device fingerprint fields, None if not read at all.
        app_build: The `appBuild` mapping, None if not read at all.
        claude_code_version: CLI version from the init event (or `--version` fallback).
        observed_model: Model the stream reported running.

    Returns:
        Reason sentences for the report, in a fixed order.
    """
    reasons: list[str] = []
    if verdict_status != "passed":
        reasons.append(f"verdict is {verdict_status}, not passed")
    if stumble_count:
        noun = "stumble" if stumble_count == 1 else "stumbles"
        reasons.append(f"the run had {stumble_count} {noun}; recovery calls would skew later comparisons")
    if not clear_app_data:
        reasons.append("the suite sets preflight.clearAppData: false, so its starting state is not reproducible")
    if not device_fingerprint:
        reasons.append("device fingerprint unknown (not read)")
    elif unknown := unknown_fields(device_fingerprint):
        reasons.append(f"device fingerprint unknown ({', '.join(unknown)})")
    if not app_build:
        reasons.append("app build unknown (not read)")
    elif unknown := unknown_fields(app_build):
        reasons.append(f"app build unknown ({', '.join(unknown)})")
    if _is_unknown(claude_code_version):
        reasons.append("agent CLI version unknown")
    if _is_unknown(observed_model):
        reasons.append("observed model unknown")
    return tuple(reasons)


def build_baseline_block(
    *,
    recorded_at: str,
    metrics: Mapping[str, Any],
    app_build: Mapping[str, Any],
    suite_digest: str,
    device_fingerprint: Mapping[str, Any],
    claude_code_version: str,
    server_build: str,
    observed_model: str,
) -> dict[str, Any]:
    """The suite's `baseline` block, keys in the contract's order (docs/architecture.md, "Suite")."""
    ordered_metrics = {name: metrics[name] for name in SCALAR_METRICS if name in metrics}
    ordered_metrics["toolCounts"] = dict(sorted((metrics.get("toolCounts") or {}).items()))
    return {
        "recordedAt": recorded_at,
        "metrics": ordered_metrics,
        "appBuild": dict(app_build),
        "suiteDigest": suite_digest,
        "deviceFingerprint": {key: str(value) for key, value in device_fingerprint.items()},
        "claudeCodeVersion": claude_code_version,
        "serverBuild": server_build,
        "observedModel": observed_model,
    }


class _SnippetDumper(yaml.SafeDumper):
    """Dumps block mappings but keeps the tool sequence and small leaf mappings on one line."""


def _represent_flow_list(dumper: yaml.SafeDumper, data: _FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


class _FlowList(list):
    pass


_SnippetDumper.add_representer(_FlowList, _represent_flow_list)


def render_baseline_yaml(block: Mapping[str, Any], tool_sequence: Sequence[str]) -> str:
    """The `baseline:` and `baselineToolSequence:` keys as YAML text, ready to sit in a suite."""
    document = {"baseline": _plain(block), "baselineToolSequence": _FlowList(tool_sequence)}
    return yaml.dump(document, Dumper=_SnippetDumper, sort_keys=False, allow_unicode=True, width=96)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def render_snippet(block: Mapping[str, Any], tool_sequence: Sequence[str], *, suite_name: str, run_dir: str) -> str:
    """Content of `<run>/baseline.yml`: a comment header, then `baseline:` and `baselineToolSequence:`.

    Args:
        block: The baseline block from `build_baseline_block`.
        tool_sequence: This run's short tool names in call order.
        suite_name: The suite the snippet belongs to.
        run_dir: The run directory it was recorded from.

    Returns:
        YAML text; pasting it into the suite (or `insert_baseline`) replaces its baseline.
    """
    header = (
        f"# Baseline for suite {suite_name!s}, recorded {block.get('recordedAt', UNKNOWN)}\n"
        f"# from run {run_dir}\n"
        "# A passing run with no stumbles. Paste these two keys into the suite file (replacing any\n"
        "# existing baseline). Baselines are comparison data; they never change a verdict.\n"
    )
    return header + render_baseline_yaml(block, tool_sequence)


# --------------------------------------------------------------------------- suite file edit

_TOP_LEVEL_KEY = re.compile(r"""^(?P<quote>["']?)(?P<key>baseline|baselineToolSequence)(?P=quote)[ \t]*:(?:[ \t]|$)""")


def _block_end(lines: list[str], key_index: int) -> int:
    """Index one past the last line that belongs to the top-level key at `key_index`."""
    end = key_index + 1
    for index in range(key_index + 1, len(lines)):
        line = lines[index]
        stripped = line.strip()
        if not stripped or stripped.startswith("#") and not line[:1].isspace():
            # Blank lines and column-0 comments belong to the block only if more of it follows.
            continue
        indented = line[:1].isspace()
        # A block sequence may sit at column 0 under its key (`key:\n- a`), but `---` is a document marker.
        sequence_item = line.startswith("-") and not line.startswith("---")
        if indented or sequence_item:
            end = index + 1
            continue
        break
    return end


def insert_baseline(suite_text: str, block: Mapping[str, Any], tool_sequence: Sequence[str]) -> str:
    """Put a baseline into a suite file's text, keeping its comments and every other key.

    An existing top-level `baseline:` or `baselineToolSequence:` block is replaced where it
    stands; a missing one goes right after the other, or at the end of the file.

    Args:
        suite_text: The suite file's current text.
        block: The new baseline block.
        tool_sequence: The new baseline tool sequence (short names).

    Returns:
        The edited text.
    """
    rendered = render_baseline_yaml(block, tool_sequence).splitlines(keepends=True)
    split_at = next(index for index, line in enumerate(rendered) if line.startswith("baselineToolSequence:"))
    new_blocks = {"baseline": rendered[:split_at], "baselineToolSequence": rendered[split_at:]}

    lines = suite_text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    spans: dict[str, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        match = _TOP_LEVEL_KEY.match(line)
        if match and match["key"] not in spans:
            spans[match["key"]] = (index, _block_end(lines, index))

    # Replace from the bottom up so earlier spans keep their indices.
    for key, (start, end) in sorted(spans.items(), key=lambda item: item[1][0], reverse=True):
        replacement = list(new_blocks[key])
        missing = [other for other in new_blocks if other not in spans]
        if missing and key == "baseline":
            replacement += new_blocks[missing[0]]
        elif missing and key == "baselineToolSequence":
            replacement = new_blocks[missing[0]] + replacement
        lines[start:end] = replacement
    if not spans:
        if lines and lines[-1].strip():
            lines.append("\n")
        lines += new_blocks["baseline"] + new_blocks["baselineToolSequence"]
    return "".join(lines)


# --------------------------------------------------------------------------- comparability


@dataclass(frozen=True)
class ComparabilityFlag:
    """A reason a run's deltas may not compare like with like; `message` says what differs, old -> new."""

    kind: FlagKind
    message: str


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
    """`field old -> new` for each field that differs; an unknown value never matches."""
    old = old or {}
    new = new or {}
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if _is_unknown(before) or _is_unknown(after) or str(before) != str(after):
            changes.append(f"{key} {_show(before)} -> {_show(after)}")
    return changes


def comparability_flags(
    baseline: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    *,
    baseline_server_components: Mapping[str, str] | None = None,
    current_server_components: Mapping[str, str] | None = None,
) -> tuple[ComparabilityFlag, ...]:
    """Flags for every way this run differs from the run that recorded the baseline.

    Args:
        baseline: The suite's `baseline` block, or None (then nothing is flagged: there is
            nothing to compare with).
        current: This run's fingerprints under the same keys (`appBuild`, `suiteDigest`,
            `deviceFingerprint`, `claudeCodeVersion`, `serverBuild`, `observedModel`).
        baseline_server_components: Server-build components of the baseline run, if known.
        current_server_components: This run's server-build components.

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
    if _is_unknown(old_digest) or _is_unknown(new_digest) or old_digest != new_digest:
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
    if _is_unknown(old_cli) or _is_unknown(new_cli) or str(old_cli) != str(new_cli):
        flags.append(ComparabilityFlag("cli-version", f"agent CLI version differs: {_show(old_cli)} -> {_show(new_cli)}"))

    old_build, new_build = baseline.get("serverBuild"), current.get("serverBuild")
    if _is_unknown(old_build) or _is_unknown(new_build) or old_build != new_build:
        detail = f"{_show(old_build)} -> {_show(new_build)}"
        if baseline_server_components is not None and current_server_components is not None:
            changed = _differing_fields(baseline_server_components, current_server_components)
            if changed:
                detail = "; ".join(changed)
        else:
            detail += " (components of the baseline run not recorded)"
        flags.append(ComparabilityFlag("server-build", f"server build differs: {detail}"))

    old_model, new_model = baseline.get("observedModel"), current.get("observedModel")
    if _is_unknown(old_model) or _is_unknown(new_model) or old_model != new_model:
        flags.append(ComparabilityFlag("model", f"observed model differs: {_show(old_model)} -> {_show(new_model)}"))
    return tuple(flags)
