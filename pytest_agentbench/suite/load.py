"""Suite YAML file -> validated Suite (JSON Schema in suite.schema.json beside this module + the rules a schema cannot say)."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import yaml
from jsonschema import Draft202012Validator

from pytest_agentbench.checks import DeviceCheck, SuiteChecks, parse_device_checks, suite_checks
from pytest_agentbench.checks.seed import SeedStep, parse_seeds, seed_problems, seeds_cleanup_watches
from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite import params
from pytest_agentbench.suite.device_rules import device_problems
from pytest_agentbench.suite.schema import key_path, python_type, schema_problems, show, suite_schema

if TYPE_CHECKING:
    from pytest_agentbench.suite.params import Instance

PLACEHOLDERS = ("deviceSerial", "packageName", "runDirectory")
# Top-level keys whose strings seeded params never fill: the suite's identity and files, the app,
# the declaration itself, the recorded baseline, and the agent settings (of which only the system
# prompt is text; see fillable). Every other key is filled, so a key added later (device checks)
# gets its {placeholders} filled without a change here.
UNFILLED_KEYS = frozenset({"name", "platform", "prompt", "app", "params", "baseline", "baselineToolSequence", "claude"})
# Anything that looks like a placeholder; other braces (JSON in a prompt) are left alone.
_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Android SharedPreferences are read back by JavaScript-era tooling too: larger ints lose digits.
MAX_SAFE_INTEGER = 2**53 - 1

PrefValue = Union[bool, int, float, str, tuple[str, ...]]


@dataclass(frozen=True)
class AppSpec:
    """The app under test; ``apk_path`` is absolute (resolved against the rootdir) or None."""

    package_name: str
    apk_path: Path | None
    #: Other apps the job touches (`app.alsoUses`): preflight records each one's build too.
    also_uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class PreflightSpec:
    """How preflight puts the app into its start state (``launch_uri`` None: launcher activity)."""

    clear_app_data: bool
    shared_preferences: dict[str, dict[str, PrefValue]]
    launch_uri: str | None
    settle_seconds: float
    start_screen_includes: tuple[str, ...]
    #: What the host puts on the phone before the run (`preflight.seed`), in order.
    seed: tuple[SeedStep, ...] = ()
    #: `settleSleep`: sleep the whole `settle_seconds` even with `start_screen_includes` (no poll).
    settle_sleep: bool = False


@dataclass(frozen=True)
class ClaudeSpec:
    """Typed agent settings; ``allowed_tools`` None means the server profile's default."""

    model: str | None
    append_system_prompt: str | None
    allowed_tools: tuple[str, ...] | None
    disallowed_tools: tuple[str, ...]
    max_budget_usd: float | None
    timeout_seconds: float
    #: `idleTimeoutSeconds`: end the run when the stream is silent this long; None = off.
    idle_timeout_seconds: float | None = None


