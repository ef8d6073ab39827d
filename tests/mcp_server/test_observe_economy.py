"""The observe economy script (issue 4): every simulated screen's observe stays under 15% of its XML and lists what matters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "perf" / "observe_economy.py"


def test_observe_economy_holds_on_every_simulated_screen():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.rstrip().endswith(" ok")]
    assert len(rows) >= 20, done.stdout  # every screen of every simulated app is measured
    assert "limit 15% per screen" in done.stdout
