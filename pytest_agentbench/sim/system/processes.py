"""The phone's processes outside the apps: the system's own, and the jobs a shell put in the background (`&`) -> what `ps -A` lists and `kill` ends.

A background job runs on a thread of its own, as the phone's other clients do (it takes the
phone's lock for each command; `sleep` lets go of it and wakes early when the job is killed).
Its parent shell has exited by the time anyone looks, so it hangs off init (PPID 1), as on a
phone where `adb shell 'nohup sleep 600 > /dev/null 2>&1 &'` returned at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

KTHREADD_PID = 2
ZYGOTE_PID = 310
ADBD_PID = 437


@dataclass
class DeviceProcess:
    """One process: who runs it, its ids, `ps`'s NAME (argv[0]'s base name) and ARGS (its command line)."""

    pid: int
    ppid: int
    user: str
    name: str
    args: str
    pgid: int | None = None  # None: its own pid (a group leader); 0 for the kernel's threads
    wchan: str = "do_epoll_wait"
    vsz: int = 10782796
    rss: int = 4096
    started: float = field(default_factory=time.time)
    ended: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        if self.pgid is None:
            self.pgid = self.pid

    @property
    def killed(self) -> bool:
        return self.ended.is_set()


# The system's own processes as `ps -A` shows them on an Android 14 emulator image (kernel threads
# hang off kthreadd, services off init, apps off zygote64).
_SYSTEM = (
    ("root", 1, 0, "init", "/system/bin/init second_stage"),
    ("root", KTHREADD_PID, 0, "[kthreadd]", "[kthreadd]"),
    ("root", 3, KTHREADD_PID, "[rcu_gp]", "[rcu_gp]"),
    ("root", 9, KTHREADD_PID, "[ksoftirqd/0]", "[ksoftirqd/0]"),
    ("root", 148, 1, "ueventd", "/system/bin/ueventd"),
    ("logd", 201, 1, "logd", "/system/bin/logd"),
    ("lmkd", 214, 1, "lmkd", "/system/bin/lmkd"),
    ("system", 215, 1, "servicemanager", "/system/bin/servicemanager"),
    ("root", ZYGOTE_PID, 1, "zygote64", "zygote64"),
    ("system", 342, 1, "surfaceflinger", "/system/bin/surfaceflinger"),
    ("system", 512, ZYGOTE_PID, "system_server", "system_server"),
)


class ProcessTable:
    """The system's processes, adbd, and the live background jobs of the phone's shells."""

    def __init__(self, new_pid: Callable[[], int]) -> None:
        self._new_pid = new_pid
        self.jobs: dict[int, DeviceProcess] = {}
        self._guard = threading.Lock()

    def system(self, adbd_user: str) -> list[DeviceProcess]:
        rows = [DeviceProcess(pid, ppid, user, name, args, pgid=0 if pid <= KTHREADD_PID or ppid == KTHREADD_PID else pid,
                              wchan="0" if name.startswith("[") else "do_epoll_wait",
                              vsz=0 if name.startswith("[") else 10782796, rss=0 if name.startswith("[") else 9564)
                for user, pid, ppid, name, args in _SYSTEM]
        rows.append(DeviceProcess(ADBD_PID, 1, adbd_user, "adbd", "/apex/com.android.adbd/bin/adbd --root_seclabel=u:r:su:s0"))
        return rows

    def live_jobs(self) -> list[DeviceProcess]:
        with self._guard:
            for pid in [pid for pid, job in self.jobs.items() if job.killed]:
                del self.jobs[pid]
            return sorted(self.jobs.values(), key=lambda job: job.pid)

    def spawn(self, user: str, argv: list[str], body: Callable[[DeviceProcess], None]) -> DeviceProcess:
        """Start a background job running `body(process)` on its own thread; it leaves the table when `body` returns."""
        words = list(argv)
        while words[:1] in (["nohup"], ["setsid"], ["su"]):  # each execs what follows; su (userdebug) as WHO, root
            if words.pop(0) == "su":
                user = "root"
                if words and not words[0].startswith("-"):
                    words.pop(0)  # WHO
        name = (words[0].rsplit("/", 1)[-1] if words else "sh") or "sh"
        # The adb shell that started it has exited: its group (and session) leader is gone.
        process = DeviceProcess(self._new_pid(), 1, user, name, " ".join(words) or "sh", pgid=self._new_pid(),
                                wchan="hrtimer_nanosleep")
        with self._guard:
            self.jobs[process.pid] = process

        def run() -> None:
            try:
                body(process)
            finally:
                process.ended.set()

        threading.Thread(target=run, name=f"sim-job-{process.pid}", daemon=True).start()
        return process

    def kill(self, pid: int, *, user: str) -> str | None:
        """End a background job; None when it ended, else toybox's reason (`No such process`, `Operation not permitted`)."""
        with self._guard:
            job = self.jobs.get(pid)
            if job is None or job.killed:
                return "No such process"
            if user != "root" and user != job.user:
                return "Operation not permitted"
            job.ended.set()
            del self.jobs[pid]
        return None

    def stop_all(self) -> None:
        with self._guard:
            for job in self.jobs.values():
                job.ended.set()
            self.jobs.clear()
