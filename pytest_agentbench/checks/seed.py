"""A suite's `preflight.seed:` list (schema-valid) -> typed seed steps: what the host puts on the phone before each run, never the agent.

```yaml
preflight:
  seed:
    - sms: {from: "+15551230001", body: "Lunch at noon?"}     # an SMS received, as an emulator console seeds one
    - photo: {name: beach.png, width: 1200, height: 800}       # a PNG in /sdcard/Pictures, scanned into MediaStore
    - job: {package: dev.agentbench.testbed, id: 1}            # the app's background job, the only one running
```

Seeds run in preflight's reset round trip, over adb (as root where Android needs it), so the same
suite seeds an emulator and the simulated phone alike; `run/seed.py` turns them into commands and
files. Cleanup watches what they touch (SMS, MediaStore images) and puts the phone back as it read
before the seeds ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

#: Where a seeded photo goes on shared storage (a relative path MediaStore files under Pictures/).
PICTURES_DIR = "/sdcard/Pictures"
#: The largest side a seeded photo may have: bigger ones cost seconds to push for nothing a job needs.
MAX_PHOTO_SIDE = 4096


@dataclass(frozen=True)
class SmsSeed:
    """An SMS that arrives from `address` (the inbox), unread unless `read`."""

    address: str
    body: str
    read: bool = False

    def describe(self) -> str:
        return f"sms from {self.address}"


@dataclass(frozen=True)
class PhotoSeed:
    """A `width` x `height` PNG named `name` in /sdcard/Pictures, indexed by MediaStore."""

    name: str
    width: int
    height: int

    @property
    def path(self) -> str:
        return f"{PICTURES_DIR}/{self.name}"

    def describe(self) -> str:
        return f"photo {self.name} {self.width}x{self.height}"


@dataclass(frozen=True)
class JobSeed:
    """The app's background job `job_id` as the only running job, from a cold start (its work may hold a wake lock).

    Cleanup does not watch jobs: a suite that seeds one stops it in its own `cleanup` (an `adb` step).
    """

    package: str
    job_id: int

    def describe(self) -> str:
        return f"job {self.job_id} of {self.package}"


SeedStep = Union[SmsSeed, PhotoSeed, JobSeed]


def _side(value: Any) -> int:
    # A suite template's `{param}` (the schema allows one) has no number yet: 0 until an instance draws it.
    return int(value) if isinstance(value, int) or str(value).isdigit() else 0


def parse_seed(entry: Mapping[str, Any]) -> SeedStep:
    """One validated `preflight.seed` entry -> its typed step.

    Raises:
        ValueError: The entry is not one of the known steps (the suite schema refuses it first).
    """
    if "sms" in entry:
        sms = entry["sms"]
        return SmsSeed(str(sms["from"]), str(sms["body"]), bool(sms.get("read", False)))
    if "photo" in entry:
        photo = entry["photo"]
        return PhotoSeed(str(photo["name"]), _side(photo["width"]), _side(photo["height"]))
    if "job" in entry:
        job = entry["job"]
        return JobSeed(str(job["package"]), _side(job["id"]))
    raise ValueError(f"a seed step is one of sms, photo, job; got {sorted(entry)}")


def parse_seeds(entries: Iterable[Mapping[str, Any]] | None) -> tuple[SeedStep, ...]:
    """Validated `preflight.seed` entries -> typed steps, in order."""
    return tuple(parse_seed(entry) for entry in entries or ())


def seeds_cleanup_watches(preflight_seeds: Iterable[SeedStep], prove: Mapping[str, Any] | None) -> tuple[SeedStep, ...]:
    """Every seed a suite can put on the phone: preflight's, then each prove scenario's `seed` steps.

    Cleanup watches the sources of all of them in every run of the suite (the reads share one round
    trip), so a proof's own seed (a second photo, an SMS no check reads) is removed like preflight's.
    """
    seeds = list(preflight_seeds)
    for scenario in [(prove or {}).get("pass") or {}, *((prove or {}).get("fail") or ())]:
        seeds += [parse_seed(step["seed"]) for step in scenario.get("steps") or () if "seed" in step]
    return tuple(seeds)


def seed_problems(entries: Any, where: str = "preflight.seed") -> list[str]:
    """The rules the schema cannot say: photo names unique (a second would overwrite the first)."""
    problems: list[str] = []
    if not isinstance(entries, list):
        return problems
    names: dict[str, int] = {}
    for index, entry in enumerate(entries):
        photo = entry.get("photo") if isinstance(entry, Mapping) else None
        name = photo.get("name") if isinstance(photo, Mapping) else None
        if not isinstance(name, str):
            continue
        if name in names:
            problems.append(f"{where}[{index}].photo.name: expected a name no other seeded photo has, got {name!r} "
                            f"(also {where}[{names[name]}])")
        names.setdefault(name, index)
    return problems
