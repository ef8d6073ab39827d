"""The adversarial agents' directory -> the shared test helpers (tests/*.py) importable, as they are from tests/ itself."""

from __future__ import annotations

import sys
from pathlib import Path

# Test modules here import the helpers beside tests/conftest.py (fakeagents, adbserver) by name,
# as the modules in tests/ do; pytest puts only this directory on sys.path for them.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
