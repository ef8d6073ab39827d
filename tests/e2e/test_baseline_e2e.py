"""Issue 6 through the plugin: a recorded bug-repro baseline + a change on the phone or in the suite -> the flags, deltas and files a second run shows.

Every test runs `pytest` in a subprocess on a copy of `benchmark/agent` in a temporary
directory, with the replay agent on a simulated phone behind a private adb server (never port
5037). Runs that compare with a recorded baseline use one phone the test starts itself
(`SimFleet`), because a freshly booted simulated phone has a new app install time.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.suite import load_suite

from fakeagents import copy_benchmark_parts, run_in_own_group

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = REPO / "benchmark" / "agent"
VENV_BIN = Path(sys.executable).parent
PLAYGROUND = "dev.jasonpearson.automobile.playground"
# A generous hang detector for one pytest session of the replay agent (a run takes seconds).
SESSION_TIMEOUT_S = 300


@dataclass
class BenchRun:
    """One finished `pytest` session of the plugin."""

    ret: int
    stdout: str
    stderr: str
    document: dict[str, Any]

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.document.get("runs", [])

    def summary_row(self, suite: str) -> list[str]:
        """The cells of a suite's row in the agentbench summary table."""
        # The per-run table only: the statistics table below it has a row per suite too.
        section = self.stdout.split(" agentbench ", 1)[1].split(" agentbench statistics ", 1)[0]
        # A seeded suite's row is named by its item: `bug-repro[r1-<instance id>]`.
        (row,) = [line.split() for line in section.splitlines()
                  if line.split()[:1] and (line.split()[0] == suite or line.split()[0].startswith(f"{suite}[r"))]
        return row


def copy_benchmark(root: Path) -> Path:
    """The harness suites, every prompt and replay plan under root/benchmark/agent; root gets a pytest.ini."""
    target = copy_benchmark_parts(root / "benchmark" / "agent")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return target


def bench_env(port: int, **extra: str) -> dict[str, str]:
    """The environment of a plugin session: the private adb server, the venv's console scripts first, 80 columns."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANDROID_", "ADB_", "PYTEST_"))}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", ANDROID_ADB_SERVER_PORT=str(port),
        COLUMNS="80", PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


def run_bench(root: Path, *args: str, device: str, port: int, env: dict[str, str] | None = None) -> BenchRun:
    """`pytest ARGS --device DEVICE --claude agentbench-replay` in root, with output and JSON in root/out."""
    json_path = root / f"session-{len(list(root.glob('session-*.json')))}.json"
    # One seed for every session: a baseline and the run compared with it are the same instance
    # (bug-repro's tap count is drawn), so the replay agent's counts repeat exactly.
    argv = [
        sys.executable, "-m", "pytest", *args, "--device", device, "--claude", "agentbench-replay",
        "--agentbench-output", str(root / "out"), "--agentbench-json", str(json_path), "-p", "no:cacheprovider",
        "--agentbench-seed", "0",
    ]
    done = run_in_own_group(argv, cwd=root, env=env or bench_env(port), timeout_s=SESSION_TIMEOUT_S)
    document = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    return BenchRun(done.returncode, done.stdout, done.stderr, document)


@pytest.fixture
def phone(module_adb_server):
    """One simulated phone on the module's private adb server, for the whole test."""
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=1, adb=module_adb_server.client()) as fleet:
        yield fleet


# ----------------------------------------------------------------------------- second run vs baseline


def install_new_build(server, serial: str, tmp_path: Path, version_name: str, version_code: int) -> None:
    """`pm install -r` of a new Playground build (the simulated phone reads a key=value manifest as the APK)."""
    apk = tmp_path / "playground-new.apk"
    apk.write_text(f"package={PLAYGROUND}\nversionName={version_name}\nversionCode={version_code}\ndebuggable=true\n")
    pushed = server.run_adb("-s", serial, "push", str(apk), "/data/local/tmp/playground-new.apk")
    assert pushed.returncode == 0, pushed.stderr
    installed = server.run_adb("-s", serial, "shell", "pm", "install", "-r", "/data/local/tmp/playground-new.apk")
    assert installed.stdout.strip() == b"Success", installed.stdout


