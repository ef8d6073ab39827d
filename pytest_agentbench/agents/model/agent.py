"""A task + a model endpoint + a device behind an MCP server -> seed 004's loop: observe, one call, execute, observe again, reported as stream-json.

Each feature beyond a plain ReAct loop answers a failure measured in seed 004, and each one is
reported in the stream (`system` events of subtype `agentbench_report`) so the audit can count it:

* a step budget (`max_turns`): an exhausted budget ends with `error_max_turns`;
* "the screen did not change", told to the model after an action that changed nothing (`no-change`);
* self-undo: the same action (keyed on the element tapped, not its index) returning the screen
  to where it was before that action's previous run is reported and ends the episode
  (`self-undo`); a submenu and Back are two different actions;
* an empty reply (no content, no tool call: a `<think>` that never closed, in `reasoning` or left
  in the content) or a call past its deadline is asked again once with thinking off (`retry`);
  `<think>` text in the content is kept as thinking, never as text;
* tool calls recovered from the reply's text (`recovery`), an index coerced from text
  (`recovery`, `argument-coerced`), further calls in one reply (`extra-call`), undecodable ones
  (`action-error`, and the model is told on that call);
* each model call (`model-call`: start, duration, tokens, finish reason, retries), each retried
  HTTP failure (`api-retry`), a parameter the server refused (`parameter-dropped`), a reply
  without usage (`usage-unknown`).

The loop never decides that the task is finished: `task_complete(answer)` ends it, and its answer
is the final text. A reply without any tool call ends the episode as Claude Code's end of turn
does, with that reply as the final text; the `episode-end` report says which ending it was, and
the audit fails every ending but `task_complete` (completion is required).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Literal

from pytest_agentbench.agents.model.endpoint import ApiFailure, ChatClient, Pricing, Reply
from pytest_agentbench.agents.model.executor import MODEL_TOOLS, TOOL_NAMES, TOOL_SCHEMAS, Executor, action_key
from pytest_agentbench.agents.model.mcp_device import DeviceCallFailed, McpDevice, ServerGone
from pytest_agentbench.agents.model.tool_parse import ParsedCall, ParsedReply, parse_reply, split_thinking
from pytest_agentbench.agents.model.ui_tree import UiTree
from pytest_agentbench.agents.stream import StreamWriter

SYSTEM_PROMPT = (
    "You operate an Android phone to do the user's task. Each turn you see the current screen as a numbered "
    "list of elements: index, class, texts, #id, state (checked or unchecked, selected, disabled, focused) and "
    "the @x,y tap point. Call exactly one tool per turn: tap(index), type_text(text, index), swipe(direction), "
    "back(), home() or open_app(package). Its result says what happened and shows the new screen, or says that "
    "the screen did not change. Read a switch's checked or unchecked state before you tap it: tapping a switch "
    "that is already on turns it off. When the screen shows that the task is done, call task_complete(answer); "
    "the answer is your final reply."
)
DEFAULT_MAX_TURNS = 10
NOT_EXECUTED = "not executed: call one tool per turn"
#: Report kinds the audit counts as recovery stumbles (audit.verdict's list must agree).
RECOVERY_KINDS = frozenset({"recovery", "retry"})

Ending = Literal[
    "task_complete", "no_tool_call", "empty_reply", "self_undo", "max_turns", "max_budget", "api_error", "server_gone",
]


@dataclass(frozen=True)
class Step:
    """One turn as `agentbench-episode` prints it."""

    turn: int
    observation_chars: int
    call: str
    result: str
    reports: tuple[str, ...]


@dataclass(frozen=True)
class EpisodeResult:
    """How an episode ended."""

    ending: Ending
    final_text: str
    turns: int
    recoveries: int
    exit_status: int

    @property
    def completed(self) -> bool:
        """Whether the model called task_complete."""
        return self.ending == "task_complete"


@dataclass
class LoopSettings:
    """What one episode may do."""

    model: str
    max_turns: int = DEFAULT_MAX_TURNS
    system_prompt: str = SYSTEM_PROMPT
    budget_usd: float | None = None


@dataclass
class _Done(Exception):
    """Internal: the episode ended (raised out of a turn so every ending takes one path)."""

    ending: Ending
    final_text: str = ""
    error: str = ""
    status: int | None = None


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_call(call: ParsedCall) -> str:
    """`tap(index=1)`: a call as one short line."""
    arguments = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items())
    return f"{call.name}({arguments})"


@dataclass
class AgentLoop:
    """One episode of seed 004's loop, written to a StreamWriter as it happens."""

    chat: ChatClient
    device: McpDevice
    writer: StreamWriter
    settings: LoopSettings
    pricing: Pricing | None = None
    on_step: Callable[[Step], None] | None = None
    _messages: list[dict[str, Any]] = field(default_factory=list)
    _turn_reports: list[str] = field(default_factory=list)
    _recoveries: int = 0
    _calls: int = 0
    # The last action that changed the screen: (action key, screen before, screen after).
    _last_change: tuple[str, tuple, tuple] | None = None

    def _report(self, kind: str, message: str, **data: Any) -> None:
        self.writer.report(kind, message, **data)
        if kind in RECOVERY_KINDS:
            self._recoveries += 1
        if kind not in ("action", "model-call"):
            self._turn_reports.append(f"{kind}: {message}")

    def _account(self, reply: Reply) -> None:
        for key, value in reply.usage.items():
            self.writer.usage[key] = self.writer.usage.get(key, 0) + value
        self.writer.cost_usd = self.pricing.cost(self.writer.usage) if self.pricing is not None else None
        self.writer.assistant_model = reply.model or self.writer.assistant_model
        self.writer.api_ms += reply.duration_ms
        record = reply.record()
        self._calls += 1
        tokens = (f"{record['prompt_tokens']} prompt + {record['completion_tokens']} completion tokens"
                  if reply.usage_known else "tokens unknown")
        self._report("model-call", f"model call {self._calls}: {reply.duration_ms} ms, {tokens}, finish reason "
                     f"{reply.finish_reason or 'none'}, {len(reply.retries)} retry(ies)", call=self._calls, **record)
        if not reply.usage_known:
            self._report("usage-unknown", f"the server sent no usage for model call {self._calls}: its token counts "
                         "are unknown (not 0), and the run's token totals are incomplete", call=self._calls)

    def _on_retry(self, status: int | None, wait: float, message: str) -> None:
        what = f"HTTP {status}" if status is not None else "no response"
        self._report("api-retry", f"the model call failed ({what}: {message}); retrying in {wait:g}s",
                     status=status, wait_s=round(wait, 3), error=message)

    def _on_drop(self, parameter: str, message: str) -> None:
        self._report("parameter-dropped", f"the server refused the request parameter {parameter} ({message}); "
                     "it is no longer sent", parameter=parameter, error=message)

    async def _complete(self, *, thinking: bool) -> Reply:
        if self.chat.on_retry is None:
            self.chat.on_retry, self.chat.on_drop = self._on_retry, self._on_drop
        started_at, clock = _utc_now(), time.monotonic()
        try:
            reply = await self.chat.complete(model=self.settings.model, messages=self._messages, tools=MODEL_TOOLS, thinking=thinking)
        except ApiFailure as failure:
            # A failed call is on the record too: how long it took, its retries, why it failed.
            self._calls += 1
            duration_ms = int((time.monotonic() - clock) * 1000)
            self.writer.api_ms += duration_ms
            self._report("model-call", f"model call {self._calls} failed after {duration_ms} ms: {failure.message}",
                         call=self._calls, started_at=started_at, duration_ms=duration_ms, prompt_tokens=None,
                         completion_tokens=None, finish_reason=None, retries=[dict(r) for r in failure.retries],
                         error=failure.message, status=failure.status)
            raise
        thinking_text, visible, unclosed = split_thinking(reply.content)
        if thinking_text or visible != reply.content:
            reasoning = "\n\n".join(part for part in (reply.reasoning, thinking_text) if part)
            reply = replace(reply, content=visible, reasoning=reasoning, thinking_in_content="unclosed" if unclosed else "closed")
        self._account(reply)
        if reply.reasoning:
            self.writer.thinking(reply.reasoning)
        return reply

    async def _ask(self) -> Reply:
        switch = {"chat_template_kwargs": {"enable_thinking": False}}
        try:
            reply = await self._complete(thinking=True)
        except ApiFailure as failure:
            if not failure.timed_out:
                raise
            self._report(
                "retry", f"the model call passed its deadline ({failure.message}); asked again once with thinking disabled",
                cause="timeout", switch=switch,
            )
            return await self._complete(thinking=False)
        if not reply.empty:
            return reply
        if reply.thinking_in_content == "unclosed":
            what = (f"its content was a <think> block that never closed ({len(reply.reasoning)} characters, kept as "
                    f"thinking), no tool call")
        else:
            what = f"no content, no tool call; {len(reply.reasoning)} characters of reasoning"
        self._report(
            "retry",
            f"the reply was empty ({what}; finish reason {reply.finish_reason or 'none'}): asked again once with "
            "thinking disabled",
            reasoning_chars=len(reply.reasoning),
            finish_reason=reply.finish_reason,
            think_in_content=reply.thinking_in_content,
            switch=switch,
        )
        return await self._complete(thinking=False)

    def _check_budget(self) -> None:
        budget = self.settings.budget_usd
        if budget is not None and self.writer.cost_usd is not None and self.writer.cost_usd >= budget:
            raise _Done("max_budget")

    async def run(self, task: str) -> EpisodeResult:
        """Run the episode to its end and write the closing `result` event.

        Args:
            task: The prompt (the task in the user's words).

        Returns:
            How it ended; `exit_status` is what the CLI exits with (0 when the result is not an error).
        """
        self._messages = [{"role": "system", "content": self.settings.system_prompt}]
        self.writer.begin_turn()
        try:
            try:
                await self.device.resolve()
                tree = await self.device.observe()
            except (DeviceCallFailed, ServerGone) as exc:
                raise _Done("server_gone", error=f"the first look at the screen failed: {exc}") from None
            self._messages.append({"role": "user", "content": f"{task.strip()}\n\nThe screen now:\n{tree.text()}"})
            while True:
                tree = await self._turn(tree)
                if self.writer.turns >= self.settings.max_turns:
                    raise _Done("max_turns")
                self.writer.begin_turn()
        except _Done as done:
            return self._finish(done)
        except ApiFailure as failure:
            return self._finish(_Done("api_error", error=failure.message, status=failure.status))
        except ServerGone as gone:
            return self._finish(_Done("server_gone", error=str(gone)))

    async def _turn(self, tree: UiTree) -> UiTree:
        """One turn: ask, recover the call, execute it, tell the model. Returns the screen after it."""
        self._turn_reports = []
        reply = await self._ask()
        self._check_budget()
        parsed = parse_reply(reply.content, reply.tool_calls, TOOL_NAMES, TOOL_SCHEMAS)
        if reply.empty:
            self._report("empty-reply", "the reply was empty again with thinking disabled; the episode ends without an answer")
            raise _Done("empty_reply")
        for call in parsed.calls:
            if call.recovered_from:
                where = "the reply's text" if not reply.tool_calls else "a malformed tool_calls entry"
                self._report(
                    "recovery", f"recovered a {call.name} call from {where} ({call.recovered_from}); the API returned "
                    f"{len(reply.tool_calls)} tool call(s)", format=call.recovered_from, tool=call.name, raw=call.raw,
                )
        for bad in parsed.bad_calls:
            self._report("action-error", f"{bad.sentence}; the model was told", tool=bad.name, raw=bad.raw)
        if not parsed.calls and not parsed.problems:
            raise _Done("no_tool_call", final_text=parsed.content)
        if parsed.content:
            self.writer.text(parsed.content)
        if len(parsed.calls) > 1:
            first, extra = parsed.calls[0], parsed.calls[1:]
            self._report(
                "extra-call",
                f"the reply made {len(parsed.calls)} calls; only {render_call(first)} was executed, and "
                f"{', '.join(render_call(call) for call in extra)} {'was' if len(extra) == 1 else 'were'} answered "
                f"'{NOT_EXECUTED}'",
                tool=extra[0].name, calls=[render_call(call) for call in extra],
            )
        if not parsed.calls:
            sentence = "; ".join(parsed.problems)
            if not parsed.bad_calls:
                self._report("action-error", sentence, tool="")
            self._answer(reply, parsed, sentence, None)
            self._step(tree, "(undecodable tool call)", sentence)
            return tree
        call = parsed.calls[0]
        self._report("action", render_call(call), tool=call.name, arguments=call.arguments, recovered=call.recovered_from)
        outcome = await Executor(self.device).execute(call, tree)
        for note in outcome.coerced:
            self._report("recovery", f"{render_call(call)}: {note}", format="argument-coerced", tool=call.name)
        if outcome.answer is not None:
            raise _Done("task_complete", final_text=outcome.answer)
        sentence = outcome.sentence
        if outcome.error:
            self._report("action-error", sentence, tool=call.name)
        changed = outcome.after.signature != tree.signature
        if outcome.acted and not changed:
            sentence += "; the screen did not change"
            self._report("no-change", f"{render_call(call)} changed nothing on the screen; the model was told", tool=call.name)
        if outcome.acted and changed and not outcome.error:
            key = action_key(call, tree)
            last = self._last_change
            if last is not None and last[0] == key and outcome.after.signature == last[1] and tree.signature == last[2]:
                message = (
                    f"{render_call(call)} returned the screen to its state before the same action one step earlier "
                    "(self-undo); the episode stops"
                )
                self._report("self-undo", message, tool=call.name, arguments=call.arguments)
                self._step(outcome.after, render_call(call), sentence)
                raise _Done("self_undo", final_text=f"agentbench-agent stopped the episode: {message}.")
            self._last_change = (key, tree.signature, outcome.after.signature)
        self._answer(reply, parsed, sentence, outcome.after if changed else None)
        self._step(outcome.after, render_call(call), sentence)
        return outcome.after

    def _answer(self, reply: Reply, parsed: ParsedReply, sentence: str, screen: UiTree | None) -> None:
        """Append the assistant message and one tool message per call to the conversation.

        A recovered call goes back into the history as a proper `tool_calls` entry, so the model
        sees the format it should have used; the prose around it stays its content (with the
        recovered markup cut out). The first call gets the result, further calls `not executed`,
        and each undecodable call the sentence that says why it could not be read.
        """
        turn = self.writer.turns
        entries: list[dict[str, Any]] = []
        answers: list[str] = []
        result = sentence + (f"\n\nThe screen now:\n{screen.text()}" if screen is not None else "")
        for n, call in enumerate(parsed.calls):
            entries.append({"id": call.id or f"call_recovered_{turn}_{n}", "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}})
            answers.append(result if n == 0 else NOT_EXECUTED)
        for n, bad in enumerate(parsed.bad_calls):
            # The undecodable arguments are not sent back: a server may refuse a history it cannot parse.
            entries.append({"id": bad.id or f"call_bad_{turn}_{n}", "type": "function",
                            "function": {"name": bad.name, "arguments": "{}"}})
            answers.append(bad.sentence)
        content = parsed.content
        if not entries:
            # Nothing the API would accept as tool_calls: the problem goes back as a user message.
            self._messages.append({"role": "assistant", "content": content or reply.content or ""})
            self._messages.append({"role": "user", "content": sentence})
            return
        self._messages.append({"role": "assistant", "content": content or None, "tool_calls": entries})
        for entry, text in zip(entries, answers):
            self._messages.append({"role": "tool", "tool_call_id": entry["id"], "content": text})

    def _step(self, tree: UiTree, call: str, result: str) -> None:
        if self.on_step is not None:
            self.on_step(Step(self.writer.turns, tree.raw_chars, call, result, tuple(self._turn_reports)))

    def _finish(self, done: _Done) -> EpisodeResult:
        writer = self.writer
        if done.ending == "no_tool_call":
            self._step_end("(no tool call)", done.final_text)
        writer.report("episode-end", _ENDINGS[done.ending], ending=done.ending)
        if done.ending in ("task_complete", "no_tool_call", "empty_reply", "self_undo"):
            if done.final_text:
                writer.new_message()
                writer.text(done.final_text)
            writer.result_success(done.final_text)
            status = 0
        elif done.ending == "max_turns":
            writer.result_max_turns(self.settings.max_turns)
            status = 1
        elif done.ending == "max_budget":
            writer.result_max_budget(float(self.settings.budget_usd or 0))
            status = 1
        elif done.ending == "api_error":
            writer.result_api_error(done.error, done.status)
            status = 1
        else:
            writer.result_error_during_execution(done.error)
            status = 1
        if done.ending == "task_complete":
            self._step_end("task_complete", done.final_text)
        return EpisodeResult(done.ending, done.final_text or done.error, writer.turns, self._recoveries, status)

    def _step_end(self, call: str, text: str) -> None:
        if self.on_step is not None:
            self.on_step(Step(self.writer.turns, 0, call, text, tuple(self._turn_reports)))


_ENDINGS: dict[str, str] = {
    "task_complete": "the model called task_complete",
    "no_tool_call": "the model replied without a tool call; its reply is the final text",
    "empty_reply": "the model's reply stayed empty after the retry without thinking",
    "self_undo": "the episode was stopped after a self-undo",
    "max_turns": "the step budget (--max-turns) ran out before task_complete",
    "max_budget": "the cost reached --max-budget-usd",
    "api_error": "the model endpoint failed",
    "server_gone": "the MCP server could not be used",
}
