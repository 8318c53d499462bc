"""The worker: claim a task, run its handler, heartbeat while it runs, record the outcome.

One task at a time per process. Three connections, one per thread, each a short transaction
per call: the main thread claims and records; a heartbeat thread keeps the running task and the
worker's registry row fresh and turns the heartbeat's answer into the task's abort signal; a
listener thread LISTENs on the worker's own wake channel. A worker whose claim comes back empty
marks itself waiting (mark_worker_waiting), and an enqueue wakes one waiting worker per ready
task on its channel.

The main thread sleeps on a doorbell (a pipe) that rings for whichever comes first: a
notification, a signal, the handler finishing, or an abort. A pipe rather than an Event because
a Python signal handler must not take a lock the interrupted code may hold; with
signal.set_wakeup_fd the interpreter writes the byte itself.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from pyworker import handlers, logs
from pyworker.config import WorkerConfig
from pyworker.db import (
    WORKER_WAKE_CHANNEL,
    Database,
    JsonText,
    NotJson,
    Task,
    UnreadableJson,
    dump_json,
    listen_query,
)
from pyworker.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    PermanentError,
    Snooze,
    TaskLost,
    TaskpoolError,
)
from pyworker.logs import event

log = logging.getLogger("pyworker")

T = TypeVar("T")

# What the heartbeat's answer means for the running attempt.
ABORT_REASONS = {
    "cancel_requested": "cancelled",
    "lost": "taken_by_another_worker",
    "not_found": "not_found",
}
# The attempt history's word for how a failed attempt ended, by the task's new status.
FAILED_OUTCOMES = {"pending": "retried", "failed": "failed", "cancelled": "cancelled"}
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 10.0
ABORT_WIND_DOWN_SECONDS = 3.0
# With --prefetch, completions wait at most this long for the rest of their batch: a slow task
# in a batch does not hold back the results of the fast ones before it.
COMPLETION_FLUSH_SECONDS = 0.5


class Doorbell:
    """A self-pipe: any thread (or the interpreter, on a signal) rings; the main thread waits."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    @property
    def write_fd(self) -> int:
        return self._write

    def ring(self) -> None:
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:
            pass  # full: it is ringing already

    def drain(self) -> None:
        try:
            while os.read(self._read, 4096):
                pass
        except BlockingIOError:
            pass

    def wait(self, timeout: float | None) -> None:
        select.select([self._read], [], [], timeout)
        self.drain()

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


