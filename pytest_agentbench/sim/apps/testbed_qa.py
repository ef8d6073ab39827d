"""The testbed's two QA flows, with bugs that only show under use; every use is written to the event log.

Forms ("Create account"): after a rejected submit the next tap on the form's button is ignored;
on success the welcome line drops the last character of the email. The button's label is the
preference `form_button` of `shared_prefs/testbed.xml` (a suite's preflight writes one drawn per
instance; `Create` when there is none), so each planted bug shows a value of its own instance: the
label of the button that ignored the tap, the email cut short. Shop: the total does not update
after a quantity decrease (it keeps the previous one), and the code SAVE10, announced as 10% off,
takes a flat 10.00. Events (`files/events.jsonl`): `invalid_submit` {reason}, `ignored_tap`
{button: its label}, `submit_success` {email, welcome, welcome_email: what the welcome line shows
for the email}; `item_added` / `item_removed` {item, quantity, total_shown, total_expected},
`discount_applied` {code, total_shown, total_expected} / `discount_rejected` {code}, `checkout`
{charged, expected, total_shown}; "expected" is always what a correct shop would show.
"""

from __future__ import annotations

import re

from ..ui import Button, Field, Text, Title
from .model import AppContext, Screen

ITEMS = (("notebook", "Notebook", 1200), ("mug", "Mug", 900))  # key, label, price in cents
DISCOUNT_CODE = "SAVE10"
PREFS = "testbed"
#: The form's button label when no suite wrote `form_button`.
FORM_BUTTON = "Create"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


QA_SCREENS = {
    "forms": Screen("forms", (
        Title("Create account"),
        Field("Name", id="name"),
        Field("Email", id="email"),
        Field("Password", id="password", password=True),
        Text("{form_error}", when="form_error", id="form_error"),
        Button("{form_button}", "create_account"),
    )),
    "forms/welcome": Screen("forms/welcome", (
        Title("Welcome"),
        Text("Welcome, {welcome_email}!", id="welcome"),
        Text("Your account is ready"),
        Button("Done", "done_home"),
    )),
    "shop": Screen("shop", (
        Title("Shop"),
        *(widget for key, label, price in ITEMS for widget in (
            Text(f"{label} - {money(price)} each"),
            Text(f"{label} quantity: {{qty_{key}}}", id=f"qty_{key}"),
            Button(f"Add {label}", "add_item", arg=key),
            Button(f"Remove {label}", "remove_item", arg=key),
        )),
        Field("Discount code", id="discount_code"),
        Button("Apply", "apply_discount"),
        Text("{discount_note}", when="discount_note"),
        Text("Total: {total_shown}", id="total"),
        Button("Checkout", "checkout"),
    )),
    "shop/done": Screen("shop/done", (
        Title("Order placed"),
        Text("Charged: {charged}", id="charged"),
        Text("Thank you for your order"),
        Button("Done", "done_home"),
    )),
}


def qa_initial_state() -> dict[str, object]:
    state: dict[str, object] = {"form_error": "", "ignore_next_create": False, "welcome_email": "",
                                "discount": 0, "discount_note": "", "shown_total": 0, "charged": ""}
    state.update({f"qty_{key}": 0 for key, _label, _price in ITEMS})
    return state


def form_button(ctx: AppContext) -> str:
    """The label of the form's button: the preference a suite wrote, else Create (read once per process, as the tasks are)."""
    if "form_button" not in ctx.state:
        label = ctx.prefs(PREFS).get("form_button")
        ctx.state["form_button"] = label.strip() if isinstance(label, str) and label.strip() else FORM_BUTTON
    return str(ctx.state["form_button"])


def qa_derived(ctx: AppContext) -> dict[str, object]:
    return {"total_shown": money(int(ctx.state.get("shown_total", 0))), "form_button": form_button(ctx)}


