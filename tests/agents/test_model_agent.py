"""The loop's features, in process: a scripted model on loopback, a simulated phone behind McpDevice's interface, the stream it writes."""

from __future__ import annotations

import io
import json

import anyio
import pytest
from fake_openai import FakeOpenAI, Turn, call, content, empty, http_error, index_of, rate_limited, thinking_disabled, with_
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
                device: SimDevice | None = None, strict: set[str] | None = None) -> Episode:
    if device is None:
        phone = Phone()
        phone.launch("com.android.settings")
        device = SimDevice(phone)
    with FakeOpenAI({"m": script}, strict={"m": frozenset(strict or ())}) as api:
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


def test_every_request_offers_the_tools_with_tool_choice_auto() -> None:
    # Seed 004: the model chooses whether to call a tool; "required" would forbid a plain answer.
    episode = run_episode([call("tap", index=NETWORK), DONE])
    assert [request.get("tool_choice") for request in episode.requests] == ["auto", "auto"]
    assert all(request.get("tools") for request in episode.requests)


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
    status, out, err = _cli([*STREAM, "--model", "m", "--max-budget-usd", "1"], {**environ, "AGENTBENCH_OPENAI_API_KEY": "sk-never-shown"})
    events = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and events[0]["subtype"] == "init" and events[0]["apiKeySource"] == "AGENTBENCH_OPENAI_API_KEY"
    assert events[-1]["is_error"] is True and message in events[-1]["result"]
    assert "sk-never-shown" not in out
    # Issue 33: the harness quotes the last stderr line of a failed agent; it was the budget warning.
    last = err.strip().splitlines()[-1]
    assert last.startswith("agentbench-agent: the run ended in an error: API Error: ") and message in last, err


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


# ----------------------------------------------------------------------------- issue 20: what real servers send


def _thinking_blocks(episode: Episode) -> list[str]:
    return [block["thinking"] for line in episode.lines if line["type"] == "assistant"
            for block in line["message"]["content"] if block["type"] == "thinking"]


def _reports(episode: Episode, kind: str) -> list:
    return [report for report in episode.transcript.reports if report.kind == kind]


def test_an_unclosed_think_in_content_is_an_empty_reply_retried_without_thinking_and_kept_as_thinking() -> None:
    # vLLM without a reasoning parser (or llama.cpp --reasoning-format none): the think ran out of tokens.
    cut = with_(content("<think>The Wi-Fi row is at index 1, so I should tap it, but first"), finish_reason="length")
    episode = run_episode([cut, call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI), DONE])
    assert (episode.result.ending, episode.wifi_on) == ("task_complete", True)
    assert [thinking_disabled(body) for body in episode.requests] == [False, True, False, False, False]
    (retry,) = _reports(episode, "retry")
    assert retry.turn == 1 and retry.data["think_in_content"] == "unclosed" and retry.data["finish_reason"] == "length"
    assert "never closed" in retry.message and "finish reason length" in retry.message
    assert _thinking_blocks(episode)[0] == "The Wi-Fi row is at index 1, so I should tap it, but first"
    # The think is not text: no assistant text block holds it, and it never went back as content.
    texts = [b["text"] for line in episode.lines if line["type"] == "assistant" for b in line["message"]["content"] if b["type"] == "text"]
    assert not any("<think>" in text for text in texts)
    assert not any("<think>" in str(m.get("content")) for m in episode.requests[-1]["messages"])


def test_a_closed_think_in_content_is_thinking_and_the_call_after_it_is_recovered() -> None:
    text = "<think>Network first.</think>\n<tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>{index_of:Network & internet}</arg_value>\n</tool_call>"
    episode = run_episode([content(text), DONE])
    assert episode.kinds() == ["recovery"] and _thinking_blocks(episode) == ["Network first."]
    assert episode.device.actions() == ["tap"]


def test_extra_and_undecodable_calls_are_reported_and_told() -> None:
    three = Turn(tool_calls=(("tap", {"index": NETWORK}), ("back", {}), ("home", '{"oops": ')))
    episode = run_episode([three, DONE])
    assert episode.device.actions() == ["tap"]
    assert episode.kinds() == ["action-error", "extra-call"]
    (bad,) = _reports(episode, "action-error")
    assert bad.data["tool"] == "home" and "not a JSON object" in bad.message
    (extra,) = _reports(episode, "extra-call")
    assert extra.data["calls"] == ["back()"] and "only tap(index=1) was executed" in extra.message
    history = episode.requests[1]["messages"]
    assistant = history[2]
    assert [entry["function"]["name"] for entry in assistant["tool_calls"]] == ["tap", "back", "home"]
    told = [m["content"] for m in history if m["role"] == "tool"]
    assert told[0].startswith('tapped LinearLayout "Network & internet"')
    assert told[1] == "not executed: call one tool per turn"
    assert told[2].startswith("the arguments of your home call are not a JSON object")