class HandlerThread:
    """The thread handlers run in, kept from task to task (starting a thread per task costs more
    than a no-op handler). A handler that will not stop is left behind with its thread."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="handler", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            self._jobs.get()()


@dataclass
class Outcome:
    """How an attempt ended, as the main thread saw it."""

    result: Any = None
    error: BaseException | None = None
    handed_back: bool = False
    # Why the handler was not given the task at all: the attempt fails for good, saying so.
    refused: str | None = None
    # Seconds from the attempt's start to its outcome (the log lines report it).
    duration: float | None = None


class Worker:
    def __init__(self, config: WorkerConfig, registry: handlers.Registry = handlers.registry) -> None:
        self.config = config
        self.registry = registry
        self.db = Database(config.database_url, application_name=f"pyworker {config.worker_id}")
        self.host = socket.gethostname()
        self.run_timeout = 3600.0
        self._doorbell = Doorbell()
        self._exiting = threading.Event()
        # The tasks claimed and not yet recorded (heartbeated), those not begun yet, the one
        # whose handler runs, and the completions waiting to be recorded in one call.
        self._held: dict[int, Task] = {}
        self._waiting: set[int] = set()
        self._running: Task | None = None
        self._completions: list[tuple[Task, JsonText | None, JsonText | None]] = []
        self._completions_since = 0.0
        self._handler_thread: HandlerThread | None = None
        # Written by the signal handler: plain attributes, no locks (see the module docstring).
        self._stop_requested_at: float | None = None
        self._signals = 0

    # Start-up and shut-down

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; the process exit code."""
        self._start()
        threads = [
            threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True),
            threading.Thread(target=self._listen_loop, name="listener", daemon=True),
        ]
        self._install_signal_handlers()
        for thread in threads:
            thread.start()
        try:
            self._loop()
        finally:
            self._exiting.set()
            for thread in threads:
                thread.join(timeout=5)
            self._deregister()
            self.db.close()
            self._doorbell.close()
        log.info("Worker %s stopped", self.config.worker_id, extra=event("worker_stopped"))
        return 0

    def _start(self) -> None:
        """Check the schema, register, check the role's settings: fail fast on what a retry
        cannot fix. Everything comes through taskpool_worker's grants: register_worker answers
        the role's settings (a worker login cannot read task_roles)."""
        config = self.config
        self._retrying("connect", self.db.check_schema, interruptible=False)
        try:
            registration = self._retrying(
                "register",
                lambda: self.db.register_worker(config.worker_id, config.role, self.host, os.getpid()),
                interruptible=False,
            )
        except InvalidInput as error:
            # An unknown role: register_worker names the known ones.
            raise ConfigurationError(str(error)) from error
        try:
            self._check_settings(registration)
        except ConfigurationError:
            self._deregister()
            raise
        self.run_timeout = registration["run_timeout"].total_seconds()
        log.info("Starting worker %s for role: %s", config.worker_id, config.role, extra=event("worker_started"))

    def _check_settings(self, registration: dict[str, Any]) -> None:
        """A handler for the role, and a heartbeat that keeps its tasks fresh."""
        config = self.config
        if config.command:
            self.registry.command(config.role, config.command)
        if self.registry.get(config.role) is None:
            known = ", ".join(self.registry.roles) or "none"
            raise ConfigurationError(
                f"no handler for role {config.role!r} (handlers are registered for: {known});"
                " load one with --handlers MODULE or bind a command with --command"
            )
        # Stale recovery takes back a task whose heartbeat is older than the threshold: a worker
        # beating less often would see its running tasks re-run elsewhere. Refused rather than
        # warned about: every task the worker ran would run twice, which no log line repairs.
        stale_threshold = registration["stale_threshold"].total_seconds()
        if config.heartbeat_interval >= stale_threshold:
            raise ConfigurationError(
                f"the heartbeat interval ({config.heartbeat_interval:g} s) must be shorter than"
                f" the stale_threshold of role {config.role!r} ({stale_threshold:g} s), or stale recovery"
                " takes back tasks while they run: lower --heartbeat-interval-ms"
            )
        if config.heartbeat_interval > stale_threshold / 2:
            log.warning(
                "The heartbeat interval (%g s) is more than half the stale_threshold of role %r (%g s):"
                " one late heartbeat and a running task is recovered and run again",
                config.heartbeat_interval,
                config.role,
                stale_threshold,
                extra=event("heartbeat_interval_risky"),
            )

    def _deregister(self) -> None:
        try:
            self.db.deregister_worker(self.config.worker_id)
        except TaskpoolError as error:
            log.warning(
                "Could not deregister worker %s: %s", self.config.worker_id, error, extra=event("deregister_failed")
            )

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        signal.set_wakeup_fd(self._doorbell.write_fd, warn_on_full_buffer=False)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals += 1
        if self._signals == 1:
            self._stop_requested_at = time.monotonic()
            log.info(
                "Received %s: finishing the current task (grace %.0f s), then exiting",
                signal.Signals(signum).name,
                self.config.shutdown_grace,
                extra=event("worker_stopping"),
            )
            return
        log.warning("Received %s again: exiting now", signal.Signals(signum).name, extra=event("worker_exiting"))
        handlers.kill_running_children()
        os._exit(1)

    @property
    def stopping(self) -> bool:
        return self._stop_requested_at is not None

    # The loop

    def _loop(self) -> None:
        config = self.config
        while not self.stopping:
            # Drained before the claim, so a notification that lands after an empty claim
            # still wakes the wait below.
            self._doorbell.drain()
            tasks = self._claim()
            if not tasks and self._mark_waiting():
                # A task committed just before the mark found no one waiting: look once more.
                tasks = self._claim()
            if tasks:
                self._run_batch(tasks)
            elif not self.stopping:
                self._doorbell.wait(config.poll_interval)

    def _claim(self) -> list[Task] | None:
        config = self.config
        return self._retrying(
            "claim",
            lambda: self.db.claim_and_start_tasks(config.role, config.worker_id, config.prefetch),
        )

    def _mark_waiting(self) -> bool:
        """Ask to be woken for the next task of the role; True when newly asked."""
        try:
            marked = self._retrying("wait", lambda: self.db.mark_worker_waiting(self.config.worker_id))
        except NotFound:
            # Unregistered meanwhile (the heartbeat registers again): poll until then.
            return False
        return bool(marked)

    def _run_batch(self, tasks: list[Task]) -> None:
        """Run the tasks one by one; hand back those not begun when the worker stops."""
        self._held = {task.id: task for task in tasks}
        self._waiting = set(self._held)
        if len(tasks) == 1:
            self._log_claimed(tasks[0])
        else:
            log.info(
                "Claimed %d tasks (%s)",
                len(tasks),
                ", ".join(str(task.id) for task in tasks),
                extra=event("tasks_claimed"),
            )
        try:
            for number, task in enumerate(tasks):
                if self.stopping:
                    self._flush_completions()
                    self._release(tasks[number:])
                    return
                if self._completions and time.monotonic() - self._completions_since > COMPLETION_FLUSH_SECONDS:
                    self._flush_completions()
                self._waiting.discard(task.id)
                self._run_one(task)
            self._flush_completions()
        finally:
            self._held = {}
            self._waiting = set()

    @staticmethod
    def _log_claimed(task: Task) -> None:
        if task.dispensary_id is None:
            log.info("Claimed task %s (%s)", task.id, task.role, extra=event("task_claimed", task_id=task.id))
        else:
            log.info(
                "Claimed task %s (%s) for dispensary %s",
                task.id,
                task.role,
                task.dispensary_id,
                extra=event("task_claimed", task_id=task.id),
            )

    def _run_one(self, task: Task) -> None:
        context = handlers.current_task.set(task)
        started = time.monotonic()
        try:
            if task.abort.fired:
                # Aborted while it waited in the batch (cancelled, or lost): not run at all.
                outcome = Outcome()
            elif isinstance(task.payload, UnreadableJson):
                # No handler can be given it, and no retry reads it better.
                outcome = Outcome(refused=f"the payload cannot be read: {task.payload.reason}")
            else:
                outcome = self._execute(task)
            outcome.duration = time.monotonic() - started
            # The outcome is decided: heartbeat answers no longer concern the handler, or one in
            # flight while the outcome is recorded would come back "lost" and cry wolf.
            self._running = None
            self._record(task, outcome)
        finally:
            handlers.current_task.reset(context)
            self._running = None

    def _execute(self, task: Task) -> Outcome:
        """Run the handler in the handler thread; watch the run timeout, the shutdown grace and,
        once the attempt is aborted, the wind-down after which a stuck handler is left behind."""
        outcome = Outcome()
        done = threading.Event()

        def attempt() -> None:
            token = handlers.current_task.set(task)
            try:
                outcome.result = self.registry.run(task)
            except BaseException as error:  # noqa: BLE001 - every failure is recorded
                outcome.error = error
            finally:
                handlers.current_task.reset(token)
                done.set()
                self._doorbell.ring()

        self._running = task
        if self._handler_thread is None:
            self._handler_thread = HandlerThread()
        self._handler_thread.submit(attempt)
        run_deadline = time.monotonic() + self.run_timeout
        # Once the attempt is aborted (timeout, cancel, lost), the handler has this long to stop.
        wind_down_deadline: float | None = None
        while not done.is_set():
            now = time.monotonic()
            if now >= run_deadline and not task.abort.fired:
                log.warning(
                    "Task %s passed its run timeout of %.0f s: aborting it",
                    task.id,
                    self.run_timeout,
                    extra=event("task_timed_out"),
                )
                task.abort.fire("timeout")
            if task.abort.fired:
                if wind_down_deadline is None:
                    wind_down_deadline = now + ABORT_WIND_DOWN_SECONDS
                elif now >= wind_down_deadline:
                    # The attempt ends here, as the abort says, whatever the handler does later:
                    # it keeps its thread, and the next task gets a thread of its own.
                    log.warning(
                        "Task %s: its handler did not stop within %.0f s of the abort (%s): leaving it behind",
                        task.id,
                        ABORT_WIND_DOWN_SECONDS,
                        task.abort.reason,
                        extra=event("handler_left_behind"),
                    )
                    self._handler_thread = None
                    return Outcome()
                deadline = wind_down_deadline
            else:
                deadline = run_deadline
                if self.stopping:
                    grace_deadline = self._stop_requested_at + self.config.shutdown_grace
                    if now >= grace_deadline:
                        # Handed back only when the shutdown is why the attempt stops: one that
                        # timed out (or was cancelled, or lost) meanwhile ends as that says.
                        task.abort.fire("shutdown")
                        if task.abort.reason == "shutdown":
                            # Let a command handler kill its process group before we hand back.
                            done.wait(ABORT_WIND_DOWN_SECONDS)
                            if not done.is_set():
                                # Stuck in the handler: the next task gets a thread of its own.
                                self._handler_thread = None
                            return Outcome(handed_back=True)
                        continue
                    deadline = min(deadline, grace_deadline)
            self._doorbell.wait(max(0.0, deadline - now))
        return outcome

    def _record(self, task: Task, outcome: Outcome) -> None:
        """Tell the database how the attempt ended; nothing for an attempt the worker lost.

        Whatever the handler returned or raised, this task alone gets an outcome and the worker
        goes on: one the database cannot store fails the attempt, saying why.
        """
        reason = task.abort.reason
        duration = outcome.duration
        try:
            if outcome.handed_back:
                self._release([task], duration=duration)
            elif reason in ("taken_by_another_worker", "not_found"):
                log.warning(
                    "Task %s was lost (%s): its result is dropped",
                    task.id,
                    reason,
                    extra=event("task_lost", outcome="lost", duration=duration),
                )
                self._held.pop(task.id, None)
            elif reason == "cancelled":
                self._fail(task, "cancelled by an operator while running", retryable=False, duration=duration)
            elif reason == "timeout":
                self._fail(task, f"timed out after {self.run_timeout:.0f} s", retryable=True, duration=duration)
            elif outcome.refused is not None:
                self._fail(task, outcome.refused, retryable=False, duration=duration)
            elif isinstance(outcome.error, Snooze):
                self._snooze(task, outcome.error.seconds, duration=duration)
            elif outcome.error is not None:
                self._fail(
                    task,
                    describe(outcome.error),
                    retryable=not isinstance(outcome.error, PermanentError),
                    error=outcome.error,
                    duration=duration,
                )
            else:
                result, follow_ups = outcome.result, None
                if isinstance(result, handlers.Completion):
                    result, follow_ups = result.result, result.follow_ups
                try:
                    # Written now: a value JSON cannot hold fails this attempt, not a batch later.
                    result = None if result is None else JsonText(dump_json(result, name="result"))
                    if follow_ups is not None:
                        follow_ups = JsonText(dump_json(follow_ups, name="follow_ups"))
                except NotJson as error:
                    self._fail(task, f"the result is not JSON: {error}", retryable=True, duration=duration)
                    return
                if self.config.prefetch == 1:
                    self._complete(task, result, follow_ups, duration=duration)
                else:
                    if not self._completions:
                        self._completions_since = time.monotonic()
                    self._completions.append((task, result, follow_ups))
        except TaskLost as lost:
            log.warning(
                "Task %s was lost before its outcome was recorded: %s",
                task.id,
                lost,
                extra=event("task_lost", outcome="lost", duration=duration),
            )
            self._held.pop(task.id, None)
        except Exception as error:  # noqa: BLE001 - one task's outcome must not end the worker
            self._outcome_not_stored(task, error)

    def _snooze(self, task: Task, seconds: Any, *, duration: float | None) -> None:
        try:
            self._retrying("snooze task", lambda: self.db.snooze_task(task, seconds), interruptible=False)
        except TaskLost:
            raise
        except TaskpoolError as refused:
            self._outcome_not_stored(task, f"the snooze of {seconds!r} s was refused: {refused}")
            return
        self._held.pop(task.id, None)
        log.info(
            "Task %s snoozed for %s s",
            task.id,
            seconds,
            extra=event("task_snoozed", outcome="released", duration=duration),
        )

    def _outcome_not_stored(self, task: Task, error: BaseException | str) -> None:
        """Fail the attempt (retryable) because its outcome could not be stored; never raises."""
        if isinstance(error, BaseException):
            error = str(error) if isinstance(error, TaskpoolError) else describe(error)
        message = f"the outcome could not be stored: {error}"
        log.error("Task %s: %s", task.id, message, extra=event("outcome_not_stored"))
        try:
            self._fail(task, message, retryable=True)
        except TaskLost as lost:
            log.warning(
                "Task %s was lost before its failure was recorded: %s",
                task.id,
                lost,
                extra=event("task_lost", outcome="lost"),
            )
        except Exception as again:  # noqa: BLE001 - the task stays running until stale recovery
            log.error(
                "Task %s: recording the failure failed too: %s",
                task.id,
                describe(again),
                extra=event("outcome_not_stored"),
            )
        finally:
            self._held.pop(task.id, None)

    def _complete(
        self, task: Task, result: JsonText | None, follow_ups: JsonText | None, *, duration: float | None = None
    ) -> None:
        """Record one completion; a result or follow-up the database refuses fails the attempt."""
        try:
            self._retrying(
                "complete task",
                lambda: self.db.complete_task(task, result, follow_ups),
                interruptible=False,
            )
            log.info(
                "Task %s completed successfully",
                task.id,
                extra=event("task_completed", outcome="completed", duration=duration),
            )
        except TaskLost:
            raise
        except Exception as error:  # noqa: BLE001 - fails this task alone
            self._outcome_not_stored(task, error)
        finally:
            self._held.pop(task.id, None)

    def _flush_completions(self) -> None:
        """Record the buffered completions in one call; one by one if the database refuses it."""
        completions, self._completions = self._completions, []
        if not completions:
            return
        entries = [
            {"task_id": task.id, "attempt": task.attempt, "result": result, "follow_ups": follow_ups}
            for task, result, follow_ups in completions
        ]
        try:
            answers = self._retrying(
                "complete tasks",
                lambda: self.db.complete_tasks(self.config.worker_id, entries),
                interruptible=False,
            )
        except Exception as error:  # noqa: BLE001 - the others of the batch must still be recorded
            # One bad result or follow-up refuses the whole batch: find it by recording each alone.
            log.warning(
                "Recording %d completions at once failed (%s): recording them one by one",
                len(entries),
                describe(error),
                extra=event("batch_completion_refused"),
            )
            for task, result, follow_ups in completions:
                try:
                    self._complete(task, result, follow_ups)
                except TaskLost as lost:
                    log.warning(
                        "Task %s was lost before its outcome was recorded: %s",
                        task.id,
                        lost,
                        extra=event("task_lost", task_id=task.id, outcome="lost"),
                    )
            return
        lost = [task_id for task_id, answer in answers.items() if answer != "completed"]
        for task, _result, _follow_ups in completions:
            self._held.pop(task.id, None)
        log.info(
            "Completed %d tasks", len(entries) - len(lost), extra=event("tasks_completed", outcome="completed")
        )
        for task_id in lost:
            log.warning(
                "Task %s was lost before its outcome was recorded (%s)",
                task_id,
                answers[task_id],
                extra=event("task_lost", task_id=task_id, outcome="lost"),
            )

    def _release(self, tasks: list[Task], *, duration: float | None = None) -> None:
        """Hand tasks back to the pool without spending a retry: the worker is stopping.
        `duration`: how long the one that had begun ran."""
        for task in tasks:
            try:
                self._retrying("release task", lambda: self.db.release_task(task), interruptible=False)
                log.info(
                    "Task %s handed back: the worker is stopping",
                    task.id,
                    extra=event("task_released", task_id=task.id, outcome="released", duration=duration),
                )
            except TaskLost as lost:
                log.warning(
                    "Task %s was lost before it was handed back: %s",
                    task.id,
                    lost,
                    extra=event("task_lost", task_id=task.id, outcome="lost"),
                )
            self._held.pop(task.id, None)

    def _fail(
        self,
        task: Task,
        message: str,
        *,
        retryable: bool,
        error: BaseException | None = None,
        duration: float | None = None,
    ) -> None:
        """Record a failed attempt, with the traceback of the handler's `error` if it raised one,
        and log it: a warning, with that traceback, unless an operator's cancel ended it."""
        details = None if error is None else "".join(traceback.format_exception(error))
        try:
            status = self._retrying(
                "fail task",
                lambda: self.db.fail_task(task, message, retryable=retryable, details=details),
                interruptible=False,
            )
        finally:
            self._held.pop(task.id, None)
        log.log(
            logging.INFO if error is None and status == "cancelled" else logging.WARNING,
            "Task %s failed: %s (now %s)",
            task.id,
            message,
            status,
            exc_info=error,
            extra=event("task_failed", outcome=FAILED_OUTCOMES[status], duration=duration),
        )

    def _retrying(self, what: str, call: Callable[[], T], *, interruptible: bool = True) -> T | None:
        """`call()`, retried with jittered backoff while the database is unreachable.

        Interruptible calls give up (None) once the worker is stopping. A retried call may
        repeat one whose answer was lost with the connection: the fenced functions make that
        safe (a repeated completion is a no-op; an attempt already ended answers TaskLost).
        """
        delay = BACKOFF_FIRST
        while True:
            try:
                return call()
            except DatabaseUnavailable as error:
                if interruptible and self.stopping:
                    return None
                pause = random.uniform(delay / 2, delay)
                log.warning("%s: %s; retrying in %.1f s", what, error, pause, extra=event("database_unavailable"))
                time.sleep(pause)
                delay = min(delay * 2, BACKOFF_MAX)

    # Background threads

    def _heartbeat_loop(self) -> None:
        db = Database(self.config.database_url, application_name=f"pyworker {self.config.worker_id} heartbeat")
        try:
            while not self._exiting.wait(self.config.heartbeat_interval):
                try:
                    self._beat(db)
                except TaskpoolError as error:
                    log.warning("Heartbeat failed: %s", error, extra=event("heartbeat_failed"))
        finally:
            db.close()

    def _beat(self, db: Database) -> None:
        """Keep the registry row and every task the worker holds fresh; abort what was taken."""
        config = self.config
        if not db.heartbeat_worker(config.worker_id):
            db.register_worker(config.worker_id, config.role, self.host, os.getpid())
        # A copy: the main thread swaps the dict and drops tasks as their outcomes are recorded.
        for task in list(self._held.values()):
            answer = db.heartbeat_task(task)
            # Only a task whose handler runs or has yet to run can be aborted: once its outcome
            # is decided, the answer may be about that very outcome, recorded while we asked.
            if task is not self._running and task.id not in self._waiting:
                continue
            reason = ABORT_REASONS.get(answer)
            if reason and not task.abort.fired:
                log.warning(
                    "Task %s: heartbeat answered %s: aborting the handler",
                    task.id,
                    answer,
                    extra=event("task_aborted", task_id=task.id),
                )
                task.abort.fire(reason)
                self._doorbell.ring()

    def _listen_loop(self) -> None:
        delay = BACKOFF_FIRST
        while not self._exiting.is_set():
            try:
                with psycopg.connect(
                    self.config.database_url,
                    autocommit=True,
                    application_name=f"pyworker {self.config.worker_id} listener",
                    connect_timeout=10,
                ) as conn:
                    channel = conn.execute(WORKER_WAKE_CHANNEL, {"worker_id": self.config.worker_id}).fetchone()[0]
                    conn.execute(listen_query(channel))
                    # Whatever was enqueued while nobody listened: look once.
                    self._doorbell.ring()
                    delay = BACKOFF_FIRST
                    while not self._exiting.is_set():
                        for _notification in conn.notifies(timeout=1.0):
                            self._doorbell.ring()
            except psycopg.Error as error:
                if self._exiting.is_set():
                    return
                pause = random.uniform(delay / 2, delay)
                log.warning(
                    "Listener: %s; reconnecting in %.1f s",
                    str(error).strip(),
                    pause,
                    extra=event("listener_reconnecting"),
                )
                self._exiting.wait(pause)
                delay = min(delay * 2, BACKOFF_MAX)