@dataclass(frozen=True)
class VerifySpec:
    """The hard checks: texts the final answer and the post-run screen must show, device checks, shell use.

    ``device`` keeps the validated `verify.device` entries as written (the digest and cleanup's
    watched sources read them); ``device_checks`` are the same entries as typed specs, parsed
    once, here, whenever the spec is built (a suite instance with filled values gets its own).
    ``spaces`` (an instance's only) say, per entry, which strings held a drawn `{param}` and the
    values each could have been (`suite.spaces`), so the checks look for their other candidates.
    """

    answer_includes: tuple[str, ...]
    screen_includes: tuple[str, ...]
    device: tuple[Mapping[str, Any], ...] = ()
    no_shell: bool = False
    spaces: tuple[Mapping[str, str], ...] = ()
    device_checks: tuple[DeviceCheck, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_checks", parse_device_checks(self.device, self.spaces))


@dataclass(frozen=True)
class Suite:
    """One validated suite file; ``line`` is the 0-based line of its ``name`` key."""

    path: Path
    name: str
    line: int
    platform: str
    prompt_path: Path
    prompt_text: str
    app: AppSpec
    preflight: PreflightSpec
    claude: ClaudeSpec
    verify: VerifySpec
    failure_patterns: tuple[str, ...]
    ignored_failure_patterns: tuple[str, ...]
    baseline: dict | None
    baseline_tool_sequence: tuple[str, ...]
    raw: dict
    #: The validated `cleanup:` steps (mappings), run after the post-run reads.
    cleanup: tuple[Mapping[str, Any], ...] = ()
    #: The validated `prove:` block, or None.
    prove: Mapping[str, Any] | None = None
    #: The seeded task instance this suite is (None: the suite as loaded, nothing filled).
    instance: Instance | None = None
    #: A harness demo (`demo: true`): a job of a dropped kind, run and shown but never pooled into
    #: the session's core statistics (docs/jobs.md, docs/statistics.md).
    demo: bool = False
    #: The suite as declared, before its params were filled (None: this is it). Its raw mapping
    #: and prompt text feed the suite digest, so the digest covers the declaration, not the values.
    template: Suite | None = None

    @property
    def declared(self) -> Suite:
        """The suite as declared in its file: the template of an instance, else itself."""
        return self.template if self.template is not None else self


class _StrictMappings:
    """Mixin: reject duplicate keys (a later one would silently replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _value_node in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key; the base class reports it with its position
                break
            if duplicate:
                first = seen[key].start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first defined on line {first})", key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _StrictLoader(_StrictMappings, yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys and keeps dates and yes/no/on/off as strings (YAML 1.2 style).

    Pure Python: its errors carry the marks `_yaml_error_text` turns into the line of the fault.
    """


# Suites in the seed were read by a YAML 1.2 parser: there, `on`/`yes` are strings and dates are
# not special. Keep that meaning so `wifi: on` is not silently a boolean.
_YAML12_RESOLVERS = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.yaml_implicit_resolvers = _YAML12_RESOLVERS
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

#: The same rules over libyaml's parser, ten times faster (every session parses every suite it
#: collects); a file it rejects is parsed again by `_StrictLoader` for the error's exact place.
_FastStrictLoader: type | None = None
if getattr(yaml, "CSafeLoader", None) is not None:
    class _FastStrictLoader(_StrictMappings, yaml.CSafeLoader):  # type: ignore[no-redef]
        """`_StrictLoader`'s rules over libyaml."""

    _FastStrictLoader.yaml_implicit_resolvers = _StrictLoader.yaml_implicit_resolvers


def _non_string_keys(value: Any, path: list[Any]) -> list[str]:
    problems: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                problems.append(f"{key_path([*path, str(key)])}: expected a string key, got {show(key)} ({python_type(key)}); quote it")
            else:
                problems += _non_string_keys(child, [*path, key])
    elif isinstance(value, list):
        for index, child in enumerate(value):
            problems += _non_string_keys(child, [*path, index])
    return problems


def fillable(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a suite mapping whose strings seeded params fill.

    Every top-level key except UNFILLED_KEYS, plus `claude.appendSystemPrompt`. The prompt file's
    text is filled too (it is not part of the mapping).
    """
    parts = {key: value for key, value in data.items() if key not in UNFILLED_KEYS}
    claude = data.get("claude")
    if isinstance(claude, Mapping) and "appendSystemPrompt" in claude:
        parts["claude"] = {"appendSystemPrompt": claude["appendSystemPrompt"]}
    return parts


def _declared_params(data: Mapping[str, Any]) -> dict[str, Any]:
    declaration = data.get("params")
    return dict(declaration) if isinstance(declaration, Mapping) else {}


def _pref_value_problems(where: str, value: Any) -> list[str]:
    """Rules for a SharedPreferences value that the schema's types cannot express."""
    if isinstance(value, bool) or isinstance(value, str):
        return []
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            return [f"{where}: expected a safe integer (|n| <= 2**53 - 1), got {value}"]
        return []
    if isinstance(value, float):
        if not math.isfinite(value):
            return [f"{where}: expected a finite fraction, got {value}"]
        try:
            stored = struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return [f"{where}: expected a fraction within the 32-bit float range (about ±3.4e38), got {value}"]
        if value != 0 and stored == 0:
            return [f"{where}: expected a fraction a 32-bit float can hold, got {value} (it would be stored as 0)"]
        return []
    if isinstance(value, list):
        duplicates = sorted({v for v in value if isinstance(v, str) and value.count(v) > 1})
        return [f"{where}: string sets hold each value once, got duplicate {d!r}" for d in duplicates]
    return []


def _read_prompt(suite_path: Path, prompt: str, problems: list[str], declared: Mapping[str, Any]) -> tuple[Path, str]:
    prompt_path = (suite_path.parent / prompt).resolve()
    if Path(prompt).is_absolute():
        problems.append(f"prompt: expected a path relative to the suite file, got absolute {prompt!r}")
        return prompt_path, ""
    if not prompt.endswith(".txt"):
        problems.append(f"prompt: expected a .txt file, got {prompt!r}")
        return prompt_path, ""
    if not prompt_path.is_file():
        problems.append(f"prompt: expected an existing file relative to the suite, got {prompt!r} ({prompt_path} does not exist)")
        return prompt_path, ""
    try:
        text = prompt_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"prompt: expected UTF-8 text in {prompt!r}, got an undecodable byte at offset {exc.start}")
        return prompt_path, ""
    if not text.strip():
        problems.append(f"prompt: expected a non-empty prompt, got an empty file {prompt!r}")
    problems += params.placeholder_problems(text, declared, where="prompt")
    return prompt_path, text


def _code_rules(path: Path, data: dict, rootdir: Path, problems: list[str]) -> tuple[Path, str]:
    """Rules the schema cannot say; each part is checked only when its shape is right."""
    name = data.get("name")
    if isinstance(name, str) and name != path.stem:
        problems.append(f"name: expected {path.stem!r} (the file name without .yml), got {name!r}")
    declared = _declared_params(data)
    problems += params.rule_problems(declared)
    prompt_path, prompt_text = path.parent / "?", ""
    if isinstance(data.get("prompt"), str) and data["prompt"]:
        prompt_path, prompt_text = _read_prompt(path, data["prompt"], problems, declared)
    # Unknown {placeholders} anywhere params would fill them: a typo must not reach a device check.
    # A prove scenario may also use the run-time {device} and the values its steps capture.
    parts = fillable(data)
    prove = parts.pop("prove", None)
    problems += params.placeholder_problems(parts, declared, where="")
    if isinstance(prove, dict):
        problems += _prove_placeholder_problems(prove, declared)
    app = data.get("app")
    if isinstance(app, dict) and isinstance(app.get("apkPath"), str) and Path(app["apkPath"]).is_absolute():
        problems.append(f"app.apkPath: expected a path relative to the rootdir ({rootdir}), got absolute {app['apkPath']!r}")
    preflight = data.get("preflight")
    prefs = preflight.get("sharedPreferences") if isinstance(preflight, dict) else None
    if isinstance(prefs, dict):
        for file_name, values in prefs.items():
            if isinstance(values, dict):
                for key, value in values.items():
                    problems += _pref_value_problems(f"preflight.sharedPreferences.{file_name}.{key}", value)
    if isinstance(preflight, dict):
        problems += seed_problems(preflight.get("seed"))
    problems += device_problems(data)
    return prompt_path, prompt_text


def _prove_placeholder_problems(prove: Mapping[str, Any], declared: Mapping[str, Any]) -> list[str]:
    """Unknown placeholders in a prove block: each scenario may use {device}, {packageName} and what its steps captured."""
    problems: list[str] = []
    scenarios = [("prove.pass", prove.get("pass"))]
    scenarios += [(f"prove.fail[{index}]", scenario) for index, scenario in enumerate(prove.get("fail") or [])]
    for where, scenario in scenarios:
        if not isinstance(scenario, Mapping):
            continue
        steps = scenario.get("steps") if isinstance(scenario.get("steps"), list) else []
        captured = tuple(step["capture"]["name"] for step in steps
                         if isinstance(step, Mapping) and isinstance(step.get("capture"), Mapping)
                         and isinstance(step["capture"].get("name"), str))
        # What prove's player fills: the claimed serial, the app's package, the captures; not the
        # run-time {deviceSerial} or {runDirectory}, which would reach the device as literal text.
        keep = ("device", "packageName", *captured)
        problems += params.placeholder_problems({key: value for key, value in scenario.items() if key != "name"},
                                                declared, where=where, keep=keep)
    return problems


def _yaml_error_text(exc: yaml.MarkedYAMLError) -> str:
    """A YAML error as `line L, column C: what`, L being the line of the fault, not where the parser noticed it.

    The scanner reports a token it could not finish (a key without its `:`, an unclosed quote)
    where it gave up, at the start of a later line: the fault is where the token began. The
    parser reports an unclosed `[` or `{` where the next line's content is not `,`: the fault
    is the bracket's line, and the line it noticed is named too.
    """
    problem, context = exc.problem_mark, exc.context_mark
    what = " ".join(part for part in (exc.context, exc.problem) if part)
    mark, noticed = problem or context, None
    if problem is not None and context is not None and context.line < problem.line:
        if isinstance(exc, yaml.scanner.ScannerError) and problem.column == 0:
            mark = context
        elif isinstance(exc, yaml.parser.ParserError) and (exc.context or "").startswith("while parsing a flow"):
            mark, noticed = context, problem
    if mark is None:
        return f"somewhere: {what}"
    where = f"line {mark.line + 1}, column {mark.column + 1}: {what}"
    return where + (f" (on line {noticed.line + 1}, column {noticed.column + 1})" if noticed is not None else "")


def _parse_fast(text: str) -> tuple[Any, Any] | None:
    """(root node, data) by libyaml, or None when it is missing or rejects the text (the pure parser then says where)."""
    if _FastStrictLoader is None:
        return None
    loader = _FastStrictLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _parse_yaml(path: Path, problems: list[str]) -> tuple[Any, int]:
    """Read the one YAML document of a suite file; returns (data, 0-based line of `name`)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"(file): expected UTF-8 text, got an undecodable byte at offset {exc.start}")
        return None, 0
    parsed = _parse_fast(text)
    if parsed is not None:
        node, data = parsed
    else:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as exc:
            problems.append(f"(yaml) {_yaml_error_text(exc)}")
            return None, 0
        except yaml.YAMLError as exc:
            problems.append(f"(yaml): {exc}")
            return None, 0
        finally:
            loader.dispose()
    line = 0
    if isinstance(node, yaml.MappingNode):
        for key_node, _value in node.value:
            if key_node.value == "name":
                line = key_node.start_mark.line
    return data, line


def validate_suite_data(path: Path, data: Any, rootdir: Path) -> tuple[list[str], Path, str]:
    """Check parsed suite data against the schema and the code rules.

    Args:
        path: The suite file (for the name and prompt rules).
        data: The parsed YAML document.
        rootdir: The directory ``app.apkPath`` is relative to.

    Returns:
        (problems, resolved prompt path, prompt text); no problems means the suite is valid.
    """
    if not isinstance(data, dict):
        return [f"(top level): expected a mapping of suite keys, got {show(data)} ({python_type(data)})"], path, ""
    problems = _non_string_keys(data, [])
    if problems:
        return problems, path, ""
    validator = Draft202012Validator(suite_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        problems += schema_problems(error)
    prompt_path, prompt_text = _code_rules(path, data, rootdir, problems)
    return problems, prompt_path, prompt_text


def _pref_value(value: Any) -> PrefValue:
    return tuple(value) if isinstance(value, list) else value


def app_spec(app: Mapping[str, Any], base: Path) -> AppSpec:
    """A validated `app` mapping -> AppSpec; `apkPath` is resolved against `base` (the rootdir)."""
    apk = app.get("apkPath")
    return AppSpec(package_name=app["packageName"], apk_path=(Path(base) / apk).resolve() if apk else None,
                   also_uses=tuple(package for package in app.get("alsoUses", ()) if package != app["packageName"]))


def preflight_spec(preflight: Mapping[str, Any]) -> PreflightSpec:
    """A validated `preflight` mapping -> PreflightSpec, with the schema's defaults filled in."""
    return PreflightSpec(
        clear_app_data=preflight.get("clearAppData", True),
        shared_preferences={
            file_name: {key: _pref_value(value) for key, value in values.items()}
            for file_name, values in (preflight.get("sharedPreferences") or {}).items()
        },
        launch_uri=preflight.get("launchUri"),
        settle_seconds=float(preflight.get("settleSeconds", 2)),
        start_screen_includes=tuple(preflight.get("startScreenIncludes", ())),
        seed=parse_seeds(preflight.get("seed")),
        settle_sleep=bool(preflight.get("settleSleep", False)),
    )


def build_suite(path: Path, data: dict, line: int, app: AppSpec, prompt_path: Path, prompt_text: str,
                *, spaces: tuple[Mapping[str, str], ...] = ()) -> Suite:
    """Validated suite data -> the typed Suite (load_suite's last step; instances rebuild through it, with `spaces`)."""
    claude = data.get("claude", {})
    verify = data["verify"]
    allowed = claude.get("allowedTools")
    budget = claude.get("maxBudgetUsd")
    idle = claude.get("idleTimeoutSeconds")
    return Suite(
        path=path,
        name=data["name"],
        line=line,
        platform=data["platform"],
        prompt_path=prompt_path,
        prompt_text=prompt_text,
        app=app,
        preflight=preflight_spec(data.get("preflight", {})),
        claude=ClaudeSpec(
            model=claude.get("model"),
            append_system_prompt=claude.get("appendSystemPrompt"),
            allowed_tools=tuple(allowed) if allowed is not None else None,
            disallowed_tools=tuple(claude.get("disallowedTools", ())),
            max_budget_usd=float(budget) if budget is not None else None,
            timeout_seconds=float(claude.get("timeoutSeconds", 900)),
            idle_timeout_seconds=float(idle) if idle is not None else None,
        ),
        verify=VerifySpec(
            answer_includes=tuple(verify.get("answerIncludes", ())),
            screen_includes=tuple(verify.get("screenIncludes", ())),
            device=tuple(verify.get("device", ())),
            no_shell=bool(verify.get("noShell", False)),
            spaces=spaces,
        ),
        failure_patterns=tuple(data.get("failurePatterns", ())),
        ignored_failure_patterns=tuple(data.get("ignoredFailurePatterns", ())),
        # An empty block (`baseline: {}`, the seed's placeholder) means "no baseline yet".
        baseline=data.get("baseline") or None,
        baseline_tool_sequence=tuple(data.get("baselineToolSequence", ())),
        raw=data,
        cleanup=tuple(data.get("cleanup", ())),
        prove=data.get("prove"),
        demo=bool(data.get("demo", False)),
    )


def load_suite(path: Path, rootdir: Path) -> Suite:
    """Load and validate one suite file, reporting every problem at once.

    Args:
        path: The suite's ``.yml`` file.
        rootdir: The project root; ``app.apkPath`` is relative to it.

    Returns:
        The validated Suite.

    Raises:
        SuiteError: With one problem per broken rule, each naming the key path, the value and
            what was expected (YAML syntax errors name the line).
    """
    path = Path(path)
    # Name the file as the user sees it in node ids: relative to the rootdir when inside it.
    shown = path.relative_to(rootdir) if path.is_relative_to(rootdir) else path
    problems: list[str] = []
    data, line = _parse_yaml(path, problems)
    if problems:
        raise SuiteError(shown, problems)
    problems, prompt_path, prompt_text = validate_suite_data(path, data, Path(rootdir))
    if problems:
        raise SuiteError(shown, problems)
    return build_suite(path, data, line, app_spec(data["app"], Path(rootdir)), prompt_path, prompt_text)


def fill_placeholders(text: str, *, device_serial: str, package_name: str, run_directory: str) -> str:
    """Replace ``{deviceSerial}``, ``{packageName}`` and ``{runDirectory}``; other braces stay.

    Args:
        text: A prompt or system prompt.
        device_serial: The target device's serial.
        package_name: The app under test.
        run_directory: The run directory path.

    Returns:
        The filled text.
    """
    values = {"deviceSerial": device_serial, "packageName": package_name, "runDirectory": run_directory}
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def checks_of_suite(suite: Suite) -> SuiteChecks:
    """A suite -> its SuiteChecks for a run: its typed device checks, watching every seed it can run (preflight's and its proofs') and the whole phone."""
    return suite_checks(suite.verify.device, suite.cleanup, seeds_cleanup_watches(suite.preflight.seed, suite.prove),
                        device_wide=True, parsed=suite.verify.device_checks)