def test_an_undecodable_call_alone_is_answered_on_its_own_id() -> None:
    episode = run_episode([Turn(tool_calls=(("tap", "[1]"),)), DONE])
    (entry,) = episode.requests[1]["messages"][2]["tool_calls"]
    (told,) = [m for m in episode.requests[1]["messages"] if m["role"] == "tool"]
    assert told["tool_call_id"] == entry["id"] and told["content"].startswith("the arguments of your tap call")


@pytest.mark.parametrize(
    "reply",
    [content("<tool_call>click\n<arg_key>index</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"),
     content('<tool_call>\n{"name": "click", "arguments": {"index": 1}}\n</tool_call>'),
     call("click", index=1)],
    ids=["glm45-text", "hermes-text", "native"],
)
def test_a_call_to_an_unknown_tool_is_no_such_tool_in_text_as_natively(reply: Turn) -> None:
    episode = run_episode([reply, DONE])
    assert episode.result.ending == "task_complete" and len(episode.requests) == 2
    told = [m for m in episode.requests[1]["messages"] if m["role"] == "tool"]
    assert told[-1]["content"].startswith("there is no tool named 'click'")
    assert "action-error" in episode.kinds()
    assert ("recovery" in episode.kinds()) == (reply.content is not None)


def test_hermes_recovery_strips_the_markup_and_names_the_format() -> None:
    text = 'Opening the network settings.\n<tool_call>\n{"name": "tap", "arguments": {"index": {index_of:Network & internet}}}\n</tool_call>'
    episode = run_episode([content(text), DONE])
    (recovery,) = _reports(episode, "recovery")
    assert recovery.data["format"] == "hermes"
    assistant = episode.requests[1]["messages"][2]
    assert assistant["content"] == "Opening the network settings."
    texts = [b["text"] for line in episode.lines if line["type"] == "assistant" for b in line["message"]["content"] if b["type"] == "text"]
    assert texts[0] == "Opening the network settings." and not any("tool_call" in text for text in texts)


def test_an_index_sent_as_a_string_is_accepted_and_the_coercion_reported() -> None:
    episode = run_episode([Turn(tool_calls=(("tap", '{"index": "1"}'),)), DONE])
    assert episode.device.actions() == ["tap"]
    (recovery,) = _reports(episode, "recovery")
    assert recovery.data["format"] == "argument-coerced" and 'index "1" (a string) was read as the integer 1' in recovery.message
    assert episode.result.recoveries == 1


class TwoScreens:
    """A list screen whose row 1 opens a submenu whose element 1 is "Navigate up" (McpDevice's interface)."""

    SCREENS = {
        "main": [("android.widget.TextView", "Settings", "", "[0,0][1080,100]", "main"),
                 ("android.widget.LinearLayout", "Storage", "", "[0,100][1080,300]", "storage")],
        "storage": [("android.widget.TextView", "Storage", "", "[200,0][1080,100]", "storage"),
                    ("android.widget.ImageButton", "", "Navigate up", "[0,0][150,150]", "main"),
                    ("android.widget.TextView", "12 GB used", "", "[0,300][1080,400]", "storage")],
    }

    def __init__(self) -> None:
        self.screen = "main"
        self.calls: list[tuple[str, dict]] = []

    async def resolve(self) -> str:
        return "two-screens"

    def _xml(self) -> str:
        nodes = "".join(
            f'<node index="0" text="{text}" resource-id="" class="{cls}" package="com.example.app" content-desc="{desc}" '
            'checkable="false" checked="false" clickable="true" enabled="true" focusable="false" focused="false" '
            f'scrollable="false" long-clickable="false" password="false" selected="false" bounds="{bounds}" />'
            for cls, text, desc, bounds, _ in self.SCREENS[self.screen]
        )
        return f"foreground: com.example.app/.{self.screen}\n<?xml version='1.0'?><hierarchy rotation=\"0\">{nodes}</hierarchy>"

    async def observe(self):  # noqa: ANN201 - UiTree
        from pytest_agentbench.agents.model.ui_tree import from_uiautomator

        return from_uiautomator(self._xml())

    async def call(self, action: str, **values: object) -> str:
        self.calls.append((action, values))
        if action == "tap":
            for _, _, _, bounds, target in self.SCREENS[self.screen]:
                left, top, right, bottom = (int(n) for n in bounds.replace("][", ",").strip("[]").split(","))
                if left <= values["x"] < right and top <= values["y"] < bottom:
                    self.screen = target
                    break
        return "ok"

    def actions(self) -> list[str]:
        return [name for name, _ in self.calls]


