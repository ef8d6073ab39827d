"""Every screen of the simulated apps -> a table of raw XML vs observe size and coverage; exit 1 on a miss.

Run: `python tests/perf/observe_economy.py` (no adb server needed: it drives `sim.phone.Phone`
in-process through the same `PhoneDriver.observe()` the MCP server uses, so the dump, the focus
lines and the compact list are exactly what an agent gets).

Rules checked on every screen: the observe text is at most 15% of the characters of that screen's
raw uiautomator XML, every clickable node has its own line, and every text or content-desc on
screen appears in the list. Also printed: the extra characters an action result costs (the fresh
list it carries) against the observe call it saves.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tabulate import tabulate

from pytest_agentbench.device.adb import ShellResult
from pytest_agentbench.device.shellscript import ShellArgs, as_script
from pytest_agentbench.mcp_server.driver import Observation, PhoneDriver
from pytest_agentbench.sim.apps.model import write_shared_prefs
from pytest_agentbench.sim.phone import Phone

MAX_RATIO = 0.15
PLAYGROUND = "dev.jasonpearson.automobile.playground"


class PhoneAsAdb:
    """The two device-layer calls `PhoneDriver` makes, answered by an in-process simulated phone."""

    def __init__(self, phone: Phone) -> None:
        self.phone = phone

    def exec_out(self, serial: str, args: ShellArgs, *, timeout_s: float = 30) -> bytes:
        return self.phone.shell(as_script(args).text).stdout

    def shell(self, serial: str, args: ShellArgs, *, timeout_s: float = 30, check: bool = True) -> ShellResult:
        result = self.phone.shell(as_script(args).text)
        return ShellResult((result.stdout + result.stderr).decode("utf-8", "replace"), result.exit_code)


@dataclass(frozen=True)
class Row:
    """One measured screen."""

    screen: str
    raw_chars: int
    observe_chars: int
    clickable: tuple[int, int]
    text_bearing: tuple[int, int]
    missing: tuple[str, ...]

    @property
    def ratio(self) -> float:
        return self.observe_chars / self.raw_chars

    @property
    def ok(self) -> bool:
        return self.ratio <= MAX_RATIO and not self.missing


def _screens(phone: Phone) -> Iterator[str]:
    """Open every route of every app (Settings' Wi-Fi screens once per Wi-Fi state); yield a label each time."""
    # Seed the Playground's prefs so its demo routes show themselves rather than the redirect target.
    write_shared_prefs(phone, PLAYGROUND, "onboarding_prefs", {"onboarding_completed": True})
    write_shared_prefs(phone, PLAYGROUND, "auth_prefs", {"is_guest_mode": True})
    for package in sorted(phone.packages):
        app = phone.packages[package].app
        for route in app.screens:
            phone.force_stop(package)
            phone.open_route(package, route)
            yield f"{package.rsplit('.', 1)[-1]}:{route}"
    phone.settings["global"]["wifi_on"] = "1"
    for route in ("main", "network", "internet"):
        phone.force_stop("com.android.settings")
        phone.open_route("com.android.settings", route)
        yield f"settings:{route} (wifi on)"


def measure(label: str, observation: Observation) -> Row:
    """Check one observation against its own dump."""
    text = observation.text
    nodes = observation.screen.nodes
    listed_nodes = {element.node.index for element in observation.elements}
    listed_texts = {value for element in observation.elements for value in element.texts}
    clickable = [node for node in nodes if node.clickable]
    bearing = [node for node in nodes if node.text or node.content_desc]
    missing: list[str] = []
    missing += [f"clickable #{node.index} {node.short_class}" for node in clickable if node.index not in listed_nodes]
    for node in bearing:
        for value in (node.text, node.content_desc):
            # Long texts are cut in the line; their start must still be there.
            if value and (value not in listed_texts or " ".join(value.split())[:40] not in text):
                missing.append(f"text {value!r}")
    clickable_listed = sum(node.index in listed_nodes for node in clickable)
    bearing_listed = sum(all(v in listed_texts for v in (node.text, node.content_desc) if v) for node in bearing)
    return Row(label, observation.raw_chars, len(text), (clickable_listed, len(clickable)),
               (bearing_listed, len(bearing)), tuple(missing))


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every screen, print the table, return 1 if any screen breaks a rule."""
    phone = Phone("perf")
    driver = PhoneDriver(PhoneAsAdb(phone), "perf")  # type: ignore[arg-type]
    rows = [measure(label, driver.observe()) for label in _screens(phone)]
    table = [
        (row.screen, row.raw_chars, row.observe_chars, f"{row.ratio:.1%}", "{}/{}".format(*row.clickable),
         "{}/{}".format(*row.text_bearing), "ok" if row.ok else "FAIL: " + "; ".join(row.missing[:3]))
        for row in rows
    ]
    print(tabulate(table, headers=["screen", "raw XML chars", "observe chars", "ratio", "clickable listed",
                                   "text-bearing listed", "result"]))
    raw = sum(row.raw_chars for row in rows)
    observed = sum(row.observe_chars for row in rows)
    print(f"\n{len(rows)} screens; raw XML {raw} chars, observe {observed} chars ({observed / raw:.1%}); "
          f"limit {MAX_RATIO:.0%} per screen")
    print(f"an action result carries the fresh list: about {observed // len(rows)} extra chars per action, "
          "in place of a separate observe call (one tool round trip and its turn overhead)")
    failures = [row for row in rows if not row.ok]
    if failures:
        print(f"FAILED on {len(failures)} screen(s): {', '.join(row.screen for row in failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
