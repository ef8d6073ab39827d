"""`dumpsys window|package|power|SurfaceFlinger|activity|display|appops` -> text shaped like Android 14's dumps."""

from __future__ import annotations

import time

from ..shell import Invocation
from ..system.power import wake_lock_line
from . import command
from .am import short_component
from .appops import appops_dump, deviceidle_listing


def _stamp(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


@command("dumpsys")
def dumpsys(inv: Invocation) -> int:
    if not inv.args:
        inv.out("Currently running services:\n  SurfaceFlinger\n  activity\n  appops\n  deviceidle\n  display\n  package\n"
                "  power\n  window\n")
        return 0
    service, rest = inv.args[0], inv.args[1:]
    if service == "window":
        return _window(inv, rest)
    if service == "package":
        return package_dump(inv, rest[0] if rest else "")
    if service == "power":
        return _power(inv)
    if service == "SurfaceFlinger":
        return _surface_flinger(inv, rest)
    if service == "activity":
        return _activity(inv, rest)
    if service == "display":
        return _display(inv)
    if service == "appops":
        return appops_dump(inv)
    if service == "deviceidle":
        inv.out(deviceidle_listing(inv) if rest[:1] == ["whitelist"] else
                "  mLightEnabled=true  mDeepEnabled=true\n  mState=ACTIVE mLightState=ACTIVE\n  Whitelist user apps:\n"
                + "".join(f"    {name}\n" for name in sorted(inv.phone.power.allowlist)))
        return 0
    return inv.fail(f"Can't find service: {service}")


def _focus_line(inv: Invocation) -> str:
    package, activity = inv.phone.foreground()
    return f"Window{{3c1a2b4 u0 {package}/{activity}}}"


def _window(inv: Invocation, args: list[str]) -> int:
    phone = inv.phone
    width, height = phone.size
    focus = _focus_line(inv)
    displays = (
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n"
        f"  Display: mDisplayId=0 rootTasks=2\n"
        f"    init={phone.physical_size[0]}x{phone.physical_size[1]} {phone.physical_density}dpi "
        f"base={width}x{height} {phone.density}dpi cur={width}x{height} app={width}x{height - 63} "
        f"rng={min(width, height)}x{min(width, height) - 63}-{max(width, height)}x{max(width, height) - 63}\n"
        f"    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion(({0},{0},{width},{height}))\n"
        f"  mRotation={phone.rotation} mAltOrientation=false\n"
        f"  mCurrentFocus={focus}\n"
        f"  mFocusedApp=ActivityRecord{{5d2e1f0 u0 {short_component(*phone.foreground())} t12}}\n"
    )
    if args and args[0] == "displays":
        inv.out(displays)
        return 0
    inv.out(displays + "\nWINDOW MANAGER WINDOWS (dumpsys window windows)\n"
            f"  Window #0 {focus}:\n    mDisplayId=0 rootTaskId=12 mSession=Session{{9f1 1234:u0a10123}}\n"
            f"  mCurrentFocus={focus}\n  mFocusedApp=ActivityRecord{{5d2e1f0 u0 "
            f"{short_component(*phone.foreground())} t12}}\n")
    return 0


def package_dump(inv: Invocation, package: str) -> int:
    """`dumpsys package PKG`: the fields preflight and the baseline read (versions, install times, flags)."""
    info = inv.phone.packages.get(package)
    if info is None:
        inv.out(f"Unable to find package: {package}\n")
        return 0
    flags = ["HAS_CODE", "ALLOW_CLEAR_USER_DATA", "ALLOW_BACKUP"]
    if info.system:
        flags.insert(0, "SYSTEM")
    if info.debuggable:
        flags.insert(0, "DEBUGGABLE")
    component = short_component(package, info.app.activity)
    inv.out(
        "Activity Resolver Table:\n  Non-Data Actions:\n      android.intent.action.MAIN:\n"
        f"        a1b2c3d {component} filter 4e5f6a7\n\n"
        "Packages:\n"
        f"  Package [{package}] (8c9d0e1):\n"
        f"    userId={info.uid}\n"
        f"    pkg=Package{{8c9d0e1 {package}}}\n"
        f"    codePath={info.code_dir}\n"
        f"    resourcePath={info.code_dir}\n"
        f"    primaryCpuAbi=x86_64\n"
        f"    versionCode={info.version_code} minSdk={info.min_sdk} targetSdk={info.target_sdk}\n"
        f"    minExtensionVersions=[]\n"
        f"    versionName={info.version_name}\n"
        f"    apkSigningVersion=2\n"
        f"    flags=[ {' '.join(flags)} ]\n"
        f"    privateFlags=[ PRIVATE_FLAG_ACTIVITIES_RESIZE_MODE_RESIZEABLE_VIA_SDK_VERSION ]\n"
        f"    dataDir={inv.phone.fs.private_dir(package)}\n"
        f"    timeStamp={_stamp(info.last_update)}\n"
        f"    firstInstallTime={_stamp(info.first_install)}\n"
        f"    lastUpdateTime={_stamp(info.last_update)}\n"
        f"    installerPackageName={'null' if info.system else 'com.android.shell'}\n"
        f"    User 0: ceDataInode=4242 installed=true hidden=false suspended=false distractionFlags=0 "
        f"stopped={'false' if package in inv.phone.runtimes else 'true'} notLaunched=false enabled=0 instant=false virtual=false\n"
    )
    return 0


def _power(inv: Invocation) -> int:
    awake = inv.phone.awake
    now = time.time()
    locks = inv.phone.active_wake_locks()
    lock_lines = "".join(f"  {wake_lock_line(lock, now)}\n" for lock in locks)
    inv.out(
        "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n"
        f"  mDirty=0x0\n  mWakefulness={'Awake' if awake else 'Asleep'}\n  mWakefulnessChanging=false\n"
        f"  mIsPowered=true\n  mPlugType=1\n  mBatteryLevel=100\n  mStayOn=true\n"
        f"  mHoldingWakeLockSuspendBlocker={str(bool(locks)).lower()}\n"
        f"  mHoldingDisplaySuspendBlocker={str(awake).lower()}\n"
        f"  Display Power: state={'ON' if awake else 'OFF'}\n\n"
        f"Wake Locks: size={len(locks)}\n{lock_lines}\nSuspend Blockers: size=4\n"
        f"  PowerManagerService.WakeLocks: ref count={int(bool(locks))}\n  PowerManagerService.Display: ref count=1\n"
        "  PowerManagerService.Broadcasts: ref count=0\n  PowerManagerService.WirelessChargerDetector: ref count=0\n"
    )
    return 0


def _surface_flinger(inv: Invocation, args: list[str]) -> int:
    if "--display-id" in args:
        inv.out('Display 4619827259835644672 (HWC display 0): port=0 pnpId=GGL displayName="EMU_display_0"\n')
        return 0
    width, height = inv.phone.size
    inv.out(f"Display 4619827259835644672 (HWC display 0)\n  {width}x{height}, density {inv.phone.density}\n")
    return 0


def _activity(inv: Invocation, args: list[str]) -> int:
    component = short_component(*inv.phone.foreground())
    inv.out(f"ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
            f"  ResumedActivity: ActivityRecord{{5d2e1f0 u0 {component} t12}}\n"
            f"  mResumedActivity: ActivityRecord{{5d2e1f0 u0 {component} t12}}\n")
    return 0


def _display(inv: Invocation) -> int:
    width, height = inv.phone.size
    inv.out("DISPLAY MANAGER (dumpsys display)\n"
            f"  DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, uniqueId='local:4619827259835644672', "
            f"physicalPort=0, orientation={inv.phone.rotation}, deviceWidth={width}, deviceHeight={height}}}\n"
            "  Display Id=0\n  Display State=ON\n")
    return 0
