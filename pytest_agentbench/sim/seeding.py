"""Host-side seeding of a simulated phone (what an emulator console or a fixture does, never the agent).

`Phone` inherits these methods: receive an SMS, add a photo of W x H, add a contact, set the time
zone, write to logcat, hold a wake lock, and read or write any content provider as a given user.
Every method takes the phone's lock. The device-side equivalents for a harness talking adb as root
are listed in docs/simulated-phone.md ("Seeding").
"""

from __future__ import annotations

import posixpath
import threading
import time
from typing import TYPE_CHECKING

from .images import photo_png
from .providers import ContentError, provider_for
from .providers.base import Value, parse_uri
from .providers.contacts import EMAIL, NAME, NOTE, ORGANIZATION, PHONE
from .providers.media import STORAGE, scan_file
from .system.clock import is_known_zone
from .system.logbuffer import LogEntry
from .system.power import WakeLock
from .users import ROOT, SYSTEM, SYSTEM_UID

if TYPE_CHECKING:
    from .phone import Phone

SYSTEM_SERVER_PID = 512


class SeedingMixin:
    """Seeding and inspection calls for fixtures and tests; see the module docstring."""

    lock: threading.RLock

    # Providers, as any caller.

    def content_query(self: Phone, uri: str, projection: list[str] | None = None, where: str | None = None,
                      sort: str | None = None, *, user: str = ROOT) -> list[dict[str, Value]]:
        """Rows of a content URI as dicts (raises ContentError as `content` would print it)."""
        with self.lock:
            parsed = parse_uri(uri)
            return provider_for(self, parsed.authority).query(self, user, parsed, projection, where, sort).dicts()

    def content_insert(self: Phone, uri: str, values: dict[str, Value], *, user: str = ROOT) -> str | None:
        """Insert a row; returns the new row's URI (None when the provider dropped the write)."""
        with self.lock:
            parsed = parse_uri(uri)
            return provider_for(self, parsed.authority).insert(self, user, parsed, values)

    def content_delete(self: Phone, uri: str, where: str | None = None, *, user: str = ROOT) -> int:
        with self.lock:
            parsed = parse_uri(uri)
            return provider_for(self, parsed.authority).delete(self, user, parsed, where)

    # Seeding.

    def receive_sms(self: Phone, address: str, body: str, *, date_ms: int | None = None, read: bool = False) -> int:
        """An SMS arrives from `address` (as `adb emu sms send`): telephony row, thread, and Messages' copy.

        Returns:
            The message's _id in content://sms.
        """
        return self.add_sms(address, body, box="inbox", date_ms=date_ms, read=read)

    def add_sms(self: Phone, address: str, body: str, *, box: str = "inbox", date_ms: int | None = None,
                read: bool = False) -> int:
        """A message in the telephony provider (`box` inbox or sent), then Messages imports it."""
        with self.lock:
            values: dict[str, Value] = {"address": address, "body": body, "read": int(read or box == "sent"),
                                        "seen": int(read or box == "sent"),
                                        "date": date_ms if date_ms is not None else int(time.time() * 1000)}
            uri = self.content_insert(f"content://sms/{box}", values, user=SYSTEM)
            if box == "inbox":
                self.log("InboundSmsHandler", f"IdleState: accepting new SMS from {len(address)} digit sender",
                         buffer="radio")
            return int(str(uri).rsplit("/", 1)[1])

    def add_photo(self: Phone, width: int, height: int, *, name: str | None = None,
                  relative_path: str = "Pictures/", owner: str | None = None) -> int:
        """A photo of width x height: a real PNG on /sdcard and its MediaStore row. Returns the media _id."""
        with self.lock:
            name = name or f"IMG_{time.strftime('%Y%m%d_%H%M%S')}_{self._next_media_serial()}.png"
            path = f"{STORAGE}/{relative_path.strip('/')}/{name}"
            self.fs.write(path, photo_png(width, height), mode=0o660)
            provider = provider_for(self, "media")
            with provider.connect(self) as connection:
                return scan_file(self, connection, path, owner=owner)

    def scan_media_file(self: Phone, path: str) -> int | None:
        """Index a file on shared storage in MediaStore (the media scanner); None when it is not there."""
        with self.lock:
            if not self.fs.exists(path) or self.fs.is_dir(path):
                return None
            provider = provider_for(self, "media")
            try:
                with provider.connect(self) as connection:
                    return scan_file(self, connection, path)
            except ContentError:  # not on shared storage: the scanner ignores it
                return None

    def add_contact(self: Phone, name: str, phone: str | None = None, *, email: str | None = None,
                    company: str | None = None, note: str | None = None) -> int:
        """A local contact with the given fields, as the Contacts app saves them. Returns the raw contact _id."""
        with self.lock:
            uri = self.content_insert("content://com.android.contacts/raw_contacts",
                                      {"account_name": None, "account_type": None})
            raw_id = int(str(uri).rsplit("/", 1)[1])
            rows = [(NAME, {"data1": name}), (PHONE, {"data1": phone, "data2": 2} if phone else None),
                    (EMAIL, {"data1": email, "data2": 1} if email else None),
                    (ORGANIZATION, {"data1": company} if company else None), (NOTE, {"data1": note} if note else None)]
            for mimetype, values in rows:
                if values:
                    self.content_insert("content://com.android.contacts/data",
                                        {"raw_contact_id": raw_id, "mimetype": mimetype, **values})
            return raw_id

    def set_timezone(self: Phone, zone: str) -> None:
        """Set the device time zone (`persist.sys.timezone`), as an emulator started on a host in that zone."""
        if not is_known_zone(zone):
            raise ValueError(f"unknown time zone {zone!r}: use an Olson id such as Europe/London")
        with self.lock:
            self.props["persist.sys.timezone"] = zone
            self.log("AlarmManager", f"Setting time zone to {zone}", buffer="system")

    def log(self: Phone, tag: str, message: str, *, priority: str = "I", package: str | None = None,
            buffer: str = "main") -> None:
        """Write one line to logcat, from an app's process (`package`) or from system_server."""
        with self.lock:
            if package is not None and package in self.packages:
                uid = self.packages[package].uid
                pid = self.process_pid(package)
            else:
                uid, pid = SYSTEM_UID, SYSTEM_SERVER_PID
            self.logs.write(LogEntry(time.time(), pid, pid, uid, priority, tag, message, buffer))

    def acquire_wake_lock(self: Phone, package: str, tag: str, *, level: str = "PARTIAL_WAKE_LOCK") -> None:
        """The app takes a wake lock and holds it until released, stopped or uninstalled."""
        with self.lock:
            info = self.packages[package]
            self.power.acquire(WakeLock(tag, info.uid, self.process_pid(package), time.time(), package, level))
            self.appops.note(package, "WAKE_LOCK", time.time(), running=True)

    def release_wake_lock(self: Phone, package: str, tag: str | None = None) -> None:
        with self.lock:
            self.power.release(package, tag)

    def run_job(self: Phone, package: str, job_id: int) -> bool:
        """`cmd jobscheduler run -f`: the app's sync job runs now (its process started for the service). False: no such job."""
        with self.lock:
            info = self.packages.get(package)
            job = info.app.sync_job if info is not None else None
            if job is None or job.job_id != job_id:
                return False
            if package not in self.runtimes and package not in self._background_pids:
                self.log("ActivityManager", f"Start proc {self.process_pid(package)}:{package}/u0a{info.uid - 10000} "
                         f"for service {{{job.service}}}", buffer="system")
            self.running_jobs.setdefault(package, time.time())
            return True

    def stop_jobs(self: Phone, package: str | None = None, job_id: int | None = None) -> list[str]:
        """`cmd jobscheduler timeout [PKG [ID]]`: the running jobs that match stop. Returns their services."""
        with self.lock:
            stopped = []
            for name in sorted(self.running_jobs):
                job = self.packages[name].app.sync_job if name in self.packages else None
                if job is not None and package in (None, name) and job_id in (None, job.job_id):
                    del self.running_jobs[name]
                    stopped.append(job.service)
            return stopped

    def active_wake_locks(self: Phone) -> list[WakeLock]:
        """Held wake locks: taken ones plus those of apps' background work (which stops once the app is restricted)."""
        with self.lock:
            locks = list(self.power.wake_locks.values())
            for package, info in sorted(self.packages.items()):
                for tag in info.app.background_wake_locks(self):
                    locks.append(WakeLock(tag, info.uid, self.process_pid(package),
                                           self.running_jobs.get(package, self.boot_time), package))
            return locks

    def private_file(self: Phone, package: str, relative: str) -> bytes | None:
        """A file of an app's private storage (as root), or None."""
        with self.lock:
            path = posixpath.join(self.fs.private_dir(package), relative)
            return self.fs.read(path) if self.fs.exists(path) and not self.fs.is_dir(path) else None

    def _next_media_serial(self: Phone) -> int:
        self._media_serial += 1
        return self._media_serial
