"""App-op names, modes and per-package settings -> what AppOpsService stores and `cmd appops` prints."""

from __future__ import annotations

from dataclasses import dataclass, field

# AppOpsManager.MODE_NAMES, indexed by mode number.
MODE_NAMES = ("allow", "ignore", "deny", "default", "foreground")
ALLOW, IGNORE, DENY, DEFAULT, FOREGROUND = range(5)

# Android 14's ops in op-code order (AppOpsManager.opToName), with the default mode where it is not "allow".
_OPS = (
    "COARSE_LOCATION FINE_LOCATION GPS VIBRATE READ_CONTACTS WRITE_CONTACTS READ_CALL_LOG WRITE_CALL_LOG "
    "READ_CALENDAR WRITE_CALENDAR WIFI_SCAN POST_NOTIFICATION NEIGHBORING_CELLS CALL_PHONE READ_SMS WRITE_SMS "
    "RECEIVE_SMS RECEIVE_EMERGECY_SMS RECEIVE_MMS RECEIVE_WAP_PUSH SEND_SMS READ_ICC_SMS WRITE_ICC_SMS "
    "WRITE_SETTINGS SYSTEM_ALERT_WINDOW ACCESS_NOTIFICATIONS CAMERA RECORD_AUDIO PLAY_AUDIO READ_CLIPBOARD "
    "WRITE_CLIPBOARD TAKE_MEDIA_BUTTONS TAKE_AUDIO_FOCUS AUDIO_MASTER_VOLUME AUDIO_VOICE_VOLUME AUDIO_RING_VOLUME "
    "AUDIO_MEDIA_VOLUME AUDIO_ALARM_VOLUME AUDIO_NOTIFICATION_VOLUME AUDIO_BLUETOOTH_VOLUME WAKE_LOCK "
    "MONITOR_LOCATION MONITOR_HIGH_POWER_LOCATION GET_USAGE_STATS MUTE_MICROPHONE TOAST_WINDOW PROJECT_MEDIA "
    "ACTIVATE_VPN WRITE_WALLPAPER ASSIST_STRUCTURE ASSIST_SCREENSHOT READ_PHONE_STATE ADD_VOICEMAIL USE_SIP "
    "PROCESS_OUTGOING_CALLS USE_FINGERPRINT BODY_SENSORS READ_CELL_BROADCASTS MOCK_LOCATION READ_EXTERNAL_STORAGE "
    "WRITE_EXTERNAL_STORAGE TURN_SCREEN_ON GET_ACCOUNTS RUN_IN_BACKGROUND AUDIO_ACCESSIBILITY_VOLUME "
    "READ_PHONE_NUMBERS REQUEST_INSTALL_PACKAGES PICTURE_IN_PICTURE INSTANT_APP_START_FOREGROUND ANSWER_PHONE_CALLS "
    "RUN_ANY_IN_BACKGROUND CHANGE_WIFI_STATE REQUEST_DELETE_PACKAGES BIND_ACCESSIBILITY_SERVICE ACCEPT_HANDOVER "
    "MANAGE_IPSEC_TUNNELS START_FOREGROUND BLUETOOTH_SCAN USE_BIOMETRIC ACTIVITY_RECOGNITION "
    "SMS_FINANCIAL_TRANSACTIONS READ_MEDIA_AUDIO WRITE_MEDIA_AUDIO READ_MEDIA_VIDEO WRITE_MEDIA_VIDEO "
    "READ_MEDIA_IMAGES WRITE_MEDIA_IMAGES LEGACY_STORAGE ACCESS_ACCESSIBILITY READ_DEVICE_IDENTIFIERS "
    "ACCESS_MEDIA_LOCATION QUERY_ALL_PACKAGES MANAGE_EXTERNAL_STORAGE INTERACT_ACROSS_PROFILES "
    "ACTIVATE_PLATFORM_VPN LOADER_USAGE_STATS deprecated AUTO_REVOKE_PERMISSIONS_IF_UNUSED "
    "AUTO_REVOKE_MANAGED_BY_INSTALLER NO_ISOLATED_STORAGE PHONE_CALL_MICROPHONE PHONE_CALL_CAMERA "
    "RECORD_AUDIO_HOTWORD MANAGE_ONGOING_CALLS MANAGE_CREDENTIALS USE_ICC_AUTH_WITH_DEVICE_IDENTIFIER "
    "RECORD_AUDIO_OUTPUT SCHEDULE_EXACT_ALARM FINE_LOCATION_SOURCE COARSE_LOCATION_SOURCE MANAGE_MEDIA "
    "BLUETOOTH_CONNECT UWB_RANGING ACTIVITY_RECOGNITION_SOURCE BLUETOOTH_ADVERTISE RECORD_INCOMING_PHONE_AUDIO "
    "NEARBY_WIFI_DEVICES ESTABLISH_VPN_SERVICE ESTABLISH_VPN_MANAGER ACCESS_RESTRICTED_SETTINGS "
    "RECEIVE_AMBIENT_TRIGGER_AUDIO RECEIVE_EXPLICIT_USER_INTERACTION_AUDIO RUN_USER_INITIATED_JOBS"
).split()
OP_NAMES: tuple[str, ...] = tuple(_OPS)
_DEFAULT_MODES = {
    "WRITE_SMS": IGNORE, "WRITE_SETTINGS": DEFAULT, "SYSTEM_ALERT_WINDOW": DEFAULT, "GET_USAGE_STATS": DEFAULT,
    "PROJECT_MEDIA": IGNORE, "ACTIVATE_VPN": IGNORE, "MOCK_LOCATION": DENY, "REQUEST_INSTALL_PACKAGES": DEFAULT,
    "MANAGE_IPSEC_TUNNELS": DENY, "WRITE_MEDIA_AUDIO": DENY, "WRITE_MEDIA_VIDEO": DENY,
    "WRITE_MEDIA_IMAGES": DENY, "READ_DEVICE_IDENTIFIERS": DENY, "MANAGE_EXTERNAL_STORAGE": DEFAULT,
    "INTERACT_ACROSS_PROFILES": DEFAULT, "ACTIVATE_PLATFORM_VPN": IGNORE, "LOADER_USAGE_STATS": DEFAULT,
    "MANAGE_ONGOING_CALLS": DEFAULT, "MANAGE_CREDENTIALS": DEFAULT, "SCHEDULE_EXACT_ALARM": DEFAULT,
    "MANAGE_MEDIA": DEFAULT,
}


