"""How each attempt ended, told to the database: failures, snoozes and hand-backs at once, on the
dispatcher's connection; successes buffered and recorded in batches (complete_tasks) by a thread
with a connection of its own, while the dispatcher claims on.

Whatever a handler returned or raised, its task alone gets an outcome: one the database cannot
store fails that attempt, saying why. Every call is retried while the database is unreachable,
stopping or not: the fenced functions make a repeated call safe.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from pyworker import handlers
from pyworker.attempts import Outcome, decide, describe, error_data_of
from pyworker.config import WorkerConfig
from pyworker.db import Database, JsonText
from pyworker.task import Task
from pyworker.errors import TaskLost, TaskpoolError
from pyworker.logs import event
from pyworker.metrics import WorkerMetrics
from pyworker.runtime import Doorbell, retry_while_unavailable

log = logging.getLogger("pyworker")

# Successful completions wait at most this long to be recorded together (when the dispatcher has
# nothing else to do they are recorded at once), and at most this many go in one call.
COMPLETION_FLUSH_SECONDS = 0.5
COMPLETION_BATCH_MAX = 1000
# The attempt history's word for how a failed attempt ended, by the task's new status.
FAILED_OUTCOMES = {"pending": "retried", "failed": "failed", "cancelled": "cancelled"}

# A success waiting to be recorded: the task, its result and follow-ups as JSON, its duration.
Completed = tuple[Task, JsonText | None, JsonText | None, float | None]


def worker_database(config: WorkerConfig, metrics: WorkerMetrics, connection: str) -> Database:
    """One of the worker's own connections, by what it serves (`connection`, as its metrics name
    it): its application_name is the worker's, followed by that but for the dispatcher's."""
    name = f"pyworker {config.worker_id}" + ("" if connection == "dispatcher" else f" {connection}")
    return Database(
        config.database_url,
        application_name=name,
        pooled=config.pooled,
        on_reconnect=metrics.reconnected(connection),
        call_timeout=config.call_timeout,
    )


class OutcomeRecorder:
    """Records the outcomes of one worker's attempts. `held`: the worker's tasks from claim to
    recorded outcome, shared with the worker; each is dropped from it once its outcome is
    recorded (or lost). `run_timeout_of(role)`: the role's, for the message of a timed-out attempt."""

    def __init__(
        self,
        config: WorkerConfig,
        db: Database,
        held: dict[int, Task],
        run_timeout_of: Callable[[str], float],
        doorbell: Doorbell,
        metrics: WorkerMetrics,
    ) -> None:
        self.config = config
        self.db = db
        self.metrics = metrics
        self._held = held
        self.run_timeout_of = run_timeout_of
        self._doorbell = doorbell
        # Successes waiting to be handed to the thread, since when the first of them waits, and
        # the batches handed over (None ends the thread).
        self.buffered: list[Completed] = []
        self.buffered_since = 0.0
        self._to_record: queue.SimpleQueue[list[Completed] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._record_loop, name="recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Record every completion handed over, then end the thread."""
        self.flush()
        self._to_record.put(None)
        self._thread.join()

    def flush_due(self, now: float) -> bool:
        """A full batch waits, or the first buffered success has waited long enough."""
        return bool(self.buffered) and (
            len(self.buffered) >= COMPLETION_BATCH_MAX or now - self.buffered_since >= COMPLETION_FLUSH_SECONDS
        )

    def record(self, task: Task, outcome: Outcome) -> None:
        """Tell the database how the attempt ended; nothing for an attempt the worker lost.

        Whatever the handler returned or raised, this task alone gets an outcome and the worker
        goes on: one the database cannot store fails the attempt, saying why.
        """
        duration = outcome.duration
        try:
            decision = decide(task, outcome, self.run_timeout_of(task.role))
            if decision.kind == "released":
                self.release([task], duration=duration)
            elif decision.kind == "lost":
                self._ended(
                    task, "lost", duration, logging.WARNING, "task_lost",
                    "Task %s was lost (%s): its result is dropped", task.id, decision.message,
                )
            elif decision.kind == "failed":
                self._fail(
                    task, decision.message, retryable=decision.retryable, error=decision.error, duration=duration
                )
            elif decision.kind == "snoozed":
                self._snooze(task, decision.seconds, duration=duration)
            else:
                if not self.buffered:
                    self.buffered_since = time.monotonic()
                self.buffered.append((task, decision.result, decision.follow_ups, duration))
        except TaskLost as lost:
            self._lost(task, "its outcome was recorded", lost, duration)
        except Exception as error:  # noqa: BLE001 - one task's outcome must not end the worker
            self._outcome_not_stored(task, error)

    def _snooze(self, task: Task, seconds: Any, *, duration: float | None) -> None:
        try:
            retry_while_unavailable("snooze task", lambda: self.db.snooze_task(task, seconds))
        except TaskLost:
            raise
        except TaskpoolError as refused:
            self._outcome_not_stored(task, f"the snooze of {seconds!r} s was refused: {refused}")
            return
        self._ended(
            task, "released", duration, logging.INFO, "task_snoozed", "Task %s snoozed for %s s", task.id, seconds
        )

    def _outcome_not_stored(self, task: Task, error: BaseException | str, *, db: Database | None = None) -> None:
        """Fail the attempt (retryable) because its outcome could not be stored; never raises."""
        if isinstance(error, BaseException):
            error = str(error) if isinstance(error, TaskpoolError) else describe(error)
        message = f"the outcome could not be stored: {error}"
        log.error("Task %s: %s", task.id, message, extra=event("outcome_not_stored"))
        try:
            self._fail(task, message, retryable=True, db=db)
        except TaskLost as lost:
            self._lost(task, "its failure was recorded", lost)
        except Exception as again:  # noqa: BLE001 - the task stays running until stale recovery
            log.error(
                "Task %s: recording the failure failed too: %s",
                task.id,
                describe(again),
                extra=event("outcome_not_stored"),
            )
        finally:
            self._held.pop(task.id, None)

    def flush(self) -> None:
        """Hand the buffered completions to the recorder thread."""
        if self.buffered:
            self._to_record.put(self.buffered)
            self.buffered = []

    def _record_loop(self) -> None:
        """Record the completions the dispatcher hands over, on a connection of its own, while
        the dispatcher claims: up to COMPLETION_BATCH_MAX a call, those that waited together."""
        db = worker_database(self.config, self.metrics, "recorder")
        try:
            done = False
            while not done:
                batch = self._to_record.get()
                while batch is not None and len(batch) < COMPLETION_BATCH_MAX:
                    try:
                        more = self._to_record.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        done = True
                        break
                    batch += more
                if batch is None:
                    break
                self._record_batches(batch, db)
                # Room to claim again, if the unrecorded outcomes had filled it.
                self._doorbell.ring()
        finally:
            db.close()

    def _record_batches(self, completions: list[Completed], db: Database) -> None:
        for first in range(0, len(completions), COMPLETION_BATCH_MAX):
            try:
                self._record_completions(completions[first : first + COMPLETION_BATCH_MAX], db)
            except Exception as error:  # noqa: BLE001 - the next batches must still be recorded
                log.error("Recording completions failed: %s", describe(error), extra=event("outcome_not_stored"))

    def _record_completions(self, completions: list[Completed], db: Database) -> None:
        """Record completions in one call; one by one if the database refuses it."""
        # In id order, the order heartbeat_tasks locks in: the two wait on each other, never deadlock.
        completions.sort(key=lambda completion: completion[0].id)
        entries = [
            {
                "task_id": task.id,
                "attempt": task.attempt,
                "claim_token": task.claim_token,
                "result": result,
                "follow_ups": follow_ups,
            }
            for task, result, follow_ups, _duration in completions
        ]
        try:
            answers = retry_while_unavailable(
                "complete tasks",
                lambda: db.complete_tasks(self.config.worker_id, entries),
            )
        except Exception as error:  # noqa: BLE001 - the others of the batch must still be recorded
            if len(completions) == 1:
                # A result or follow-up the database refuses fails this attempt alone.
                task = completions[0][0]
                token = handlers.current_task.set(task)
                try:
                    self._outcome_not_stored(task, error, db=db)
                finally:
                    handlers.current_task.reset(token)
                return
            # One bad result or follow-up refuses the whole batch: find it by recording each alone.
            log.warning(
                "Recording %d completions at once failed (%s): recording them one by one",
                len(entries),
                describe(error),
                extra=event("batch_completion_refused"),
            )
            for completion in completions:
                self._record_completions([completion], db)
            return
        completed = []
        for task, _result, _follow_ups, duration in completions:
            if answers[task.id] == "completed":
                self._held.pop(task.id, None)
                self.metrics.ended(task.role, "completed")
                completed.append((task, duration))
            else:
                self._lost(task, "its outcome was recorded", f"complete_tasks answered {answers[task.id]}", duration)
        if len(completed) == 1:
            (task, duration), = completed
            log.info(
                "Task %s completed successfully",
                task.id,
                extra=event("task_completed", task_id=task.id, outcome="completed", duration=duration),
            )
        elif completed:
            # One line a batch (as for its claim): a line a task costs a drain of short tasks dearly.
            log.info(
                "Completed %d tasks (%s)",
                len(completed),
                ", ".join(str(task.id) for task, _duration in completed),
                extra=event("tasks_completed", outcome="completed"),
            )

    def _lost(self, task: Task, before: str, why: object, duration: float | None = None) -> None:
        """The attempt was no longer the worker's by the time `before`: say so, drop the task."""
        self._ended(
            task, "lost", duration, logging.WARNING, "task_lost", "Task %s was lost before %s: %s", task.id, before, why
        )

    def _ended(
        self, task: Task, outcome: str, duration: float | None, level: int, name: str, message: str, *args: object,
        error: BaseException | None = None,
    ) -> None:
        """The attempt ended so (`outcome`, one of the metrics'): drop the task, count it, and log
        `message` (the event `name`, with the handler's `error` if any)."""
        self._held.pop(task.id, None)
        self.metrics.ended(task.role, outcome)
        tags = event(name, task_id=task.id, outcome=outcome, duration=duration)
        log.log(level, message, *args, exc_info=error, extra=tags)

    def release(
        self, tasks: list[Task], *, duration: float | None = None, because: str = "the worker is stopping"
    ) -> None:
        """Hand tasks back to the pool without spending a retry, `because` (the log line says
        why). `duration`: how long the one that had begun ran."""
        for task in tasks:
            try:
                retry_while_unavailable("release task", lambda: self.db.release_task(task))
                self._ended(
                    task, "released", duration, logging.INFO, "task_released",
                    "Task %s handed back: %s", task.id, because,
                )
            except TaskLost as lost:
                self._lost(task, "it was handed back", lost, duration)

    def _fail(
        self,
        task: Task,
        message: str,
        *,
        retryable: bool,
        error: BaseException | None = None,
        duration: float | None = None,
        db: Database | None = None,
    ) -> None:
        """Record a failed attempt, with the traceback of the handler's `error` if it raised one,
        and log it: a warning, with that traceback, unless an operator's cancel ended it."""
        details = data = None
        if error is not None:
            details = "".join(traceback.format_exception(error))
            data = error_data_of(error)
        try:
            status = retry_while_unavailable(
                "fail task",
                lambda: (db or self.db).fail_task(task, message, retryable=retryable, details=details, data=data),
            )
        finally:
            self._held.pop(task.id, None)
        level = logging.INFO if error is None and status == "cancelled" else logging.WARNING
        self._ended(
            task, FAILED_OUTCOMES[status], duration, level, "task_failed", "Task %s failed: %s (now %s)",
            task.id, message, status, error=error,
        )
