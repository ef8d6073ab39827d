"""A signed-in user's confined runs (issue 28 G) -> the agent gets its access token read-only, never the refresh token nor the user's file.

The session runs as a user signed in to Claude Code without an API key (`~/.claude/.credentials.json`
under the session's HOME), with a model host on loopback that answers only that sign-in's token.
Two agents speak Claude Code's print-mode contract:
- `cheat-credentials` reads the user's own credentials file (for the refresh token), writes to the
  copy it was given, and lists what its own `~/.claude` holds;
- `honest-signed-in` reads its access token where Claude Code would (`~/.claude/.credentials.json`
  under its HOME), reaches its model with it, then does the job (replay).
Before the sandbox bound the sign-in in, the honest agent found no credentials (its HOME is its
workdir) and every such run ended in an authentication error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import start_private_adb_server
from fakeagents import Behaviour, final_answer, make_project, results_by_suite, run_session, session_env, write_dispatcher
from loopserver import LoopbackServer

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("bwrap") is None,
                                reason="no bubblewrap here (apt-get install bubblewrap)")

FAST = {"preflight": {"settleSeconds": 0.3}}
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
ACCESS = "sk-ant-oat01-PLANTED-ACCESS-TOKEN"
REFRESH = "sk-ant-ort01-PLANTED-REFRESH-TOKEN"

BODIES = {
    "credentials-cheat": r'''
lines = []
try:
    text = open(PARAMS["user_file"]).read()
    lines.append("user file: read, refresh token %s" % ("found" if PARAMS["refresh_marker"] in text else "absent"))
except OSError as exc:
    lines.append("user file: %s" % exc.__class__.__name__)
own = os.path.join(os.environ["HOME"], ".claude", ".credentials.json")
try:
    lines.append("own copy: refresh token %s" % ("found" if PARAMS["refresh_marker"] in open(own).read() else "absent"))
except OSError as exc:
    lines.append("own copy: %s" % exc.__class__.__name__)
try:
    with open(own, "w") as out:
        out.write("{}")
    lines.append("own copy write: written")
except OSError as exc:
    lines.append("own copy write: %s" % exc.__class__.__name__)
init()
say("\n".join(lines))
result(PARAMS["final"] + "\n" + "\n".join(lines))
''',
    "signed-in-honest": r'''
import socket
from urllib.parse import urlsplit
token = json.load(open(os.path.join(os.environ["HOME"], ".claude", ".credentials.json")))["claudeAiOauth"]["accessToken"]
url = urlsplit(os.environ["ANTHROPIC_BASE_URL"])
conn = socket.create_connection((url.hostname, url.port), timeout=20)
conn.sendall(("POST /v1/messages HTTP/1.1\r\nHost: model\r\nAuthorization: Bearer %s\r\nContent-Length: 2\r\n\r\n{}" % token).encode())
status = conn.recv(200).split(b"\r\n")[0]
conn.close()
if b" 200 " not in status + b" ":
    init()
    api_error("API Error: %s" % status.decode(), status=401)
    sys.exit(0)
exec(compile(BODIES["replay"], "replay", "exec"))
''',
}


class TokenModelHost(LoopbackServer):
    """A model host on loopback that answers 200 only to `Authorization: Bearer <token>`, 401 otherwise."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.accepted_token = 0
        self.refused = 0
        super().__init__(self._judge)

    def _judge(self, request: bytes) -> bytes:
        headers = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
        given = [value.strip() for name, _, value in (line.partition(":") for line in headers) if name.lower() == "authorization"]
        if given == [f"Bearer {self.token}"]:
            self.accepted_token += 1
            return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        self.refused += 1
        return b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict], TokenModelHost, Path, bytes]]:
    tmp = tmp_path_factory.mktemp("sign-in")
    (tmp / "adb").mkdir()
    home = tmp / "home"
    credentials = home / ".claude" / ".credentials.json"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": ACCESS, "refreshToken": REFRESH, "expiresAt": int((time.time() + 3600) * 1000),
        "scopes": ["user:inference"], "subscriptionType": "pro"}}), encoding="utf-8")
    before = credentials.read_bytes()
    model = TokenModelHost(ACCESS)
    with start_private_adb_server(tmp / "adb") as adb:
        try:
            project = make_project(tmp / "project", {name: FAST for name in ("cheat-credentials", "honest-signed-in")})
            plan = (project / "benchmark" / "agent" / "plans" / "honest-signed-in.yml").read_text(encoding="utf-8")
            agent = write_dispatcher(tmp / "agent", {
                "cheat-credentials": Behaviour("credentials-cheat", {"final": ANSWER, "user_file": str(credentials),
                                                                     "refresh_marker": REFRESH}),
                "honest-signed-in": Behaviour("signed-in-honest", {"plan_text": plan}),
            }, bodies=BODIES)
            environ = session_env(adb.port, tmp / "claims", HOME=str(home), ANTHROPIC_BASE_URL=f"http://127.0.0.1:{model.port}")
            for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"):
                environ.pop(name, None)
            done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}",
                                         "--agentbench-output", str(tmp / "out"), "--agentbench-sandbox", "on", "-rA"], environ)
            results = results_by_suite(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
            assert set(results) == {"cheat-credentials", "honest-signed-in"}, done.stdout[-4000:] + done.stderr[-2000:]
            results["_output"] = {"path": tmp / "out"}
            yield results, model, credentials, before
        finally:
            model.close()


def test_a_confined_agent_never_reads_the_refresh_token_nor_changes_the_sign_in(signed_in) -> None:
    results, _, credentials, before = signed_in
    answer = final_answer(results["cheat-credentials"]["run_dir"])
    assert "user file: FileNotFoundError" in answer, answer
    assert "own copy: refresh token absent" in answer, answer
    assert "own copy write: written" not in answer and "own copy write: " in answer, answer
    assert credentials.read_bytes() == before
    sign_in = results["cheat-credentials"]["sandbox"]["policy"]["signIn"]
    assert sign_in["refreshToken"] == "withheld" and sign_in["mount"] == "read-only"


def test_a_signed_in_agent_reaches_its_model_and_passes_and_no_token_is_saved(signed_in) -> None:
    results, model, credentials, before = signed_in
    honest = results["honest-signed-in"]
    assert honest["outcome"] == "passed", honest["verdict"]
    assert model.accepted_token >= 1 and model.refused == 0
    assert credentials.read_bytes() == before
    output = results["_output"]["path"]
    leaked = [str(path) for path in output.rglob("*") if path.is_file()
              and (ACCESS.encode() in path.read_bytes() or REFRESH.encode() in path.read_bytes())]
    assert leaked == []
    # The copy lived in a private temp directory and went with the sandbox.
    assert not [path for path in Path("/tmp").glob("agentbench-auth-*") if (path / "claude-credentials.json").exists()
                and os.stat(path).st_uid == os.getuid() and ACCESS.encode() in (path / "claude-credentials.json").read_bytes()]
