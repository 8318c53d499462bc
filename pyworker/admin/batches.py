"""The batch runtime (`pyworker --role R --batch-runtime`): a worker's async roles on one event
loop that claims up to a role's share of tasks a call, runs their handlers and records their
outcomes once per turn of the loop, with no thread hand-off per task. A handler's first step runs
at once (one that never waits ends there, with no asyncio task); the rest of it, if it waits, in
an asyncio task. A batch handler (pyworker/admin/batch_handlers.py) gets a claim's tasks in one call.

The loop hands its database calls to threads of its own, one call a batch: claims (and the marks
that ask for a wake-up) to CLAIM_CONNECTIONS threads, each with its connection, so that the
claims of a drain follow each other without a gap; outcomes to one more (an OutcomeRecorder of
its own: the completions in one complete_tasks call, failures and snoozes one by one as the
threaded runtime records them). Claims and a recording overlap, and the loop runs handlers while
they wait.
The worker (pyworker/worker.py) keeps its contract for these roles as for its others: its
heartbeat thread beats their tasks (held with the others' until recorded) and aborts them
through abort(); its listener wakes them through wake(); its dispatcher stops them (stop(), at
the end of the grace shutdown()), and waits for quiet before it deregisters.

Each role runs up to its share (`--role R=N`, else --concurrency) and holds at most that plus two
recording batches (2 x COMPLETION_BATCH_MAX) from claim to recorded outcome, as the threaded
runtime does; --prefetch does not apply. One timer a batch watches the run
timeout of all its tasks. A handler that blocks this loop holds up every task on it: /healthz
fails naming it, but no new loop replaces this one as the threaded runtime's does: run handlers
that may block without --batch-runtime.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from psycopg.rows import RowMaker

from pyworker.admin.batch_handlers import batch_function_of, run_batch
from pyworker.attempts import (
    ABORT_WIND_DOWN_SECONDS,
    EventLoopThread,
    Outcome,
    async_outcome,
    end_lease,
)
from pyworker.db import CLAIM_AND_START_TASKS, Database, UnreadableJson
from pyworker.deadlines import bounded
from pyworker import handlers
from pyworker.errors import ConfigurationError, DatabaseUnavailable, NotFound
from pyworker.logs import event
from pyworker.outcomes import COMPLETION_BATCH_MAX, OutcomeRecorder
from pyworker.runtime import Unavailability
from pyworker.task import TASK_COLUMNS, AbortSignal, Task

from pyworker.worker import Worker, log_claimed, log_left_behind

log = logging.getLogger("pyworker")
# A role's claims run on this many connections at once (see BatchRuntime.__init__).
CLAIM_CONNECTIONS = 2
T = TypeVar("T")


@dataclass(eq=False)
class Batch:
    """The tasks of one claim that still run, and the timer of their common run timeout."""

    left: int
    timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class Running:
    task: Task
    started: float
    batch: Batch
    future: asyncio.Task = field(init=False)
    winding_down: bool = False
    # The batch handler's call the attempt is part of (None: the attempt has a handler of its own).
    call: Call | None = None


@dataclass(eq=False)
class Call:
    """One call of a batch handler, for the attempts of a claim."""

    attempts: list[Running]
    future: asyncio.Task = field(init=False)


class BatchRuntime:
    """The runtime of the roles `roles` (async handlers) of `worker`."""

    def __init__(self, worker: Worker, roles: tuple[str, ...]) -> None:
        self.worker = worker
        self.roles = frozenset(roles)
        config = worker.config
        self.taken = 0
        # The attempts that run, by task id (the heartbeat thread looks them up); the outcomes
        # of this turn of the loop; each role's tasks from claim to recorded outcome.
        self.running: dict[int, Running] = {}
        self._ended: list[tuple[Task, Outcome]] = []
        # Outcomes ended while a recording was under way, recorded together when it is done.
        self._unrecorded: list[tuple[Task, Outcome]] = []
        self._recording = False
        self._in_hand = dict.fromkeys(roles, 0)
        # Claims under way (the dispatcher waits for none before it leaves); an error that ended
        # the runtime (the dispatcher raises it).
        self.claiming = 0
        self.failed: BaseException | None = None
        self._stopped = False

        def database(purpose: str, kind: type[Database] = Database) -> Database:
            return kind(
                config.database_url,
                application_name=f"pyworker {config.worker_id} {purpose}",
                pooled=config.pooled,
                on_reconnect=worker.metrics.reconnected(purpose),
                call_timeout=config.call_timeout,
            )

        # Claims on CLAIM_CONNECTIONS connections, each its own thread: while the database runs
        # one claim, the other's tasks are parsed and begun (a drain's claims follow back to back).
        self._claimers = [
            (ThreadPoolExecutor(1, thread_name_prefix=f"batch-claims-{n}"), database("batch claims", ClaimsDatabase))
            for n in range(CLAIM_CONNECTIONS)
        ]
        self._recorder = OutcomeRecorder(
            config, database("batch recorder"), worker._held, worker._run_timeout_of, worker._doorbell, worker.metrics
        )
        self._records = ThreadPoolExecutor(1, thread_name_prefix="batch-recorder")
        self.event_loop = EventLoopThread(config.loop_block_limit, self._on_blocked)
        self.loop = self.event_loop.loop
        self._main = self.event_loop.submit(self._serve_all())
        self._main.add_done_callback(self._ended_on_error)

    @property
    def _stopping(self) -> bool:
        return self._stopped or self.worker.stopping

    @property
    def quiet(self) -> bool:
        """Nothing claimed, running or unrecorded, and no claim under way (read by the dispatcher)."""
        return not self.claiming and not any(self._in_hand.values())

    # Called from the worker's threads

    def wake(self, roles: tuple[str, ...]) -> None:
        if not self.roles.isdisjoint(roles):
            self.loop.call_soon_threadsafe(self._wake_roles, roles)

    def abort(self, task: Task) -> None:
        """The task's abort signal fired (the heartbeat's answer): cancel its handler."""
        self.loop.call_soon_threadsafe(self._abort, task.id)

    def stop(self) -> None:
        """Claim no more; what runs goes on until shutdown()."""
        if not self._stopped:
            self._stopped = True
            self.loop.call_soon_threadsafe(self._wake_roles, tuple(self.roles))

    def shutdown(self) -> None:
        """The grace is over: abort what still runs, to be handed back."""
        self.loop.call_soon_threadsafe(self._shut_down)

    def close(self) -> None:
        """After the dispatcher's loop: end the runtime, its threads and its connections."""
        self.stop()
        try:
            self._main.result(timeout=self.worker.config.call_timeout + ABORT_WIND_DOWN_SECONDS)
        except Exception:  # noqa: BLE001 - the dispatcher raised it already (self.failed)
            pass
        for claims, _db in self._claimers:
            claims.shutdown()
        self._records.shutdown()
        self.event_loop.retire()
        for _claims, db in self._claimers:
            db.close()
        self._recorder.db.close()

    # On the loop

    async def _serve_all(self) -> None:
        self._wakes = {role: asyncio.Event() for role in self.roles}
        self._room = asyncio.Event()
        self._asked = dict.fromkeys(self.roles, 0)
        await asyncio.gather(*(self._serve(role, *claimer) for role in self.roles for claimer in self._claimers))

    def _ended_on_error(self, main: Any) -> None:
        if not main.cancelled() and main.exception() is not None:
            self.failed = main.exception()
            self.worker._doorbell.ring()

    async def _serve(self, role: str, claims: ThreadPoolExecutor, db: Database) -> None:
        """Claim the role's tasks on `db` while it has room, and begin them; when none is ready,
        wait for a wake-up or the poll interval. A role has a _serve for each claims connection,
        each asking for what the role has room for, less what the others' claims ask."""
        worker, config = self.worker, self.worker.config
        state = worker._role_states[role]
        share = config.share(role)
        unavailable = Unavailability("claim")
        while True:
            asked = self._asked[role]
            want = min(share - state.running - asked, share + 2 * COMPLETION_BATCH_MAX - self._in_hand[role] - asked)
            if want <= 0 and not self._stopping:
                self._room.clear()
                await self._room.wait()
                continue
            # Counted before the look at stopping: a dispatcher that saw no claim under way after
            # it began to stop is sure none begins.
            self.claiming += 1
            try:
                if self._stopping:
                    return
                state.idle = state.notified = False
                self._wakes[role].clear()
                state.held_at_claim = bool(worker._held)
                self._asked[role] += want
                try:
                    tasks = await self._call(claims, db.claim_and_start_tasks, role, config.worker_id, want)
                    if not tasks and worker._wakeable and await self._call(claims, self._mark_waiting, role, db):
                        # A task committed just before the mark found no one waiting: look once more.
                        tasks = await self._call(claims, db.claim_and_start_tasks, role, config.worker_id, want)
                except DatabaseUnavailable as error:
                    pause = unavailable.met(error)
                else:
                    unavailable.answered()
                    pause = None if tasks else config.poll_interval
                    state.idle = not tasks
                    worker.metrics.claimed_tasks(role, len(tasks))
                    if tasks:
                        self._begin(role, tasks)
            finally:
                self.claiming -= 1
                self._asked[role] -= want
            worker._doorbell.ring()
            if pause is not None:
                try:
                    await asyncio.wait_for(self._wakes[role].wait(), pause)
                except TimeoutError:
                    pass

    async def _call(self, executor: ThreadPoolExecutor, call: Callable[..., T], *args: Any) -> T:
        return await self.loop.run_in_executor(executor, call, *args)

    def _mark_waiting(self, role: str, db: Database) -> bool:
        """Ask to be woken for the role's next task; True when newly asked (in a claims thread)."""
        try:
            return bool(db.mark_worker_waiting(self.worker.config.worker_id, role))
        except NotFound:
            return False  # unregistered meanwhile (the heartbeat registers again): poll until then

    def _begin(self, role: str, tasks: list[Task]) -> None:
        worker = self.worker
        now = time.monotonic()
        self.taken += len(tasks)
        self._in_hand[role] += len(tasks)
        log_claimed(tasks)
        batch = Batch(len(tasks))
        state = worker._role_states[role]
        batch_function = batch_function_of(worker.registry.get(role))
        in_call: list[Running] = []
        for task in tasks:
            worker._held[task.id] = task
            attempt = Running(task, now, batch)
            if isinstance(task.payload, UnreadableJson):
                refused = f"the payload cannot be read: {task.payload.reason}"
                self._end(attempt, Outcome(refused=refused, duration=0.0), ran=False)
                continue
            task.lease = worker._connections.lease()
            self.running[task.id] = attempt
            state.running += 1
            if batch_function is None:
                self._start(attempt)
            else:
                in_call.append(attempt)
        if batch_function is not None and in_call:
            self._call_batch(batch_function, in_call)
        if batch.left:
            batch.timer = self.loop.call_later(worker._run_timeout_of(role), self._time_out, batch)

    def _start(self, attempt: Running) -> None:
        """Run the handler's first step at once, as Python 3.12's eager tasks do: a handler that
        never waits (most of a drain's) ends here, without an asyncio task or a turn of the loop;
        one that waits goes on in an asyncio task from where it stopped."""
        task = attempt.task
        context = contextvars.copy_context()
        context.run(handlers.current_task.set, task)
        coroutine = _attempt(self.worker.registry, task)
        # What the loop's watchdog reads to name a handler that blocks it (as StepTracker notes).
        tracker = self.event_loop
        tracker.running, tracker.last_step_edge = task, time.monotonic()
        try:
            waits_on = context.run(coroutine.send, None)
        except StopIteration as returned:
            outcome = Outcome(result=returned.value)
        except BaseException as error:  # noqa: BLE001 - every failure is recorded, as run_attempt's
            outcome = Outcome(error=error)
        else:
            attempt.future = self.loop.create_task(_resume(coroutine, waits_on), context=context)
            attempt.future.add_done_callback(lambda future: self._done(attempt, future))
            return
        finally:
            tracker.running, tracker.last_step_edge = None, time.monotonic()
        self._end(attempt, outcome)

    def _call_batch(self, function: Callable[[list[Task]], Any], attempts: list[Running]) -> None:
        """One call of the role's batch handler for these attempts (their tasks in claim order)."""
        call = Call(attempts)
        for attempt in attempts:
            attempt.call = call
        call.future = self.loop.create_task(run_batch(function, [attempt.task for attempt in attempts]))
        call.future.add_done_callback(lambda future: self._call_done(call, future))

    def _call_done(self, call: Call, future: asyncio.Task) -> None:
        """Each attempt of the call still running ends with its own outcome of the answer."""
        if future.cancelled():
            outcomes: list[Any] = [handlers.Aborted("every task of the call was aborted")] * len(call.attempts)
        elif future.exception() is not None:
            outcomes = [future.exception()] * len(call.attempts)
        else:
            outcomes = future.result()
        for attempt, outcome in zip(call.attempts, outcomes):
            end_lease(attempt.task)
            if self.running.get(attempt.task.id) is attempt:
                ended = Outcome(error=outcome) if isinstance(outcome, BaseException) else Outcome(result=outcome)
                self._end(attempt, ended)

    def _done(self, attempt: Running, future: asyncio.Task) -> None:
        if self.running.get(attempt.task.id) is attempt:
            self._end(attempt, async_outcome(attempt.task, future))

    def _end(self, attempt: Running, outcome: Outcome, ran: bool = True) -> None:
        """The attempt is over: its outcome goes with this turn's to the recorder."""
        task = attempt.task
        if ran:
            del self.running[task.id]
            self.worker._role_states[task.role].running -= 1
            outcome.duration = time.monotonic() - attempt.started
            self.worker.metrics.ran(task.role, outcome.duration)
        if task.abort.reason == "shutdown":
            outcome.handed_back = True
        attempt.batch.left -= 1
        if not attempt.batch.left and attempt.batch.timer is not None:
            attempt.batch.timer.cancel()
        if not self._ended:
            self.loop.call_soon(self._flush)
        self._ended.append((task, outcome))
        self._room.set()

    def _flush(self) -> None:
        """The turn is over: record its outcomes, or when a recording is under way, keep them
        for the next, which takes all that ended meanwhile (fewer, larger complete_tasks calls
        when the database is slower than the handlers)."""
        self._unrecorded += self._ended
        self._ended = []
        if self._recording or not self._unrecorded:
            return
        ended, self._unrecorded = self._unrecorded, []
        self._recording = True
        recorded = self.loop.run_in_executor(self._records, self._record, ended)
        recorded.add_done_callback(lambda recorded: self._recorded(ended, recorded))

    def _record(self, ended: list[tuple[Task, Outcome]]) -> None:
        """Record the outcomes of a turn (in the recorder's thread): failures, snoozes and
        hand-backs one by one, the completions together."""
        recorder = self._recorder
        for task, outcome in ended:
            token = handlers.current_task.set(task)
            try:
                recorder.record(task, outcome)
            finally:
                handlers.current_task.reset(token)
        completions, recorder.buffered = recorder.buffered, []
        recorder._record_batches(completions, recorder.db)

    def _recorded(self, ended: list[tuple[Task, Outcome]], recorded: asyncio.Future) -> None:
        if recorded.exception() is not None:
            log.error("Recording outcomes failed: %s", recorded.exception(), extra=event("outcome_not_stored"))
        for task, _outcome in ended:
            self._in_hand[task.role] -= 1
        self._recording = False
        self._flush()
        self._room.set()
        self.worker._doorbell.ring()

    def _wake_roles(self, roles: tuple[str, ...]) -> None:
        for role in self.roles.intersection(roles):
            self._wakes[role].set()
        self._room.set()

    def _abort(self, task_id: int) -> None:
        attempt = self.running.get(task_id)
        if attempt is not None:
            self._wind_down(attempt)

    def _wind_down(self, attempt: Running) -> None:
        """Cancel the handler; its attempt ends as its abort says, with it or ABORT_WIND_DOWN_SECONDS later.
        An attempt in a batch handler's call ends at once (the call goes on for the others, and
        is cancelled when none is left)."""
        call = attempt.call
        if call is not None:
            if self.running.get(attempt.task.id) is attempt:
                self._end(attempt, Outcome(error=handlers.Aborted(attempt.task.abort.reason)))
            if not any(self.running.get(other.task.id) is other for other in call.attempts):
                call.future.cancel()
            return
        if not attempt.winding_down:
            attempt.winding_down = True
            attempt.future.cancel()
            self.loop.call_later(ABORT_WIND_DOWN_SECONDS, self._give_up, attempt)

    def _give_up(self, attempt: Running) -> None:
        task = attempt.task
        if self.running.get(task.id) is attempt:
            log_left_behind(task)
            task.lease.abandon()
            self._end(attempt, Outcome())

    def _time_out(self, batch: Batch) -> None:
        for attempt in [attempt for attempt in self.running.values() if attempt.batch is batch]:
            if not attempt.task.abort.fired:
                log.warning(
                    "Task %s passed its run timeout of %.0f s: aborting it",
                    attempt.task.id,
                    self.worker._run_timeout_of(attempt.task.role),
                    extra=event("task_timed_out", task_id=attempt.task.id),
                )
                attempt.task.abort.fire("timeout")
                self._wind_down(attempt)

    def _shut_down(self) -> None:
        for attempt in list(self.running.values()):
            attempt.task.abort.fire("shutdown")
            self._wind_down(attempt)

    def _on_blocked(self, loop: EventLoopThread) -> None:
        culprit = loop.blocked_by
        log.error(
            "The batch runtime's event loop has been blocked for more than %g s%s: every task on it waits"
            " and /healthz fails until it turns again. Where it is blocked:\n%s",
            self.worker.config.loop_block_limit,
            f" by the handler of task {culprit.id}" if culprit is not None else "",
            loop.blocked_at,
            extra=event("event_loop_blocked"),
        )