def edit_prompt(suites: Path) -> None:
    prompt = suites.parent / "prompts" / "bug-repro.txt"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nDo not scroll.\n", encoding="utf-8")


def source_edited_meanwhile(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """`["server-build"]` when this package's own files changed between two runs, else `[]`.

    The server build digests the package source, so an edit to it between the runs (another
    engineer saving a file in a shared work tree) is rightly flagged; nothing else may be.
    """
    old, new = first["fingerprints"]["serverBuildComponents"], second["fingerprints"]["serverBuildComponents"]
    changed = {key for key in set(old) | set(new) if old.get(key) != new.get(key)}
    # An edit to the package between the runs can also add components (a new fingerprint part).
    if "packageSource" not in changed:
        assert changed <= {"profileBuild"}, changed
    return ["server-build"] if changed else []


CHANGES = [
    pytest.param("nothing", [], [], id="unchanged"),
    pytest.param("app build", ["app-build"], ["app build differs: ", "versionCode 100 -> 101", "versionName 1.0.0 -> 1.1.0"], id="new-app-build"),
    pytest.param("prompt", ["suite-digest"], ["suite differs (prompt, settings or requested model): sha256:"], id="prompt-edited"),
]


@pytest.mark.parametrize(("change", "kinds", "fragments"), CHANGES)
def test_second_run_flags_exactly_what_changed(module_adb_server, phone, tmp_path, change, kinds, fragments):
    suites = copy_benchmark(tmp_path) / "suites"
    serial = phone.serials[0]
    port = module_adb_server.port
    suite_file = suites / "bug-repro.yml"

    first = run_bench(tmp_path, str(suite_file), device=serial, port=port)
    assert first.ret == 0, first.stdout + first.stderr
    (recorded,) = first.runs
    assert recorded["snippet"]["written"], recorded["snippet"]
    snippet = Path(recorded["snippet"]["path"]).read_text(encoding="utf-8")
    # Paste the snippet into the suite, as a person would.
    suite_file.write_text(suite_file.read_text(encoding="utf-8") + "\n" + snippet, encoding="utf-8")

    if change == "app build":
        install_new_build(module_adb_server, serial, tmp_path, "1.1.0", 101)
    elif change == "prompt":
        edit_prompt(suites)

    # -rA: a passing run's row is listed (at the default verbosity passes are silent).
    second = run_bench(tmp_path, str(suite_file), "-rA", device=serial, port=port)
    assert second.ret == 0, second.stdout + second.stderr
    (result,) = second.runs
    flags = result["comparison"]["flags"]
    kinds = kinds + source_edited_meanwhile(recorded, result)
    assert [flag["kind"] for flag in flags] == kinds, flags
    for fragment in fragments:
        assert fragment in flags[0]["message"]
    if change == "prompt":
        old, new = recorded["fingerprints"]["suiteDigest"], result["fingerprints"]["suiteDigest"]
        assert old != new
        assert flags[0]["message"].endswith(f"{old} -> {new}")

    # Deltas: the replay agent repeats itself exactly, so every count is the baseline's.
    deltas = {row["metric"]: row["delta"] for row in result["comparison"]["metricRows"]}
    assert {name: delta for name, delta in deltas.items() if name != "wallClockSeconds"} == dict.fromkeys(set(deltas) - {"wallClockSeconds"}, 0)
    assert [line["op"] for line in result["comparison"]["sequenceDiff"]] == [" "] * len(recorded["toolSequence"])
    row = second.summary_row("bug-repro")
    assert row[1] == "pass"
    assert row[7] == "0"  # Δcalls
    abbreviations = {"app-build": "app", "suite-digest": "suite", "server-build": "srv"}
    assert row[8:] == [abbreviations[kind] for kind in kinds]


# ----------------------------------------------------------------------------- --agentbench-record-baseline


def break_answer(suite_file: Path) -> None:
    """A suite that can never pass: the replay agent answers DISPLAYED_COUNT: 0 (the bug it reproduces)."""
    text = suite_file.read_text(encoding="utf-8")
    broken = text.replace('answerIncludes: ["EXPECTED_COUNT: {taps}", "DISPLAYED_COUNT: 0"]',
                          'answerIncludes: ["EXPECTED_COUNT: {taps}", "DISPLAYED_COUNT: 99"]')
    assert broken != text, "bug-repro's answerIncludes changed: break another expected line"
    suite_file.write_text(broken, encoding="utf-8")


RECORDING = [
    pytest.param([], False, 1, "recorded in 1 attempt(s): paste ", False, id="snippet-only"),
    pytest.param(["--agentbench-update-suites"], False, 1, "recorded in 1 attempt(s) and written into ", True, id="into-suite-file"),
    pytest.param(["--agentbench-update-suites"], True, 3, "no clean pass in 3 attempt(s): the suite keeps no new baseline block", False, id="never-passes"),
]


@pytest.mark.parametrize(("extra", "never_passes", "attempts", "message", "suite_updated"), RECORDING)
def test_record_baseline(module_adb_server, tmp_path, extra, never_passes, attempts, message, suite_updated):
    suites = copy_benchmark(tmp_path) / "suites"
    suite_file = suites / "bug-repro.yml"
    if never_passes:
        break_answer(suite_file)
    before = suite_file.read_text(encoding="utf-8")

    run = run_bench(
        tmp_path, str(suite_file), "--agentbench-record-baseline", *extra, "-rA",
        device="sim", port=module_adb_server.port,
    )

    assert run.ret == (1 if never_passes else 0), run.stdout + run.stderr
    assert message in run.stdout
    run_dirs = sorted((tmp_path / "out" / "bug-repro").iterdir())
    assert len(run_dirs) == attempts
    snippets = [run_dir / "baseline.yml" for run_dir in run_dirs if (run_dir / "baseline.yml").exists()]
    assert len(snippets) == (0 if never_passes else 1)
    after = suite_file.read_text(encoding="utf-8")
    if not suite_updated:
        assert after == before
        return
    # Written into the suite: every line of the original is kept (comments included), in order,
    # followed by exactly the snippet's two keys, and the suite still loads with that baseline.
    assert after.startswith(before)
    assert [line for line in before.splitlines() if line.lstrip().startswith("#")]
    snippet = yaml.safe_load(snippets[0].read_text(encoding="utf-8"))
    suite = load_suite(suite_file, tmp_path)
    assert suite.baseline == snippet["baseline"]
    assert list(suite.baseline_tool_sequence) == snippet["baselineToolSequence"]


# ----------------------------------------------------------------------------- --agentbench-json


def test_json_document_holds_every_run(module_adb_server, tmp_path):
    copy_benchmark(tmp_path)
    run = run_bench(tmp_path, "benchmark/", device="sim", port=module_adb_server.port)

    assert run.ret == 0, run.stdout + run.stderr
    assert run.document["counts"] == {"passed": 3, "failed": 0, "incomplete": 0}
    assert sorted(result["suite"] for result in run.runs) == ["bug-repro", "ux-flow", "wifi-on"]
    for result in run.runs:
        saved = json.loads((Path(result["runDirectory"]) / "result.json").read_text(encoding="utf-8"))
        assert result == saved


# ----------------------------------------------------------------------------- planted secrets


PLANTED = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDapikey0123456789",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-PLANTEDoauthtoken98765",
    "HTTPS_PROXY": "http://proxyuser:PLANTEDproxypass@proxy.internal.example:3128",
    "ANTHROPIC_BASE_URL": "https://gwuser:PLANTEDbasepass@gateway.example.com/anthropic",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED000000001",
    "AWS_SECRET_ACCESS_KEY": "PLANTEDawsSecretKey/abcdefghijklmnop",
    "NO_PROXY": "127.0.0.1,localhost",
}
SECRET_VALUES = [
    PLANTED["ANTHROPIC_API_KEY"], PLANTED["CLAUDE_CODE_OAUTH_TOKEN"], "PLANTEDproxypass", "proxyuser:PLANTEDproxypass",
    "PLANTEDbasepass", "gwuser:PLANTEDbasepass", PLANTED["AWS_ACCESS_KEY_ID"], PLANTED["AWS_SECRET_ACCESS_KEY"],
]
VARIANTS = [
    pytest.param({"CLAUDE_CODE_USE_BEDROCK": "1"}, ["provider", "provider.awsConfig", "provider.env.CLAUDE_CODE_USE_BEDROCK"], id="provider-bedrock"),
    pytest.param(
        {"ANTHROPIC_BASE_URL": "https://gwuser:PLANTEDbasepass@other-gateway.example.com/anthropic"},
        ["provider.url.ANTHROPIC_BASE_URL"], id="base-url-host",
    ),
    pytest.param({"HTTPS_PROXY": "http://proxyuser:PLANTEDproxypass@proxy2.internal.example:3128"}, ["provider.url.HTTPS_PROXY"], id="proxy-host"),
]


