"""The AutoMobile Playground declared as data: deep-linked routes, pref-guarded demos, bug repro and UX flow."""

from __future__ import annotations

from ..ui import Button, Field, Radio, Row, Switch, Text, Title
from .model import App, AppContext, Screen, SyncJob

PACKAGE = "dev.jasonpearson.automobile.playground"
DEEP_LINK_PREFIX = "automobile://playground/"
PLANS = ("Basic", "Pro", "Team")


class PlaygroundApp(App):
    package = PACKAGE
    label = "Playground"
    # The Playground's sync job: its wake lock is held only once the job runs (wakelock-restrict's seed).
    sync_job = SyncJob(12, "dev.jasonpearson.automobile.playground/.SyncJobService", "Playground:SyncWorker")
    activity = f"{PACKAGE}.MainActivity"
    version_name = "1.0.0"
    version_code = 100
    min_sdk = 24
    target_sdk = 34
    debuggable = True
    system = False
    start_route = "home"
    deep_link_prefix = DEEP_LINK_PREFIX
    screens = {
        "onboarding": Screen("onboarding", (
            Title("Welcome to AutoMobile Playground"),
            Text("Demos for testing mobile automation"),
            Button("Get started", "get_started"),
        )),
        "login": Screen("login", (
            Title("Sign in"),
            Field("Email", id="email"),
            Field("Password", id="password", password=True),
            Text("{login_error}", when="login_error"),
            Button("Sign in", "sign_in"),
            Button("Continue as guest", "guest"),
        )),
        "home": Screen("home", (
            Title("Home"),
            Row("Demos", on_tap="go", arg="demos", summary="Bug reproduction and UX flow"),
        )),
        "demos": Screen("demos", (
            Title("Demos"),
            Row("Bug Reproduction", on_tap="go", arg="demos/bugs/repro", summary="A counter that stops updating"),
            Row("UX Flow", on_tap="go", arg="demos/ux/start", summary="A three-step flow"),
        )),
        "demos/bugs/repro": Screen("demos/bugs/repro", (
            Title("Bug Reproduction Demo"),
            Switch("Enable Bug", checked="bug_enabled", on_tap="toggle_bug"),
            Text("Expected count: {expected}"),
            Text("Displayed count: {displayed}"),
            Text("Status: {status}"),
            Button("Add Item", "add_item"),
            Button("Reset", "reset"),
        )),
        "demos/ux/start": Screen("demos/ux/start", (
            Title("UX Flow"),
            Text("Step 1 of 3: Start"),
            Button("Begin", "go", arg="demos/ux/details"),
        )),
        "demos/ux/details": Screen("demos/ux/details", (
            Title("UX Flow"),
            Text("Step 2 of 3: Details"),
            Text("Choose a plan"),
            *(Radio(plan, checked=f"plan_is_{plan}", on_tap="choose_plan") for plan in PLANS),
            Button("Continue", "go", arg="demos/ux/summary", enabled="plan"),
        )),
        "demos/ux/summary": Screen("demos/ux/summary", (
            Title("UX Flow"),
            Text("Step 3 of 3: Summary"),
            Text("Selected plan: {plan_label}"),
            Text("Flow complete", when="plan"),
            Button("Restart", "restart"),
        )),
    }

    def initial_state(self) -> dict[str, object]:
        return {"bug_enabled": False, "expected": 0, "displayed": 0, "status": "Idle", "plan": "",
                "login_error": ""}

    def derived(self, ctx: AppContext) -> dict[str, object]:
        plan = str(ctx.state.get("plan") or "")
        return {"plan_label": plan or "none", **{f"plan_is_{name}": plan == name for name in PLANS}}

    def redirect(self, ctx: AppContext, route: str) -> str:
        # The app reads its prefs from the XML files in its private storage on every navigation.
        if route.startswith("demos") or route == "home":
            if ctx.prefs("onboarding_prefs").get("onboarding_completed") is not True:
                return "onboarding"
            auth = ctx.prefs("auth_prefs")
            if auth.get("is_authenticated") is not True and auth.get("is_guest_mode") is not True:
                return "login"
        return route

    def tap_get_started(self, ctx: AppContext, arg: str) -> None:
        ctx.put_pref("onboarding_prefs", "onboarding_completed", True)
        ctx.replace("login")

    def tap_sign_in(self, ctx: AppContext, arg: str) -> None:
        email, password = ctx.runtime.fields.get("email", ""), ctx.runtime.fields.get("password", "")
        if not email or not password:
            ctx.state["login_error"] = "Enter your email and password"
            return
        ctx.state["login_error"] = ""
        ctx.put_pref("auth_prefs", "is_authenticated", True)
        ctx.put_pref("auth_prefs", "user_email", email)
        ctx.replace("home")

    def tap_guest(self, ctx: AppContext, arg: str) -> None:
        ctx.put_pref("auth_prefs", "is_guest_mode", True)
        ctx.replace("home")

    def tap_toggle_bug(self, ctx: AppContext, arg: str) -> None:
        ctx.state["bug_enabled"] = not ctx.state["bug_enabled"]

    def tap_add_item(self, ctx: AppContext, arg: str) -> None:
        ctx.state["expected"] = int(ctx.state["expected"]) + 1
        if ctx.state["bug_enabled"]:
            ctx.state["status"] = "Bug triggered: UI did not update"
        else:
            ctx.state["displayed"] = int(ctx.state["displayed"]) + 1
            ctx.state["status"] = "Updated"

    def tap_reset(self, ctx: AppContext, arg: str) -> None:
        ctx.state.update(expected=0, displayed=0, status="Reset")

    def tap_choose_plan(self, ctx: AppContext, plan: str) -> None:
        ctx.state["plan"] = plan

    def tap_restart(self, ctx: AppContext, arg: str) -> None:
        ctx.state["plan"] = ""
        stack = ctx.runtime.stack
        if "demos/ux/start" in stack:
            del stack[stack.index("demos/ux/start") + 1:]
        else:
            ctx.replace("demos/ux/start")
