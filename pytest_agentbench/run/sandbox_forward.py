"""Inside the sandbox: its self-test, loopback ports -> the harness's unix sockets, then the agent command in this process.

Standard library only, run as ``python -I -S sandbox_forward.py [--selftest FD=PROBES] SPEC... --
COMMAND...`` as the sandbox's first process. The self-test (`self_test`) runs first, from inside:
what the harness hides must look hidden (a directory empty but for what is shown again, a file
empty), the adb server and other loopback ports must refuse, and the relay's and model bridge's
sockets must be there. Its answer goes to FD as one JSON object; when anything that must be out of
reach is reachable, the agent is not started (exit 125). Each SPEC is ``HOST:PORT=SOCKET``: listen on HOST:PORT inside the
sandbox's own network namespace and carry every connection to the unix socket SOCKET, bound in
from outside, where `run/netbridge.py` connects it to the one endpoint it stands for. The
listening sockets are bound first, a forked child serves them, and this process then becomes the
agent (exec), so the agent's exit ends the sandbox, its PID namespace and the forwarder with it.
"""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import sys
import threading

_CHUNK = 65536
#: The exit status when the self-test found a hole: the agent never started.
SELF_TEST_FAILED = 125


def _visible(path: str, shown: list[str]) -> list[str]:
    """What of a hidden path is visible inside: a directory's entries but those shown again, a file's first bytes."""
    try:
        if os.path.isdir(path):
            return sorted(set(os.listdir(path)) - set(shown))
        with open(path, "rb") as data:
            content = data.read(64)
        return ["%d bytes or more" % len(content)] if content else []
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [] if exc.errno in (13, 20) else ["unreadable (%s)" % exc.strerror]


def _tcp_open(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect((host, port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _socket_there(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def self_test(probes: dict) -> dict:
    """Each probe -> whether it was reached; `ok` when everything that must be out of reach is, and everything needed is there.

    Probes (all optional): `hidden` [{what, path, shown}], `closed` [{what, host, port}],
    `sockets` [{what, path}] (needed: the relay's and the model bridge's).
    """
    checks = []
    for probe in probes.get("hidden", []):
        seen = _visible(probe["path"], probe.get("shown", []))
        checks.append({"what": probe["what"], "expected": "hidden", "reached": bool(seen), **({"seen": seen[:5]} if seen else {})})
    for probe in probes.get("closed", []):
        checks.append({"what": probe["what"], "expected": "refused", "reached": _tcp_open(probe["host"], int(probe["port"]))})
    for probe in probes.get("sockets", []):
        checks.append({"what": probe["what"], "expected": "reachable", "reached": _socket_there(probe["path"])})
    ok = all(check["reached"] == (check["expected"] == "reachable") for check in checks)
    return {"ok": ok, "checks": checks}


def parse_specs(args: list[str]) -> tuple[list[tuple[str, int, str]], list[str]]:
    """``HOST:PORT=SOCKET ... -- COMMAND ...`` -> (listen specs, command)."""
    if "--" not in args:
        raise ValueError("expected SPEC... -- COMMAND...")
    split = args.index("--")
    specs = []
    for spec in args[:split]:
        address, _, path = spec.partition("=")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not path:
            raise ValueError(f"bad forward spec {spec!r}: expected HOST:PORT=SOCKET")
        specs.append((host.strip("[]"), int(port), path))
    command = args[split + 1:]
    if not command:
        raise ValueError("no command after --")
    return specs, command


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy one direction of a connection until its end, then half-close the other side."""
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listeners: dict[socket.socket, str]) -> None:
    """Accept on every listener forever, one thread pair per connection."""
    while True:
        ready, _, _ = select.select(list(listeners), [], [])
        for listener in ready:
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=_carry, args=(client, listeners[listener]), daemon=True).start()


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


def main(args: list[str]) -> int:
    report = None
    if args[:1] == ["--selftest"] and len(args) > 1:
        report, args = args[1], args[2:]
    try:
        specs, command = parse_specs(args)
    except ValueError as exc:
        print(f"agentbench sandbox forwarder: {exc}", file=sys.stderr)
        return 2
    if report is not None:
        fd, _, probes = report.partition("=")
        answer = self_test(json.loads(probes))
        with os.fdopen(int(fd), "w") as out:
            json.dump(answer, out)
        if not answer["ok"]:
            holes = ", ".join(check["what"] for check in answer["checks"] if check["reached"] != (check["expected"] == "reachable"))
            print("agentbench sandbox: self-test failed, the agent was not started: %s" % holes, file=sys.stderr)
            return SELF_TEST_FAILED
    listeners = {}
    for host, port, path in specs:
        try:
            listeners[listen(host, port)] = path
        except OSError as exc:
            # ::1 may be missing inside a namespace; the IPv4 listener still serves the endpoint.
            if ":" not in host:
                print(f"agentbench sandbox forwarder: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
                return 2
    if listeners and os.fork() == 0:
        try:
            os.closerange(0, 3)
            serve(listeners)
        finally:
            os._exit(0)
    for listener in listeners:
        listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"agentbench sandbox: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
