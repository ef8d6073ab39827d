"""The loop's features, in process: a scripted model on loopback, a simulated phone behind McpDevice's interface, the stream it writes."""

from __future__ import annotations

import io
import json

import anyio
import pytest
from fake_openai import FakeOpenAI, Turn, call, content, empty, http_error, index_of, thinking_disabled
from modeldevice import SimDevice

from pytest_agentbench.agents.model.agent import AgentLoop, EpisodeResult, LoopSettings
from pytest_agentbench.agents.model.cli import run as agent_cli
from pytest_agentbench.agents.model.endpoint import ChatClient, EndpointConfig, EndpointConfigError
from pytest_agentbench.agents.stream import StreamWriter
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.audit.transcript import Transcript, parse_lines

NETWORK, INTERNET, WIFI = index_of("Network & internet"), index_of("Internet"), index_of("Wi-Fi")
DONE = call("task_complete", answer="WIFI: on")


class Episode:
    """One finished in-process episode."""

    def __init__(self, result: EpisodeResult, stream: str, requests: list[dict], device: SimDevice) -> None:
        self.result = result
        self.lines = [json.loads(line) for line in stream.splitlines()]
        self.transcript: Transcript = parse_lines(stream.splitlines(keepends=True))
        self.requests = requests
        self.device = device

    def kinds(self) -> list[str]:
        return [report.kind for report in self.transcript.reports if report.kind not in ("action", "episode-end", "model-call")]

    @property
    def wifi_on(self) -> bool:
        return self.device.phone.settings["global"].get("wifi_on") == "1"


def run_episode(script: list[Turn], *, max_turns: int = 10, budget: float | None = None, env: dict[str, str] | None = None,
                device: SimDevice | None = None) -> Episode:
    if device is None:
        phone = Phone()
        phone.launch("com.android.settings")
        device = SimDevice(phone)
    with FakeOpenAI({"m": script}) as api:
        config = EndpointConfig.from_environ({
            "AGENTBENCH_OPENAI_BASE_URL": api.base_url, "AGENTBENCH_OPENAI_MAX_RETRIES": "0",
            "AGENTBENCH_OPENAI_TIMEOUT_S": "20", **(env or {}),
        })
        out = io.StringIO()
        writer = StreamWriter(out=out, model="m", assistant_model="m", cost_usd=0.0 if config.pricing else None, _id_tag="agent")
        writer.init(cwd="/", tools=[], mcp_servers=[{"name": "agentbench", "status": "connected"}])

        async def go() -> EpisodeResult:
            chat = ChatClient(config)
            try:
                loop = AgentLoop(chat=chat, device=device, writer=writer,  # type: ignore[arg-type]
                                 settings=LoopSettings(model="m", max_turns=max_turns, budget_usd=budget), pricing=config.pricing)
                return await loop.run("Turn on Wi-Fi.")
            finally:
                await chat.close()

        result = anyio.run(go)
        episode = Episode(result, out.getvalue(), api.requests_for("m"), device)
    assert episode.transcript.unparseable == ()
    return episode


@pytest.mark.parametrize(
    ("script", "ending", "requests", "wifi_on"),
    [
        ([call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI), call("tap", index=WIFI), DONE],
         "self_undo", 4, False),
        # A refused call between the two taps does not hide the undo.
        ([call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI), call("tap", index=99),
          call("tap", index=WIFI), DONE], "self_undo", 5, False),
        ([call("tap", index=NETWORK), call("back"), call("tap", index=NETWORK), DONE], "task_complete", 4, False),
        ([call("tap", index=NETWORK), call("tap", index=INTERNET), call("back"), call("back"), DONE], "task_complete", 5, False),
        # The same switch tapped again after leaving and coming back is not "the same action in a row".
        ([call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI), call("back"),
          call("tap", index=INTERNET), call("tap", index=WIFI), DONE], "task_complete", 7, False),
    ],
    ids=["switch-twice", "switch-error-switch", "submenu-back-submenu", "back-back", "switch-away-switch"],
)
def test_self_undo_is_narrow(script: list[Turn], ending: str, requests: int, wifi_on: bool) -> None:
    episode = run_episode(script)
    assert (episode.result.ending, len(episode.requests), episode.wifi_on) == (ending, requests, wifi_on)
    assert ("self-undo" in episode.kinds()) == (ending == "self_undo")


def test_task_complete_ends_with_its_answer_as_the_final_text() -> None:
    episode = run_episode([call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI), DONE])
    assert (episode.result.ending, episode.result.exit_status, episode.wifi_on) == ("task_complete", 0, True)
    assert episode.transcript.final_text == "WIFI: on" and episode.transcript.result.result == "WIFI: on"
    assert episode.transcript.result.num_turns == 4
    # The model's history holds the real screens, each after an action.
    last = episode.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user"] + ["assistant", "tool"] * 3
    assert '"Wi-Fi"' in last[-1]["content"] and "checked" in last[-1]["content"]