@pytest.fixture(scope="module")
def planted_baseline(module_adb_server, tmp_path_factory):
    """A bug-repro run in the planted environment: (root, run) for the variants to compare with."""
    root = tmp_path_factory.mktemp("planted")
    copy_benchmark(root)
    run = run_bench(
        root, "benchmark/agent/suites/bug-repro.yml", "-v", device="sim", port=module_adb_server.port,
        env=bench_env(module_adb_server.port, **PLANTED),
    )
    assert run.ret == 0, run.stdout + run.stderr
    return root, run


def assert_no_secret(text: str, where: str) -> None:
    leaked = [secret for secret in SECRET_VALUES if secret in text]
    assert not leaked, f"{where} shows {leaked}"


@pytest.mark.parametrize(("change", "components"), VARIANTS)
def test_planted_secrets_change_server_build_but_never_show(module_adb_server, planted_baseline, change, components):
    root, base = planted_baseline
    run = run_bench(
        root, "benchmark/agent/suites/bug-repro.yml", "-v", device="sim", port=module_adb_server.port,
        env=bench_env(module_adb_server.port, **{**PLANTED, **change}),
    )
    assert run.ret == 0, run.stdout + run.stderr
    (before,), (after,) = base.runs, run.runs
    assert before["fingerprints"]["serverBuild"] != after["fingerprints"]["serverBuild"]
    old, new = before["fingerprints"]["serverBuildComponents"], after["fingerprints"]["serverBuildComponents"]
    changed = {key for key in set(old) | set(new) if old.get(key) != new.get(key)}
    # packageSource/profileBuild change only when this package's files are edited meanwhile.
    assert sorted(changed - {"packageSource", "profileBuild"}) == components
    # The credentials are named, never shown.
    assert old["provider.credential"] == new["provider.credential"] == "ANTHROPIC_API_KEY,CLAUDE_CODE_OAUTH_TOKEN"
    for session in (base, run):
        assert_no_secret(session.stdout + session.stderr, "the terminal")
        (result,) = session.runs
        run_dir = Path(result["runDirectory"])
        assert_no_secret((run_dir / "result.json").read_text(encoding="utf-8"), "result.json")
        assert_no_secret((run_dir / "baseline.yml").read_text(encoding="utf-8"), "baseline.yml")
        assert_no_secret(json.dumps(session.document), "the --agentbench-json document")
