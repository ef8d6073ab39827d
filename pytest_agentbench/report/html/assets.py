"""Pictures, long texts and run files -> what the page links to: data: URIs inside the page, the run's own files, or texts in `<page stem>_files/`.

The rule for pictures: the two screens of each run (where preflight left the app, the post-run
screen) are embedded as data: URIs while a picture is at most `EMBED_MAX_BYTES`, the page's
embedded pictures stay under `EMBED_BUDGET_BYTES` in all, and the same picture is not in the
page already; any other is a relative link to the run directory's own file, never a copy. The
screenshot after each tool call is always such a link, loaded when it is scrolled to. So a
session on the simulated phone (screens of ~20 KB, many alike) gives a page of about a
megabyte with every screen viewable, and a real phone's 1-3 MB screenshots are never copied.
The full text of a long tool result is never embedded: it is written to `<stem>_files/` and
linked, one click away. Links to a run's own files are relative paths from the page, so they
work as long as the page and the run directories stay where they were written.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
from pathlib import Path
from urllib.request import pathname2url

EMBED_MAX_BYTES = 256 * 1024
EMBED_BUDGET_BYTES = 1024 * 1024
#: A file in `<stem>_files/` that says this package made the directory (so a re-render may empty it).
MARKER = ".agentbench-html"

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "file"


class Assets:
    """Decides, for each picture and long text of one page, whether it is embedded or written next to the page."""

    def __init__(self, page: Path, *, embed_max: int = EMBED_MAX_BYTES, embed_budget: int = EMBED_BUDGET_BYTES) -> None:
        self.page = Path(page).absolute()
        self.files_dir = self.page.parent / f"{self.page.stem}_files"
        self.embed_max = embed_max
        self.embed_budget = embed_budget
        self.embedded_bytes = 0
        self._embedded: set[str] = set()
        self.written: list[Path] = []
        self._prepared = False
        # An earlier page's folder goes first, so nothing stale sits next to the new page; only a
        # folder this package made (it holds the marker) is ever removed.
        if (self.files_dir / MARKER).is_file():
            shutil.rmtree(self.files_dir)

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.files_dir.mkdir(parents=True, exist_ok=True)
        (self.files_dir / MARKER).write_text(f"written by pytest-agentbench for {self.page.name}\n", encoding="utf-8")
        self._prepared = True

    def href(self, target: Path) -> str:
        """A relative link from the page to a file or directory."""
        relative = os.path.relpath(Path(target).absolute(), self.page.parent)
        return pathname2url(relative)

    def _write(self, relative: str, data: bytes) -> str:
        self._prepare()
        path = self.files_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.written.append(path)
        return self.href(path)

    def image(self, source: Path) -> str | None:
        """The `src` for one of a run's screens: a data: URI when it fits, else a link to the file; None when it cannot be read."""
        try:
            data = Path(source).read_bytes()
        except OSError:
            return None
        if not data:
            return None
        digest = hashlib.sha256(data).hexdigest()
        fits = len(data) <= self.embed_max and self.embedded_bytes + len(data) <= self.embed_budget
        if fits and digest not in self._embedded:
            self.embedded_bytes += len(data)
            self._embedded.add(digest)
            mime = _MIME.get(Path(source).suffix.lower(), "application/octet-stream")
            return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return self.href(source)

    def linked_image(self, source: Path) -> str | None:
        """The `src` for a picture shown on demand (a call's screenshot): a link to the run's own file; None when there is none."""
        try:
            return self.href(source) if Path(source).stat().st_size > 0 else None
        except OSError:
            return None

    def text(self, text: str, *, key: str) -> str:
        """Write a long text next to the page (UTF-8, `.txt`) and return its relative link."""
        name = "/".join(_safe(part) for part in key.split("/"))
        if not name.endswith(".txt"):
            name += ".txt"
        # The byte-order mark makes browsers read a local .txt as UTF-8 instead of guessing.
        return self._write(name, ("\ufeff" + text).encode("utf-8"))