def test_one_action_per_turn_the_others_are_answered_not_executed() -> None:
    two = Turn(tool_calls=(("tap", {"index": NETWORK}), ("back", {})))
    episode = run_episode([two, DONE])
    assert episode.device.actions() == ["tap"]
    tools = [m for m in episode.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"].split(";")[0].split(" at ")[0] for m in tools] == ['tapped LinearLayout "Network & internet"',
                                                                             "not executed: call one tool per turn"]


def test_undecodable_arguments_are_told_and_the_episode_goes_on() -> None:
    episode = run_episode([Turn(tool_calls=(("tap", "[1]"),)), DONE])
    assert episode.result.ending == "task_complete" and episode.device.actions() == []
    (told,) = [m for m in episode.requests[1]["messages"] if m["role"] == "tool"]
    assert told["content"] == "the arguments of your tap call are not a JSON object: [1]"
    assert episode.kinds() == ["action-error"]


def test_a_recovered_call_goes_back_into_the_history_as_a_proper_call() -> None:
    episode = run_episode([content("Opening it.\n<tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>{index_of:Network & internet}</arg_value></tool_call>"), DONE])
    assert episode.kinds() == ["recovery"] and episode.result.recoveries == 1
    assistant = episode.requests[1]["messages"][2]
    assert assistant["content"] == "Opening it."
    (entry,) = assistant["tool_calls"]
    assert entry["id"].startswith("call_recovered_") and entry["function"]["name"] == "tap"
    assert json.loads(entry["function"]["arguments"]) == {"index": 1}


def test_an_empty_reply_is_retried_once_then_the_episode_ends() -> None:
    episode = run_episode([empty(), empty(), DONE])
    assert episode.result.ending == "empty_reply" and len(episode.requests) == 2
    assert [thinking_disabled(body) for body in episode.requests] == [False, True]
    assert episode.kinds() == ["retry", "empty-reply"]
    # The unclosed reasoning is kept in the transcript as thinking blocks.
    thinking = [block for line in episode.lines if line["type"] == "assistant" for block in line["message"]["content"]
                if block["type"] == "thinking"]
    assert len(thinking) == 2 and thinking[0]["thinking"].startswith("Let me think")


def test_an_action_that_changes_nothing_is_told() -> None:
    episode = run_episode([call("tap", index=index_of("Settings")), DONE])
    assert episode.kinds() == ["no-change"]
    told = episode.requests[1]["messages"][-1]
    assert told["content"].endswith("; the screen did not change") and "The screen now" not in told["content"]


def test_the_step_budget_ends_in_error_max_turns() -> None:
    episode = run_episode([call("tap", index=NETWORK), call("back")] * 3, max_turns=2)
    result = episode.transcript.result
    assert (episode.result.ending, episode.result.exit_status, len(episode.requests)) == ("max_turns", 1, 2)
    assert (result.subtype, result.is_error, result.num_turns, result.errors) == (
        "error_max_turns", True, 3, ("Reached maximum number of turns (2)",))


PRICES = {"AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK": "3", "AGENTBENCH_OPENAI_PRICE_OUTPUT_PER_MTOK": "15"}


def test_cost_is_reported_only_with_prices_and_the_budget_is_enforced() -> None:
    unpriced = run_episode([DONE])
    assert "total_cost_usd" not in unpriced.lines[-1] and unpriced.transcript.result.total_cost_usd is None
    priced = run_episode([DONE], env=PRICES)
    assert priced.transcript.result.total_cost_usd == pytest.approx((1000 * 3 + 20 * 15) / 1e6)
    over = run_episode([call("tap", index=NETWORK), DONE], env=PRICES, budget=0.001)
    result = over.transcript.result
    assert (result.subtype, result.is_error, over.device.actions()) == ("error_max_budget_usd", True, [])
    assert result.errors == ("Reached maximum budget ($0.001)",)


def test_an_api_error_mid_episode_ends_like_claudes() -> None:
    episode = run_episode([call("tap", index=NETWORK), http_error(401, "Invalid API key")])
    result = episode.transcript.result
    assert (result.subtype, result.is_error, result.api_error_status) == ("success", True, 401)
    assert result.result == "API Error: 401 Invalid API key" and episode.result.exit_status == 1
    assert episode.lines[-2]["message"]["model"] == "<synthetic>"


