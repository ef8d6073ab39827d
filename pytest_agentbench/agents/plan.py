"""A replay plan YAML file (or an earlier run's transcript) -> a validated Plan of tool calls, waits and a final answer."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_agentbench.errors import SuiteError
from pytest_agentbench.audit.transcript import Transcript
from pytest_agentbench.suite.capture import Capture, capture_problems

# Placeholders a plan may use inside string arguments.
PLACEHOLDERS = ("device", "packageName")
_NAME_PATTERN = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: The longest pause a plan may ask for (a wait step, or thinkSeconds).
MAX_WAIT_SECONDS = 600


@dataclass(frozen=True)
class ToolStep:
    """Call one tool: a bare MCP tool name (`observe`) or a full one (`mcp__agentbench__observe`).

    `capture` keeps a value from the call's result (a code shown on the screen or in the log) as
    `{name}` for later arguments and the final answer.
    """

    tool: str
    args: dict
    expect_error: bool = False
    capture: Capture | None = None
    #: How many times the call is made in a row: a number, or `{name}` read off the prompt
    #: ("add 4 notebooks") when the instance draws the count.
    times: int | str = 1


@dataclass(frozen=True)
class WaitStep:
    """Pause between calls, as an agent thinking would."""

    seconds: float


Step = ToolStep | WaitStep


@dataclass(frozen=True)
class Plan:
    """What the replay agent does: its steps in order and the final answer it prints."""

    source: Path
    steps: tuple[Step, ...]
    final: str
    package_name: str | None = None
    #: Seconds to pause before every tool call and before the final answer, standing in for a
    #: model's latency (`thinkSeconds`); 0 replays as fast as the server answers.
    think_seconds: float = 0.0
    #: `fromPrompt:` values read off the prompt, as a model reads its task: a seeded instance's
    #: drawn values (the city, the code) reach the replay only through the prompt it is given.
    from_prompt: tuple[Capture, ...] = ()

    def prompt_values(self, prompt: str) -> tuple[dict[str, str], list[str]]:
        """The `fromPrompt:` values found in `prompt`, and one sentence per pattern that matched nothing."""
        found: dict[str, str] = {}
        missing: list[str] = []
        for capture in self.from_prompt:
            value = capture.find(prompt)
            if value is None:
                missing.append(f"fromPrompt.{capture.name}: /{capture.pattern}/ matched nothing in the prompt")
            else:
                found[capture.name] = value
        return found, missing

    @property
    def tool_steps(self) -> tuple[ToolStep, ...]:
        """Only the tool calls, in order."""
        return tuple(step for step in self.steps if isinstance(step, ToolStep))

    def uses_placeholder(self, name: str) -> bool:
        """Whether any tool argument mentions `{name}`."""
        needle = "{" + name + "}"
        return any(needle in _all_strings(step.args) for step in self.tool_steps)


def _all_strings(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_all_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_all_strings(v) for v in value)
    return ""


def fill_placeholders(value: Any, values: Mapping[str, str | None]) -> Any:
    """Replace `{name}` for every name in `values` inside every string of `value` (dicts and lists too).

    The names are `{device}`, `{packageName}` and the values earlier steps captured; any other
    brace (JSON, an unknown name) stays as written.

    Args:
        value: A tool argument value.
        values: Placeholder name -> replacement; a None replacement leaves the placeholder as is.

    Returns:
        A copy of `value` with the placeholders filled.
    """
    if isinstance(value, str):
        return _NAME_PATTERN.sub(lambda m: values.get(m.group(1)) or m.group(0), value)
    if isinstance(value, Mapping):
        return {key: fill_placeholders(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [fill_placeholders(item, values) for item in value]
    return value


def parse_plan(data: Any, source: Path) -> Plan:
    """Validate a plan's YAML data.

    Args:
        data: The loaded YAML document.
        source: The file it came from (named in every error).

    Returns:
        The plan.

    Raises:
        SuiteError: Naming the file and the key path of every problem found.
    """
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise SuiteError(source, f"a plan must be a mapping with 'steps' and 'final', got {type(data).__name__}")
    unknown = sorted(set(data) - {"steps", "final", "packageName", "thinkSeconds", "fromPrompt"})
    if unknown:
        problems.append(
            f"unknown key(s) {', '.join(map(repr, unknown))}; a plan has 'steps', 'final' and optional 'packageName', "
            "'thinkSeconds', 'fromPrompt'"
        )
    from_prompt = _from_prompt(data.get("fromPrompt"), problems)
    think = data.get("thinkSeconds", 0)
    if isinstance(think, bool) or not isinstance(think, (int, float)) or not 0 <= think <= MAX_WAIT_SECONDS:
        problems.append(f"thinkSeconds: expected seconds between 0 and {MAX_WAIT_SECONDS} (the pause before each step), got {think!r}")
        think = 0
    final = data.get("final")
    if not isinstance(final, str) or not final.strip():
        problems.append(f"final: expected the final answer as a non-empty string, got {final!r}")
    package_name = data.get("packageName")
    if package_name is not None and not isinstance(package_name, str):
        problems.append(f"packageName: expected a string, got {package_name!r}")
    raw_steps = data.get("steps")
    steps: list[Step] = []
    if not isinstance(raw_steps, list) or not raw_steps:
        problems.append(f"steps: expected a non-empty list of {{tool: ..., args: ...}} or {{wait: SECONDS}}, got {raw_steps!r}")
        raw_steps = []
    for index, raw in enumerate(raw_steps):
        step = _parse_step(raw, f"steps[{index}]", problems)
        if step is not None:
            steps.append(step)
    if problems:
        raise SuiteError(source, problems)
    return Plan(source=source, steps=tuple(steps), final=final, package_name=package_name, think_seconds=float(think),
                from_prompt=from_prompt)


def _from_prompt(raw: Any, problems: list[str]) -> tuple[Capture, ...]:
    """`fromPrompt: {name: REGEX}` (or a list of `{name, pattern}`): each name becomes `{name}`, the regex's last match in the prompt (its first group)."""
    if raw is None:
        return ()
    if isinstance(raw, list) and raw and all(isinstance(entry, Mapping) and set(entry) == {"name", "pattern"} for entry in raw):
        raw = {entry["name"]: entry["pattern"] for entry in raw}
    if not isinstance(raw, Mapping) or not raw:
        problems.append(f"fromPrompt: expected a mapping of placeholder names to regular expressions "
                        f"(or a list of {{name: NAME, pattern: REGEX}}), got {raw!r}")
        return ()
    captures = []
    for name, pattern in raw.items():
        if name in PLACEHOLDERS:
            problems.append(f"fromPrompt.{name}: expected a name other than the built-in {{device}} and {{packageName}}")
            continue
        found = capture_problems({"name": name, "pattern": pattern}, f"fromPrompt.{name}")
        problems += found
        if not found:
            captures.append(Capture(name, pattern))
    return tuple(captures)


