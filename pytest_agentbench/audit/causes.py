"""Why a run did not complete -> each reason with whose doing it was: the agent's, unless evidence the harness owns proves the harness's.

Pure. A run leaves the pass rate only as `incomplete` with cause `harness`, so that cause is
decided from what the harness owns (docs/verdicts.md#who-decides-a-cause):

* its own processes: the runner's `ProcessOutcome` (a program that never started);
* its relay's records (`relay.jsonl`, written by the hub): a declared server whose command the
  hub could not start on any connection, a relay log that is missing;
* its own probe of the MCP server (`Run.probe_error`, before the agent ran);
* its model bridge's record (`model-bridge.jsonl`): the last connection it tried to the model
  host failed, while the agent had no flood of connections open;
* its device reads (the device went away while the agent could reach it only through the relay
  and made no shell call);
* its seals, on a confined run (an unconfined agent can write the run directory).

What only the agent's stream says (an MCP server `failed` or `pending`, no server listed, an API
error) is the agent's claim: it is the harness's only when that evidence confirms it, and each
reason says which ("the agent's stream says ..., unconfirmed by the harness (...)" or "...:
confirmed by the model bridge: ..."). Whatever the agent can write (its stream, its bytes to the
relay, files in an unconfined run's directory) can lose it a run, never move its failure out of
the rate.
"""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytest_agentbench.records.audit import IncompleteCause
from pytest_agentbench.records.run import NEVER_STARTED, STREAM_UNWRITTEN

if TYPE_CHECKING:
    from pytest_agentbench.audit.transcript import ResultEvent, Transcript
    from pytest_agentbench.records.run import Run
    from pytest_agentbench.run.bridgelog import BridgeLog
    from pytest_agentbench.run.relaylog import RelayLog

Finding = tuple[str, IncompleteCause]
#: Connections of the agent's in flight through the model bridge above which a failed connection
#: is not the model host's word: a flood of the agent's own can make a host (or the harness) refuse.
MAX_HONEST_OPEN = 16
#: Said of evidence an unconfined agent could have written or removed itself.
_UNCONFINED = "the run was unconfined, so the agent could reach the run directory: this counts as the agent's"

# Results and replies are quoted in reasons; long ones are cut so a report stays readable.
_DETAIL_CHARS = 300


