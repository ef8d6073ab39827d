"""The MCP server's test modules -> their shared fixture: one simulated phone behind a private adb server."""

from __future__ import annotations

from typing import Any

import pytest
from adbserver import start_private_adb_server
from test_mcp_server import PKG

from pytest_agentbench.sim.apps.model import write_shared_prefs
from pytest_agentbench.sim.fleet import SimFleet


@pytest.fixture(scope="module")
def sim_phone(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One simulated phone attached to a private adb server; the Playground's demos unlocked."""
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as adb_server:
        fleet = SimFleet(count=1, adb=adb_server.client())
        try:
            phone = fleet.phones[0]
            write_shared_prefs(phone, PKG, "onboarding_prefs", {"onboarding_completed": True})
            write_shared_prefs(phone, PKG, "auth_prefs", {"is_guest_mode": True})
            yield fleet, adb_server
        finally:
            fleet.stop()
