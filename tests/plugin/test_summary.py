"""A plugin session's results -> the agentbench terminal section: verdict lines, the summary table, the -v details, all within 80 columns.

One real session (replay agent, simulated phone, private adb server) runs three suites, one
of them with a long name and one with a stale baseline that differs in every fingerprint;
the verbosity cases then re-render those saved runs (`--agentbench-from-result`), which
prints the same section without a device.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fakeagents import copy_benchmark_parts, run_in_own_group

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = REPO / "benchmark" / "agent"
VENV_BIN = Path(sys.executable).parent
SESSION_TIMEOUT_S = 300  # hang detector: a replay session takes seconds
COLUMNS = 80
LONG_NAME = "settings-wifi-toggle-on-from-the-internet-screen-of-the-settings-app"

# A baseline recorded under other conditions: every comparability flag fires, and the counts
# and sequence differ from what the replay agent does (6 calls: observe, 4x tapOn, observe).
STALE_BASELINE = {
    "baseline": {
        "recordedAt": "2026-11-01T00:00:00Z",
        "metrics": {
            "toolCalls": 5, "mcpCalls": 5, "deviceAwareCalls": 5, "turns": 6, "inputTokens": 1200,
            "outputTokens": 300, "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "costUsd": 0.012,
            "wallClockSeconds": 30.0, "stumbles": 0, "toolCounts": {"observe": 2, "swipeOn": 1, "tapOn": 2},
        },
        "appBuild": {"versionName": "0.9.0", "versionCode": 90, "lastUpdateTime": "2026-10-01 00:00:00"},
        "suiteDigest": "sha256:0123456789abcdef",
        "deviceFingerprint": {
            "sdk": "33", "model": "Pixel 8", "locale": "en-US", "screenSize": "1080x2400", "density": "420",
            "fontScale": "1.0", "windowAnimationScale": "1.0", "transitionAnimationScale": "1.0",
            "animatorDurationScale": "1.0", "theme": "light", "accessibilityServices": "none",
            "navigationMode": "gesture",
            "inputMethod": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
            "timeZone": "UTC", "clock": "auto", "buildId": "UQ1A.240205.004", "rotation": "90",
        },
        "claudeCodeVersion": "2.1.197",
        "serverBuild": "sha256:fedcba9876543210",
        "observedModel": "claude-sonnet-5-5",
    },
    "baselineToolSequence": ["observe", "tapOn", "swipeOn", "tapOn", "observe"],
}
ALL_FLAGS = ["app-build", "suite-digest", "device", "cli-version", "server-build", "model"]


@dataclass
class Session:
    """A finished `pytest` session of the plugin."""

    ret: int
    stdout: str
    document: dict[str, Any]

    @property
    def section(self) -> list[str]:
        """The lines of the agentbench terminal section, from its `=` rule to the next one ([] if none)."""
        lines = self.stdout.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("=") and " agentbench " in line), None)
        if start is None:
            return []
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("=="))
        return lines[start:end]


def run_session(root: Path, *args: str, port: int) -> Session:
    """`pytest ARGS` in root with the replay agent, COLUMNS=80 and a private adb server."""
    json_path = root / f"session-{len(list(root.glob('session-*.json')))}.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANDROID_", "ADB_", "PYTEST_"))}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", ANDROID_ADB_SERVER_PORT=str(port), COLUMNS=str(COLUMNS))
    done = run_in_own_group(
        [sys.executable, "-m", "pytest", *args, "--claude", "agentbench-replay", "--agentbench-json", str(json_path),
         "--agentbench-output", str(root / "out"), "-p", "no:cacheprovider"],
        cwd=root, env=env, timeout_s=SESSION_TIMEOUT_S,
    )
    document = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    return Session(done.returncode, done.stdout + done.stderr, document)


@pytest.fixture(scope="module")
def real(module_adb_server, tmp_path_factory) -> tuple[Path, Session]:
    """bug-repro with the stale baseline, ux-flow, and wifi-on under a long name, run with -v."""
    root = tmp_path_factory.mktemp("summary")
    agent = root / "benchmark" / "agent"
    copy_benchmark_parts(agent, one_instance=True)  # the stale baseline is the 3-tap instance's
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    suites = agent / "suites"
    bug_repro = suites / "bug-repro.yml"
    bug_repro.write_text(bug_repro.read_text(encoding="utf-8") + yaml.safe_dump(STALE_BASELINE, sort_keys=False), encoding="utf-8")
    wifi = (suites / "wifi-on.yml").read_text(encoding="utf-8").replace("name: wifi-on", f"name: {LONG_NAME}")
    (suites / "wifi-on.yml").unlink()
    (suites / f"{LONG_NAME}.yml").write_text(wifi, encoding="utf-8")
    shutil.copy(agent / "plans" / "wifi-on.yml", agent / "plans" / f"{LONG_NAME}.yml")
    session = run_session(root, "benchmark/", "-v", "--device", "sim", port=module_adb_server.port)
    assert session.ret == 0, session.stdout
    assert session.document["counts"] == {"passed": 3, "failed": 0, "incomplete": 0}
    return root, session


def test_stale_baseline_flags_every_difference(real):
    _, session = real
    (result,) = [run for run in session.document["runs"] if run["suite"] == "bug-repro"]
    assert [flag["kind"] for flag in result["comparison"]["flags"]] == ALL_FLAGS
    deltas = {row["metric"]: row["delta"] for row in result["comparison"]["metricRows"]}
    assert (deltas["toolCalls"], deltas["toolCounts.tapOn"], deltas["toolCounts.swipeOn"]) == (1, 2, -1)
    assert [(line["op"], line["tool"]) for line in result["comparison"]["sequenceDiff"]] == [
        (" ", "observe"), (" ", "tapOn"), ("-", "swipeOn"), (" ", "tapOn"), ("+", "tapOn"), ("+", "tapOn"), (" ", "observe"),
    ]
    # The summary row wraps its flags instead of widening the table.
    section = "\n".join(session.section)
    row = next(line for line in session.section if line.startswith("bug-repro "))
    assert row.split()[1:8] == ["pass", row.split()[2], "6", "7", "0", "$0.000", "+1"]
    for abbreviation in ("app", "suite", "dev", "cli", "srv", "model"):
        assert abbreviation in section


def test_no_line_of_the_section_is_wider_than_the_terminal(real):
    _, session = real
    too_wide = [line for line in session.section if len(line) > COLUMNS]
    assert not too_wide, "\n".join(too_wide)
    # The long name is never cut: too long for its column, it has a line of its own, once in the
    # per-run table and once in the statistics table (-v prints both).
    # (wifi-on is a harness demo: its statistics row reads `NAME (demo)`.)
    assert [line.strip() for line in session.section].count(LONG_NAME) + session.section.count(f"{LONG_NAME} (demo)") == 2, \
        "\n".join(session.section)
    assert not any("…" in line for line in session.section)


VERBOSITY = [
    pytest.param([], True, False, id="default"),
    pytest.param(["-v"], True, True, id="verbose"),
    pytest.param(["-vv"], True, True, id="very-verbose"),
    pytest.param(["-q"], False, False, id="quiet"),
]


@pytest.mark.parametrize(("args", "shown", "details"), VERBOSITY)
def test_verbose_adds_metric_rows_sequence_diff_and_run_dir(real, tmp_path, args, shown, details):
    root, original = real
    run_dirs = [result["runDirectory"] for result in original.document["runs"]]
    rerun = run_session(root, *[arg for run_dir in run_dirs for arg in ("--agentbench-from-result", run_dir)], *args, port=0)

    assert rerun.ret == 0, rerun.stdout
    section = rerun.section
    if not shown:
        # -q: pytest's quiet mode, and the plugin's summary with it, as junitxml's summary does.
        assert section == []
        return
    # Compared without whitespace, so a path or node id wrapped over two lines is found whole.
    text = "".join("".join(section).split())
    verbose = "-v" in args or "-vv" in args
    # Passes are silent at the default verbosity: counted, not listed (pytest's convention).
    assert "3runsof3suites(oneruneach):3passed,0failed,0incomplete" in text
    for result in original.document["runs"]:
        assert (f"PASSED{result['nodeid']}" in text) == verbose
    assert any(line.startswith("run ") and line.split()[-1] == "flags" for line in section) == verbose
    assert ("3passingrunsnotlisted" in text) == (not verbose)
    # One run per suite: no interval unless -v asks for the statistics.
    assert ("95%CI" in text) == verbose
    expanded = [
        "Baseline: recorded 2026-11-01T00:00:00Z; deltas below compare different conditions:",
        "  ! app build differs: ",
        "Metrics:",
        "toolCounts.swipeOn",
        "Tool sequence vs baseline (- baseline call skipped, + extra call):",
        "  - swipeOn",
        "  + tapOn",
        *(f"Run directory: {run_dir}" for run_dir in run_dirs),
    ]
    assert ["".join(fragment.split()) in text for fragment in expanded] == [details] * len(expanded)
    assert [line for line in section if len(line) > COLUMNS] == []


def test_the_summary_says_where_the_session_document_went(real):
    root, original = real
    (line,) = [line for line in original.stdout.splitlines() if line.startswith("agentbench json: ")]
    # Relative to where pytest started, as pytest names files: a temp dir's path is wider than a terminal.
    assert line == "agentbench json: session-0.json"


def test_ra_lists_the_passing_runs_rows(real):
    root, original = real
    run_dirs = [result["runDirectory"] for result in original.document["runs"]]
    rerun = run_session(root, *[arg for run_dir in run_dirs for arg in ("--agentbench-from-result", run_dir)], "-rA", port=0)
    assert rerun.ret == 0, rerun.stdout
    rows = [line.split()[0] for line in rerun.section if line.split()[1:2] == ["pass"] or line == LONG_NAME]
    assert sorted(rows) == sorted(["bug-repro", "ux-flow", LONG_NAME])
    assert not any("passing runs not listed" in line for line in rerun.section)


# ----------------------------------------------------------------------------- the README's main job

#: The README's main command, as written there (its output and JSON go to a temporary directory).
MAIN_JOB = ["benchmark/", "--device", "sim", "--claude", "agentbench-replay"]
MAIN_JOB_MAX_LINES = 40


def main_job_env(port: int) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANDROID_", "ADB_", "PYTEST_"))}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", ANDROID_ADB_SERVER_PORT=str(port), COLUMNS=str(COLUMNS))
    return env


def test_readme_lists_the_main_job_as_this_test_runs_it():
    assert "pytest " + " ".join(MAIN_JOB) in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_main_job_prints_at_most_40_lines_and_no_progress_line_off_a_terminal(module_adb_server, tmp_path):
    # In the repository itself, so pytest's header is the one a user sees (its ini file, its plugins).
    done = run_in_own_group(
        [sys.executable, "-m", "pytest", *MAIN_JOB, "--agentbench-output", str(tmp_path / "out"), "-p", "no:cacheprovider"],
        cwd=REPO, env=main_job_env(module_adb_server.port), timeout_s=SESSION_TIMEOUT_S,
    )
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 0, "\n".join(lines)
    assert len(lines) <= MAIN_JOB_MAX_LINES, f"{len(lines)} lines:\n" + "\n".join(lines)
    suites = len(list((REPO / "benchmark" / "agent" / "suites").glob("*.yml")))
    assert f"{suites} runs of {suites} suites (one run each): {suites} passed, 0 failed, 0 incomplete" in lines
    # The live session line is for a terminal only: a pipe (a CI log) never gets it.
    assert not any("ETA" in line or " runs, " in line for line in lines)


def test_a_terminal_gets_one_live_session_line(module_adb_server, tmp_path):
    import pty

    command = [sys.executable, "-m", "pytest", *MAIN_JOB, "-k", "bug_repro or ux_flow or wifi_on or photos_crop",
               "--agentbench-output", str(tmp_path / "out"), "-p", "no:cacheprovider"]
    env = main_job_env(module_adb_server.port)
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                               start_new_session=True)
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower closed: the session ended
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=SESSION_TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
        os.close(leader)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert "[0/4 runs, 0 failed, 0s]" in shown, shown
    # After a run the line counts it and estimates the rest (in a shorter form where the line is full).
    assert re.search(r"\[1/4( runs)?, 0 failed, ((\d+m)?\d+s, )?ETA (\d+m)?\d+s\]", shown), shown
    assert re.search(r"\[4/4 runs, 0 failed, (\d+m)?\d+s\]", shown), shown  # no ETA once every run is done
    # Erased before pytest writes anything else: no summary line carries it.
    assert all("runs, " not in line for line in shown.replace("\b", "").splitlines() if "agentbench" in line or "passed" in line)
