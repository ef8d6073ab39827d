"""The project's own tests -> a session-wide guard: a process group a test started (agent, MCP server, simulated phone, adb server, fake API) must not outlive the session."""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Every Python process the tests start (a few hundred pytest sessions, MCP servers, agents)
# imports the package: with bytecode caching off (PYTHONDONTWRITEBYTECODE, as some machines set
# it) each would compile it from source again, about a second of CPU a session. The caches go to
# `__pycache__`, which git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The plugin builds its session only when a run uses it (pytest_agentbench/wake.py), so this test
# session, which gives no agentbench option, would import the session's modules first inside a
# pytester inline run, whose end drops them from sys.modules: the next inline run would import
# them again, slowly, beside the copies that other modules still hold. Import them once here.
import pytest_agentbench.doctor.plugin  # noqa: F401
import pytest_agentbench.htmlreport  # noqa: F401
import pytest_agentbench.items  # noqa: F401
import pytest_agentbench.session  # noqa: F401

# The fixtures several test modules share are registered here, once. Imported into each module
# instead, a fixture is registered once per module with the same function, and `pytest --fixtures`
# sorts its entries by (length of the node id, module, path, name): two modules whose ids have the
# same length tie, pytest compares the FixtureDefs themselves and stops with an INTERNALERROR
# (tests/shared/test_fixture_imports.py keeps it so).
from adbserver import module_adb_server, private_adb_server  # noqa: F401
from codexcli import codex_bin  # noqa: F401
from fake_anthropic import claude_bin  # noqa: F401
from geminicli import gemini_bin  # noqa: F401
from simfixtures import private_adb  # noqa: F401

# The pytest sessions the tests start (as subprocesses) skip hypothesis's plugin (see
# fakeagents.CHILD_ADDOPTS); this session, already configured, keeps it.
os.environ["PYTEST_ADDOPTS"] = " ".join(filter(None, [os.environ.get("PYTEST_ADDOPTS", ""), "-p no:hypothesispytest"]))

#: Every process the tests start inherits this variable, so one that left our process tree
#: (an adb server that daemonized, a detached MCP daemon) is still recognised as ours.
OWNER_VARIABLE = "AGENTBENCH_TEST_SESSION"
#: Teardown is asynchronous at the edges (a killed group's members exit, a daemon shuts down):
#: a leftover must still be there after this long to count.
SETTLE_S = 10.0


def _stat(pid: str) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), int(fields[2])