def test_a_server_that_stops_answering_ends_in_error_during_execution() -> None:
    phone = Phone()
    phone.launch("com.android.settings")
    episode = run_episode([call("tap", index=NETWORK), DONE], device=SimDevice(phone, gone_after=2))
    result = episode.transcript.result
    assert (result.subtype, result.is_error) == ("error_during_execution", True)
    assert "stopped answering" in result.errors[0]


# ----------------------------------------------------------------------------- the CLI's contract


def _cli(argv: list[str], environ: dict[str, str] | None = None, stdin: str = "Turn on Wi-Fi.") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = agent_cli(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, environ=environ or {}, cwd="/tmp")
    return status, out.getvalue(), err.getvalue()


STREAM = ["-p", "--verbose", "--output-format", "stream-json"]


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        ([*STREAM, "--plan", "x.yml"], {}, "error: unknown option '--plan'"),
        ([*STREAM, "--max-turns", "0", "--model", "m"], {}, "error: --max-turns must be a positive integer, got '0'"),
        ([*STREAM, "--max-budget-usd", "free", "--model", "m"], {}, "error: --max-budget-usd must be a positive number"),
        ([*STREAM], {}, "needs the served model's name: pass --model NAME or set AGENTBENCH_OPENAI_MODEL"),
        (["-p", "--output-format", "stream-json", "--model", "m"], {}, "requires --verbose"),
    ],
    ids=["replay-only-option", "max-turns", "budget", "no-model", "no-verbose"],
)
def test_usage_errors_exit_1_with_nothing_on_stdout(argv: list[str], environ: dict, message: str) -> None:
    status, out, err = _cli(argv, environ)
    assert (status, out) == (1, "") and message in err


def test_version_and_help_name_the_agent() -> None:
    status, out, _ = _cli(["--version"])
    assert status == 0 and out.endswith("-agentbench-agent (agentbench-agent)\n")
    status, out, _ = _cli(["--help"])
    assert status == 0 and "--max-turns <turns>" in out and "--plan" not in out and "AGENTBENCH_OPENAI_BASE_URL" in out


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "API Error: AGENTBENCH_OPENAI_BASE_URL is not set"),
        ({"AGENTBENCH_OPENAI_BASE_URL": "ftp://host/v1"}, "must be an http:// or https:// URL, got ftp://host"),
        ({"AGENTBENCH_OPENAI_BASE_URL": "http://h/v1", "AGENTBENCH_OPENAI_TIMEOUT_S": "soon"}, "AGENTBENCH_OPENAI_TIMEOUT_S='soon' is not a number"),
        ({"AGENTBENCH_OPENAI_BASE_URL": "http://h/v1", "AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK": "1"}, "set both"),
    ],
    ids=["no-base-url", "not-http", "bad-timeout", "half-a-price"],
)
def test_a_bad_endpoint_environment_ends_the_stream_in_an_api_error(environ: dict, message: str) -> None:
    status, out, _ = _cli([*STREAM, "--model", "m"], {**environ, "AGENTBENCH_OPENAI_API_KEY": "sk-never-shown"})
    events = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and events[0]["subtype"] == "init" and events[0]["apiKeySource"] == "AGENTBENCH_OPENAI_API_KEY"
    assert events[-1]["is_error"] is True and message in events[-1]["result"]
    assert "sk-never-shown" not in out


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({"AGENTBENCH_OPENAI_BASE_URL": "https://user:pw@Models.Example:8443/v1/x"}, "https://models.example:8443")],
    ids=["credentials-and-path-dropped"],
)
def test_endpoint_identity_is_scheme_host_port(environ: dict, expected: str) -> None:
    assert EndpointConfig.from_environ(environ).identity == expected


def test_endpoint_defaults_and_limits() -> None:
    config = EndpointConfig.from_environ({"AGENTBENCH_OPENAI_BASE_URL": "http://h/v1"})
    assert (config.timeout_s, config.max_retries, config.pricing, config.api_key) == (120.0, 2, None, None)
    with pytest.raises(EndpointConfigError, match="AGENTBENCH_OPENAI_MAX_RETRIES='-1' must be at least 0"):
        EndpointConfig.from_environ({"AGENTBENCH_OPENAI_BASE_URL": "http://h/v1", "AGENTBENCH_OPENAI_MAX_RETRIES": "-1"})




def test_a_reply_that_could_not_be_searched_is_told_as_a_user_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.agents.model import tool_parse

    def explode(*args: object) -> None:
        raise RecursionError("deep")

    monkeypatch.setattr(tool_parse, "_tagged_calls", explode)
    episode = run_episode([content("<tool_call>tap"), DONE])
    assert episode.result.ending == "task_complete" and len(episode.requests) == 2
    told = episode.requests[1]["messages"][-1]
    assert told["role"] == "user" and "could not be searched for tool calls" in told["content"]
    assert episode.kinds() == ["action-error"]
