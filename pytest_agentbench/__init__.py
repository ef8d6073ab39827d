"""pytest-agentbench: benchmark AI agents on jobs only a phone can do."""

from __future__ import annotations

__version__ = "0.1.0"
