"""Tests for servers/: the three MCP server profiles, their scrub rules and private state."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakeautomobile import make_checkout
from suitefiles import make_suites

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.servers import PROFILE_NAMES, automobile_stale_build, get_profile


@pytest.mark.parametrize(
    ("profile_name", "variable", "scrubbed"),
    [
        ("auto-mobile", "AUTOMOBILE_DB_PATH", True),
        ("auto-mobile", "AUTOMOBILE_DISABLED_TOOLS", True),
        ("auto-mobile", "AUTO_MOBILE_DATA_DIR", True),
        ("auto-mobile", "NODE_ENV", True),
        ("auto-mobile", "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR", False),
        ("auto-mobile", "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR", False),
        ("auto-mobile", "NODE_OPTIONS", False),
        ("auto-mobile", "PATH", False),
        ("agentbench", "AGENTBENCH_DEVICE_SERIAL", True),
        ("agentbench", "AGENTBENCH_MCP_INSTRUCTIONS", True),
        ("agentbench", "AGENTBENCH_DB_DIR", True),
        ("agentbench", "AGENTBENCH_NPM_CACHE", False),
        ("agentbench", "AUTOMOBILE_DB_PATH", False),
        ("mobile-mcp", "MOBILEMCP_DISABLE_TELEMETRY", True),
        ("mobile-mcp", "AUTOMOBILE_DB_PATH", False),
    ],
)
def test_scrub_rules(tmp_path: Path, profile_name: str, variable: str, scrubbed: bool) -> None:
    profile = get_profile(profile_name, automobile_dir=tmp_path)
    assert profile.scrubs(variable) is scrubbed


@pytest.mark.parametrize(
    ("profile_name", "pinnable", "pin_env", "instructions_env"),
    [
        ("agentbench", True, "AGENTBENCH_DEVICE_SERIAL", "AGENTBENCH_MCP_INSTRUCTIONS"),
        ("auto-mobile", False, None, None),
        ("mobile-mcp", False, None, None),
    ],
)
def test_pinning_and_instructions(tmp_path: Path, profile_name: str, pinnable: bool, pin_env, instructions_env) -> None:
    profile = get_profile(profile_name, automobile_dir=tmp_path)
    assert profile.name == profile_name
    assert (profile.pinnable, profile.pin_env, profile.instructions_env) == (pinnable, pin_env, instructions_env)


def test_commands(tmp_path: Path) -> None:
    assert get_profile("agentbench").command == (sys.executable, "-m", "pytest_agentbench.mcp_server")
    assert get_profile("auto-mobile", automobile_dir=tmp_path).command == ("node", str(tmp_path / "dist" / "src" / "index.js"))
    mobile = get_profile("mobile-mcp")
    assert mobile.command == ("npx", "-y", "@mobilenext/mobile-mcp@1.0.4")
    assert dict(mobile.fixed_env) == {"MOBILEMCP_DISABLE_TELEMETRY": "1"}


def test_private_dirs_live_in_the_run_directory(tmp_path: Path) -> None:
    dirs = get_profile("auto-mobile", automobile_dir=tmp_path).private_dirs(tmp_path / "run")
    assert dirs == {
        "AUTOMOBILE_AUX_SOCKET_DIR": tmp_path / "run" / "sock",
        "AUTOMOBILE_DB_DIR": tmp_path / "run" / "db",
        "AUTOMOBILE_DATA_DIR": tmp_path / "run" / "data",
        "AUTOMOBILE_LOG_DIR": tmp_path / "run" / "logs",
    }
    assert set(get_profile("agentbench").private_dirs(tmp_path)) == {
        "AGENTBENCH_DATA_DIR", "AGENTBENCH_LOG_DIR", "AGENTBENCH_DB_DIR", "AGENTBENCH_SOCKET_DIR",
    }


def test_build_files_name_what_executes(tmp_path: Path) -> None:
    auto_mobile = get_profile("auto-mobile", automobile_dir=tmp_path).build_files
    assert str(tmp_path / "schemas" / "tool-definitions.json") in auto_mobile
    assert str(tmp_path / "package.json") in auto_mobile
    assert any(pattern.endswith("*.py") for pattern in get_profile("agentbench").build_files)


def test_profiles_are_frozen() -> None:
    profile = get_profile("agentbench")
    with pytest.raises(AttributeError):
        profile.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        profile.private_state["X"] = "y"  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "automobile_dir", "message"),
    [
        ("auto-mobile", None, "needs the AutoMobile checkout"),
        ("automobile", None, "'automobile' is not a known MCP server profile"),
        ("", None, "is not a known MCP server profile"),
    ],
)
def test_bad_profile_settings(name: str, automobile_dir, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        get_profile(name, automobile_dir=automobile_dir)


def test_profile_names_all_resolve(tmp_path: Path) -> None:
    assert [get_profile(n, automobile_dir=tmp_path).name for n in PROFILE_NAMES] == list(PROFILE_NAMES)


# ----------------------------------------------------------------------------- a stale AutoMobile build


@pytest.mark.parametrize(
    ("build_age_s", "newest", "message"),
    [
        (0, "src/server/tools.ts", None),
        (30, "src/server/tools.ts", "is older than src/server/tools.ts; run `bun run build`"),
        (30, "schemas/tool-definitions.json", "is older than schemas/tool-definitions.json; run `bun run build`"),
    ],
    ids=["built after its sources", "a source is newer", "the tool schema is newer"],
)
def test_a_stale_automobile_build_is_named_with_its_newest_source(tmp_path: Path, build_age_s: float, newest: str, message: str | None) -> None:
    checkout = make_checkout(tmp_path / "auto-mobile", build_age_s=build_age_s, newest_source=newest)
    problem = automobile_stale_build(checkout)
    if message is None:
        assert problem is None
    else:
        assert problem is not None and message in problem and str(checkout / "dist" / "src" / "index.js") in problem


def test_an_unbuilt_checkout_and_an_empty_directory(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "auto-mobile")
    (checkout / "dist" / "src" / "index.js").unlink()
    assert "is not built" in automobile_stale_build(checkout) and "bun run build" in automobile_stale_build(checkout)
    # Nothing to compare with: the server's own start-up failure tells that story (incomplete).
    assert automobile_stale_build(tmp_path) is None


@pytest.mark.parametrize(("build_age_s", "refused"), [(30, True), (0, False)], ids=["stale build refused", "fresh build runs"])
def test_a_session_refuses_a_stale_automobile_build_once(pytester: pytest.Pytester, build_age_s: float, refused: bool) -> None:
    checkout = make_checkout(pytester.path / "auto-mobile", build_age_s=build_age_s)
    pytester.makeini(f"[pytest]\nagentbench_server = auto-mobile\nagentbench_automobile_dir = {checkout}\n")
    # A session that names a suite (one that names none does not wake the plugin: free when unused).
    suites = make_suites(pytester, "demo") / "suites"
    result = pytester.runpytest(str(suites), "--claude", "agentbench-replay", "-p", "no:cacheprovider")
    if refused:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*agentbench_server = auto-mobile: the AutoMobile build * is older than src/server/tools.ts; run `bun run build`*"])
    else:
        # Refused only for want of a phone here, never for its build.
        assert "bun run build" not in result.stderr.str() + result.stdout.str()
    # A dry run starts nothing, so it never refuses.
    dry = pytester.runpytest(str(suites), "--agentbench-dry-run", "-p", "no:cacheprovider")
    assert dry.ret != pytest.ExitCode.USAGE_ERROR, dry.stderr.str()
