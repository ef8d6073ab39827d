"""Every `pytest ...` line in README.md and docs/*.md -> run on a machine with no phone, as written (simulated phones behind a private adb server).

A documented command that fails on the reader's first try is a defect. Each line found in a
shell block is looked up in COMMANDS, which says how it runs here: as written; narrowed to a
suite or two where the full line would run every suite many times, or once where another test
runs that whole (named at the line; the narrowing is an extra `-k`, never a change of what the
line means); collected only (`pytest tests/...`, which would
run this very suite); or, for the lines that name a real phone, refused before collection with
one usage error that says what to do. A new documented line that COMMANDS does not know fails
the first test, so nobody adds a command without its proof.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, free_port, start_private_adb_server
from fakeagents import run_in_own_group, session_env

from pytest_agentbench.device.adb import Adb, AdbEndpoint

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
SESSION_TIMEOUT_S = 900
_FENCE = re.compile(r"^```(\w*)\s*$")
_COMMAND = re.compile(r"^(?:\$ )?(?:[^\s=]+=\S+\s+)*pytest\s")
_COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class Documented:
    """One documented command: where it is, the exports its block made before it, the line itself."""

    where: str
    exports: tuple[tuple[str, str], ...]
    line: str


def documented_commands() -> list[Documented]:
    """Every pytest line of the shell blocks of README.md and docs/*.md, continuations joined, comments and prompts dropped."""
    found = []
    for path in DOCUMENTS:
        lines = path.read_text(encoding="utf-8").splitlines()
        language, exports, index = None, [], 0
        while index < len(lines):
            start = index + 1
            text = lines[index]
            index += 1
            fence = _FENCE.match(text.strip())
            if fence:
                language = None if language is not None else fence.group(1)
                exports = []
                continue
            if language is None or language not in ("", "sh", "bash", "console"):
                continue
            while text.endswith("\\") and index < len(lines):
                text = text[:-1].rstrip() + " " + lines[index].strip()
                index += 1
            text = _COMMENT.sub("", text.strip())
            if text.startswith("export "):
                exports += [tuple(item.split("=", 1)) for item in shlex.split(text)[1:] if "=" in item]
                continue
            # `pip install -e '.[dev]' && pytest ...`: the pytest part is the documented command.
            text = text.split("&& ")[-1].strip()
            if _COMMAND.match(text):
                found.append(Documented(f"{path.relative_to(REPO)}:{start}", tuple(exports), text.removeprefix("$ ")))
    return found


@dataclass(frozen=True)
class How:
    """How one documented line runs here.

    kind: `run` (exit status `status`), `collect` (`--co -q`, from the repository), or `no-phone`
    (a usage error before collection whose message says what to do).
    narrow: Arguments added at the end of the line (so they win) to keep a full-benchmark line affordable.
    replace: (placeholder, value) pairs for the line's `<...>` placeholders.
    expect: Text the output must contain.
    """

    kind: str
    status: int = 0
    narrow: tuple[str, ...] = ()
    replace: tuple[tuple[str, str], ...] = ()
    expect: tuple[str, ...] = ()


REPLAY = "--device sim --claude agentbench-replay"
ONE = ("-k", "bug_repro")
#: Ten runs of one suite are ten runs of the same thing here: three show the statistics as well.
ONE_THREE_TIMES = ("-k", "bug_repro", "--agentbench-repeat", "3")
#: Every documented line -> how it runs here. The keys are the lines as the docs have them.
COMMANDS: dict[str, How] = {
    # The whole benchmark, every suite passing, is tests/e2e/test_jobs_e2e.py's (twice, on one phone).
    f"pytest benchmark/ {REPLAY}": How("run", narrow=("-k", "bug_repro or wifi_on"), expect=("2 passed",)),
    "pytest benchmark/ --agentbench-dry-run": How("run", expect=("21 passed",)),
    "pytest benchmark/ --device sim --agentbench-prove": How("run", narrow=("-k", "wifi_on")),
    # Three instances of every suite, proven, is tests/e2e/test_instances_e2e.py's; here one seeded suite's.
    "pytest benchmark/ --device sim --agentbench-prove --agentbench-repeat 3": How("run", narrow=("-k", "testbed_pickup_code"),
                                                                                    expect=("18 passed",)),  # 3 x (pass, 4 fails, fresh)
    "pytest benchmark/ -p agentbench --device emulator-5554": How("no-phone"),
    f"pytest benchmark/ -k bug_repro {REPLAY} --junitxml=report.xml": How("run", expect=("1 passed",)),
    "pytest benchmark/ -n 4 --device sim:4 --claude agentbench-replay": How("run", narrow=("-k", "bug_repro or wifi_on"),
                                                                           expect=("2 passed",)),
    f"pytest benchmark/ {REPLAY} --agentbench-repeat 10 --agentbench-json a.json": How("run", narrow=ONE_THREE_TIMES, expect=("3 passed",)),
    f"pytest benchmark/ {REPLAY} --agentbench-repeat 10 --agentbench-compare a.json": How("run", narrow=ONE_THREE_TIMES,
                                                                                         expect=("agentbench comparison",)),
    f"pytest benchmark/ {REPLAY} --agentbench-html report.html": How("run", narrow=ONE, expect=("agentbench html report:",)),
    f"pytest benchmark/ {REPLAY} --agentbench-json - | jq .counts": How("run", narrow=ONE, expect=('"passed": 1',)),
    # The model endpoint of the docs, with nothing listening: the run ends incomplete, saying so.
    "AGENTBENCH_OPENAI_BASE_URL=http://127.0.0.1:8077/v1 pytest benchmark/ --device sim --claude agentbench-agent --model my-served-model":
        # No model server listens here: refused before any run, naming the URL (a reader's first try says what to start).
        How("run", status=4, narrow=("-k", "wifi_on"), expect=("(AGENTBENCH_OPENAI_BASE_URL) does not answer: [Errno 111] Connection refused",)),
    "pytest benchmark/ --device sim --claude agentbench-agent --model <model>":
        How("run", status=4, narrow=("-k", "wifi_on"), replace=(("<model>", "served-model"),),
            expect=("(AGENTBENCH_OPENAI_BASE_URL) does not answer: [Errno 111] Connection refused",)),
    "pytest tests/ -n auto --dist loadscope": How("collect"),
    'pytest tests/ -m "not e2e" -n auto': How("collect"),
    "pytest tests/ -m e2e": How("collect"),
    'pytest benchmark/agent/suites/bug-repro.yml --device "$(cat serial)" --claude agentbench-replay': How("run", expect=("1 passed",)),
    'pytest benchmark/agent/suites/bug-repro.yml --device "$(cat serial)" --claude agentbench-replay -v': How("run", expect=("1 passed",)),
    'pytest benchmark/agent/suites/bug-repro.yml --device "$(cat serial)" --claude agentbench-replay --agentbench-record-baseline '
    "--agentbench-update-suites -rA": How("run", expect=("recorded in 1 attempt(s)",)),
    "pytest tests/test_my_app.py --device sim": How("run", expect=("1 passed",)),
    'pytest benchmark/ -k "chrome or clock" --device emulator-5554': How("no-phone"),
    # Every suite's proofs, the fresh ones among them, are tests/e2e/test_jobs_e2e.py's.
    "pytest benchmark/ --device sim --agentbench-prove -k prove-fresh": How("run", narrow=("-k", "prove-fresh and (wifi_on or clock_alarm_volume)"),
                                                                             expect=("2 passed",)),
    'pytest benchmark/ --device emulator-5554 --agentbench-prove -k "wifi_on and prove-fail"': How("no-phone"),
    "pytest benchmark/agent/suites/bug-repro.yml --device sim --claude agentbench-replay": How("run", expect=("1 passed",)),
    "pytest benchmark/ --device emulator-5554": How("no-phone"),
    "pytest benchmark/ --device emulator-5554 --agentbench-doctor": How("no-phone"),
    "pytest benchmark/ --device sim --agentbench-doctor": How("run", expect=("ready",)),
    "pytest benchmark/ --agentbench-dry-run -k bug_repro": How("run", expect=("1 passed",)),
    "pytest benchmark/agent/suites/ux-flow.yml --agentbench-dry-run": How("run", expect=("1 passed",)),
    "pytest benchmark/ --collect-only -q": How("run", expect=("benchmark/agent/suites/bug-repro.yml::bug-repro", "21 tests collected")),
    "pytest benchmark/ --collect-only -q --agentbench-repeat 3": How("run", expect=("::bug-repro[r3-", "::wifi-on[r3]", "63 tests collected")),
}


def _unique_lines() -> dict[str, Documented]:
    unique: dict[str, Documented] = {}
    for command in documented_commands():
        unique.setdefault(command.line, command)
    return unique


def test_every_documented_command_is_known() -> None:
    lines = _unique_lines()
    unknown = sorted(f"{command.where}: {line}" for line, command in lines.items() if line not in COMMANDS)
    assert not unknown, "documented pytest lines this test does not run (add each to COMMANDS):\n" + "\n".join(unknown)
    stale = sorted(set(COMMANDS) - set(lines))
    assert not stale, "COMMANDS lines no document has any more:\n" + "\n".join(stale)


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's benchmark, its pytest settings and the fixtures guide's example test."""
    root = tmp_path_factory.mktemp("reader")
    shutil.copytree(REPO / "benchmark", root / "benchmark")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    guide = (REPO / "docs" / "fixtures.md").read_text(encoding="utf-8")
    example = re.search(r"## Example\s+```python\n(.*?)```", guide, re.S)
    assert example, "docs/fixtures.md has no example test"
    (root / "tests").mkdir()
    (root / "tests" / "test_my_app.py").write_text(example.group(1), encoding="utf-8")
    return root


def _shell_line(line: str, how: How, *, port: int) -> str:
    for placeholder, value in how.replace:
        line = line.replace(placeholder, value)
    line = line.replace("127.0.0.1:8077", f"127.0.0.1:{port}")
    command, pipe, rest = line.partition(" | ")
    if how.narrow:
        # Last on the line, so the narrowing wins over the line's own value (a repeat count).
        command += " " + shlex.join(how.narrow)
    if how.kind == "collect":
        command += " --co -q"
    return command + " -p no:cacheprovider" + (pipe + rest if pipe else "")


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_in_own_group(["bash", "-c", line], cwd=cwd, env=env, timeout_s=SESSION_TIMEOUT_S)


@pytest.mark.parametrize("line", list(COMMANDS), ids=[f"{index:02d}" for index in range(len(COMMANDS))])
def test_a_documented_command_runs_as_written_without_a_phone(line: str, adb_server: PrivateAdbServer, project: Path,
                                                               tmp_path: Path) -> None:
    how = COMMANDS[line]
    documented = _unique_lines().get(line)
    if documented is None:
        pytest.fail(f"no document has {line!r} any more (see test_every_documented_command_is_known)")
    # A model endpoint nothing listens on stands for the docs' 127.0.0.1:8077 (which might be taken here).
    port = free_port()
    exports = {name: value.replace("127.0.0.1:8077", f"127.0.0.1:{port}") for name, value in documented.exports}
    if "ANDROID_ADB_SERVER_PORT" in exports:
        # The docs' private adb server (`export ANDROID_ADB_SERVER_PORT=48743`) is this test's.
        exports["ANDROID_ADB_SERVER_PORT"] = str(adb_server.port)
    env = session_env(adb_server.port, tmp_path / "claims", **exports)
    if "AGENTBENCH_OPENAI_BASE_URL" not in exports:
        env.pop("AGENTBENCH_OPENAI_BASE_URL", None)
    shell_line = _shell_line(line, how, port=port)
    if "--agentbench-compare a.json" in line and not (project / "a.json").exists():
        _run(_shell_line(line.replace("--agentbench-compare", "--agentbench-json"), how, port=0), project, env)
    fleet = None
    if "$(cat serial)" in line:
        from pytest_agentbench.sim.fleet import SimFleet

        fleet = SimFleet(count=1, adb=Adb(AdbEndpoint("127.0.0.1", adb_server.port)))
        (project / "serial").write_text(fleet.serials[0] + "\n", encoding="utf-8")
    try:
        done = _run(shell_line, REPO if how.kind == "collect" else project, env)
    finally:
        if fleet is not None:
            fleet.stop()
    output = done.stdout + done.stderr
    shown = f"{documented.where}: {shell_line}\n{output[-4000:]}"
    if how.kind == "no-phone":
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, shown
        errors = [text for text in done.stderr.splitlines() if text.startswith("ERROR:")]
        assert any("`adb devices`" in text and "`--device sim --claude agentbench-replay`" in text for text in errors), shown
        assert "collected" not in done.stdout, shown
        return
    assert done.returncode == how.status, shown
    if how.kind == "collect":
        assert re.search(r"\d+(/\d+)? tests? (collected|selected)", done.stdout), shown
    for text in how.expect:
        assert text in output, shown
