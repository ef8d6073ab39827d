"""`am start|force-stop|kill|get-current-user|switch-user|broadcast` and `monkey -p PKG` -> the phone's activity manager."""

from __future__ import annotations

from ..shell import Invocation
from . import command

ACTION_VIEW = "android.intent.action.VIEW"
ACTION_MAIN = "android.intent.action.MAIN"
CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"
MEDIA_SCANNER_SCAN_FILE = "android.intent.action.MEDIA_SCANNER_SCAN_FILE"
# Options that take one value (or two for --es KEY VALUE extras) and do not change what the sim does.
_ONE_VALUE = {"-t", "-f", "-e", "--user", "--display", "--windowingMode", "--activityType", "-P", "--start-profiler",
              "--sampling", "-R", "--receiver-permission"}
_TWO_VALUES = {"--es", "--ez", "--ei", "--el", "--ef", "--eu", "--ecn", "--eia", "--ela", "--efa", "--esa", "--esn"}


def short_component(package: str, activity: str) -> str:
    """`pkg/.Activity` when the class lives in the package, as Android prints components."""
    if activity.startswith(package + "."):
        return f"{package}/{activity[len(package):]}"
    return f"{package}/{activity}"


@command("am")
def am(inv: Invocation) -> int:
    if not inv.args:
        return inv.fail("usage: am [subcommand] [options]", 255)
    verb, rest = inv.args[0], inv.args[1:]
    phone = inv.phone
    if verb in ("start", "start-activity"):
        return _start(inv, rest)
    if verb in ("force-stop", "kill", "stop-app"):
        packages = [arg for arg in rest if not arg.startswith("-") and not arg.isdigit()]
        if not packages:
            return inv.fail(f"Error: no package specified for am {verb}", 255)
        for package in packages:
            if package in phone.packages and (verb != "kill" or phone.tasks[-1] != package):
                phone.force_stop(package)
        return 0
    if verb == "get-current-user":
        inv.out(f"{phone.current_user}\n")
        return 0
    if verb == "switch-user":
        if not rest or not rest[0].isdigit():
            return inv.fail("Error: no user id specified for am switch-user", 255)
        # Only the primary user exists on a fresh image; a guest or work profile is simulated by id.
        phone.current_user = int(rest[0])
        return 0
    if verb == "broadcast":
        action = rest[rest.index("-a") + 1] if "-a" in rest and rest.index("-a") + 1 < len(rest) else ""
        data = rest[rest.index("-d") + 1] if "-d" in rest and rest.index("-d") + 1 < len(rest) else ""
        shown = f" dat={data}" if data else ""
        inv.out(f"Broadcasting: Intent {{ act={action}{shown} flg=0x400000 }}\n")
        if action == MEDIA_SCANNER_SCAN_FILE and data.startswith("file://"):
            phone.scan_media_file(data[len("file://"):])
        inv.out("Broadcast completed: result=0\n")
        return 0
    return inv.fail(f"Error: Unknown command: {verb}", 255)


def _start(inv: Invocation, args: list[str]) -> int:
    phone = inv.phone
    action = data = component = category = None
    wait = stop_first = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-a" and i + 1 < len(args):
            action, i = args[i + 1], i + 2
        elif arg == "-d" and i + 1 < len(args):
            data, i = args[i + 1], i + 2
        elif arg == "-n" and i + 1 < len(args):
            component, i = args[i + 1], i + 2
        elif arg == "-c" and i + 1 < len(args):
            category, i = args[i + 1], i + 2
        elif arg == "-W":
            wait, i = True, i + 1
        elif arg == "-S":
            stop_first, i = True, i + 1
        elif arg in _ONE_VALUE:
            i += 2
        elif arg in _TWO_VALUES:
            i += 3
        elif arg.startswith("-"):
            i += 1
        else:
            # A bare argument is an intent URI or a component.
            if "/" in arg and "://" not in arg:
                component = arg
            else:
                data = arg
                action = action or ACTION_VIEW
            i += 1
    parts = []
    if action:
        parts.append(f"act={action}")
    if category:
        parts.append(f"cat=[{category}]")
    if data:
        parts.append(f"dat={data}")
    if component:
        parts.append(f"cmp={component}")
    description = "Intent { " + " ".join(parts) + " }"
    inv.out(f"Starting: {description}\n")
    target = _resolve(inv, action, data, component)
    if target is None:
        if component:
            inv.err("Error type 3\n")
            return inv.fail(f"Error: Activity class {{{_expand_component(component)}}} does not exist.")
        flagged = description[:-2] + " flg=0x10000000 }"
        return inv.fail(f"Error: Activity not started, unable to resolve {flagged}")
    package, route = target
    if stop_first:
        phone.force_stop(package)
    cold = package not in phone.runtimes
    if route is None:
        phone.launch(package)
    else:
        phone.open_route(package, route)
    if wait:
        activity = phone.packages[package].app.activity
        inv.out(f"Status: ok\nLaunchState: {'COLD' if cold else 'WARM'}\n"
                f"Activity: {short_component(package, activity)}\nTotalTime: 120\nWaitTime: 124\nComplete\n")
    return 0


def _expand_component(component: str) -> str:
    package, _, activity = component.partition("/")
    return f"{package}/{package + activity if activity.startswith('.') else activity}"


def _resolve(inv: Invocation, action: str | None, data: str | None, component: str | None) -> tuple[str, str | None] | None:
    phone = inv.phone
    if component:
        package, activity = _expand_component(component).split("/", 1)
        info = phone.packages.get(package)
        if info is None or info.app.activity != activity:
            return None
        route = info.app.resolve_uri(data) if data else None
        return package, route
    if action and action != ACTION_VIEW:
        resolved = phone.resolve_action(action, data)
        if resolved is not None:
            return resolved
    if data:
        return phone.resolve_view(data)
    return None


@command("monkey")
def monkey(inv: Invocation) -> int:
    args = inv.args
    packages = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-p"]
    for arg in args:
        inv.out(f"  bash arg: {arg}\n")
    launchable = [p for p in packages if p in inv.phone.packages]
    if not launchable:
        inv.out("** No activities found to run, monkey aborted.\n")
        return 252
    inv.phone.launch(launchable[0])
    inv.out("Events injected: 1\n## Network stats: elapsed time=9ms (0ms mobile, 0ms wifi, 9ms not connected)\n")
    return 0
