"""A local HTML file -> headless Chromium (Debian's, no download, no network) driven over the DevTools protocol on a pipe.

Chromium's `--remote-debugging-pipe` reads DevTools commands from fd 3 and writes answers and
events to fd 4, each a JSON message ended by a NUL byte: no websocket, no port, no extra package.
`Browser.open(path)` navigates a fresh tab and waits for the load event (a condition, not a
sleep); `evaluate`, `screenshot` and `dom_content_loaded_ms` read the page.

Tests that need a browser call `chromium_or_skip()`, which skips with a reason when no
Chromium is installed (CI installs Debian's `chromium`; see .ci/run).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The flags the issue asks for: nothing phones home, nothing updates, a fresh profile.
HEADLESS_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
    "--hide-scrollbars", "--remote-debugging-pipe",
)
CANDIDATES = ("chromium", "chromium-browser", "/usr/lib/chromium/chromium")

# Re-maps two inherited descriptors onto 3 and 4 (what --remote-debugging-pipe reads and writes),
# through copies at 10 and above so the two can never overwrite each other, then becomes Chromium.
_EXEC_WITH_PIPE = (
    "import fcntl, os, sys\n"
    "r, w = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3])\n"
    "os.dup2(r, 3); os.dup2(w, 4)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


def find_chromium() -> str | None:
    """The Chromium executable on this machine, or None."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_or_skip() -> str:
    """The Chromium executable, or a pytest skip that says how to get one."""
    import pytest

    found = find_chromium()
    if found is None:
        pytest.skip("no Chromium on this machine: `apt-get install chromium` (Debian's package; .ci/run installs it)")
    return found


class BrowserError(RuntimeError):
    """Chromium did not answer as the DevTools protocol says it should."""


class Browser:
    """One headless Chromium with a fresh profile; use as a context manager (it is stopped by process group)."""

    def __init__(self, executable: str | None = None, *, width: int = 1280, height: int = 900, timeout_s: float = 60) -> None:
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise BrowserError("no Chromium found")
        self.width, self.height, self.timeout_s = width, height, timeout_s
        self._profile = tempfile.mkdtemp(prefix="agentbench-chromium-")
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self.session: str | None = None

    def __enter__(self) -> Browser:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        argv = [sys.executable, "-c", _EXEC_WITH_PIPE, str(to_browser_r), str(from_browser_w), self.executable,
                *HEADLESS_FLAGS, f"--user-data-dir={self._profile}", f"--window-size={self.width},{self.height}", "about:blank"]
        try:
            self._proc = subprocess.Popen(argv, pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        finally:
            os.close(to_browser_r)
            os.close(from_browser_w)
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Page.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._send({"id": self._new_id(), "method": "Browser.close"})
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, BrowserError):
                pass
            if self._proc.poll() is None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._proc.wait(timeout=10)
        # Chromium's helpers (zygote, GPU, renderer) share its process group: none may outlive it.
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if self._proc.stderr is not None:
                self._proc.stderr.close()
        for fd in (getattr(self, "_to_browser", None), getattr(self, "_from_browser", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_browser = self._from_browser = None  # type: ignore[assignment]
        shutil.rmtree(self._profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    said = self._proc.stderr.read().decode(errors="replace")[-2000:] if self._proc and self._proc.stderr else ""
                    raise BrowserError(f"Chromium closed its DevTools pipe: {said}")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command (to the attached page once there is one) and return its result."""
        call_id = self._new_id()
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout_s
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == call_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self._events.append(answer)

    def wait_for_event(self, method: str) -> dict[str, Any]:
        """The next event named `method` (events seen before are kept and searched first)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for index, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(index)
            self._events.append(self._read_message(deadline))

    # ------------------------------------------------------------------ pages

    def open(self, path: Path) -> None:
        """Navigate to a local file and wait for its load event."""
        self._events.clear()
        result = self.call("Page.navigate", url=Path(path).absolute().as_uri())
        if result.get("errorText"):
            raise BrowserError(f"opening {path}: {result['errorText']}")
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def request_urls(self) -> list[str]:
        """The URLs the page asked for since it was opened (needs `Network.enable` before `open`)."""
        return [event["params"]["request"]["url"] for event in self._events if event.get("method") == "Network.requestWillBeSent"]

    def dom_content_loaded_ms(self) -> float:
        """Milliseconds from the start of the navigation to the end of DOMContentLoaded."""
        return float(self.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"))

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """Save the page as a PNG (the whole page by default)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": min(height, 16000), "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