class LazyAbortSignal(AbortSignal):
    """An abort signal whose threading.Event is made at the first wait: an Event (a condition and
    its locks) a task was about a quarter of the claims thread's Python time in a drain, and the
    runtime aborts its tasks by cancelling them, so most end with nothing waiting on their signal."""

    _lock = threading.Lock()

    def __init__(self) -> None:
        self._event: threading.Event | None = None  # type: ignore[assignment]
        self.reason: str | None = None

    def fire(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
                if self._event is not None:
                    self._event.set()

    @property
    def fired(self) -> bool:
        return self.reason is not None

    def wait(self, timeout: float | None = None) -> bool:
        with self._lock:
            if self.reason is not None:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)


def _tasks(cursor: Any) -> RowMaker[Task]:
    """A claim's rows (worker_tasks') made Tasks straight from their values: no dict a row."""
    names = [column.name for column in cursor.description or ()]
    at = [names.index(name) for name in TASK_COLUMNS if name not in ("headers", "parent_id")]
    headers_at, parent_at = names.index("headers"), names.index("parent_id")

    def task(values: Any) -> Task:
        # Task's fields in their order: the columns, then headers, parent_id and the abort signal
        # (mypy cannot count a starred list)
        fields = [values[index] for index in at]
        return Task(*fields, dict(values[headers_at] or {}), values[parent_at], LazyAbortSignal())  # type: ignore[call-arg]

    return task


