"""The testbed's Tasks list: delete a task by swiping its row or from its own screen; two bugs show only under the swipe.

The tasks come from `shared_prefs/testbed.xml` `tasks` (names joined by `|`, written by the suite's
preflight; four fixed names when it is missing) and live in the process from its start. Deleting
from a task's screen ("Delete task") is right. A sideways swipe on a row deletes the task below it
instead (the swiped one when it is the last), and the heading's count `Tasks (N)` keeps its old
value after a swipe. Events (`files/events.jsonl`): `task_opened` {task}, `task_deleted` {task,
via: button}, `task_swiped` {task: the row swiped, deleted: the task removed, count_shown,
count_expected}.
"""

from __future__ import annotations

from ..ui import Button, Each, Row, Text, Title
from .model import AppContext, Screen

PREFS = "testbed"
DEFAULT_TASKS = ("Buy milk", "Call the bank", "Book flights", "Water plants")

TASK_SCREENS = {
    "tasks": Screen("tasks", (
        Title("Tasks ({task_count})"),
        Text("Swipe a task sideways to delete it, or open it", when="has_tasks"),
        Text("No tasks left", when="!has_tasks"),
        Each("task_rows", Row("{task_name}", on_tap="open_task", arg="{task_name}", on_swipe="swipe_task", summary="To do")),
    )),
    "tasks/task": Screen("tasks/task", (
        Title("{open_task}"),
        Text("Status: to do"),
        Button("Delete task", "delete_task"),
    )),
}


def _tasks(ctx: AppContext) -> list[str]:
    if "tasks" not in ctx.state:
        raw = ctx.prefs(PREFS).get("tasks")
        names = [name.strip() for name in raw.split("|") if name.strip()] if isinstance(raw, str) else []
        ctx.state["tasks"] = names or list(DEFAULT_TASKS)
        ctx.state["count_shown"] = len(ctx.state["tasks"])
    return ctx.state["tasks"]  # type: ignore[return-value]


def tasks_derived(ctx: AppContext) -> dict[str, object]:
    tasks = _tasks(ctx)
    return {"task_rows": [{"task_name": name} for name in tasks], "has_tasks": bool(tasks),
            "task_count": ctx.state.get("count_shown", len(tasks)), "open_task": ctx.state.get("open_task", "")}


class TaskFlows:
    """Tap and swipe handlers of the Tasks screens (mixed into the testbed app)."""

    def tap_open_task(self, ctx: AppContext, name: str) -> None:
        ctx.state["open_task"] = name
        ctx.log_event("task_opened", task=name)
        ctx.navigate("tasks/task")

    def tap_delete_task(self, ctx: AppContext, arg: str) -> None:
        tasks, name = _tasks(ctx), str(ctx.state.get("open_task", ""))
        if name in tasks:
            tasks.remove(name)
            ctx.state["count_shown"] = len(tasks)
            ctx.log_event("task_deleted", task=name, via="button")
        ctx.runtime.stack.pop()

    def tap_swipe_task(self, ctx: AppContext, name: str) -> None:
        tasks = _tasks(ctx)
        if name not in tasks:
            return
        index = tasks.index(name)
        # The planted bugs: the adapter removes the row after the swiped one, and the heading's
        # count is not refreshed.
        deleted = tasks.pop(index + 1 if index + 1 < len(tasks) else index)
        ctx.log_event("task_swiped", task=name, deleted=deleted, count_shown=ctx.state.get("count_shown"),
                      count_expected=len(tasks))