def _carries(pid: str, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _command(pid: str) -> str:
    try:
        return " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split())[:200]
    except OSError:
        return "?"


def live_pids() -> set[str]:
    """Pids of every live (non-zombie) process."""
    return {entry.name for entry in Path("/proc").iterdir() if entry.name.isdigit() and (_stat(entry.name) or ("Z",))[0] != "Z"}


def leftovers(marker: bytes, before: set[str], *, me: int) -> dict[int, list[str]]:
    """Process group -> `pid command` of live processes started since `before` by this process or its tests.

    A process counts when it descends from this one or carries the session's marker variable.
    """
    table = {pid: stat for pid in os.listdir("/proc") if pid.isdigit() and (stat := _stat(pid)) is not None}
    groups: dict[int, list[str]] = {}
    for pid, (state, _, pgid) in table.items():
        if pid in before or int(pid) == me or state == "Z":
            continue
        ours = _carries(pid, marker)
        parent = table[pid][1]
        seen = 0
        while not ours and parent > 1 and seen < 64:
            ours = parent == me
            parent = table.get(str(parent), ("", 0, 0))[1]
            seen += 1
        if ours:
            groups.setdefault(pgid, []).append(f"{pid} {_command(pid)}")
    return groups


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Fail the session when a process group started during the tests is still alive at the end, naming it."""
    if not Path("/proc").is_dir():
        yield
        return
    token = f"{os.getpid()}-{secrets.token_hex(6)}"
    marker = f"{OWNER_VARIABLE}={token}".encode()
    previous = os.environ.get(OWNER_VARIABLE)
    os.environ[OWNER_VARIABLE] = token
    before = live_pids()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(OWNER_VARIABLE, None)
        else:
            os.environ[OWNER_VARIABLE] = previous
    deadline = time.monotonic() + SETTLE_S
    left = leftovers(marker, before, me=os.getpid())
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers(marker, before, me=os.getpid())
    if left:
        shown = "\n".join(f"  process group {pgid}:\n" + "\n".join(f"    {line}" for line in members) for pgid, members in sorted(left.items()))
        pytest.fail(f"processes started by the tests are still alive after the session:\n{shown}", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def every_result_reads_back_to_itself() -> Iterator[list[Path]]:
    """The golden rule of result.json: every document a test session writes satisfies `to_json(from_json(doc)) == doc`.

    Checked as each document is written (in-process runs: pytester's inline sessions and the
    plugin under test), so a test that later tampers with a saved run does not count; the
    session fails at its end naming each document that did not read back to itself.
    """
    import json

    from pytest_agentbench.records.result import RunResult

    original = RunResult.write
    written: list[Path] = []
    differing: list[str] = []

    def write(self: RunResult, path: Path) -> None:
        original(self, path)
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        written.append(Path(path))
        again = RunResult.from_json(document).to_json()
        if again != document:
            keys = sorted(key for key in set(document) | set(again) if document.get(key) != again.get(key))
            differing.append(f"{path}: {', '.join(keys)}")

    RunResult.write = write  # type: ignore[method-assign]
    try:
        yield written
    finally:
        RunResult.write = original  # type: ignore[method-assign]
    if differing:
        pytest.fail("result.json documents that do not read back to themselves:\n  " + "\n  ".join(differing), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def shared_warm_starts(request: pytest.FixtureRequest, no_process_left_behind: None,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One warm-start server for every pytest session the tests start (fakeagents.session_env); stopped before the leftover check.

    Started only when an end-to-end test is collected: the quick subset starts no session.
    """
    if not any(item.get_closest_marker("e2e") for item in request.session.items):
        yield
        return
    from fakeagents import SHARED_WARM_VARIABLE
    from pytest_agentbench.warm.forkserver import start_fork_server

    handle = start_fork_server(log_path=tmp_path_factory.mktemp("warm-starts") / "forkserver.log")
    os.environ[SHARED_WARM_VARIABLE] = str(handle.socket_path)
    try:
        yield
    finally:
        os.environ.pop(SHARED_WARM_VARIABLE, None)
        handle.stop()


#: Fixtures that start something heavy: a pytest session, a real adb server, a simulated phone behind it.
E2E_FIXTURES = frozenset({"pytester", "module_adb_server", "private_adb_server", "private_adb", "adb_server"})
#: Modules whose tests run whole sessions, real servers, the real Claude Code CLI or a browser
#: through helpers of their own rather than through those fixtures.
E2E_MODULES = frozenset({
    "test_baseline_e2e", "test_claude_cli", "test_adb_server", "test_device_adb", "test_device_checks_e2e", "test_harness_problems",
    "test_html_browser", "test_jobs_e2e", "test_mcp_server", "test_mobile_mcp", "test_model_agent_e2e",
    "test_model_episode_e2e", "test_observe_economy", "test_postrun_daemon", "test_repeats_e2e", "test_replay",
    "test_rerender", "test_rerender_faults", "test_run_e2e", "test_run_faults", "test_runner", "test_sandbox",
    "test_scale_out", "test_session_end_e2e", "test_shutdown", "test_documented_commands", "test_sim_acceptance", "test_sim_fleet",
    "test_sim_root_cli", "test_sim_transport", "test_warm", "test_doctor_e2e", "test_instances_e2e",
})


#: The longest modules, about a minute or more of one worker each (`--durations` on 2 cores), longest
#: first: under xdist (`--dist loadscope` hands out whole modules in collection order) they start
#: first and the short ones fill the workers at the end, rather than one long module running alone
#: after everything else. A scheduling hint only: a module not named here runs all the same.
LONGEST_FIRST = (
    "test_instances_e2e", "test_model_agent_e2e", "test_html_browser", "test_documented_commands", "test_jobs_e2e",
    "test_run_faults", "test_output_e2e", "test_repeats_e2e", "test_model_episode_e2e", "test_baseline_e2e",
    "test_checks_accept_only_the_work", "test_claude_cli", "test_summary",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests `e2e` (`pytest tests/ -m "not e2e"` is the quick subset), then order modules longest first."""
    e2e_modules = set()
    for item in items:
        module = item.path.stem
        if {"adversarial", "e2e"} & set(item.path.parts) or module in E2E_MODULES or E2E_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
            e2e_modules.add(item.path)
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int]:
        # By module, so a module's tests stay together (its module-scoped fixtures are set up once).
        if item.path.stem in rank:
            return 0, rank[item.path.stem]
        return (1 if item.path in e2e_modules else 2), 0

    items.sort(key=order)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores; the end-to-end tests spend much of their time waiting on the processes they start."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return cores + 1