def describe(error: BaseException) -> str:
    """The error text recorded for a failed attempt: its type and message. Never raises: an
    exception whose message cannot be read is described by its type and what went wrong."""
    name = type(error).__name__
    try:
        message = str(error).strip()
    except Exception as broken:  # noqa: BLE001 - a handler's broken __str__ must not end the worker
        try:
            why = f"{type(broken).__name__}: {str(broken).strip()}"
        except Exception:  # noqa: BLE001 - broken twice over: its type must do
            why = type(broken).__name__
        return f"{name} (its message cannot be read: {why})"
    return f"{name}: {message}" if message else name


def run_worker(config: WorkerConfig) -> int:
    """Load the handlers, then run one worker until it is told to stop; the exit code."""
    logs.setup(config.log_format, config.log_level, config.worker_id, config.role)
    # Handlers (and the commands they run) that need the database find the worker's own here,
    # however it was given (--database-url or the environment).
    os.environ["DATABASE_URL"] = config.database_url
    os.environ["WORKER_ID"] = config.worker_id
    handlers.load(config.handler_modules)
    return Worker(config).run()


def run_workers(config: WorkerConfig, concurrency: int) -> int:
    """Run `concurrency` worker processes (ids <worker_id>-1..N), forwarding SIGTERM/SIGINT."""
    children = []
    for number in range(1, concurrency + 1):
        env = {
            **os.environ,
            "DATABASE_URL": config.database_url,
            "WORKER_ROLE": config.role,
            "WORKER_ID": f"{config.worker_id}-{number}",
            "POLL_INTERVAL_MS": str(round(config.poll_interval * 1000)),
            "HEARTBEAT_INTERVAL_MS": str(round(config.heartbeat_interval * 1000)),
            "PYWORKER_HANDLERS": " ".join(config.handler_modules),
            "PYWORKER_COMMAND": shlex.join(config.command),
            "LOG_FORMAT": config.log_format,
            "LOG_LEVEL": config.log_level,
            "SHUTDOWN_GRACE_SECONDS": str(config.shutdown_grace),
            "WORKER_PREFETCH": str(config.prefetch),
        }
        # Own sessions: a Ctrl-C on the terminal reaches only this process, which forwards it
        # once; a second, direct signal would make a worker exit at once.
        children.append(
            subprocess.Popen([sys.executable, "-m", "pyworker"], env=env, start_new_session=True)
        )

    def forward(signum: int, _frame: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return max(child.wait() for child in children)
