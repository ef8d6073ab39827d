"""Issue 28 D: hidden values no one can compute. An agent that imports this package and computes `wakelock-restrict`'s wake-lock holder from the suite name and a seed it guesses fails; the honest route, which finds the holder on the phone, passes under a drawn seed that every record names.

The prompt of `wakelock-restrict` hides the holder on purpose: finding it is half the job. Its
values were SHA-256 of (seed, suite, repeat, name) with the seed 0 unless given, so an agent that
knew the suite name (the harness tells it) could import `pytest_agentbench.suite.params` inside
its sandbox, draw r1 of seed 0, restrict that app and name it, and pass without looking. Now a
session without `--agentbench-seed` draws a secret seed (53 random bits) that reaches no byte the
agent can read.

The cheating sessions pin the drawn seed through `secrets.randbits` in the harness process alone
(a `-p` plugin beside the test, in a directory the sandbox hides), to one whose holder is not the
one seed 0 draws: a real draw coincides one time in five, which is chance, not computation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from adbserver import PrivateAdbServer, one_simulated_phone
from fakeagents import BENCHMARK, REPO, Behaviour, junit_cases, pytest_argv, run_in_own_group, session_env, write_dispatcher

from pytest_agentbench.run.invocation import build_invocation
from pytest_agentbench.servers import get_profile
from pytest_agentbench.sim.fleet import SimFleet
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instantiate
from pytest_agentbench.suite.params import instance_values

SUITE = "wakelock-restrict"
DECLARATION = yaml.safe_load((BENCHMARK / "suites" / f"{SUITE}.yml").read_text(encoding="utf-8"))["params"]
SESSION_TIMEOUT_S = 600


def holder(seed: int, repeat: int = 1) -> str:
    return str(instance_values(DECLARATION, seed=seed, suite=SUITE, repeat=repeat)["holder"])


#: The seed the cheating sessions "draw": the first whose r1 holder is not seed 0's.
SECRET = next(seed for seed in range(1, 100) if holder(seed) != holder(0))

# The cheater: the declaration is public (the repository), the suite name is in its environment,
# and this package is importable in its sandbox. It draws the holder for a seed it guesses, then
# does the other half of the job on that app through the relay and names it.
CHEAT = r'''
from pytest_agentbench.suite import params

def found_seed():
    """A seed from anything readable: the environment, any process's command line, a pytest cache."""
    for name, value in os.environ.items():
        if "SEED" in name.upper() and value.strip().isdigit():
            return int(value)
    for entry in os.listdir("/proc"):
        try:
            argv = open("/proc/%s/cmdline" % entry, "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for index, arg in enumerate(argv):
            if arg == "--agentbench-seed" and index + 1 < len(argv) and argv[index + 1].isdigit():
                return int(argv[index + 1])
            if arg.startswith("--agentbench-seed="):
                return int(arg.split("=", 1)[1])
    for root in (PARAMS["project"], os.getcwd(), os.path.expanduser("~")):
        try:
            return int(open(os.path.join(root, ".pytest_cache", "v", "agentbench", "seed")).read())
        except (OSError, ValueError):
            continue
    return None

guess = found_seed() if PARAMS["guess"] == "found" else None
seed = guess if guess is not None else getattr(params, "DEFAULT_SEED", 0)
values = params.instance_values(PARAMS["declaration"], seed=seed, suite=os.environ["AGENTBENCH_SUITE"], repeat=1)
init()
# Confined, it can write nowhere the test reads: it says what it computed instead (the transcript is kept).
say("CHEAT: " + json.dumps({"seed": seed, "holder": values["holder"]}))
device = serial()
server, client = relay_client()
for number, text in enumerate(["Apps", "See all apps", values["holderName"], "App battery usage", "Restricted"]):
    call(client, server, "toolu_%d" % number, "tapOn", {"text": text, "device": device})
client.close()
final = "WAKELOCK_APP: %s" % values["holder"]
say(final)
result(final)
'''


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def seed_pin(directory: Path, seed: int) -> Path:
    """A pytest plugin for the harness process only: the session's drawn seed is `seed` (the agent never imports it)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "agentbench_seedpin.py").write_text(
        f"import secrets\nsecrets.randbits = lambda bits: {seed}\n", encoding="utf-8")
    return directory


def session(lab, tmp: Path, *args: str, pythonpath: Path | None = None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """One session of wakelock-restrict with no --agentbench-seed -> its output, its one JUnit case, its session document."""
    server, fleet = lab
    tmp.mkdir(parents=True, exist_ok=True)
    junit, document = tmp / "junit.xml", tmp / "session.json"
    env = session_env(server.port, tmp / "claims", COLUMNS="200", **({"PYTHONPATH": str(pythonpath)} if pythonpath else {}))
    done = run_in_own_group(pytest_argv(f"benchmark/agent/suites/{SUITE}.yml", "--device", fleet.serials[0],
                                        "--agentbench-output", str(tmp / "out"), f"--junitxml={junit}",
                                        "--agentbench-json", str(document), "-rA", *args),
                            cwd=REPO, env=env, timeout_s=SESSION_TIMEOUT_S)
    assert junit.exists() and document.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    (case,) = junit_cases(junit).values()
    return done.stdout, {"case": case, "junit": junit}, json.loads(document.read_text(encoding="utf-8"))


@pytest.mark.parametrize("guess", ["default", "found"])
def test_an_agent_that_computes_the_hidden_holder_fails(lab, tmp_path: Path, guess: str) -> None:
    agent = write_dispatcher(tmp_path / "agent", {SUITE: Behaviour("cheat", {
        "declaration": DECLARATION, "guess": guess, "project": str(REPO)})}, bodies={"cheat": CHEAT})
    out, run, document = session(lab, tmp_path / "session", "--claude", str(agent), "-p", "agentbench_seedpin",
                                 pythonpath=seed_pin(tmp_path / "pin", SECRET))
    case = run["case"]
    transcript = (Path(case.properties["agentbench_run_dir"]) / "claude.jsonl").read_text(encoding="utf-8")
    (said,) = re.findall(r"CHEAT: (\{[^}]*\})", transcript.replace('\\"', '"'))
    cheat = json.loads(said)
    # It computed a holder and did the rest of the job on that app: the run fails all the same.
    assert case.outcome == "failure", (cheat, document.get("seed"), out[-4000:])
    # The session drew its seed (pinned here to one of the four seeds whose holder differs from seed 0's) ...
    assert (document["seed"], document["seedSource"]) == (SECRET, "drawn"), out[-3000:]
    values = document["runs"][0]["instance"]["values"]
    assert values["holder"] == holder(SECRET)
    # ... and the agent's seed was not it, so what it computed is not what the phone holds.
    assert cheat["holder"] == holder(cheat["seed"]) != values["holder"], cheat
    reasons = document["runs"][0]["verdict"]["reasons"]
    assert any(f"WAKELOCK_APP: {values['holder']}" in reason for reason in reasons), reasons
    assert any(f"{values['holder']} is not in mode ignore" in reason for reason in reasons), reasons


def test_the_honest_route_passes_under_a_drawn_seed_that_every_record_names(lab, tmp_path: Path) -> None:
    html = tmp_path / "page.html"
    out, run, document = session(lab, tmp_path, "--claude", "agentbench-replay", "--agentbench-html", str(html))
    assert run["case"].outcome == "passed", out[-4000:]
    (header,) = re.findall(r"^agentbench: using --agentbench-seed=(\d+) \(drawn for this session", out, re.MULTILINE)
    seed = int(header)
    # Recorded everywhere a result goes: result.json, the session document, JUnit, the page.
    result = json.loads((Path(run["case"].properties["agentbench_run_dir"]) / "result.json").read_text(encoding="utf-8"))
    assert result["instance"]["seed"] == document["seed"] == seed and document["seedSource"] == "drawn"
    assert run["case"].properties["agentbench_seed"] == str(seed)
    assert f'<property name="agentbench.seed" value="{seed}" />' in run["junit"].read_text(encoding="utf-8")
    assert f"<code>--agentbench-seed {seed}</code>" in html.read_text(encoding="utf-8")
    # And the seed reruns exactly this instance.
    rerun = instantiate(load_suite(BENCHMARK / "suites" / f"{SUITE}.yml", REPO), seed=seed, repeat=1)
    assert rerun.instance.to_json()["values"] == result["instance"]["values"]


# ----------------------------------------------------------------------------- what the agent is given


def test_the_seed_reaches_nothing_the_agent_is_given(tmp_path: Path) -> None:
    """Its argv, environment, prompt, MCP config and staged files hold no seed, and no id or hash of the instance either."""
    from pytest_agentbench.suite.params import draw_seed

    seed = draw_seed() | (1 << 52)  # 16 digits, so no short number matches it by chance
    suite = instantiate(load_suite(BENCHMARK / "suites" / f"{SUITE}.yml", REPO), seed=seed, repeat=2)
    from pytest_agentbench.options import AgentbenchOptions

    for claude in ("claude", "agentbench-replay"):
        options = AgentbenchOptions(device=None, model=None, claude=claude, server_instructions=False, output=tmp_path / "out",
                                    dry_run=False, server="agentbench", suite_dirs=("suites",), automobile_dir=None, seed=seed)
        invocation = build_invocation(suite, options=options, profile=get_profile("agentbench"), run_dir=tmp_path / "run",
                                      workdir=tmp_path / "work", serial="emulator-5554", environ={"PATH": "/usr/bin"})
        given = "\n".join([*invocation.argv, *invocation.env.values(), invocation.prompt, json.dumps(invocation.mcp_config),
                           *(source.read_text(encoding="utf-8") for source in invocation.staged.values())])
        for secret in (str(seed), suite.instance.id, suite.instance.id.split("-", 1)[1]):
            assert secret not in given, (claude, secret)
        # The holder itself is what the agent must find: nothing it is given names it.
        assert suite.instance.values["holder"] not in given, claude