class ClaimsDatabase(Database):
    """The runtime's claims connection: Database's claim, its tasks built for a drain."""

    def claim_and_start_tasks(self, role: str, worker_id: str, max_tasks: int) -> list[Task]:
        conn = self.connect()
        with self._translated(), bounded(self._deadline):
            cursor = conn.cursor(row_factory=_tasks)
            return cursor.execute(CLAIM_AND_START_TASKS, {"role": role, "worker_id": worker_id, "max_tasks": max_tasks}).fetchall()


async def _attempt(registry: handlers.Registry, task: Task) -> Any:
    """The handler through the middlewares (its first step run by BatchRuntime._start)."""
    try:
        result = registry.run(task)
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        end_lease(task)


class _Resumed:
    """Awaits the rest of a coroutine whose first step ran already and waits on `waits_on`:
    each later step as `await` would run it (a value sent in, an error thrown in)."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waits_on: Any) -> None:
        self.coroutine = coroutine
        self.waits_on = waits_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, waits_on = self.coroutine, self.waits_on
        while True:
            try:
                value, step = (yield waits_on), coroutine.send
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # noqa: BLE001 - thrown into the coroutine, as `await` does
                value, step = error, coroutine.throw
            try:
                waits_on = step(value)
            except StopIteration as returned:
                return returned.value


async def _resume(coroutine: Coroutine[Any, Any, Any], waits_on: Any) -> Any:
    return await _Resumed(coroutine, waits_on)


def start_batch_runtime(worker: Worker) -> BatchRuntime:
    """The batch runtime of the worker's async roles (Worker's `batch_runtime`); ConfigurationError
    when none is async, or when their shares leave no room in --concurrency for the others."""
    config = worker.config
    roles = tuple(role for role in worker.roles if worker._is_async(role))
    if not roles:
        raise ConfigurationError(
            f"--batch-runtime runs async handlers, and no role of the worker ({', '.join(worker.roles)})"
            " has one: leave --batch-runtime out"
        )
    others = [role for role in worker.roles if role not in roles]
    shares = sum(map(config.share, roles))
    if others and shares >= config.concurrency:
        raise ConfigurationError(
            f"--batch-runtime: the async roles ({', '.join(roles)}) take {shares} of the --concurrency"
            f" {config.concurrency}, leaving none for {', '.join(others)} (sync handlers): give the"
            " async roles shares (--role ROLE=N) that add up to less"
        )
    return BatchRuntime(worker, roles)
