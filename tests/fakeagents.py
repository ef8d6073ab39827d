"""Behaviour names + parameters -> small executable scripts that speak the agent contract; suites -> pytest sessions that run them.

Each script accepts Claude Code's print-mode flags (it ignores them), reads the prompt on stdin and
writes Claude Code stream-json lines on stdout, then misbehaves as asked: hang, die by a signal,
print garbage or a truncated last line, answer without touching the device, exit non-zero, kill
a process (the simulated phone), hand over to `agentbench-replay`, or linger after its result.

`write_agent(directory, "hang", marker=...)` writes one behaviour; `write_dispatcher(directory,
{suite name: Behaviour(...)})` writes one agent that picks its behaviour from `AGENTBENCH_SUITE`
(the harness sets it), so one pytest session can run many scenarios.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from defusedxml import ElementTree as ET

#: The MCP server name the built-in profile gives the agent (init event, tool names).
SERVER = "agentbench"

_PRELUDE = r'''
import json, os, signal, subprocess, sys, time

SERVER = %(server)r
PARAMS = json.loads(%(params)r)

def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()

def init():
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "fake-session",
          "tools": ["mcp__%%s__observe" %% SERVER], "mcp_servers": [{"name": SERVER, "status": "connected"}],
          "model": "fake-model", "permissionMode": "default", "apiKeySource": "none",
          "claude_code_version": "0.0.1-fake"})

def say(text):
    emit({"type": "assistant", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
          "model": "fake-model", "content": [{"type": "text", "text": text}],
          "usage": {"input_tokens": 10, "output_tokens": 5}}, "session_id": "fake-session"})

def result(text, subtype="success", is_error=False):
    emit({"type": "result", "subtype": subtype, "is_error": is_error, "num_turns": 1, "result": text,
          "total_cost_usd": 0.01, "duration_ms": 5, "session_id": "fake-session",
          "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0}, "permission_denials": []})

def api_error(text, status=None):
    # As Claude Code ends on an API error: a synthetic assistant text, then `success` with `is_error`.
    emit({"type": "assistant", "message": {"id": "msg_err", "type": "message", "role": "assistant", "model": "<synthetic>",
          "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 0, "output_tokens": 0}},
          "session_id": "fake-session", "error": "api_error"})
    emit({"type": "result", "subtype": "success", "is_error": True, "api_error_status": status, "num_turns": 1,
          "result": text, "total_cost_usd": 0, "duration_ms": 5, "session_id": "fake-session",
          "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
          "permission_denials": []})

def reach_model():
    # Asks the model host as a client would (through HTTPS_PROXY when one is set); returns what
    # went wrong, or None when it answered.
    import socket
    from urllib.parse import urlsplit
    url = urlsplit(os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com")
    port = url.port or (443 if url.scheme == "https" else 80)
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    try:
        if proxy:
            hop = urlsplit(proxy)
            conn = socket.create_connection((hop.hostname, hop.port), timeout=20)
            conn.sendall(("CONNECT %%s:%%d HTTP/1.1\r\nHost: %%s:%%d\r\n\r\n" %% (url.hostname, port, url.hostname, port)).encode())
        else:
            conn = socket.create_connection((url.hostname, port), timeout=20)
            conn.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: model\r\nContent-Length: 2\r\n\r\n{}")
        answer = conn.recv(4096)
        conn.close()
    except OSError as exc:
        return "%%s: %%s" %% (exc.__class__.__name__, exc)
    if not answer or b" 200 " not in answer.split(b"\r\n", 1)[0]:
        return "the connection was closed: %%r" %% answer[:60]
    return None

def mark(path, **data):
    # Written whole and renamed, so a test polling for it never reads half a marker.
    partial = path + ".partial"
    with open(partial, "w") as out:
        json.dump(data, out)
    os.replace(partial, path)

def answer(text):
    init()
    say(text)
    result(text)

def serial():
    # The harness names the device in the system prompt it appends.
    import re
    text = sys.argv[sys.argv.index("--append-system-prompt") + 1]
    return re.search(r"device with serial (\S+?);", text).group(1)

def relay_client():
    # The one server of --mcp-config (the harness's relay), started and initialized as Claude Code does.
    from pytest_agentbench.servers.mcpclient import StdioClient
    config = json.load(open(sys.argv[sys.argv.index("--mcp-config") + 1]))
    ((name, entry),) = config["mcpServers"].items()
    client = StdioClient(entry["command"], [str(a) for a in entry.get("args") or []], env={**os.environ, **(entry.get("env") or {})})
    client.initialize(timeout_s=60)
    client.list_tools(timeout_s=60)
    return name, client

def tool_use(call_id, name, arguments):
    emit({"type": "assistant", "message": {"id": "msg_" + call_id, "type": "message", "role": "assistant", "model": "fake-model",
          "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
          "usage": {"input_tokens": 10, "output_tokens": 5}}, "session_id": "fake-session"})

def tool_result(call_id, text, is_error=False):
    emit({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
          "content": [{"type": "text", "text": text}], "is_error": is_error}]}, "session_id": "fake-session"})

def call(client, server, call_id, tool, arguments):
    # A real call through the relay, shown in the stream as Claude Code shows it.
    tool_use(call_id, "mcp__%%s__%%s" %% (server, tool), arguments)
    answer_ = client.call_tool(tool, arguments, timeout_s=120)
    text = "\n".join(block.get("text", "") for block in answer_.get("content") or [] if block.get("type") == "text")
    tool_result(call_id, text, answer_.get("isError") is True)
    return answer_

prompt = sys.stdin.read()
'''

# Behaviour name -> script body run after the prelude (PARAMS holds the behaviour's parameters).
BODIES: dict[str, str] = {
    # Answers the expected lines without a single tool call.
    "answer": """