def test_submenu_at_index_1_then_its_navigate_up_at_index_1_is_no_self_undo() -> None:
    device = TwoScreens()
    episode = run_episode([call("tap", index=1), call("tap", index=1), call("task_complete", answer="done")], device=device)  # type: ignore[arg-type]
    assert episode.result.ending == "task_complete" and "self-undo" not in episode.kinds()
    assert device.actions() == ["tap", "tap"] and device.screen == "main"


def test_a_reply_without_usage_is_unknown_tokens_not_zero() -> None:
    episode = run_episode([with_(call("tap", index=NETWORK), usage=None), DONE])
    (unknown,) = _reports(episode, "usage-unknown")
    assert unknown.turn == 1 and "unknown (not 0)" in unknown.message
    calls = _reports(episode, "model-call")
    assert [(c.data["prompt_tokens"], c.data["completion_tokens"]) for c in calls] == [(None, None), (1000, 20)]


def test_each_model_call_is_on_the_record() -> None:
    episode = run_episode([with_(call("tap", index=NETWORK), finish_reason="tool_calls"), DONE])
    calls = _reports(episode, "model-call")
    assert [c.data["call"] for c in calls] == [1, 2]
    for record in calls:
        assert record.data["started_at"].endswith("Z") and record.data["duration_ms"] >= 0
        assert record.data["finish_reason"] == "tool_calls" and record.data["retries"] == []
    result = episode.lines[-1]
    assert result["duration_api_ms"] == sum(c.data["duration_ms"] for c in calls)


def test_429s_are_retried_by_the_loop_each_reported_with_status_and_wait() -> None:
    episode = run_episode([rate_limited(0.1), rate_limited(0.1), DONE], env={"AGENTBENCH_OPENAI_MAX_RETRIES": "2"})
    assert episode.result.ending == "task_complete" and len(episode.requests) == 3
    retries = _reports(episode, "api-retry")
    assert [(r.data["status"], r.data["wait_s"]) for r in retries] == [(429, 0.1), (429, 0.1)]
    (record,) = _reports(episode, "model-call")
    assert [r["status"] for r in record.data["retries"]] == [429, 429]
    # Not model regressions: the server's answers, reported but not counted as recoveries.
    assert episode.result.recoveries == 0


def test_a_trickled_body_is_bounded_by_one_deadline_and_retried_without_thinking() -> None:
    import time

    slow = with_(call("tap", index=NETWORK), trickle_s=6)
    started = time.monotonic()
    episode = run_episode([slow, DONE], env={"AGENTBENCH_OPENAI_TIMEOUT_S": "1.5"})
    assert time.monotonic() - started < 5
    (retry,) = _reports(episode, "retry")
    assert retry.data["cause"] == "timeout" and "Request timed out" in retry.message
    assert [thinking_disabled(body) for body in episode.requests] == [False, True]
    assert episode.result.ending == "task_complete"


def test_max_tokens_is_sent_by_default() -> None:
    episode = run_episode([DONE])
    assert episode.requests[0]["max_tokens"] == 2048
    assert run_episode([DONE], env={"AGENTBENCH_OPENAI_MAX_TOKENS": "300"}).requests[0]["max_tokens"] == 300


def test_a_strict_endpoint_gets_no_server_specific_parameter_after_its_400_and_it_is_reported_once() -> None:
    episode = run_episode([call("tap", index=NETWORK), DONE], strict={"skip_special_tokens"})
    assert episode.result.ending == "task_complete"
    assert ["skip_special_tokens" in body for body in episode.requests] == [True, False, False]
    (dropped,) = _reports(episode, "parameter-dropped")
    assert dropped.data["parameter"] == "skip_special_tokens" and "400" in dropped.message


@pytest.mark.parametrize(
    ("headers", "wait"),
    [({"retry-after": "2"}, 2.0), ({"retry-after-ms": "250"}, 0.25), ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
     ({}, None), ({"retry-after": "-3"}, 0.0)],
    ids=["seconds", "milliseconds", "http-date", "none", "negative"],
)
def test_retry_after(headers: dict, wait: float | None) -> None:
    import httpx2  # the openai client's HTTP library (openai >= 3)

    from pytest_agentbench.agents.model.endpoint import _retry_after

    assert _retry_after(httpx2.Response(429, headers=headers)) == wait


def test_a_failed_model_call_is_on_the_record_with_its_retries() -> None:
    episode = run_episode([http_error(500, "boom"), http_error(500, "boom")], env={"AGENTBENCH_OPENAI_MAX_RETRIES": "1"})
    assert episode.result.ending == "api_error" and len(episode.requests) == 2
    (record,) = _reports(episode, "model-call")
    assert record.data["status"] == 500 and record.data["error"] == "API Error: 500 boom"
    assert [retry["status"] for retry in record.data["retries"]] == [500]