def cut(text: str, limit: int = _DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _signal_name(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ----------------------------------------------------------------------------- the agent's process


def process_findings(run: Run) -> list[Finding]:
    """How the agent's process ended, from the runner's own record (`ProcessOutcome`)."""
    process = run.process
    if process.timed_out:
        return [(f"the agent timed out after claude.timeoutSeconds={run.suite.claude.timeout_seconds:g}s", "agent")]
    if process.stopped_because is not None:
        stopped = process.stopped_because
        if stopped.startswith(NEVER_STARTED):
            # The harness could not start the program at all: no agent byte exists yet.
            return [(stopped, "harness")]
        if stopped.startswith(STREAM_UNWRITTEN):
            return [(f"{stopped}; the agent's own output can cause this (a flood that fills the disk), "
                     "so it counts as the agent's", "agent")]
        return [(stopped, "agent")]  # no output for idleTimeoutSeconds
    if process.ended_after_result:
        # The agent lingered after its result event and the harness ended it: a finished run,
        # whose result event says how it ended; the signal was ours.
        return []
    if process.signal is not None:
        return [(f"the agent was killed by {_signal_name(process.signal)}", "agent")]
    if process.exit_code is None:
        # The harness stops the group itself; an exit it cannot read is the agent's process not
        # ending when told (uninterruptible), which says nothing against the harness.
        return [("the agent's exit status is unknown: its process had not ended when the harness stopped its group", "agent")]
    if process.exit_code != 0:
        # The agent's own last words first: "AGENTBENCH_OPENAI_BASE_URL is not set: ..." says more
        # than an exit code.
        said = f": {cut(process.last_stderr_line)}" if process.last_stderr_line else ""
        return [(f"the agent exited with code {process.exit_code}{said}", "agent")]
    return []


# ----------------------------------------------------------------------------- MCP servers the stream reports


def _server_fault(run: Run, relay: RelayLog | None, servers: tuple[str, ...]) -> str | None:
    """The harness's own evidence that one of `servers` could not be had, as a clause; None when it has none."""
    if run.probe_error:
        return f"confirmed by the harness's own probe of the server: {cut(run.probe_error)}"
    if relay is not None and relay.unavailable is None:
        for name in servers:
            reasons = relay.start_failures.get(name, ())
            if reasons and not relay.started.get(name):
                return f"confirmed by the relay log: the hub could not start it ({cut(reasons[0])})"
    return None


def _relay_view(relay: RelayLog | None, servers: tuple[str, ...]) -> str:
    """What the relay log shows about `servers`, for an unconfirmed claim."""
    if relay is None:
        return "the run has no relay log to confirm it"
    if relay.unavailable is not None:
        return f"the relay log cannot confirm it: {relay.unavailable}"
    started = sum(relay.started.get(name, 0) for name in servers)
    if started:
        return f"the relay log shows the harness started it on {_plural(started, 'connection')}"
    return "the relay log shows no connection to it (the agent never started its relay) and no failure to start it"


def server_findings(run: Run, transcript: Transcript, relay: RelayLog | None) -> list[Finding]:
    """The init event's MCP servers: the agent's report, the harness's fault only when its own evidence confirms it."""
    init = transcript.init
    if init is None:
        # The agent writes the init event; one that crashes or prints nothing has none.
        return [("the stream has no init event, so the MCP server was never reported connected", "agent")]
    declared = relay.declared_servers if relay is not None else ()
    if not init.mcp_servers:
        claims = [("the init event lists no MCP server", declared)]
    else:
        claims = [(f"MCP server '{server.name}' was {server.status}, not connected", (server.name,))
                  for server in init.mcp_servers if server.status != "connected"]
    found: list[Finding] = []
    for claim, servers in claims:
        proof = _server_fault(run, relay, servers)
        if proof is not None:
            found.append((f"{claim}: {proof}", "harness"))
        else:
            found.append((f"the agent's stream says {claim}; unconfirmed by the harness ({_relay_view(relay, servers)})", "agent"))
    return found


# ----------------------------------------------------------------------------- API errors the stream reports


def _model_fault(run: Run, bridge: BridgeLog | None) -> tuple[str | None, str]:
    """(the clause confirming the model host could not be reached, or None; what the harness saw instead)."""
    if bridge is None:
        if run.bridge_log is not None:
            return None, f"the model bridge's log {run.bridge_log} was not read"
        if not run.confined:
            return None, "the run was unconfined, so no model bridge of the harness's carried its connections"
        return None, "no model bridge of the harness's carried its connections (the agent has no model endpoint)"
    if bridge.unavailable is not None:
        return None, bridge.unavailable
    if not bridge.connects:
        return None, "the model bridge carried no connection to the model host"
    last = bridge.connects[-1]
    failures = bridge.failures
    if last.ok:
        return None, (f"the model bridge opened {_plural(len(bridge.connects), 'connection')} to the model host and the last one "
                      f"succeeded ({len(failures)} failed)")
    if last.open > MAX_HONEST_OPEN:
        return None, (f"the model bridge's last connection to {last.endpoint} failed with {last.open} of the agent's connections "
                      f"open at once (over {MAX_HONEST_OPEN}: a flood of its own)")
    return (f"confirmed by the model bridge: {len(failures)} of {_plural(len(bridge.connects), 'connection')} to the model host "
            f"failed, the last one too ({last.endpoint}: {cut(last.error or 'failed', 160)})"), ""


def _api_error(result: ResultEvent) -> str:
    status = f" (HTTP {result.api_error_status})" if result.api_error_status is not None else ""
    detail = f": {cut(result.result)}" if result.result else ""
    return f"the run ended in an API error{status}{detail}"


def _model_finding(claim: str, run: Run, bridge: BridgeLog | None) -> Finding:
    proof, seen = _model_fault(run, bridge)
    if proof is not None:
        return f"{claim}; {proof}", "harness"
    return f"the agent's stream says {claim}; unconfirmed by the harness ({seen})", "agent"


def result_findings(run: Run, transcript: Transcript, bridge: BridgeLog | None) -> list[Finding]:
    """The result events: caps, crashes and API errors; an API error is the harness's only when the model bridge confirms it."""
    found: list[Finding] = []
    result = transcript.result
    if result is None:
        found.append(("the stream ended without a result event", "agent"))
    elif result.subtype != "success":
        # error_max_budget_usd, error_max_turns, error_during_execution: the agent's caps and crashes.
        detail = f": {cut('; '.join(result.errors))}" if result.errors else ""
        found.append((f"the run ended in {result.subtype}{detail}", "agent"))
    elif result.is_error:
        found.append(_model_finding(_api_error(result), run, bridge))
    for later in transcript.later_results:
        if later.subtype != "success":
            found.append((f"a later result event ended in {later.subtype} (the first result decides, and any error result "
                          "leaves the run incomplete)", "agent"))
            break
        if later.is_error:
            found.append(_model_finding("a later result event ended in an API error (the first result decides, and any error "
                                        "result leaves the run incomplete)", run, bridge))
            break
    if transcript.unparseable:
        first = transcript.unparseable[0]
        found.append((f"{_plural(len(transcript.unparseable), 'stream line')} did not parse "
                      f"(first at line {first.line_number}: {first.reason})", "agent"))
    return found


# ----------------------------------------------------------------------------- the harness's own records


def relay_findings(run: Run, relay: RelayLog, *, read: bool = True) -> list[Finding]:
    """Why the relay's evidence cannot be had, and whose doing that is (`read`: False when the caller never read the log)."""
    if relay.unavailable:
        reason = f"the harness has no record of the MCP calls: {relay.unavailable}"
        # The hub writes its header before the agent starts; only an agent that can reach the run
        # directory (unconfined) can remove the file after. A log nobody read is the audit's omission.
        return [(reason, "harness")] if run.confined or not read else [(f"{reason}; {_UNCONFINED}", "agent")]
    found: list[Finding] = []
    for name, reasons in relay.start_failures.items():
        started = relay.started.get(name, 0)
        if not started:
            found.append((f"the harness could not start the MCP server {name}: {cut(reasons[0])}", "harness"))
        else:
            # Each relay connection starts a server: an agent that opens many at once can exhaust
            # the host, so a failure beside starts that worked is not the harness's.
            found.append((f"the hub could not start the MCP server {name} on {len(reasons)} of {started + len(reasons)} "
                           f"connections ({cut(reasons[0])}); it started on the others, and the agent's own connections "
                           "can exhaust the host, so this counts as the agent's", "agent"))
    if relay.hub_errors:
        # The hub's own fault, but one met while it handled the agent's bytes (or the answers to
        # them): what the agent sent may have provoked it, and calls may be missing from the log.
        found.append((f"the relay hub failed on {_plural(len(relay.hub_errors), 'connection direction')} (first: "
                      f"{cut(relay.hub_errors[0], 160)}); it was handling the agent's bytes, which may have provoked it, "
                      "so this counts as the agent's", "agent"))
    if relay.problems:
        # Whatever of the agent's bytes the hub writes (tool arguments) could damage a line; a
        # damaged log hides calls, so it can only cost the agent.
        found.append((f"the relay log is damaged ({_plural(len(relay.problems), 'line')} did not parse; first: "
                      f"{relay.problems[0]}); the agent's bytes reach that log, so this counts as the agent's", "agent"))
    return found


def sandbox_findings(run: Run) -> list[Finding]:
    """The sandbox's self-test from inside the run (`run/sandbox_forward.py`): a hole in it is the harness's, whatever the agent did."""
    test = run.sandbox.get("selfTest") if run.confined and isinstance(run.sandbox, Mapping) else None
    if not isinstance(test, Mapping) or test.get("ok") is not False:
        return []
    holes = []
    for check in test.get("checks") or ():
        if isinstance(check, Mapping) and check.get("reached") != (check.get("expected") == "reachable"):
            seen = f" (saw {', '.join(map(str, check['seen']))})" if check.get("seen") else ""
            holes.append(f"{check.get('what')}: {'reachable' if check.get('reached') else 'missing'}{seen}")
    detail = "; ".join(holes) or cut(str(test.get("error") or "no answer"))
    return [(f"the sandbox's self-test failed, so the agent was not confined as promised: {detail}", "harness")]


def seal_findings(run: Run) -> list[Finding]:
    """Audit inputs that do not match their seals: the harness's on a confined run, the agent's where it could write them."""
    if not run.seal_problems:
        return []
    reason = f"the audit's inputs do not match their seals: {'; '.join(run.seal_problems)}"
    return [(reason, "harness")] if run.confined else [(f"{reason}; {_UNCONFINED}", "agent")]


def device_lost_finding(run: Run, relay: RelayLog | None) -> Finding:
    """The device went away: the harness's only when the agent could reach it through the relay alone and ran no shell on it."""
    reason = f"the device went away during the run: {run.device_lost}"
    if not run.confined:
        return f"{reason}; the run was unconfined, so the agent could reach the device itself: this counts as the agent's", "agent"
    shells = [call for call in (relay.calls if relay is not None else ()) if call.name in run.shell_tools]
    if relay is None or relay.unavailable is not None:
        return f"{reason}; the relay log cannot show what the agent ran on the device, so this counts as the agent's", "agent"
    if shells:
        return (f"{reason}; the agent ran {_plural(len(shells), 'shell call')} on the device ({shells[0].tool}), "
                "which can end its connection: this counts as the agent's"), "agent"
    return reason, "harness"


def decide(findings: list[Finding]) -> IncompleteCause:
    """The verdict's cause: the harness's when any reason is proven the harness's (a broken harness proves nothing about the agent)."""
    return "harness" if any(cause == "harness" for _, cause in findings) else "agent"
