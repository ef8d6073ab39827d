"""A run with a 100 MB transcript -> its HTML report page -> DOMContentLoaded in headless Chromium, printed against the 2 s goal.

Run: `python tests/perf/html_open.py [MB]` (needs Debian's `chromium`; exit 1 above the goal, 2
without a browser). The run directory is built as a real run leaves it: `claude.jsonl` (the
big-transcript generator: `observe` calls whose results are 20-100 KB each), `result.json` from
the real audit, the start and post-run screens, and a screenshot after every call with the built-in
server's index, as `--agentbench-html` makes the server write them. The page is rendered by the
plugin's own `write_html_report`, then opened in a fresh headless Chromium; the time is the
browser's own navigation timing (navigation start to the end of DOMContentLoaded), and the
wall time from `Page.navigate` to the event is printed beside it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(TESTS / "perf"))

from big_transcript import SERVER, write_transcript  # noqa: E402
from browser import Browser, find_chromium  # noqa: E402
from resultdoc import result_document as build_result_document  # noqa: E402

from pytest_agentbench.audit.transcript import parse_file, short_tool_name  # noqa: E402
from pytest_agentbench.audit.verdict import audit_run, watched_patterns  # noqa: E402
from pytest_agentbench.records import RunResult, SessionResult  # noqa: E402
from pytest_agentbench.report.html import write_html_report  # noqa: E402
from pytest_agentbench.records.run import ProcessOutcome, Run, ScreenSnapshot  # noqa: E402
from pytest_agentbench.servers.screenshots import INDEX_NAME, CallShot, screenshot_name  # noqa: E402
from pytest_agentbench.sim.phone import Phone  # noqa: E402
from pytest_agentbench.suite import load_suite  # noqa: E402

GOAL_S = 2.0


def build_run(run_dir: Path, megabytes: int) -> dict:
    """A run directory with a `megabytes` transcript, screens and per-call screenshots; returns its result.json."""
    run_dir.mkdir(parents=True)
    transcript = run_dir / "claude.jsonl"
    write_transcript(transcript, megabytes)
    phone = Phone()
    png = phone.shell("screencap -p").stdout
    (run_dir / "start-screen.png").write_bytes(png)
    (run_dir / "screen.png").write_bytes(png)
    (run_dir / "screen.xml").write_text(phone.screen_xml(), encoding="utf-8")
    suite = load_suite(REPO / "benchmark" / "agent" / "suites" / "bug-repro.yml", REPO)
    parsed = parse_file(transcript, watch=watched_patterns(suite))
    shots = run_dir / "data" / "screenshots"
    shots.mkdir(parents=True)
    with open(shots / INDEX_NAME, "w", encoding="utf-8") as index:
        for order, call in enumerate(parsed.tool_calls, start=1):
            name = screenshot_name(order, short_tool_name(call.name))
            (shots / name).write_bytes(png)
            index.write(CallShot(order, short_tool_name(call.name), call.input, True, name).to_json() + "\n")
    run = Run(suite=suite, run_dir=run_dir, process=ProcessOutcome(0, False, None, 60.0),
              screen=ScreenSnapshot(nodes=()), device_aware_tools=frozenset({f"mcp__{SERVER}__observe"}))
    audit = audit_run(run, parsed)
    result = build_result_document(suite_name=suite.name, suite_file=str(suite.path), run_dir=str(run_dir), audit=audit,
                                   fingerprints={}, scoring_code="perf", baseline=suite.baseline,
                                   baseline_tool_sequence=suite.baseline_tool_sequence)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main() -> int:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium on this machine: `apt-get install chromium` (Debian's package)", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-html-open-"))
    try:
        result = build_run(scratch / "run", megabytes)
        transcript = scratch / "run" / "claude.jsonl"
        page = scratch / "report.html"
        started = time.perf_counter()
        write_html_report(SessionResult.of([RunResult.from_json(result)]).to_json(), page, environ={})
        rendered = time.perf_counter() - started
        files = scratch / "report_files"
        beside = sum(p.stat().st_size for p in files.rglob("*") if p.is_file()) if files.is_dir() else 0
        print(f"run: {transcript.stat().st_size / 2**20:.0f} MiB transcript, {result['metrics']['toolCalls']} tool calls, "
              f"a screenshot after each")
        print(f"page: {page.stat().st_size / 2**20:.1f} MiB HTML, {beside / 2**20:.1f} MiB beside it in {files.name}/; "
              f"rendered in {rendered:.1f} s")
        with Browser(chromium) as browser:
            begun = time.perf_counter()
            result_nav = browser.call("Page.navigate", url=page.as_uri())
            if result_nav.get("errorText"):
                raise SystemExit(f"Chromium could not open {page}: {result_nav['errorText']}")
            browser.wait_for_event("Page.domContentEventFired")
            waited = time.perf_counter() - begun
            browser.wait_for_event("Page.loadEventFired")
            dcl = browser.dom_content_loaded_ms() / 1000
            rows = browser.evaluate("document.querySelectorAll('.timeline .trow.call').length")
        print(f"DOMContentLoaded: {dcl:.2f} s (navigation timing; {waited:.2f} s from Page.navigate) with {rows} timeline rows; "
              f"goal < {GOAL_S:.1f} s")
        if dcl >= GOAL_S:
            print(f"FAIL: the page took {dcl:.2f} s to DOMContentLoaded, more than {GOAL_S:.1f} s", file=sys.stderr)
            return 1
        print(f"OK: {dcl:.2f} s < {GOAL_S:.1f} s")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
