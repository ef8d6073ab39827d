"""Claude-compatible agents: commands that take Claude Code's print-mode flags and write its stream-json."""

from __future__ import annotations
