"""The plugin where it is not used (wake.py): a pytest run without its options starts no process and imports nothing heavy; informational commands need no agent, device or sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from suitefiles import PROMPT, make_suites, suite_text

from pytest_agentbench.options import DEFAULT_SEED
from pytest_agentbench.wake import is_awake

#: Programs the plugin could start (the sandbox probe, an adb server, git, the agent's runtime):
#: fakes of them on PATH write their name to a log. `claude`, the default agent, is not on PATH.
RECORDED = ("bwrap", "adb", "git", "node", "npm")
#: What an idle run may import of the package: the entry point and what its hooks need.
IDLE_MODULES = {"pytest_agentbench", "pytest_agentbench.plugin", "pytest_agentbench.options", "pytest_agentbench.usage",
                "pytest_agentbench.wake", "pytest_agentbench.fixtures"}
HEAVY = ("jsonschema", "mcp", "yaml", "defusedxml", "ppadb", "jinja2", "openai", "httpx", "pydantic", "numpy", "scipy")

# Runs pytest in this interpreter after an audit hook that records every process started from a
# frame of the package, then prints what it saw: the exit code, those starts and sys.modules.
SCRIPT = r"""
import json, sys
runs = json.loads(sys.argv[1])
started = []

def hook(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.forkpty", "os.system", "os.spawn"):
        frame = sys._getframe(1)
        while frame is not None:
            if "pytest_agentbench" in frame.f_code.co_filename:
                started.append(f"{event} {args!r:.200} from {frame.f_code.co_filename}:{frame.f_lineno}")
                break
            frame = frame.f_back

sys.addaudithook(hook)
import pytest

codes = [int(pytest.main(args)) for args in runs]
print("RESULT " + json.dumps({"codes": codes, "started": started, "modules": sorted(sys.modules)}))
"""


def _fake_programs(directory: Path, log: Path) -> None:
    directory.mkdir()
    for name in RECORDED:
        program = directory / name
        program.write_text(f"#!/bin/sh\necho {name} \"$@\" >> '{log}'\nexit 1\n", encoding="utf-8")
        program.chmod(0o755)


def run_recorded(project: Path, tmp_path: Path, *runs: list[str]) -> tuple[dict, list[str]]:
    """Run pytest (once per argument list) in one fresh interpreter in `project`; its result and the fake programs' log."""
    fakes, log = tmp_path / "fakes", tmp_path / "started.log"
    _fake_programs(fakes, log)
    # The interpreter's directory keeps the console scripts; /usr/bin and /bin come after the fakes.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "AGENTBENCH_"))}
    env["PATH"] = os.pathsep.join([str(fakes), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = ""
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([list(args) for args in runs])], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    line = next((line for line in done.stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("RESULT "):]), log.read_text().splitlines() if log.exists() else []


def test_a_run_that_does_not_use_the_plugin_starts_no_process_and_imports_nothing_heavy(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_one.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    # -p no:benchmark: pytest-benchmark asks git for the project's name at every start.
    common = ["-q", "-p", "no:cacheprovider", "-p", "no:benchmark"]
    used, started = run_recorded(project, tmp_path, common)
    assert used["codes"] == [0]
    assert used["started"] == [] and started == []
    (tmp_path / "without").mkdir()
    unused, _ = run_recorded(project, tmp_path / "without", [*common, "-p", "no:agentbench"])
    extra = set(used["modules"]) - set(unused["modules"])
    assert {name for name in extra if name.startswith("pytest_agentbench")} <= IDLE_MODULES
    assert sorted(name for name in extra if name.split(".")[0] in HEAVY) == []


@pytest.mark.parametrize("command", [["--collect-only"], ["--fixtures"], ["--fixtures-per-test"], ["--markers"], ["--help"], ["--version"]],
                         ids=lambda command: command[0])
def test_informational_commands_need_no_agent_device_or_sandbox(tmp_path: Path, command: list[str]) -> None:
    project = tmp_path / "project"
    root = project / "benchmark" / "agent"
    (root / "suites").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "prompts" / "task.txt").write_text(PROMPT, encoding="utf-8")
    (root / "suites" / "demo.yml").write_text(suite_text("demo"), encoding="utf-8")
    # The suite is named, so the plugin wakes; `claude` (the default agent) is not on PATH.
    result, started = run_recorded(project, tmp_path, [*command, "-p", "no:cacheprovider", "-p", "no:benchmark", "benchmark/"])
    assert result["codes"] == [0], result
    assert result["started"] == [] and started == []


def test_a_test_asking_for_a_fixture_wakes_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_dir="def test_dir(agentbench_run_dir):\n    assert agentbench_run_dir.is_dir()\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert list((pytester.path / "scratch" / "agent-benchmarks" / "test_dir").iterdir())


@pytest.mark.parametrize(("args", "ini", "awake"), [
    ([], "", False),
    ([], "agentbench_server = agentbench\nagentbench_suite_dirs = suites", False),
    (["tests"], "", False),
    (["--agentbench-repeat", "2"], "", True),
    (["--agentbench-sandbox", "off"], "", True),
    (["benchmark/"], "", True),
], ids=["nothing", "ini-settings-only", "a-tests-folder", "an-option", "another-option", "a-suite-named"])
def test_the_plugin_wakes_for_its_options_and_named_suites(pytester: pytest.Pytester, args: list[str], ini: str, awake: bool) -> None:
    make_suites(pytester, "demo")
    (pytester.path / "tests").mkdir()
    pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfigure(*args)
    assert is_awake(config) is awake


def test_the_entry_points_default_seed_is_the_params_one() -> None:
    from pytest_agentbench.suite.params import DEFAULT_SEED as PARAMS_DEFAULT_SEED

    assert DEFAULT_SEED == PARAMS_DEFAULT_SEED
