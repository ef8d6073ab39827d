"""Wake locks held by apps and the system, and the device-idle allowlist -> what `dumpsys power`/`deviceidle` show."""

from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = {"PARTIAL_WAKE_LOCK": "PARTIAL_WAKE_LOCK             ", "FULL_WAKE_LOCK": "FULL_WAKE_LOCK                ",
          "SCREEN_BRIGHT_WAKE_LOCK": "SCREEN_BRIGHT_WAKE_LOCK       ", "SCREEN_DIM_WAKE_LOCK": "SCREEN_DIM_WAKE_LOCK          "}
# Packages the system exempts from idle whatever the user chose (shown as `system-excidle`/`system`).
SYSTEM_ALLOWLIST = ("com.android.providers.downloads", "com.android.shell", "com.android.vending",
                    "com.google.android.gms")


@dataclass(frozen=True)
class WakeLock:
    """A held wake lock: level, tag, owner uid/pid, acquisition time (epoch s), and the package it belongs to."""

    tag: str
    uid: int
    pid: int
    acquired: float
    package: str = ""
    level: str = "PARTIAL_WAKE_LOCK"


@dataclass
class PowerState:
    """Wake locks by (package, tag) and the user part of the device-idle allowlist ("Unrestricted" apps)."""

    wake_locks: dict[tuple[str, str], WakeLock] = field(default_factory=dict)
    allowlist: set[str] = field(default_factory=set)

    def acquire(self, lock: WakeLock) -> None:
        self.wake_locks.setdefault((lock.package, lock.tag), lock)

    def release(self, package: str, tag: str | None = None) -> None:
        for key in [key for key in self.wake_locks if key[0] == package and (tag is None or key[1] == tag)]:
            del self.wake_locks[key]


def format_duration(ms: int) -> str:
    """TimeUtils.formatDuration: `+1h2m3s45ms`, `-5m0s12ms`, `0`."""
    if ms == 0:
        return "0"
    sign = "+" if ms > 0 else "-"
    ms = abs(ms)
    days, ms = divmod(ms, 86_400_000)
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    seconds, ms = divmod(ms, 1000)
    parts = []
    for value, unit in ((days, "d"), (hours, "h"), (minutes, "m")):
        if value or parts:
            parts.append(f"{value}{unit}")
    if seconds or parts:
        parts.append(f"{seconds}s")
    parts.append(f"{ms}ms")
    return sign + "".join(parts)


def wake_lock_line(lock: WakeLock, now: float) -> str:
    """PowerManagerService.WakeLock.toString(): `PARTIAL_WAKE_LOCK              'tag' ACQ=-5m2s1ms (uid=10123 pid=4321)`."""
    level = LEVELS.get(lock.level, lock.level)
    acquired = format_duration(-int((now - lock.acquired) * 1000))
    pid = f" pid={lock.pid}" if lock.pid else ""
    return f"{level} '{lock.tag}' ACQ={acquired} (uid={lock.uid}{pid})"
