"""A fresh simulated phone's system properties, settings and key codes (an API 34 userdebug emulator)."""

from __future__ import annotations

PHYSICAL_DENSITY = 420

KEYCODES = {"KEYCODE_HOME": 3, "KEYCODE_BACK": 4, "KEYCODE_DPAD_UP": 19, "KEYCODE_DPAD_DOWN": 20,
            "KEYCODE_DPAD_LEFT": 21, "KEYCODE_DPAD_RIGHT": 22, "KEYCODE_DPAD_CENTER": 23, "KEYCODE_VOLUME_UP": 24,
            "KEYCODE_VOLUME_DOWN": 25, "KEYCODE_POWER": 26, "KEYCODE_TAB": 61, "KEYCODE_SPACE": 62,
            "KEYCODE_ENTER": 66, "KEYCODE_DEL": 67, "KEYCODE_MENU": 82, "KEYCODE_ESCAPE": 111,
            "KEYCODE_FORWARD_DEL": 112, "KEYCODE_MOVE_HOME": 122, "KEYCODE_MOVE_END": 123, "KEYCODE_APP_SWITCH": 187,
            "KEYCODE_WAKEUP": 224, "KEYCODE_SLEEP": 223, "KEYCODE_CUT": 277, "KEYCODE_COPY": 278, "KEYCODE_PASTE": 279,
            "KEYCODE_SEARCH": 84, "KEYCODE_CAMERA": 27, "KEYCODE_VOLUME_MUTE": 164, "KEYCODE_NOTIFICATION": 83}


def default_props(serial_hint: str) -> dict[str, str]:
    """The system properties of a fresh simulated phone (an API 34 userdebug build)."""
    return {
        "ro.build.version.sdk": "34", "ro.build.version.release": "14", "ro.build.version.codename": "REL",
        "ro.build.id": "UQ1A.240205.004", "ro.build.type": "userdebug", "ro.build.tags": "dev-keys",
        "ro.build.fingerprint": "agentbench/agentbench_sim/agentbench:14/UQ1A.240205.004/1:userdebug/dev-keys",
        "ro.build.version.security_patch": "2024-02-05",
        "ro.product.model": "AgentBench Sim", "ro.product.manufacturer": "AgentBench",
        "ro.product.brand": "agentbench", "ro.product.name": "agentbench_sim", "ro.product.device": "agentbench",
        "ro.product.cpu.abi": "x86_64", "ro.product.locale": "en-US", "persist.sys.locale": "en-US",
        "persist.sys.timezone": "UTC", "ro.boot.qemu.avd_name": f"AgentBench_{serial_hint}",
        "ro.kernel.qemu": "1", "ro.debuggable": "1", "ro.secure": "1", "ro.serialno": serial_hint,
        "ro.sf.lcd_density": str(PHYSICAL_DENSITY), "sys.boot_completed": "1", "dev.bootcomplete": "1",
        "init.svc.bootanim": "stopped", "service.adb.root": "0",
    }


def user_build_props(props: dict[str, str]) -> None:
    """A user (production) build: not debuggable, release keys, no su and no `adb root`."""
    props.update({"ro.debuggable": "0", "ro.build.tags": "release-keys", "ro.build.fingerprint":
                  props["ro.build.fingerprint"].replace(":userdebug/dev-keys", ":user/release-keys")})


def default_settings() -> dict[str, dict[str, str]]:
    """Settings a fresh phone has; anything else reads as `null`, as on Android."""
    return {
        "global": {"wifi_on": "0", "airplane_mode_on": "0", "device_name": "AgentBench Sim", "adb_enabled": "1",
                   "window_animation_scale": "1.0", "transition_animation_scale": "1.0",
                   "animator_duration_scale": "1.0", "auto_time": "1", "auto_time_zone": "1",
                   "stay_on_while_plugged_in": "7", "development_settings_enabled": "1"},
        "system": {"font_scale": "1.0", "user_rotation": "0", "accelerometer_rotation": "0",
                   "screen_brightness": "102", "screen_off_timeout": "1800000"},
        "secure": {"navigation_mode": "2", "ui_night_mode": "1", "accessibility_enabled": "0",
                   "default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
                   "enabled_input_methods": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
                   "android_id": "a9e1b2c3d4e5f607"},
    }