answer(PARAMS["final"])
""",
    # Does nothing at all: no tool call and no answer, then a successful end.
    "nothing": """
init()
result("")
""",
    # A complete, successful-looking stream, then a non-zero exit status.
    "exit-nonzero": """
answer(PARAMS["final"])
sys.stderr.write("some progress\\ngiving up: the model endpoint refused the key\\n\\n")
sys.exit(PARAMS.get("code", 3))
""",
    # Lines that are not stream-json among valid ones.
    "garbage": """
init()
print("this is not json at all", flush=True)
print('{"type": "assistant", "message": ', flush=True)
say(PARAMS["final"])
result(PARAMS["final"])
""",
    # A valid stream whose last line is cut off mid-object (no closing brace, no newline).
    "truncated": """
init()
say(PARAMS["final"])
line = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": PARAMS["final"]})
sys.stdout.write(line[: len(line) // 2])
sys.stdout.flush()
""",
    # Tries its model host, as Claude Code would first; where the host cannot be reached, the run
    # ends in an API error as Claude Code's does (else it answers without a tool call).
    "model-unreachable": """
init()
problem = reach_model()
if problem is None:
    say(PARAMS["final"])
    result(PARAMS["final"])
else:
    api_error("API Error: Connection error. (%s)" % problem)
""",
    # The stream ends in an error result, as Claude Code does when the budget runs out.
    "error-result": """
init()
say(PARAMS["final"])
result(PARAMS["final"], subtype=PARAMS.get("subtype", "error_max_budget_usd"), is_error=True)
""",
    # Writes a marker (its pid, its group, a child's pid) and sleeps forever. The child stays in
    # the agent's process group and ignores SIGTERM, as a stuck MCP server might; the marker is
    # written only once the child ignores it (under load it might not yet, and die of SIGTERM).
    "hang": """
init()
ready = PARAMS["marker"] + ".child-ready"
child = subprocess.Popen([sys.executable, "-c",
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open(sys.argv[1], 'w').close(); time.sleep(3600)",
    ready])
deadline = time.monotonic() + 120
while not os.path.exists(ready) and time.monotonic() < deadline:
    time.sleep(0.01)
mark(PARAMS["marker"], pid=os.getpid(), pgid=os.getpgrp(), child=child.pid)
while True:
    time.sleep(1)
""",
    # Starts its stream, then dies by a signal.
    "signal": """
init()
os.kill(os.getpid(), PARAMS.get("signal", signal.SIGKILL))
time.sleep(30)
""",
    # Kills a process (the simulated phone's), then answers successfully.
    "kill-then-answer": """
os.kill(PARAMS["pid"], signal.SIGKILL)
# Wait until the process is gone so the device has really vanished before the agent exits.
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        # A killed child of the test process stays a zombie until reaped: that counts as gone.
        with open("/proc/%d/stat" % PARAMS["pid"]) as stat:
            if stat.read().rsplit(")", 1)[-1].split()[0] == "Z":
                break
    except OSError:
        break
    time.sleep(0.05)
time.sleep(PARAMS.get("after_s", 1.0))
answer(PARAMS["final"])
""",
    # Writes where it runs and every CLAUDE.md in that directory or above it, then answers.
    "report-cwd": """
here = os.getcwd()
found = []
path = here
while True:
    if os.path.isfile(os.path.join(path, "CLAUDE.md")):
        found.append(os.path.join(path, "CLAUDE.md"))
    if os.path.dirname(path) == path:
        break
    path = os.path.dirname(path)
mark(PARAMS["marker"], cwd=here, claude_md_above=found)
answer(PARAMS["final"])
""",
    # Starts a daemon that detaches into its own process group and claims the device, as a real
    # MCP server's daemon does: with the server's environment ("own": read from the harness's
    # mcp-servers.json beside --mcp-config, standing for what the server itself would start), or
    # without the run's token and with a socket elsewhere ("interloper"). Then it observes once
    # through the relay (first, so the server's claim is gone) and answers.
    "detached-daemon": """
init()
name, client = relay_client()
call(client, name, "toolu_1", "observe", {"device": serial()})
# The server exits (and gives up its claim) once its stdin closes, as after a session.
client.close()
# The harness's server config is in the run directory (the agent's --mcp-config is in its
# workdir); this fake runs unconfined and finds it below the session's output root.
import glob
config = json.load(open(sorted(glob.glob(os.path.join(PARAMS["output"], "*", "*", "mcp-servers.json")))[-1]))
(server,) = config["mcpServers"].values()
env = dict(os.environ)
env.update(server["env"])
if PARAMS["kind"] == "interloper":
    env.pop("AGENTBENCH_RUN_TOKEN", None)
    socket_path = PARAMS["socket"]
else:
    socket_path = os.path.join(server["env"]["AGENTBENCH_SOCKET_DIR"], "agentbench-mcp-daemon.sock")
daemon_code = (
    "import os, sys, time\\n"
    "from pytest_agentbench.device.adb import AdbEndpoint\\n"
    "from pytest_agentbench.device.claims import acquire_claim\\n"
    "serial, socket_path, ready = sys.argv[1:4]\\n"
    "acquire_claim(serial, scope=AdbEndpoint.from_environ(os.environ).scope, socket_path=socket_path)\\n"
    "open(ready, 'w').close()\\n"
    "time.sleep(3600)\\n"
)
serial = env["AGENTBENCH_DEVICE_SERIAL"]
ready = PARAMS["marker"] + ".ready"
daemon = subprocess.Popen([sys.executable, "-c", daemon_code, serial, socket_path, ready], env=env,
                          start_new_session=True, stdin=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while not os.path.exists(ready) and time.monotonic() < deadline and daemon.poll() is None:
    time.sleep(0.02)
mark(PARAMS["marker"], daemon=daemon.pid, pgid=os.getpgrp())
say(PARAMS["final"])
result(PARAMS["final"])
""",
    # Writes a marker, then waits for a go file before answering (a gate a test or script controls).
    "gate": """
init()
mark(PARAMS["marker"], pid=os.getpid(), pgid=os.getpgrp())
deadline = time.monotonic() + PARAMS.get("wait_s", 60)
while not os.path.exists(PARAMS["go"]) and time.monotonic() < deadline:
    time.sleep(0.02)
say(PARAMS["final"])
result(PARAMS["final"])
""",
    # Plays the suite's plan with agentbench-replay (a child, same stdout), then lingers after
    # its result event as Claude Code sometimes does, until the harness ends it.
    "replay-linger": """
args = list(sys.argv[1:])
if PARAMS.get("plan_text"):
    with open("fake-agent-plan.yml", "w", encoding="utf-8") as plan_file:
        plan_file.write(PARAMS["plan_text"])
    args += ["--plan", "fake-agent-plan.yml"]
subprocess.run(["agentbench-replay", *args], input=prompt.encode("utf-8"), check=False)
if PARAMS.get("marker"):
    mark(PARAMS["marker"], pid=os.getpid(), pgid=os.getpgrp())
time.sleep(PARAMS.get("linger_s", 600))
""",
    # Becomes agentbench-replay with the same arguments and stdin (same pid, same process group).
    "replay": """
# The prompt was read already; replay reads it again, so hand it over through a pipe.
read_fd, write_fd = os.pipe()
os.write(write_fd, prompt.encode("utf-8"))
os.close(write_fd)
os.dup2(read_fd, 0)
argv = ["agentbench-replay", *sys.argv[1:]]
if PARAMS.get("plan"):
    argv += ["--plan", PARAMS["plan"]]
elif PARAMS.get("plan_text"):
    # A confined agent reads no plan from the project: the test bakes the plan into the agent.
    with open("fake-agent-plan.yml", "w", encoding="utf-8") as plan_file:
        plan_file.write(PARAMS["plan_text"])
    argv += ["--plan", "fake-agent-plan.yml"]
os.execvp(argv[0], argv)
""",
}


@dataclass(frozen=True)
class Behaviour:
    """One behaviour of a fake agent: a name from `BODIES` and its parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


def _write_script(path: Path, body: str, params: dict[str, Any]) -> Path:
    prelude = _PRELUDE % {"server": SERVER, "params": json.dumps(params)}
    path.write_text(f"#!{sys.executable}\n{prelude}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def write_agent(directory: Path, behaviour: str, **params: Any) -> Path:
    """Write one fake agent that always behaves as `behaviour`; returns its (executable) path."""
    if behaviour not in BODIES:
        raise ValueError(f"unknown fake agent behaviour {behaviour!r}; known: {', '.join(sorted(BODIES))}")
    directory.mkdir(parents=True, exist_ok=True)
    return _write_script(directory / f"fake-agent-{behaviour}", BODIES[behaviour], params)


def write_dispatcher(directory: Path, behaviours: dict[str, Behaviour], *, project: Path | None = None,
                     bodies: dict[str, str] | None = None) -> Path:
    """Write one fake agent that behaves per suite: `AGENTBENCH_SUITE` -> a Behaviour.

    `bodies` adds behaviours of the caller's own (name -> script body, run after the prelude).
    An unknown suite makes the agent exit 97 with a message on stderr (the run is incomplete).
    With `project`, a `replay` behaviour gets its suite's plan (`benchmark/agent/plans/<suite>.yml`)
    baked in: the harness stages plans only for `agentbench-replay` itself, and a confined agent
    cannot read the project.
    """
    directory.mkdir(parents=True, exist_ok=True)
    table = {suite: {"name": b.name, "params": _with_plan(b, suite, project)} for suite, b in behaviours.items()}
    dispatch = (
        f"TABLE = json.loads({json.dumps(table)!r})\n"
        f"BODIES = json.loads({json.dumps({**BODIES, **(bodies or {})})!r})\n"
        "chosen = TABLE.get(os.environ.get('AGENTBENCH_SUITE', ''))\n"
        "if chosen is None:\n"
        "    sys.stderr.write('fake agent: no behaviour for suite ' + repr(os.environ.get('AGENTBENCH_SUITE')) + '\\n')\n"
        "    sys.exit(97)\n"
        "PARAMS = chosen['params']\n"
        "exec(compile(BODIES[chosen['name']], chosen['name'], 'exec'))\n"
    )
    return _write_script(directory / "fake-agent-dispatch", dispatch, {})


def _with_plan(behaviour: Behaviour, suite: str, project: Path | None) -> dict[str, Any]:
    params = dict(behaviour.params)
    plan = project / "benchmark" / "agent" / "plans" / f"{suite}.yml" if project is not None else None
    if behaviour.name in ("replay", "replay-linger") and "plan" not in params and plan is not None and plan.is_file():
        params["plan_text"] = plan.read_text(encoding="utf-8")
    return params


def write_instance_agent(directory: Path, pattern: str, table: dict[str, Behaviour], default: Behaviour, *,
                         project: Path | None = None, suite: str = "") -> Path:
    """Write one fake agent that behaves per seeded instance: the prompt's first match of `pattern` -> a Behaviour.

    The suite puts a param (`{ref}`) into its prompt; the test draws the same instances with
    `params.instance_values` and decides here which of them pass, fail or end incomplete.
    """
    directory.mkdir(parents=True, exist_ok=True)
    table_json = {key: {"name": b.name, "params": _with_plan(b, suite, project)} for key, b in table.items()}
    dispatch = (
        "import re\n"
        f"TABLE = json.loads({json.dumps(table_json)!r})\n"
        f"DEFAULT = json.loads({json.dumps({'name': default.name, 'params': _with_plan(default, suite, project)})!r})\n"
        f"BODIES = json.loads({json.dumps(BODIES)!r})\n"
        f"found = re.search({pattern!r}, prompt)\n"
        "chosen = TABLE.get(found.group(0) if found else '', DEFAULT)\n"
        "PARAMS = chosen['params']\n"
        "exec(compile(BODIES[chosen['name']], chosen['name'], 'exec'))\n"
    )
    return _write_script(directory / "fake-agent-by-instance", dispatch, {})


def environ_for_scripts() -> dict[str, str]:
    """os.environ with the venv's bin first on PATH (agentbench-replay, agentbench-mcp, agentbench-sim)."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


# ----------------------------------------------------------------------------- sessions that use them

REPO = Path(__file__).resolve().parents[1]
BENCHMARK = REPO / "benchmark" / "agent"
#: The committed suites the harness tests run (one Playground screen task each, and wifi-on): the
#: core jobs have their own sessions (test_jobs_e2e.py), so a harness test stays a few seconds long.
HARNESS_SUITES = ("bug-repro", "ux-flow", "wifi-on")
#: Seed 001's jobs among the committed suites: the mixed ones allow any route (no noShell).
MIXED_JOBS = ("log-code-to-contact", "wakelock-restrict")
#: Issue 23's jobs: phone-only by seed 001's rule, each with params drawn per instance.
NEW_JOBS = ("chrome-camera-blocked", "chrome-bookmark-folder", "chrome-homepage", "chrome-javascript-blocked",
            "clock-alarm-volume", "messages-mute", "photos-rotate", "qa-tasks-bug-report")
CORE_JOBS = ("chrome-search-engine", "chrome-secure-connections", "clock-world-clock", "messages-pin-archive", "photos-crop",
             "testbed-pickup-code", "qa-forms-bug-report", "qa-shop-bug-report", *NEW_JOBS, *MIXED_JOBS)
#: `-k` for a session over the repository's benchmark/ that runs only HARNESS_SUITES.
HARNESS_K = " or ".join(name.replace("-", "_") for name in HARNESS_SUITES)


def copy_benchmark_parts(target: Path, suites: tuple[str, ...] = HARNESS_SUITES, *, one_instance: bool = False) -> Path:
    """Copy `suites` (their files), every prompt and every plan to target/{suites,prompts,plans}; returns target.

    With `one_instance`, a suite with params is written as its pinned instance without them
    (`_one_instance`): for tests whose numbers (tool counts, a recorded baseline) are one instance's.
    """
    for part in ("prompts", "plans"):
        shutil.copytree(BENCHMARK / part, target / part, dirs_exist_ok=True)
    (target / "suites").mkdir(parents=True, exist_ok=True)
    for name in suites:
        source = BENCHMARK / "suites" / f"{name}.yml"
        suite = yaml.safe_load(source.read_text(encoding="utf-8"))
        if one_instance and "params" in suite:
            flat = _one_instance(name, suite, target / "prompts")
            (target / "suites" / f"{name}.yml").write_text(yaml.safe_dump(flat, sort_keys=False), encoding="utf-8")
        else:
            shutil.copy2(source, target / "suites" / f"{name}.yml")
    return target
#: A generous bound for one whole pytest session (a hang detector, not a timing assertion).
SESSION_TIMEOUT_S = 300


def make_project(root: Path, suites: dict[str, dict[str, Any]], *, template: str = "bug-repro",
                 plans: dict[str, dict[str, Any]] | None = None) -> Path:
    """A benchmark project in `root`: suites copied from a committed one, renamed, with overrides.

    Args:
        root: The project directory (gets `pytest.ini` and `benchmark/agent/`).
        suites: New suite name -> top-level keys to merge into the template (one level deep).
        template: The committed suite the new ones start from; its plan is copied for each.
        plans: Suite name -> a replay plan to use instead of the template's.

    Returns:
        The project root.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    agent = root / "benchmark" / "agent"
    shutil.copytree(BENCHMARK / "prompts", agent / "prompts", dirs_exist_ok=True)
    (agent / "suites").mkdir(parents=True, exist_ok=True)
    (agent / "plans").mkdir(parents=True, exist_ok=True)
    base = yaml.safe_load((BENCHMARK / "suites" / f"{template}.yml").read_text(encoding="utf-8"))
    if "params" in base:
        base = _one_instance(template, base, agent / "prompts")
    base_plan = yaml.safe_load((BENCHMARK / "plans" / f"{template}.yml").read_text(encoding="utf-8"))
    for name, overrides in suites.items():
        suite = json.loads(json.dumps(base))
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(suite.get(key), dict):
                suite[key].update(value)
            else:
                suite[key] = value
        suite["name"] = name
        (agent / "suites" / f"{name}.yml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
        plan = (plans or {}).get(name, base_plan)
        (agent / "plans" / f"{name}.yml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return root


#: The instance a template with params is fixed to in a project (the fake agents' scripted answers
#: were written for it): bug-repro's three taps.
PINNED_VALUES: dict[str, dict[str, Any]] = {"bug-repro": {"taps": 3, "fewer": 2}}


def _one_instance(template: str, suite: dict[str, Any], prompts: Path) -> dict[str, Any]:
    """A seeded template as one fixed instance without params: its values filled in, its prompt a file of its own.

    The projects' suites are named and keyed by their bare names (`suite`, not `suite[r1-3-2]`),
    and the fakes answer for one known instance; drawing instances is tests/e2e/test_instances_e2e.py's.
    """
    from pytest_agentbench.suite import load_suite
    from pytest_agentbench.suite.instance import instantiate

    pinned = json.loads(json.dumps(suite))
    for name, value in PINNED_VALUES.get(template, {}).items():
        if name in pinned["params"]:
            pinned["params"][name] = {"type": "choice", "values": [{**PINNED_VALUES[template]}]}
            break
    scratch = prompts.parent / ".template"  # beside suites/, so the prompt's ../prompts path holds
    scratch.mkdir()
    try:
        (scratch / f"{template}.yml").write_text(yaml.safe_dump(pinned, sort_keys=False), encoding="utf-8")
        instance = instantiate(load_suite(scratch / f"{template}.yml", prompts.parent.parent.parent), seed=0, repeat=1)
    finally:
        shutil.rmtree(scratch)
    flat = _numbers_back({key: value for key, value in instance.raw.items() if key != "params"})
    (prompts / f"{template}-instance.txt").write_text(instance.prompt_text, encoding="utf-8")
    flat["prompt"] = f"../prompts/{template}-instance.txt"
    return flat


def _numbers_back(value: Any) -> Any:
    # A filled `{param}` is text ("3"); where a suite without params wants a number (a step's
    # `times`, a seed photo's size) it gets the number back.
    if isinstance(value, dict):
        return {key: int(item) if key in ("times", "width", "height") and isinstance(item, str) and item.isdigit()
                else _numbers_back(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_back(item) for item in value]
    return value


#: Session arguments for fake agents that write markers into the test's directories or report
#: their pids: a confined agent can do neither (the test's tmp dir is hidden, the PID namespace
#: renumbers), so those tests of the runner's own process handling run unconfined; the
#: confinement itself is tested in tests/run/test_sandbox.py and tests/adversarial/.
UNCONFINED = ("--agentbench-sandbox", "off")


#: The test session's warm-start server (tests/conftest.py `shared_warm_starts`): the sessions the
#: tests start use it rather than each importing the MCP SDK and the package in a server of its
#: own (about 2 s of CPU a session, a few hundred sessions).
SHARED_WARM_VARIABLE = "AGENTBENCH_TESTS_WARM_SOCKET"


def session_env(adb_port: int, claim_root: Path, *, own_warm_starts: bool = False, **extra: str) -> dict[str, str]:
    """The environment for a pytest session under test: private adb server, private claim root.

    The session uses the test session's warm-start server unless `own_warm_starts` (a test of
    the session's own server: its log, its stop on Ctrl+C).
    """
    env = environ_for_scripts()
    for name in ("ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_ADDRESS", "PYTEST_XDIST_WORKER", "AGENTBENCH_WARM_SOCKET", SHARED_WARM_VARIABLE):
        env.pop(name, None)
    shared = os.environ.get(SHARED_WARM_VARIABLE)
    if shared and not own_warm_starts:
        env["AGENTBENCH_WARM_SOCKET"] = shared
    env["PYTEST_ADDOPTS"] = CHILD_ADDOPTS
    env["ANDROID_ADB_SERVER_PORT"] = str(adb_port)
    env["AUTOMOBILE_ADB_SERVER_COORDINATION_DIR"] = str(claim_root)
    env.update(extra)
    return env


#: What a pytest session under test never needs: hypothesis's plugin imports all of hypothesis at
#: every session's end (1.3 s of CPU per session in hypothesis 6.170), which the few hundred
#: sessions the tests start would pay again and again.
CHILD_ADDOPTS = "-p no:hypothesispytest"


def pytest_argv(*args: str) -> list[str]:
    """`python -m pytest` with no cache and no inherited timeout ini, plus `args`."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args]


def run_in_own_group(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run a command to completion in its own process group and capture its output.

    On a timeout, or when this test process is interrupted, the command is stopped as a user
    would stop it (`stop_own_group`): a pytest session given the chance stops its agents, phones
    and servers itself, which a SIGKILL of its group alone would leave behind (the agents run in
    groups of their own).
    """
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except BaseException:
        stop_own_group(process)
        raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


#: How long a stopped session gets for its own bounded shutdown (it forces its exit after 60 s).
SESSION_STOP_GRACE_S = 30.0


def stop_own_group(process: subprocess.Popen, *, grace_s: float = SESSION_STOP_GRACE_S) -> None:
    """SIGTERM the command, a second SIGTERM if it is still running after `grace_s` (a session's forced exit), then SIGKILL its group."""
    try:
        for wait_s in (grace_s, 5.0):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        # Whatever is left in its group (a simulated phone, an adb server) goes, even on a second Ctrl+C.
        _kill_group(process.pid)
        process.communicate()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_session(cwd: Path, args: list[str], env: dict[str, str], *,
                timeout_s: float = SESSION_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run one pytest session to completion (in its own process group) and capture its output."""
    return run_in_own_group(pytest_argv(*args), cwd=cwd, env=env, timeout_s=timeout_s)


@dataclass(frozen=True)
class Case:
    """One JUnit testcase: its outcome (passed, failure, skipped, error), its type, message and properties."""

    name: str
    outcome: str
    type: str
    message: str
    text: str
    properties: dict[str, str]


def junit_cases(path: Path) -> dict[str, Case]:
    """A JUnit XML file -> testcase name -> Case."""
    cases = {}
    for testcase in ET.parse(path).getroot().iter("testcase"):
        outcome, kind_type, message, text = "passed", "", "", ""
        for kind in ("failure", "error", "skipped"):
            element = testcase.find(kind)
            if element is not None:
                outcome, kind_type = kind, element.get("type", "")
                message, text = element.get("message", ""), element.text or ""
                break
        properties = {p.get("name"): p.get("value") for p in testcase.iter("property")}
        cases[testcase.get("name")] = Case(testcase.get("name"), outcome, kind_type, message, text, properties)
    return cases


def results_by_suite(junit: Path) -> dict[str, dict[str, Any]]:
    """A session's JUnit file -> suite name -> its JUnit outcome, its run directory and its result.json's keys."""
    results = {}
    for name, case in junit_cases(junit).items():
        run_dir = Path(case.properties["agentbench_run_dir"])
        results[name] = {"outcome": case.outcome, "run_dir": run_dir, **json.loads((run_dir / "result.json").read_text(encoding="utf-8"))}
    return results


def final_answer(run_dir: Path) -> str:
    """The agent's final answer as its stream's result event has it ("" without one)."""
    for line in (run_dir / "claude.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "result":
            return event.get("result") or ""
    return ""


def processes_in_group(pgid: int) -> list[str]:
    """Live (non-zombie) processes whose process group is `pgid`, as `pid cmdline` strings."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(f"{entry.name} {cmdline}")
    return found


def pid_alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
