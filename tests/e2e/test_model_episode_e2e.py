"""agentbench-episode (seed 004's run_episode.py) on a simulated phone against the scripted fake model: the steps it prints, its exit status, and every recovery in the steps and the stream."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fake_openai import FakeOpenAI, call, content, index_of, with_
from fakeagents import session_env
from model_scripts import API_KEY, COMPLETE, DONE, INTERNET, NAVIGATE, NETWORK, SCRIPTS, WIFI

from pytest_agentbench.audit.transcript import parse_file


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


# ----------------------------------------------------------------------------- agentbench-episode


@pytest.mark.parametrize(
    ("script", "status", "ending"),
    [
        ([call("tap", index=index_of("Settings")), call("tap", index=NETWORK), call("tap", index=INTERNET),
          call("tap", index=WIFI), call("task_complete", answer=DONE)], 0, "task_complete"),
        ([content("Wi-Fi is on now.")], 1, "no_tool_call"),
    ],
    ids=["task-complete-exit-0", "no-task-complete-exit-1"],
)
def test_episode_cli_prints_the_steps_and_exits_by_task_complete(
    adb_server: PrivateAdbServer, tmp_path: Path, script: list, status: int, ending: str,
) -> None:
    with FakeOpenAI({"episode-model": script}) as api:
        env = adb_server.env(session_env(adb_server.port, tmp_path / "claims"))
        env.update(AGENTBENCH_OPENAI_BASE_URL=api.base_url, AGENTBENCH_OPENAI_API_KEY=API_KEY)
        stream = tmp_path / "episode.jsonl"
        done = subprocess.run(
            ["agentbench-episode", "--task", "Turn on Wi-Fi.", "--device", "sim", "--model", "episode-model",
             "--stream", str(stream)],
            env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    assert done.returncode == status, done.stdout + done.stderr
    assert f"outcome: {ending}" in done.stdout
    if status == 0:
        steps = re.findall(r"^step (\d+): (\d+) chars observed; (tap\(index=\d+\)) -> tapped ", done.stdout, re.MULTILINE)
        assert [int(number) for number, _, _ in steps] == [1, 2, 3, 4], done.stdout
        assert "task_complete called" in done.stdout and "step 5: task_complete -> " in done.stdout
    else:
        assert "task_complete NOT called" in done.stdout
    assert parse_file(stream).unparseable == ()
    assert API_KEY not in done.stdout + done.stderr + stream.read_text(encoding="utf-8")


def _episode(adb_server: PrivateAdbServer, tmp_path: Path, script: list, *, strict: frozenset[str] = frozenset(),
             env: dict[str, str] | None = None) -> tuple[int, str, list[dict]]:
    with FakeOpenAI({"episode-model": script}, strict={"episode-model": strict}) as api:
        environ = adb_server.env(session_env(adb_server.port, tmp_path / "claims"))
        environ.update(AGENTBENCH_OPENAI_BASE_URL=api.base_url, AGENTBENCH_OPENAI_API_KEY=API_KEY, **(env or {}))
        stream = tmp_path / "episode.jsonl"
        done = subprocess.run(
            ["agentbench-episode", "--task", "Turn on Wi-Fi.", "--device", "sim", "--model", "episode-model",
             "--stream", str(stream)],
            env=environ, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    assert parse_file(stream).unparseable == ()
    assert API_KEY not in done.stdout + done.stderr + stream.read_text(encoding="utf-8")
    return done.returncode, done.stdout + done.stderr, [json.loads(line) for line in stream.read_text(encoding="utf-8").splitlines()]


#: agentbench-episode's simulated phone starts on the launcher: each script opens Settings first.
OPEN_SETTINGS = call("tap", index=index_of("Settings"))

# (id, script, extra settings, exit status, what the printed steps must say, a report kind the stream must hold)
EPISODE_CASES = [
    ("think-unclosed", [OPEN_SETTINGS, *SCRIPTS["wifi-think-unclosed"]], {}, 0,
     "retry: the reply was empty (its content was a <think> block that never closed", "retry"),
    ("extra-calls", [OPEN_SETTINGS, *SCRIPTS["wifi-extra-calls"]], {}, 0, "extra-call: the reply made 2 calls; only tap(index=1) was executed", "extra-call"),
    ("unknown-text-tool", [OPEN_SETTINGS, *SCRIPTS["wifi-unknown-text-tool"]], {}, 0, "action-error: there is no tool named 'click'", "recovery"),
    ("prose-after-nav", [OPEN_SETTINGS, *SCRIPTS["wifi-prose-after-nav"]], {}, 1, "outcome: no_tool_call (task_complete NOT called)", "episode-end"),
    ("no-usage", [OPEN_SETTINGS, *SCRIPTS["wifi-no-usage"]], {}, 0, "usage-unknown: the server sent no usage for model call 2", "usage-unknown"),
    ("hermes", [OPEN_SETTINGS, *SCRIPTS["wifi-hermes"]], {}, 0, "recovery: recovered a tap call from the reply's text (hermes)", "recovery"),
    ("429", [OPEN_SETTINGS, *SCRIPTS["api-429"]], {}, 0, "api-retry: the model call failed (HTTP 429: API Error: 429 Rate limit reached); retrying in 0.2s",
     "api-retry"),
    ("strict", [OPEN_SETTINGS, *SCRIPTS["wifi-strict"]], {"strict": frozenset({"skip_special_tokens"})}, 0,
     "parameter-dropped: the server refused the request parameter skip_special_tokens", "parameter-dropped"),
    ("index-string", [OPEN_SETTINGS, *SCRIPTS["wifi-index-string"]], {}, 0, 'index "1" (a string) was read as the integer 1', "recovery"),
    ("trickled-past-the-deadline", [OPEN_SETTINGS, with_(NAVIGATE[0], trickle_s=8), *NAVIGATE, COMPLETE],
     {"env": {"AGENTBENCH_OPENAI_TIMEOUT_S": "2"}}, 0, "retry: the model call passed its deadline", "retry"),
]


@pytest.mark.parametrize(("script", "settings", "status", "printed", "kind"), [case[1:] for case in EPISODE_CASES],
                         ids=[case[0] for case in EPISODE_CASES])
def test_episode_cli_reports_each_recovery(adb_server: PrivateAdbServer, tmp_path: Path, script: list, settings: dict,
                                           status: int, printed: str, kind: str) -> None:
    returncode, output, events = _episode(adb_server, tmp_path, script, **settings)
    assert returncode == status, output
    assert printed in output, output
    assert kind in [event.get("kind") for event in events if event.get("subtype") == "agentbench_report"]
    model_calls = [event for event in events if event.get("kind") == "model-call"]
    assert model_calls and all("duration_ms" in event and "finish_reason" in event for event in model_calls)


# ----------------------------------------------------------------------------- defect 6: the seed's two revisits


def _reports(events: list[dict], kind: str) -> list[dict]:
    return [event for event in events if event.get("subtype") == "agentbench_report" and event.get("kind") == kind]


def test_episode_stops_at_the_seeds_switch_self_undo(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    # Seed 004's W4A8 row: Wi-Fi turned on, then tapped off again; the task_complete after it is never asked for.
    returncode, output, events = _episode(adb_server, tmp_path, [OPEN_SETTINGS, *SCRIPTS["wifi-self-undo"]])
    assert returncode == 1, output
    assert "(self-undo); the episode stops" in output and "outcome: self_undo (task_complete NOT called)" in output
    (undo,) = _reports(events, "self-undo")
    assert undo["tool"] == "tap"
    assert len([event for event in events if event.get("kind") == "model-call"]) == 5


def test_episode_submenu_then_back_is_no_self_undo(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    # Into a submenu and back twice, each at the same index as the step before: keyed on what was
    # tapped, neither Back is the undo of the tap before it.
    returncode, output, events = _episode(adb_server, tmp_path, [OPEN_SETTINGS, *SCRIPTS["wifi-submenu-back"]])
    assert returncode == 0, output
    assert not _reports(events, "self-undo") and "self-undo" not in output
    assert "outcome: task_complete (task_complete called) after 8 step(s)" in output
    # The Settings title tapped on Settings itself changes nothing, and the model is told so.
    (no_change,) = _reports(events, "no-change")
    assert "the screen did not change" in output and no_change["tool"] == "tap"


# ----------------------------------------------------------------------------- defects 2 and 9 in detail


def test_episode_reports_the_undecodable_call_beside_the_extra_one(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    returncode, output, events = _episode(adb_server, tmp_path, [OPEN_SETTINGS, *SCRIPTS["wifi-extra-calls"]])
    assert returncode == 0, output
    (extra,) = _reports(events, "extra-call")
    assert extra["calls"] == ["back()"] and "extra-call: the reply made 2 calls" in output
    # The undecodable third call is reported too, naming it, and the model was told why.
    (undecodable,) = [report for report in _reports(events, "action-error") if report.get("tool") == "home"]
    assert "not a JSON object" in undecodable["message"] and undecodable["message"].endswith("the model was told")
    assert "action-error: the arguments of your home call are not a JSON object" in output


def test_episode_puts_each_model_call_on_the_record_and_names_the_provider(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    returncode, output, events = _episode(adb_server, tmp_path, [OPEN_SETTINGS, *NAVIGATE, COMPLETE])
    assert returncode == 0, output
    assert re.search(r"model episode-model at http://127\.0\.0\.1:\d+\n", output), output
    calls = [event for event in events if event.get("kind") == "model-call"]
    assert [call["call"] for call in calls] == [1, 2, 3, 4, 5]
    for call_record in calls:
        assert call_record["duration_ms"] >= 0 and call_record["started_at"]
        assert (call_record["prompt_tokens"], call_record["completion_tokens"]) == (1000, 20)
        assert call_record["finish_reason"] == "tool_calls" and call_record["retries"] == []
    assert events[-1]["type"] == "result" and events[-1]["duration_api_ms"] > 0
