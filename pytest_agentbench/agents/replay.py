"""agentbench-replay: a prompt on stdin + a plan -> tool calls through the MCP server and Claude Code stream-json on stdout."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio

from pytest_agentbench.agents.cli_options import ParsedArgs
from pytest_agentbench.agents.front_door import FrontDoor, enter
from pytest_agentbench.agents.mcp_client import McpConnection, connect_timeout
from pytest_agentbench.agents.plan import (
    Plan,
    ToolStep,
    WaitStep,
    fill_placeholders,
    find_plan_path,
    load_plan,
    plan_from_transcript,
    suite_package_name,
)
from pytest_agentbench.agents.stream import DEFAULT_MODEL, REPLAY_VERSION, StreamWriter
from pytest_agentbench.audit.transcript import parse_file
from pytest_agentbench.errors import AgentbenchError

PROGRAM = "agentbench-replay"


@dataclass
class ReplayRun:
    """One replay: the connected servers and permissions, the plan and the writer."""

    connection: McpConnection
    plan: Plan
    writer: StreamWriter
    max_turns: int | None
    environ: Mapping[str, str]
    #: The task as given on stdin; the plan's `fromPrompt:` reads a seeded instance's values off it.
    prompt: str = ""

    async def play(self) -> int:
        """Play the plan; returns the exit status."""
        needs_device = self.plan.uses_placeholder("device") or any(
            "device" in step.args for step in self.plan.tool_steps if step.tool.startswith("mcp__")
        )
        device = await self.connection.pinned_device() if needs_device else None
        values: dict[str, str | None] = {"device": device,
                                         "packageName": self.plan.package_name or suite_package_name(self.environ)}
        from_prompt, missing = self.plan.prompt_values(self.prompt)
        for problem in missing:
            self.connection.warn(problem)
        values.update(from_prompt)
        for number, step in enumerate(self.plan.steps, start=1):
            if isinstance(step, WaitStep):
                await anyio.sleep(step.seconds)
                continue
            if self._turns_exhausted():
                return 1
            for _ in range(self._times(number, step, values)):
                if self._turns_exhausted():
                    return 1
                await self._think()
                await self._call(number, step, values)
        if self._turns_exhausted():
            return 1
        await self._think()
        # The answer may carry what the steps captured (a code random per run); an uncaptured name stays as written.
        final = fill_placeholders(self.plan.final, {key: value for key, value in values.items() if key not in ("device", "packageName")})
        self.writer.begin_turn()
        self.writer.text(final)
        self.writer.result_success(final)
        return 0

    def _times(self, number: int, step: ToolStep, values: dict[str, str | None]) -> int:
        """How many times to make a step's call: its count, or the `{name}` it names (read off the prompt)."""
        if isinstance(step.times, int):
            return step.times
        text = fill_placeholders(step.times, values)
        if text.isdigit() and int(text) <= 50:
            return int(text)
        self.connection.warn(f"step {number}: times {step.times} is {text!r}, not a count from 0 to 50; calling once")
        return 1

    async def _think(self) -> None:
        # The plan's thinkSeconds stands in for model latency before every action and the answer.
        if self.plan.think_seconds:
            await anyio.sleep(self.plan.think_seconds)

    def _turns_exhausted(self) -> bool:
        if self.max_turns is not None and self.writer.turns >= self.max_turns:
            self.writer.result_max_turns(self.max_turns)
            return True
        return False

    async def _call(self, number: int, step: ToolStep, values: dict[str, str | None]) -> None:
        arguments = fill_placeholders(step.args, values)
        if step.tool.startswith("mcp__") and values.get("device") and "device" in arguments:
            # A replayed transcript names the device of its own run; this run has its own.
            arguments["device"] = values["device"]
        self.writer.begin_turn()
        name, outcome = await self.connection.call(self.writer, step.tool, arguments)
        if outcome.is_error != step.expect_error:
            expected = "an error" if step.expect_error else "success"
            self.connection.warn(
                f"step {number} ({name}): the plan expected {expected}, the call {'failed' if outcome.is_error else 'succeeded'}"
            )
        if step.capture is not None:
            value = step.capture.find(outcome.text)
            if value is None:
                self.connection.warn(f"step {number} ({name}): capture {step.capture.name!r} found no match of "
                                     f"/{step.capture.pattern}/ in the result")
            else:
                values[step.capture.name] = value


def _load_plan(args: ParsedArgs, environ: Mapping[str, str]) -> Plan:
    transcript_path = args.get("replay-transcript")
    if transcript_path:
        path = Path(str(transcript_path))
        return plan_from_transcript(parse_file(path), path)
    plan_path = find_plan_path(args.get("plan"), environ)  # type: ignore[arg-type]
    if plan_path is None:
        raise AgentbenchError(
            "no plan: pass --plan FILE or --replay-transcript FILE, or set AGENTBENCH_PLAN "
            "(the harness stages <suites>/../plans/<suite>.yml there) or AGENTBENCH_SUITE_FILE"
        )
    return load_plan(plan_path)


DOOR = FrontDoor(PROGRAM, REPLAY_VERSION)


def run(argv: list[str], *, stdin: TextIO, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str], cwd: str) -> int:
    """Run agentbench-replay with explicit streams (the console script and the tests call this).

    Args:
        argv: The arguments after the program name.
        stdin: Where the prompt is read from.
        stdout: Where stream-json (or text / json) goes.
        stderr: Where errors and warnings go.
        environ: The environment (plan lookup, device serial, the MCP server's base environment).
        cwd: The working directory written into the init event.

    Returns:
        The exit status: 0 when the run ended in a successful result, else 1.
    """
    # A replay costs $0, so --max-budget-usd is checked but never reached.
    request = enter(DOOR, argv, stdin=stdin, stdout=stdout, stderr=stderr)
    if isinstance(request, int):
        return request
    try:
        plan = _load_plan(request.args, environ)
    except AgentbenchError as exc:
        stderr.write(f"Error: {exc}\n")
        return 1
    sink = request.sink(stdout)
    writer = StreamWriter(out=sink, model=str(request.args.get("model") or DEFAULT_MODEL))
    request.name_session(writer)
    connection = request.connection(stderr=stderr, environ=environ)
    replay = ReplayRun(connection=connection, plan=plan, writer=writer, max_turns=request.max_turns, environ=environ,
                        prompt=request.prompt)
    status = anyio.run(_play, replay, cwd, connect_timeout(environ))
    request.finish(sink, stdout)
    return status


async def _play(replay: ReplayRun, cwd: str, timeout_s: float) -> int:
    async with AsyncExitStack() as stack:
        await replay.connection.connect(stack, timeout_s)
        replay.writer.init(cwd=cwd, tools=replay.connection.tool_names(), mcp_servers=replay.connection.statuses())
        return await replay.play()


def main(argv: list[str] | None = None) -> int:
    """Console entry point of `agentbench-replay`."""
    return run(
        list(sys.argv[1:] if argv is None else argv),
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
        environ=dict(os.environ),
        cwd=os.getcwd(),
    )


if __name__ == "__main__":
    sys.exit(main())
