"""Audit inputs the agent (or anyone) rewrites -> a run that is incomplete and names the file (issue 19, part C).

The harness seals every file the audit reads: the before-snapshot as soon as preflight wrote it,
everything else when the run ends. An agent that rewrites its own `device-before.json` while it
runs (possible only unconfined: the sandbox hides the run directory) makes its run incomplete; a
saved run whose inputs were changed afterwards re-renders as incomplete, naming the file; an honest
run and its untouched re-render keep their verdict.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adbserver import PrivateAdbServer, one_simulated_phone  # noqa: E402
from fakeagents import copy_benchmark_parts, junit_cases, run_session, session_env  # noqa: E402

from pytest_agentbench.sim.fleet import SimFleet  # noqa: E402

SUITE = "wakelock-restrict"
# agentbench-replay doing the job honestly, after appending to the newest before-snapshot under
# the output tree (an agent that knows where runs go); confined it finds nothing and says so.
REWRITING_AGENT = f"""#!{sys.executable}
import glob, os, subprocess, sys
found = sorted(glob.glob(os.path.join(os.environ.get("CHEAT_OUTPUT", "/nonexistent"), "**", "device-before.json"),
                         recursive=True), key=os.path.getmtime)
if found:
    with open(found[-1], "a", encoding="utf-8") as stream:
        stream.write(" ")
else:
    sys.stderr.write("no before-snapshot within reach\\n")
prompt = sys.stdin.read()
sys.exit(subprocess.run(["agentbench-replay", *sys.argv[1:]], input=prompt, text=True).returncode)
"""


def rewriting_agent(tmp: Path) -> Path:
    # Named agentbench-replay (in a directory of its own, off PATH), so its suite's plan is staged for it.
    (tmp / "agent").mkdir()
    agent = tmp / "agent" / "agentbench-replay"
    agent.write_text(REWRITING_AGENT, encoding="utf-8")
    agent.chmod(0o755)
    return agent


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def session(lab: tuple[PrivateAdbServer, SimFleet], tmp: Path, *args: str) -> tuple[dict[str, Any], str]:
    """One session in `tmp` on the lab's phone -> the one run's result.json and the terminal output."""
    server, fleet = lab
    project = tmp / "project"
    if not project.exists():
        copy_benchmark_parts(project / "benchmark" / "agent", suites=(SUITE,))
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    junit = tmp / f"junit-{len(list(tmp.glob('junit-*.xml')))}.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200", CHEAT_OUTPUT=str(tmp / "out"))
    done = run_session(project, ["--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                 f"--junitxml={junit}", "-rA", *args], env)
    output = done.stdout[-4000:] + done.stderr[-2000:]
    assert junit.exists(), output
    (case,) = junit_cases(junit).values()
    path = case.properties.get("agentbench_result_json") or str(Path(case.properties["agentbench_run_dir"]) / "result.json")
    return json.loads(Path(path).read_text(encoding="utf-8")), output


@pytest.fixture(scope="module")
def honest(lab, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("honest")
    result, output = session(lab, tmp, "benchmark/", "--claude", "agentbench-replay")
    assert result["verdict"]["status"] == "passed", output
    return result, tmp


def test_an_agent_that_rewrites_its_before_snapshot_is_incomplete_naming_the_file(lab, tmp_path: Path) -> None:
    agent = rewriting_agent(tmp_path)
    result, output = session(lab, tmp_path, "benchmark/", "--claude", str(agent), *UNCONFINED)
    assert result["verdict"]["status"] == "incomplete", output
    assert result["verdict"]["reasons"][0] == (
        "the audit's inputs do not match their seals: device-before.json changed while the agent ran; the run was unconfined, "
        "so the agent could reach the run directory: this counts as the agent's"), result["verdict"]
    # Its own doing: it stays in the pass rate (issue 28, B).
    assert result["verdict"]["incompleteCause"] == "agent"
    # The seal kept is the one made before the agent started, not the rewritten file's.
    assert "device-before.json" in result["seals"]["sha256"]


def test_an_honest_run_seals_every_audit_input(honest) -> None:
    result, _ = honest
    sealed = result["seals"]["sha256"]
    assert {"claude.jsonl", "device-before.json", "device-after.json"} <= set(sealed)
    assert all(len(digest) == 64 for digest in sealed.values())


@pytest.mark.parametrize("name", ["device-before.json", "device-after.json", "claude.jsonl"])
def test_a_saved_run_whose_input_changed_re_renders_incomplete_naming_it(lab, honest, tmp_path: Path, name: str) -> None:
    import shutil

    result, _ = honest
    run_dir = Path(shutil.copytree(result["runDirectory"], tmp_path / "run"))
    path = run_dir / name
    path.write_text(path.read_text(encoding="utf-8").replace("\n", "\n ", 1), encoding="utf-8")
    rerendered, output = session(lab, tmp_path, "--agentbench-from-result", str(run_dir))
    assert rerendered["verdict"]["status"] == "incomplete", output
    assert rerendered["verdict"]["reasons"][0].startswith(f"the audit's inputs do not match their seals: {name} changed"), rerendered["verdict"]
    # The run was confined, so its agent could not have changed its saved inputs.
    assert rerendered["verdict"]["incompleteCause"] == "harness"


def test_an_untouched_saved_run_re_renders_to_its_verdict(lab, honest, tmp_path: Path) -> None:
    result, _ = honest
    rerendered, output = session(lab, tmp_path, "--agentbench-from-result", result["runDirectory"])
    assert rerendered["verdict"] == result["verdict"], output
    assert rerendered["seals"] == result["seals"]


#: The rewriting agent needs the run directory, which only an unconfined run lets it reach.
UNCONFINED: tuple[str, ...] = ("--agentbench-sandbox", "off")


def test_confined_the_same_agent_cannot_reach_its_before_snapshot(lab, tmp_path: Path) -> None:
    agent = rewriting_agent(tmp_path)
    result, output = session(lab, tmp_path, "benchmark/", "--claude", str(agent), "--agentbench-sandbox", "on")
    # The output tree is hidden from it: nothing to rewrite, and the honest work passes.
    assert result["verdict"]["status"] == "passed", output
    assert "no before-snapshot within reach" in (Path(result["runDirectory"]) / "claude.stderr").read_text(encoding="utf-8")
    assert result["sandbox"]["mode"] == "on"