def _parse_step(raw: Any, where: str, problems: list[str]) -> Step | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected {{tool: NAME, args: {{...}}}} or {{wait: SECONDS}}, got {raw!r}")
        return None
    if "wait" in raw:
        extra = sorted(set(raw) - {"wait"})
        seconds = raw["wait"]
        if extra:
            problems.append(f"{where}: a wait step has only 'wait', also got {', '.join(map(repr, extra))}")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_WAIT_SECONDS:
            problems.append(f"{where}.wait: expected seconds between 0 and {MAX_WAIT_SECONDS}, got {seconds!r}")
            return None
        return WaitStep(float(seconds))
    extra = sorted(set(raw) - {"tool", "args", "expect_error", "capture", "times"})
    if extra:
        problems.append(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; a tool step has 'tool', 'args', 'expect_error', "
                        "'capture', 'times'")
    times = raw.get("times", 1)
    if not ((isinstance(times, int) and not isinstance(times, bool) and 0 <= times <= 50)
            or (isinstance(times, str) and _NAME_PATTERN.fullmatch(times))):
        problems.append(f"{where}.times: expected a count from 0 to 50 or one {{name}}, got {times!r}")
        times = 1
    capture = None
    if "capture" in raw:
        found = capture_problems(raw["capture"], f"{where}.capture")
        problems += found
        if not found:
            capture = Capture(raw["capture"]["name"], raw["capture"]["pattern"])
    tool = raw.get("tool")
    args = raw.get("args", {})
    expect_error = raw.get("expect_error", False)
    ok = True
    if not isinstance(tool, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", tool or ""):
        problems.append(f"{where}.tool: expected a tool name such as 'observe', got {tool!r}")
        ok = False
    if args is None:
        args = {}
    if not isinstance(args, Mapping) or not all(isinstance(key, str) for key in args):
        problems.append(f"{where}.args: expected a mapping of argument names to values, got {args!r}")
        ok = False
    if not isinstance(expect_error, bool):
        problems.append(f"{where}.expect_error: expected true or false, got {expect_error!r}")
        ok = False
    return ToolStep(tool=tool, args=dict(args), expect_error=expect_error, capture=capture, times=times) if ok else None


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file.

    Args:
        path: The plan YAML file.

    Returns:
        The plan.

    Raises:
        SuiteError: The file is missing, is not YAML, or breaks a plan rule.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(source, f"cannot read the plan: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SuiteError(source, f"not valid YAML: {exc}") from exc
    return parse_plan(data, source)


def plan_from_transcript(transcript: Transcript, source: Path) -> Plan:
    """Turn an earlier run's transcript into a plan: its MCP tool calls and its final answer.

    Calls to Claude-internal tools (ToolSearch) and built-in tools are left out: only MCP
    calls reach the phone. Each call expects the error status it had in the original run.

    Args:
        transcript: The parsed `claude.jsonl` of the earlier run.
        source: Where it came from (named in errors).

    Returns:
        The plan.

    Raises:
        SuiteError: The transcript has no MCP tool call or no final answer to replay.
    """
    steps = tuple(
        ToolStep(tool=call.name, args=dict(call.input), expect_error=call.is_error)
        for call in transcript.tool_calls
        if call.name.startswith("mcp__")
    )
    final = transcript.final_text or (transcript.result.result if transcript.result else None)
    problems = []
    if not steps:
        problems.append("no MCP tool call to replay (was it a Claude Code stream-json transcript of a benchmark run?)")
    if not final:
        problems.append("no final answer to replay (the run ended without a final assistant text)")
    if problems:
        raise SuiteError(source, problems)
    return Plan(source=source, steps=steps, final=final)


def find_plan_path(explicit: str | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where the plan is: `--plan`, else `AGENTBENCH_PLAN` (the harness's copy in the workdir), else beside `AGENTBENCH_SUITE_FILE`.

    The harness stages the plan into the agent's workdir and sets `AGENTBENCH_PLAN`; it never
    names the suite file (a confined agent cannot read the checkout). `AGENTBENCH_SUITE_FILE`
    remains for running the replay agent by hand.

    Args:
        explicit: The `--plan` value, if given.
        environ: The environment (`AGENTBENCH_PLAN`, `AGENTBENCH_SUITE_FILE`, `AGENTBENCH_SUITE`).

    Returns:
        The plan path, or None when nothing names one.
    """
    if explicit:
        return Path(explicit)
    if environ.get("AGENTBENCH_PLAN"):
        return Path(environ["AGENTBENCH_PLAN"])
    suite_file = environ.get("AGENTBENCH_SUITE_FILE")
    if suite_file:
        suite_path = Path(suite_file)
        suite_name = environ.get("AGENTBENCH_SUITE") or suite_path.stem
        # benchmark/agent/suites/<name>.yml -> benchmark/agent/plans/<name>.yml
        return suite_path.parent.parent / "plans" / f"{suite_name}.yml"
    return None


def suite_package_name(environ: Mapping[str, str] = os.environ) -> str | None:
    """The app under test: `AGENTBENCH_APP_PACKAGE` (set by the harness), else the suite in `AGENTBENCH_SUITE_FILE`."""
    if environ.get("AGENTBENCH_APP_PACKAGE"):
        return environ["AGENTBENCH_APP_PACKAGE"]
    suite_file = environ.get("AGENTBENCH_SUITE_FILE")
    if not suite_file:
        return None
    try:
        data = yaml.safe_load(Path(suite_file).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    app = data.get("app") if isinstance(data, Mapping) else None
    package = app.get("packageName") if isinstance(app, Mapping) else None
    return package if isinstance(package, str) else None
