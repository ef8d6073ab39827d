"""The scripted model replies of the agentbench-agent scenarios (seed 004's measured failures, issue 20's server shapes), shared by the plugin and agentbench-episode tests.

Each script is keyed by the model name a suite (`claude.model`) or `agentbench-episode --model`
asks the fake OpenAI-compatible server for (tests/fake_openai.py).
"""

from __future__ import annotations

from fake_openai import Turn, call, content, delayed, empty_until_thinking_off, http_error, index_of, rate_limited, with_

API_KEY = "sk-agentbench-SENTINELKEY4242"
TIMEOUT_S = 6
DONE = "Wi-Fi is on and the Internet screen shows AndroidWifi.\nWIFI: on"
NETWORK, INTERNET, WIFI = index_of("Network & internet"), index_of("Internet"), index_of("Wi-Fi")

SCRIPTS = {
    # Seed 004: bf16 and W4A16 "done in 4 steps".
    "wifi-passes": [call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI),
                    call("task_complete", answer=DONE)],
    # W4A8: turns Wi-Fi on, then taps it off again. The last turn must never be asked for.
    "wifi-self-undo": [call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI),
                       call("tap", index=WIFI), call("task_complete", answer=DONE)],
    # Says it is done, never calls a tool.
    "wifi-no-tool": [content("I have turned on Wi-Fi for you.\nWIFI: on")],
    # The reply stays empty (a <think> that never closed) until thinking is switched off.
    "wifi-empty-retry": [empty_until_thinking_off(call("tap", index=NETWORK)), call("tap", index=INTERNET),
                         call("tap", index=WIFI), call("task_complete", answer=DONE)],
    # The exact unterminated call of the seed, on the Wi-Fi toggle screen, with empty tool_calls.
    "wifi-unterminated": [call("tap", index=NETWORK), call("tap", index=INTERNET),
                          content('[tap]\n{"tool": "tap", "parameters": {"index": {index_of:Wi-Fi}}'),
                          call("task_complete", answer=DONE)],
    # Wanders between two screens until the step budget (10) runs out.
    "wifi-budget": [call("tap", index=NETWORK), call("back")] * 5 + [call("task_complete", answer=DONE)],
    # A tap on a plain title changes nothing; a submenu and Back revisit a screen without being a self-undo.
    "wifi-submenu-back": [call("tap", index=index_of("Settings")), call("tap", index=NETWORK), call("back"),
                          call("tap", index=NETWORK), call("tap", index=INTERNET), call("back"),
                          call("task_complete", answer="I did not change it.\nWIFI: off")],
    "api-401": [http_error(401, "Invalid API key")],
    # The SDK retries a 500 once (AGENTBENCH_OPENAI_MAX_RETRIES=1); no second loop of ours.
    "api-500": [http_error(500, "scripted internal error")] * 2,
    "api-timeout": [delayed(TIMEOUT_S + 4, content("too late"))] * 2,
}
UNREACHABLE = "api-unreachable"
NAVIGATE = [call("tap", index=NETWORK), call("tap", index=INTERNET), call("tap", index=WIFI)]
COMPLETE = call("task_complete", answer=DONE)
HERMES_TAP = 'Opening it.\n<tool_call>\n{{"name": "tap", "arguments": {{"index": {{index_of:{0}}}}}}}\n</tool_call>'
# Issue 20: what vLLM and llama.cpp send when their parsers are off or the server is strict.
SCRIPTS.update({
    # 1. An unclosed <think> left in content (no reasoning parser), cut off by max_tokens.
    "wifi-think-unclosed": [with_(content("<think>The Network row is index 1. Then Internet, then the"), finish_reason="length"),
                            *NAVIGATE, COMPLETE],
    # 2. Two calls and an undecodable third in one reply.
    "wifi-extra-calls": [Turn(tool_calls=(("tap", {"index": NETWORK}), ("back", {}), ("home", '{"oops": '))),
                         *NAVIGATE[1:], COMPLETE],
    # 3. A GLM text call to a tool the model was never given.
    "wifi-unknown-text-tool": [content("<tool_call>click\n<arg_key>index</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"),
                               *NAVIGATE, COMPLETE],
    # 4. Seed 004's W4A16 alarm row: full navigation, then prose instead of task_complete.
    "wifi-prose-after-nav": [*NAVIGATE, content(DONE)],
    # 7. A server that sends no usage block on one reply.
    "wifi-no-usage": [with_(NAVIGATE[0], usage=None), *NAVIGATE[1:], COMPLETE],
    # 8. Hermes/Qwen3 calls in content (vLLM without --tool-call-parser hermes).
    "wifi-hermes": [content(HERMES_TAP.format("Network & internet")), content(HERMES_TAP.format("Internet")),
                    content(HERMES_TAP.format("Wi-Fi")), COMPLETE],
    # 9. Two 429s with Retry-After 0.2 s, retried by the loop (AGENTBENCH_OPENAI_MAX_RETRIES=2 here).
    "api-429": [rate_limited(0.2)] + [rate_limited(0.2)] + [*NAVIGATE, COMPLETE],
    # 10. A strict endpoint refusing skip_special_tokens.
    "wifi-strict": [*NAVIGATE, COMPLETE],
    # 11. An index sent as the string "2".
    "wifi-index-string": [call("tap", index=index_of("Network & internet", as_text=True)), *NAVIGATE[1:], COMPLETE],
})
STRICT = {"wifi-strict": frozenset({"skip_special_tokens"})}
#: The scenarios of the main session (the 429 one runs in a session of its own, with 2 retries).
IN_SESSION = [name for name in SCRIPTS if name != "api-429"]