def default_mode(op: str) -> int:
    """The mode an op has for a package nobody changed it for (AppOpsManager.opToDefaultMode)."""
    return _DEFAULT_MODES.get(op, ALLOW)


def op_from_text(text: str) -> str:
    """`RUN_ANY_IN_BACKGROUND`, `android:run_any_in_background` or `70` -> the op name.

    Raises:
        ValueError: with AppOpsService's own words, "Unknown operation string: X".
    """
    if text.isdigit() and int(text) < len(OP_NAMES):
        return OP_NAMES[int(text)]
    if text in OP_NAMES and text != "deprecated":
        return text
    if text.startswith("android:") and text[len("android:"):].upper() in OP_NAMES:
        return text[len("android:"):].upper()
    raise ValueError(f"Unknown operation string: {text}")


def mode_from_text(text: str) -> int:
    """`allow`/`ignore`/`deny`/`default`/`foreground` or a number -> the mode; ValueError as AppOpsService words it."""
    if text in MODE_NAMES:
        return MODE_NAMES.index(text)
    if text.isdigit() and int(text) < len(MODE_NAMES):
        return int(text)
    raise ValueError(f"Mode {text} is not valid")


@dataclass
class OpEntry:
    """One op of one package: its mode and, once the app used the op, when (epoch s) and whether it still runs."""

    mode: int
    last_access: float | None = None
    running: bool = False


@dataclass
class AppOpsTable:
    """Per-package (and per-uid) op modes, as AppOpsService keeps them; only ops set or used have an entry."""

    packages: dict[str, dict[str, OpEntry]] = field(default_factory=dict)
    uids: dict[int, dict[str, int]] = field(default_factory=dict)

    def mode(self, package: str, op: str) -> int:
        """The package mode of an op (its default when nothing set it)."""
        entry = self.packages.get(package, {}).get(op)
        return entry.mode if entry is not None else default_mode(op)

    def set_mode(self, package: str, op: str, mode: int) -> None:
        """Set a package mode; setting the op's default mode drops the setting, as Android 14 does.

        AppOpsCheckingServiceImpl.setPackageMode deletes a package mode equal to the op's default
        (so `get` says `No operations.` again), while an op the app used keeps its access record.
        MODE_DEFAULT (`default`) is a mode of its own, not the op's default: it is kept.
        """
        entries = self.packages.setdefault(package, {})
        if op in entries:
            entries[op].mode = mode
        else:
            entries[op] = OpEntry(mode)
        if mode == default_mode(op) and entries[op].last_access is None:
            del entries[op]
            if not entries:
                del self.packages[package]

    def set_uid_mode(self, uid: int, op: str, mode: int) -> None:
        """Set a uid mode; the op's default mode drops it (AppOpsCheckingServiceImpl.setUidMode)."""
        modes = self.uids.setdefault(uid, {})
        modes[op] = mode
        if mode == default_mode(op):
            del modes[op]
            if not modes:
                del self.uids[uid]

    def note(self, package: str, op: str, when: float, *, running: bool = False) -> None:
        """Record that the app used an op (what `get` shows as `time=... ago`)."""
        entries = self.packages.setdefault(package, {})
        entry = entries.setdefault(op, OpEntry(default_mode(op)))
        entry.last_access, entry.running = when, running

    def entries(self, package: str) -> list[tuple[str, OpEntry]]:
        """The package's ops in op-code order."""
        entries = self.packages.get(package, {})
        return [(op, entries[op]) for op in OP_NAMES if op in entries]

    def reset(self, package: str | None = None) -> None:
        """Put every op mode back to its default (for one package, or all); usage records stay."""
        for name in [package] if package is not None else list(self.packages):
            entries = self.packages.get(name, {})
            for op in list(entries):
                if entries[op].last_access is None:
                    del entries[op]
                else:
                    entries[op].mode = default_mode(op)
        if package is None:
            self.uids.clear()

    def forget(self, package: str) -> None:
        """An uninstalled package takes its ops with it."""
        self.packages.pop(package, None)

    def packages_in_mode(self, op: str, mode: int) -> list[str]:
        """Packages that have an entry for the op in this mode (what `query-op` lists)."""
        return [name for name, entries in self.packages.items() if op in entries and entries[op].mode == mode]
