"""Command line and ini settings -> AgentbenchOptions, read once (cmdline > ini > default)."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.run.execute import SandboxMode

# This module is imported by every pytest run (the entry point adds the options): what the
# options need beyond that (the device grammar, the seed parser and the session seed, the
# sandbox) is imported where it is used, so a run that gives no agentbench option loads none of
# it (wake.py).

DEFAULT_OUTPUT = "scratch/agent-benchmarks"
DEFAULT_CLAUDE = "claude"


def _agent_command(command: str, invocation_dir: Path) -> str:
    """A program path (`./my-agent`) as an absolute path: the agent starts in its own workdir, not where pytest was called."""
    return str((invocation_dir / command).absolute()) if os.sep in command else command
DEFAULT_SERVER = "agentbench"
DEFAULT_SUITE_DIRS = ("suites",)
#: `suite.params.DEFAULT_SEED`, named here so that adding the options does not import the params
#: machinery (jsonschema); tests/plugin/test_idle.py checks that the two agree.
DEFAULT_SEED = 0
SANDBOX_CHOICES = ("auto", "on", "off")
#: `--agentbench-json -`: the document to stdout instead of a file.
JSON_STDOUT = "-"

# Help texts start with a capital letter and, when a single phrase, end without a period.


#: The most runs `--agentbench-repeat` makes of one suite (a typo such as 1000 would tie up the phones for days).
MAX_REPEAT = 1000


#: Attempts `--agentbench-record-baseline` allows for a clean pass ("allow up to three", the seed).
RECORDING_ATTEMPTS = 3


def attempts_for(options: AgentbenchOptions) -> int:
    """How many runs one suite item may make: up to three when recording a baseline, else one."""
    return RECORDING_ATTEMPTS if options.record_baseline else 1


def _non_empty(what: str):
    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"Invalid {what} {value!r}: expected a non-empty value")
        return value

    parse.__name__ = what
    return parse


def _device_option(value: str) -> str:
    # Checked once here, so a bad --device is one usage error before collection, not an error in every item.
    if not value.strip():
        raise argparse.ArgumentTypeError(f"Invalid device serial {value!r}: expected a non-empty value")
    from pytest_agentbench.device.selection import parse_device_option

    try:
        parse_device_option(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _repeat_option(value: str) -> int:
    text = value.strip()
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"Invalid repeat count {value!r}: expected a whole number from 1 to {MAX_REPEAT}")
    return int(text)


def _seed_option(value: str) -> int:
    from pytest_agentbench.suite.params import parse_seed

    try:
        return parse_seed(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"Invalid seed {value!r}: {exc}") from None


#: Every command-line option `add_options` registered: its dest and its default.
_DEFAULTS: dict[str, Any] = {}


def given_options(config: pytest.Config) -> tuple[str, ...]:
    """The plugin's command-line options this session sets to other than their default (ini settings alone set none)."""
    return tuple(dest for dest, default in _DEFAULTS.items() if config.getoption(dest, default) != default)


