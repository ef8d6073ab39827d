"""The command line + the pytest cache -> the session's params seed and why: given, drawn fresh, the last session's (a rerun), the compared session's, or the controller's (an xdist worker).

A seed nobody chose is drawn from the operating system (`params.draw_seed`), so a value a prompt
hides cannot be computed by an agent that knows the suite and can import this package. Like
pytest-randomly's, it is printed in the header and recorded with every run (result.json, the
session document, JUnit, the HTML page), so `--agentbench-seed N` reruns a session exactly, and
xdist workers get the controller's.

A seeded item's id names its instance (`ux-flow[r1-Pro]`), which only its seed reproduces. So
when the command asks to rerun earlier items (`--lf`, `--ff`, `--sw`, `--deselect` or a node id
of an instance), the session takes the last session's seed from the pytest cache. The cache gets
the seed only when a session that ran suites ends, never while its agents run: a fresh seed is
then nowhere on disk an agent could look. A session compared with an earlier one
(`--agentbench-compare`) takes that session's seed, so its runs pair up instance by instance.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from pytest_agentbench.suite.params import draw_seed

#: Where the last session's seed is kept (`config.cache`, under the rootdir's `.pytest_cache`).
CACHE_KEY = "agentbench/seed"
#: The key of the controller's seed in an xdist worker's `workerinput`.
WORKER_KEY = "agentbench_seed"
seed_key = pytest.StashKey["SessionSeed"]()


@dataclass(frozen=True)
class SessionSeed:
    """The session's seed, where it came from, and (for a rerun) what asked for the last session's."""

    value: int
    source: Literal["given", "drawn", "last", "baseline", "controller"]
    #: The option that asked for an earlier session's seed (`--lf`, `--agentbench-compare a.json`), when one did.
    rerun: str | None = None

    def header_line(self) -> str:
        """The session header's line: the seed as an option to pass, and why it is this one."""
        why = {
            "given": "given",
            "drawn": "drawn for this session; pass it to rerun these instances",
            "last": f"the last session's, so {self.rerun} finds its instances; --agentbench-seed N overrides",
            "baseline": f"the compared session's, so {self.rerun} pairs instance by instance; --agentbench-seed N overrides",
            "controller": "the controller's",
        }[self.source]
        if self.source == "drawn" and self.rerun:
            why = (f"drawn: {self.rerun} asks for the last session's instances, but the pytest cache holds no seed, "
                   "so earlier ids may not be found")
        return f"agentbench: using --agentbench-seed={self.value} ({why})"


def _names_instance(arg: str) -> bool:
    """Whether a command-line argument is the node id of a seeded suite's item (`suites/a.yml::a[r1-Pro]`)."""
    path, _, rest = arg.partition("::")
    return path.endswith(".yml") and "[" in rest


def rerun_request(config: pytest.Config) -> str | None:
    """The option that asks to rerun earlier items by their ids (`--lf`, `--ff`, `--sw`, a `--deselect` or a node id of an instance)."""
    if config.getoption("lf", False):
        return "--lf"
    if config.getoption("failedfirst", False):
        return "--ff"
    # --sw-reset starts the stepwise walk over, so it needs no earlier ids.
    if (config.getoption("stepwise", False) or config.getoption("stepwise_skip", False)) and not config.getoption("stepwise_reset", False):
        return "--sw"
    for arg in config.getoption("deselect", None) or ():
        if _names_instance(str(arg)):
            return f"--deselect {arg}"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        for arg in config.args:
            if _names_instance(str(arg)):
                return arg
    return None


def last_seed(config: pytest.Config) -> int | None:
    """The seed the pytest cache holds from the last session that ran suites, None without one (or without the cache)."""
    cache = getattr(config, "cache", None)
    value = cache.get(CACHE_KEY, None) if cache is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def compared_seed(config: pytest.Config) -> tuple[str, int] | None:
    """`--agentbench-compare PATH` and the seed its document recorded; None without one (a bad document is the session's usage error)."""
    path = config.getoption("agentbench_compare", None)
    if not path:
        return None
    try:
        seed = json.loads(Path(config.invocation_params.dir, path).read_text(encoding="utf-8")).get("seed")
    except (OSError, ValueError, AttributeError):
        return None
    valid = isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0
    return (f"--agentbench-compare {path}", seed) if valid else None


def resolve(config: pytest.Config) -> SessionSeed:
    """This session's seed, decided once (kept in the config's stash).

    An xdist worker takes the controller's; `--agentbench-seed` wins over everything else; a rerun
    (`rerun_request`) takes the last session's; a comparison the compared session's; otherwise a
    fresh secret seed is drawn.
    """
    known = config.stash.get(seed_key, None)
    if known is not None:
        return known
    workerinput = getattr(config, "workerinput", None)
    given = config.getoption("agentbench_seed", None)
    rerun = rerun_request(config)
    if workerinput is not None and isinstance(workerinput.get(WORKER_KEY), int):
        seed = SessionSeed(workerinput[WORKER_KEY], "controller")
    elif given is not None:
        seed = SessionSeed(int(given), "given")
    elif rerun is not None and (last := last_seed(config)) is not None:
        seed = SessionSeed(last, "last", rerun)
    elif rerun is None and (compared := compared_seed(config)) is not None:
        seed = SessionSeed(compared[1], "baseline", compared[0])
    else:
        seed = SessionSeed(draw_seed(), "drawn", rerun)
    config.stash[seed_key] = seed
    return seed


def remember(config: pytest.Config, seed: int) -> None:
    """Keep the seed of a session that ran suites for the next session's rerun (not on a worker, not for --collect-only)."""
    cache = getattr(config, "cache", None)
    if cache is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    cache.set(CACHE_KEY, seed)


def seed_records(config: pytest.Config) -> tuple[Path, ...]:
    """Where the pytest cache keeps the last seed (its directory), for the sandbox to hide; none without the cache.

    The cache lies in the project by default, which the sandbox hides anyway; `cache_dir` may put it anywhere.
    """
    if getattr(config, "cache", None) is None:
        return ()
    configured = os.path.expanduser(os.path.expandvars(str(config.getini("cache_dir"))))
    return (Path(config.rootpath, configured).absolute(),)
