"""A clean run's metrics and fingerprints -> whether it may write baseline.yml, the snippet's YAML, and the suite file edited in place."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from pytest_agentbench.baseline.compare import SCALAR_METRICS
from pytest_agentbench.baseline.fingerprints import UNKNOWN, is_unknown, unknown_fields

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
    if is_unknown(claude_code_version):
        reasons.append("agent CLI version unknown")
    if is_unknown(observed_model):
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
    # An unknown metric (None: token counts a server did not send) is left out, never recorded as 0.
    ordered_metrics = {name: metrics[name] for name in SCALAR_METRICS if metrics.get(name) is not None}
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
