"""An application's handlers (the worker loads them with `pyworker --role send_greeting
--handlers greetings`)."""

from pyworker.errors import PermanentError, Snooze
from pyworker.handlers import Completion, handler


@handler("send_greeting")
def send_greeting(task):
    name = task.payload.get("name")
    if not name:
        raise PermanentError("no name to greet")  # failed now, no retry
    if task.payload.get("busy"):
        raise Snooze(60)  # pending again in a minute, no retry spent
    # A long job looks at its abort signal: it fires when the task is cancelled or taken away.
    for _step in range(task.payload.get("steps", 0)):
        if task.abort.wait(0.01):
            return None  # the worker records how the abort ended the attempt
    return Completion(
        {"greeting": f"Hello, {name}!"},
        follow_ups=[{"role": "log_greeting", "payload": {"name": name}}],
    )


@handler("log_greeting")
def log_greeting(task):
    return {"logged": task.payload["name"]}