def add_options(parser: pytest.Parser) -> None:
    """Register the plugin's options and ini settings in one ``agentbench`` group.

    Args:
        parser: pytest's parser (from ``pytest_addoption``).
    """
    group = parser.getgroup("agentbench", "agent benchmarks on Android devices (pytest-agentbench)")
    group.addoption(
        "--device", dest="agentbench_device", metavar="SERIAL", type=_device_option, default=None,
        help="Device(s) to benchmark on: SERIAL, HOST:PORT/SERIAL on another adb server, comma-separated lists, or sim / sim:N for simulated phones",
    )
    group.addoption(
        "--model", dest="agentbench_model", metavar="MODEL", type=_non_empty("model"), default=None,
        help="Override every suite's claude.model for a controlled comparison",
    )
    group.addoption(
        "--claude", dest="agentbench_claude", metavar="COMMAND", type=_non_empty("agent command"), default=None,
        help=f"Agent executable speaking Claude Code's print-mode contract. Default: {DEFAULT_CLAUDE!r}",
    )
    group.addoption(
        "--server-instructions", dest="agentbench_server_instructions", action="store_true", default=False,
        help="Turn on the MCP server's instructions block for this run",
    )
    group.addoption(
        "--agentbench-output", dest="agentbench_output", metavar="DIR", default=None,
        help=f"Artifact root for run directories (ini: agentbench_output). Default: {DEFAULT_OUTPUT!r}",
    )
    group.addoption(
        "--agentbench-dry-run", dest="agentbench_dry_run", action="store_true", default=False,
        help="Validate suites and print each agent command, environment change and MCP config; touch no device",
    )
    group.addoption(
        "--agentbench-json", dest="agentbench_json", metavar="PATH", default=None,
        help="Write the session's full results (every run's result.json) as one JSON document; - writes it to stdout "
             "(pytest's own report then goes to stderr)",
    )
    group.addoption(
        "--agentbench-repeat", dest="agentbench_repeat", metavar="N", type=_repeat_option, default=1,
        help="Run every suite N times (items suite[r1] ... suite[rN]) and report pass rates with intervals. Default: 1",
    )
    group.addoption(
        "--agentbench-seed", dest="agentbench_seed", metavar="S", type=_seed_option, default=None,
        help="Seed for suites' params: the same seed gives the same task instances on every machine. Default: a secret "
             "one drawn per session and printed in the header (--lf, --ff, --sw and --deselect reuse the last session's, "
             "--agentbench-compare the compared session's)",
    )
    group.addoption(
        "--agentbench-compare", dest="agentbench_compare", metavar="PATH", default=None,
        help="Compare this session with an earlier --agentbench-json document: pass rates, their difference, an exact test",
    )
    group.addoption(
        "--agentbench-html", dest="agentbench_html", metavar="PATH", default=None,
        help="Write the session's HTML report (one self-contained page, screenshots per call) to PATH",
    )
    group.addoption(
        "--agentbench-from-result", dest="agentbench_from_result", metavar="RUN", action="append", default=[],
        help="Re-render an earlier run (its directory or result.json) without running the agent (repeatable)",
    )
    group.addoption(
        "--agentbench-record-baseline", dest="agentbench_record_baseline", action="store_true", default=False,
        help="Run each suite up to three times until a clean pass and write its baseline.yml snippet",
    )
    group.addoption(
        "--agentbench-update-suites", dest="agentbench_update_suites", action="store_true", default=False,
        help="With --agentbench-record-baseline: also write the recorded baseline into the suite file, keeping its comments",
    )
    group.addoption(
        "--agentbench-prove", dest="agentbench_prove", action="store_true", default=False,
        help="Prove every suite's checks with its prove: scenarios (pass, fail, fresh state) and no agent",
    )
    group.addoption(
        "--agentbench-sandbox", dest="agentbench_sandbox", choices=SANDBOX_CHOICES, default="auto",
        help="Confine the agent in an OS sandbox (bubblewrap, docs/isolation.md): auto = where it works, "
             "on = stop if it cannot be had, off = unconfined (recorded and flagged). Default: auto",
    )
    # --agentbench-doctor (pytest_agentbench/doctor/): one block, so other option edits merge around it.
    group.addoption(
        "--agentbench-doctor", dest="agentbench_doctor", action="store_true", default=False,
        help="Read the device and print, per suite, ready or what the image lacks and the remedy; no agent runs (docs/doctor.md)",
    )
    _DEFAULTS.update((option.dest, option.default) for option in group.options)
    parser.addini("agentbench_output", help="Artifact root for run directories, relative to the rootdir", default=DEFAULT_OUTPUT)
    parser.addini(
        "agentbench_suite_dirs", type="args", default=list(DEFAULT_SUITE_DIRS),
        help="Names of directories whose *.yml files are agent benchmark suites",
    )
    parser.addini(
        "agentbench_server", default=DEFAULT_SERVER,
        help="MCP server profile the agent gets: agentbench, auto-mobile, mobile-mcp or adb-shell",
    )
    parser.addini(
        "agentbench_warm_start", type="bool", default=True,
        help="Start the built-in MCP server and the replay agent from a pre-imported interpreter (saves their start-up CPU)",
    )
    parser.addini(
        "agentbench_automobile_dir", default="",
        help="AutoMobile checkout (holding dist/src/index.js) for agentbench_server = auto-mobile, relative to the rootdir",
    )


