"""`agentbench-sim` command line -> a running SimFleet that serves until SIGINT/SIGTERM, then a command report."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pytest_agentbench.device.adb import Adb
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.sim.fleet import EMULATOR_PORTS, SimFleet


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid port {text!r}: not a number") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"Invalid port {text!r}: must be 1-65535")
    if port in EMULATOR_PORTS:
        raise argparse.ArgumentTypeError(
            f"Invalid port {text!r}: 5554-5585 is adb's emulator range, where the phone would be registered twice"
        )
    return port


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid count {text!r}: not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"Invalid count {text!r}: must be at least 1")
    return value


def _latency(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid latency {text!r}: not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"Invalid latency {text!r}: must not be negative")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `agentbench-sim` argument parser."""
    parser = argparse.ArgumentParser(
        prog="agentbench-sim",
        description=(
            "Start simulated Android phones, attach them to the adb server named by "
            "ANDROID_ADB_SERVER_PORT / ADB_SERVER_SOCKET (starting it if needed) and serve until "
            "SIGINT or SIGTERM."
        ),
    )
    parser.add_argument("--port", type=_port, default=None, metavar="PORT",
                        help="Port of the first phone; the next ones follow. Default: free ports")
    parser.add_argument("--count", type=_positive_int, default=1, metavar="N",
                        help="Number of phones. Default: %(default)r")
    parser.add_argument("--latency-ms", type=_latency, default=0.0, metavar="MS",
                        help="Delay added to every served command, like a USB round trip. Default: %(default)r")
    parser.add_argument("--serial-file", type=Path, default=None, metavar="PATH",
                        help="Write the serials here, one per line, once every phone is online; removed on exit")
    parser.add_argument("--report-commands", action="store_true",
                        help="On exit, also list every command line each phone served")
    return parser


def format_report(fleet: SimFleet, *, with_commands: bool) -> str:
    """The on-exit summary: services served per phone, and optionally the command lines."""
    lines = []
    for serial, phone in zip(fleet.serials, fleet.phones):
        counts = dict(sorted(phone.counters.items()))
        total = sum(counts.values())
        shown = ", ".join(f"{kind}={count}" for kind, count in counts.items()) or "nothing"
        lines.append(f"{serial}: {total} served ({shown})")
        if with_commands:
            lines.extend(f"    {command}" for command in phone.command_log)
    return "\n".join(lines)


def _write_serials(path: Path, serials: Sequence[str]) -> None:
    # Written whole and renamed, so a watcher never reads half a list.
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(f"{serial}\n" for serial in serials))
    os.replace(partial, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `agentbench-sim`; returns the exit status (0 after a clean SIGINT/SIGTERM stop)."""
    args = build_parser().parse_args(argv)
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop_requested.set()

    # Installed before the phones start, so a signal during start-up still stops them cleanly.
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        adb = Adb()
        # An adb server this command starts is stopped again when it exits (its owner).
        started_server = not adb.server_running()
        try:
            fleet = SimFleet(args.count, args.latency_ms, adb, first_port=args.port)
        except (AgentbenchError, OSError, ValueError) as exc:
            print(f"agentbench-sim: {exc}", file=sys.stderr)
            if started_server:
                adb.kill_server()
            return 1
        try:
            for serial in fleet.serials:
                print(serial, flush=True)
            if args.serial_file is not None:
                _write_serials(args.serial_file, fleet.serials)
            print(
                f"agentbench-sim: {len(fleet.serials)} phone(s) attached to the adb server at "
                f"{adb.endpoint}; SIGINT or SIGTERM stops them",
                file=sys.stderr, flush=True,
            )
            # A timed wait keeps the main thread returning to the interpreter, where signal handlers run.
            while not stop_requested.wait(0.5):
                pass
        finally:
            fleet.stop()
            if started_server:
                adb.kill_server()
            if args.serial_file is not None:
                args.serial_file.unlink(missing_ok=True)
        print(format_report(fleet, with_commands=args.report_commands), file=sys.stderr, flush=True)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