class QaFlows:
    """Tap handlers of the QA screens (mixed into the testbed app)."""

    def tap_create_account(self, ctx: AppContext, arg: str) -> None:
        if ctx.state.get("ignore_next_create"):
            # Planted bug: the tap right after a rejected submit does nothing at all.
            ctx.state["ignore_next_create"] = False
            ctx.log_event("ignored_tap", button=form_button(ctx))
            return
        fields = ctx.runtime.fields
        name, email, password = (fields.get(key, "").strip() for key in ("name", "email", "password"))
        reason = ("name" if not name else "email" if not _EMAIL.fullmatch(email)
                  else "password" if len(password) < 8 else "")
        if reason:
            ctx.state["form_error"] = {"name": "Enter your name", "email": "Enter a valid email address",
                                       "password": "Password must be at least 8 characters"}[reason]
            ctx.state["ignore_next_create"] = True
            ctx.log_event("invalid_submit", reason=reason)
            return
        ctx.state["form_error"] = ""
        # Planted bug: the welcome line loses the email's last character.
        ctx.state["welcome_email"] = email[:-1]
        ctx.log_event("submit_success", email=email, welcome=f"Welcome, {email[:-1]}!", welcome_email=email[:-1])
        ctx.navigate("forms/welcome")

    def tap_add_item(self, ctx: AppContext, key: str) -> None:
        ctx.state[f"qty_{key}"] = int(ctx.state.get(f"qty_{key}", 0)) + 1
        ctx.state["shown_total"] = _expected_total(ctx)
        _log_cart(ctx, "item_added", key)

    def tap_remove_item(self, ctx: AppContext, key: str) -> None:
        quantity = int(ctx.state.get(f"qty_{key}", 0))
        if quantity == 0:
            return
        ctx.state[f"qty_{key}"] = quantity - 1
        # Planted bug: a decrease leaves the total that was shown before it.
        _log_cart(ctx, "item_removed", key)

    def tap_apply_discount(self, ctx: AppContext, arg: str) -> None:
        code = ctx.runtime.fields.get("discount_code", "").strip().upper()
        if code != DISCOUNT_CODE:
            ctx.state["discount_note"] = "That code is not valid"
            ctx.log_event("discount_rejected", code=code)
            return
        ctx.state["discount"] = 1
        ctx.state["discount_note"] = f"{DISCOUNT_CODE}: 10% off your order"
        ctx.state["shown_total"] = _expected_total(ctx)
        ctx.log_event("discount_applied", code=code, total_shown=money(int(ctx.state["shown_total"])),
                      total_expected=money(_fair_total(ctx)))

    def tap_checkout(self, ctx: AppContext, arg: str) -> None:
        charged = _expected_total(ctx)
        ctx.state["charged"] = money(charged)
        ctx.log_event("checkout", charged=money(charged), expected=money(_fair_total(ctx)),
                      total_shown=money(int(ctx.state.get("shown_total", 0))))
        ctx.navigate("shop/done")

    def tap_done_home(self, ctx: AppContext, arg: str) -> None:
        ctx.replace("home")


def _subtotal(ctx: AppContext) -> int:
    return sum(int(ctx.state.get(f"qty_{key}", 0)) * price for key, _label, price in ITEMS)


def _expected_total(ctx: AppContext) -> int:
    """What the app computes: the subtotal minus a flat 10.00 once SAVE10 is applied (planted bug)."""
    discount = 1000 if ctx.state.get("discount") else 0
    return max(0, _subtotal(ctx) - discount)


def _fair_total(ctx: AppContext) -> int:
    """What the shop promises: 10% off with SAVE10."""
    subtotal = _subtotal(ctx)
    return subtotal - (subtotal // 10 if ctx.state.get("discount") else 0)


def _log_cart(ctx: AppContext, event: str, key: str) -> None:
    ctx.log_event(event, item=key, quantity=int(ctx.state.get(f"qty_{key}", 0)),
                  total_shown=money(int(ctx.state.get("shown_total", 0))), total_expected=money(_fair_total(ctx)))