@dataclass(frozen=True)
class AgentbenchOptions:
    """Every plugin setting, resolved once; paths are absolute."""

    device: str | None
    model: str | None
    claude: str
    server_instructions: bool
    output: Path
    dry_run: bool
    server: str
    suite_dirs: tuple[str, ...]
    automobile_dir: Path | None
    json_path: Path | None = None
    #: `--agentbench-json -`: the session document goes to stdout (and pytest's report to stderr).
    json_stdout: bool = False
    from_results: tuple[Path, ...] = ()
    record_baseline: bool = False
    update_suites: bool = False
    warm_start: bool = True
    repeat: int = 1
    seed: int = DEFAULT_SEED
    compare_path: Path | None = None
    html_path: Path | None = None
    prove: bool = False
    #: `--agentbench-doctor`: each suite item becomes a doctor item (pytest_agentbench/doctor/plugin.py).
    doctor: bool = False
    #: The resolved `--agentbench-sandbox` (`run.confine.SandboxMode`); None: unconfined (options built by hand).
    sandbox: SandboxMode | None = None
    #: What records a seed outside the run directories (the pytest cache, the session document, the
    #: page, JUnit, the compared document): hidden from a confined agent, as the project is.
    private_paths: tuple[Path, ...] = ()

    @property
    def screenshots(self) -> bool:
        """Whether the MCP server saves a screenshot after each device call: only for the HTML report."""
        return self.html_path is not None

    @classmethod
    def from_config(cls, config: pytest.Config) -> AgentbenchOptions:
        """Read cmdline > ini > default.

        Args:
            config: The pytest config.

        Returns:
            The resolved options. A relative ``--agentbench-output`` is taken from the invocation
            directory, relative ini paths from the rootdir.
        """
        rootpath = config.rootpath
        cmdline_output = config.getoption("agentbench_output")
        if cmdline_output:
            output = Path(config.invocation_params.dir, cmdline_output)
        else:
            output = rootpath / (config.getini("agentbench_output") or DEFAULT_OUTPUT)
        automobile_dir = config.getini("agentbench_automobile_dir")
        invocation_dir = Path(config.invocation_params.dir)
        json_path = config.getoption("agentbench_json")
        html_path = config.getoption("agentbench_html")
        record_baseline = bool(config.getoption("agentbench_record_baseline"))
        update_suites = bool(config.getoption("agentbench_update_suites"))
        dry_run = bool(config.getoption("agentbench_dry_run"))
        if dry_run and (record_baseline or config.getoption("agentbench_from_result")):
            raise pytest.UsageError("--agentbench-dry-run runs nothing: it cannot be combined with --agentbench-record-baseline or --agentbench-from-result")
        if update_suites and not record_baseline:
            raise pytest.UsageError("--agentbench-update-suites only works with --agentbench-record-baseline")
        repeat = int(config.getoption("agentbench_repeat") or 1)
        if repeat > 1 and record_baseline:
            raise pytest.UsageError("--agentbench-repeat records no baseline: run --agentbench-record-baseline without it")
        if repeat > 1 and config.getoption("agentbench_from_result"):
            raise pytest.UsageError("--agentbench-repeat runs suites; --agentbench-from-result re-renders saved runs: use one of them")
        compare = config.getoption("agentbench_compare")
        prove = bool(config.getoption("agentbench_prove"))
        if prove and (dry_run or record_baseline or config.getoption("agentbench_from_result")):
            raise pytest.UsageError("--agentbench-prove drives the device without an agent: it cannot be combined with "
                                    "--agentbench-dry-run, --agentbench-record-baseline or --agentbench-from-result")
        doctor = bool(config.getoption("agentbench_doctor", False))
        if doctor and (dry_run or prove or record_baseline or config.getoption("agentbench_from_result") or repeat > 1):
            raise pytest.UsageError("--agentbench-doctor reads the device and runs no suite: it cannot be combined with "
                                    "--agentbench-dry-run, --agentbench-prove, --agentbench-record-baseline, "
                                    "--agentbench-from-result or --agentbench-repeat")
        from pytest_agentbench.run.execute import SandboxMode, deferred_mode
        from pytest_agentbench.sessionseed import resolve as resolve_seed
        from pytest_agentbench.sessionseed import seed_records

        requested = config.getoption("agentbench_sandbox") or "auto"
        if dry_run or prove or doctor or config.getoption("agentbench_from_result"):
            # No agent runs: nothing to confine, and no probe.
            sandbox = SandboxMode("off", requested, reason="no agent runs in this session")
        else:
            # Probed when the first run needs it, or before collection when the session will run
            # agents (usage.py), so --co, --fixtures or --help start no bwrap.
            sandbox = deferred_mode(requested)
        private = [config.getoption("agentbench_json"), html_path, compare, getattr(config.option, "xmlpath", None)]
        private_paths = (*seed_records(config), *((invocation_dir / path).absolute() for path in private if path and path != JSON_STDOUT))
        return cls(
            sandbox=sandbox,
            private_paths=tuple(private_paths),
            device=config.getoption("agentbench_device"),
            model=config.getoption("agentbench_model"),
            claude=_agent_command(config.getoption("agentbench_claude") or DEFAULT_CLAUDE, invocation_dir),
            server_instructions=bool(config.getoption("agentbench_server_instructions")),
            output=output.absolute(),
            dry_run=dry_run,
            server=(config.getini("agentbench_server") or DEFAULT_SERVER).strip(),
            suite_dirs=tuple(config.getini("agentbench_suite_dirs") or DEFAULT_SUITE_DIRS),
            automobile_dir=(rootpath / automobile_dir).absolute() if automobile_dir else None,
            json_path=(invocation_dir / json_path).absolute() if json_path and json_path != JSON_STDOUT else None,
            json_stdout=json_path == JSON_STDOUT,
            from_results=tuple((invocation_dir / p).absolute() for p in config.getoption("agentbench_from_result") or ()),
            record_baseline=record_baseline,
            update_suites=update_suites,
            warm_start=bool(config.getini("agentbench_warm_start")),
            repeat=repeat,
            seed=resolve_seed(config).value,
            compare_path=(invocation_dir / compare).absolute() if compare else None,
            prove=prove,
            doctor=doctor,
            html_path=(invocation_dir / html_path).absolute() if html_path else None,
        )
