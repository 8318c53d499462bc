"""The worker: claim tasks, run up to --concurrency handlers at once, heartbeat them, record outcomes.

One process, many tasks at once, on four connections of its own whatever the concurrency, one per
thread, each a short transaction per call (the handlers' connections are apart: a pool sized to the
concurrency, one connection per attempt that asks, pyworker/connections.py):

- the main thread is the dispatcher: it claims as many tasks as it has free slots in one call
  (claim_and_start_tasks), hands each to a handler (pyworker/attempts.py), collects the outcomes
  from a queue, hands them to the OutcomeRecorder (pyworker/outcomes.py: failures, snoozes and
  hand-backs at once, successes buffered), and watches each attempt's run timeout, its wind-down
  after an abort, and the shutdown grace;
- the recorder's thread records the buffered successes together with complete_tasks, while the
  dispatcher goes on claiming;
- a heartbeat thread keeps the worker's registry row and every task it holds fresh with ONE
  heartbeat_tasks call per interval, and turns each task's answer into that task's abort signal;
- a listener thread LISTENs on the worker's own wake channel (on --listen-database-url when given;
  none when the database URL is pooled and no listen URL is given: the worker polls): a role's
  name there means its tasks are ready; 'abort:<task id>', that a task the worker holds was
  cancelled or recovered, and the heartbeat thread beats at once, aborting its handler. It tells
  its state to the worker's metrics, and /readyz fails once it has been down for long
  (pyworker/admin/worker_metrics.py, pyworker/admin/probes.py).

Sync handlers run in a pool of handler threads, at most one per running task, kept and reused
(starting a thread per task costs more than a no-op handler); a handler that will not stop after
its abort is left behind with its thread, and the pool starts another. `async def` handlers run
natively on one asyncio event loop in a thread of its own, cancelled when their attempt aborts.

A worker whose claim comes back empty marks itself waiting (mark_worker_waiting), and an enqueue
wakes one waiting worker per ready task on its channel. The dispatcher sleeps on a doorbell (a
pipe, pyworker/runtime.py) that rings for whichever comes first: a notification, a signal, an
outcome, or an abort.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from pyworker import environment, handlers
from pyworker.config import (
    POOLED_ENVVAR,
    WORKER_ID_ENVVAR,
    WorkerConfig,
    hosts_without_session_attrs,
    read_write_by_default,
)
from pyworker.connections import HandlerConnections
from pyworker.db import (
    WORKER_WAKE_CHANNEL,
    Database,
    UnreadableJson,
    listen_query,
    require_writable,
)
from pyworker.deadlines import CallDeadline, bounded, connection_options
from pyworker.errors import (
    ConfigurationError,
    DatabaseReadOnly,
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    TaskpoolError,
    WorkerFailed,
    translate,
)
from pyworker.logs import event
from pyworker.attempts import (
    ABORT_WIND_DOWN_SECONDS,
    describe,
    EventLoopBlocked,
    EventLoopThread,
    HandlerPool,
    Outcome,
    async_outcome,
    is_async_handler,
    run_attempt,
    run_attempt_async,
)
from pyworker.metrics import WorkerMetrics
from pyworker.outcomes import COMPLETION_BATCH_MAX, OutcomeRecorder, worker_database
from pyworker.task import Task
from pyworker.runtime import (
    Backoff,
    Doorbell,
    Unavailability,
    read_only_notice,
    retry_while_unavailable,
    stop_signals,
)

log = logging.getLogger("pyworker")

T = TypeVar("T")

# What the heartbeat's answer means for the running attempt.
ABORT_REASONS = {
    "cancel_requested": "cancelled",
    "lost": "taken_by_another_worker",
    "not_found": "not_found",
}
# The wake channel's payload when a task the worker holds was cancelled or recovered:
# 'abort:<task id>' (deploy/notify_workers_of_taken_tasks.sql). No role name has a ':'.
TASK_TAKEN_PREFIX = "abort:"
# Before recording them, how long the dispatcher waits for one more outcome to record with them.
COMPLETION_LINGER_SECONDS = 0.002
# heartbeat_tasks takes at most this many tasks a call.
HEARTBEAT_BATCH_MAX = 1000
# The dispatcher sleeps at most this long, so that /healthz can tell a loop that turns from one
# that hangs; a wake-up with nothing to do costs no query.
LOOP_TURN_MAX_SECONDS = 10.0
# The listener checks its idle connection this often (a query within the call's deadline): a
# frozen server sends no notification and no error, and its host's kernel still answers keepalives.
LISTENER_CHECK_SECONDS = 10.0
# The soonest an idle role claims again for a platform's next token: a bucket that shows a token
# due now but hands none out (its tasks' stores busy) must not make the dispatcher spin.
PLATFORM_TOKEN_WAIT_MIN_SECONDS = 0.05

# What serves a worker's /metrics, /healthz and /readyz (pyworker.admin.probes.serve): called as the
# worker is built, it may count the worker's metrics (Worker.metrics); what it returns is entered
# for the worker's run. The core serves none itself, so that a worker without --metrics-port loads
# no HTTP server and no metrics library.
ProbeServing = Callable[["Worker"], contextlib.AbstractContextManager[object]]
# What compares the roles the handlers declare with the database's at start (diff_role): raises
# ConfigurationError to refuse the start.
DeclarationCheck = Callable[[Database, list[handlers.RoleDeclaration]], None]


@dataclass(eq=False)
class Attempt:
    """A task whose handler runs: when it started, its run deadline, and once it is aborted, the
    end of its wind-down. `future` and `event_loop`: an async handler's, and the loop it runs on;
    the future is cancelled on abort."""

    task: Task
    started: float
    deadline: float
    future: concurrent.futures.Future | None = None
    event_loop: EventLoopThread | None = None
    wind_down_until: float | None = None


@dataclass
class RoleState:
    """What the worker knows and counts of one of its roles. The main thread changes it, except
    next_recovery (the heartbeat thread's) and notified (set by the listener thread too)."""

    # How many of its tasks run at once at most (its --role ROLE=N share).
    share: int
    # Its run timeout and stale threshold, from register_worker.
    run_timeout: float = 3600.0
    stale_threshold: float | None = None
    # When the heartbeat thread next asks to recover its stale tasks (time.monotonic()).
    next_recovery: float = 0.0
    # How many of the tasks the worker holds wait for a slot, and run.
    waiting: int = 0
    running: int = 0
    # Whether its handler is async (asked once, at its first task).
    is_async: bool | None = None
    # Its last claim found nothing: claim again on a notification for the role (notified) or
    # after the poll interval (next_poll).
    idle: bool = False
    next_poll: float = 0.0
    notified: bool = False
    # Whether the worker held tasks when it last claimed for it (drain mode: their outcomes,
    # once recorded, may have made tasks ready, so an empty claim then does not end the drain).
    held_at_claim: bool = False

    @property
    def held(self) -> int:
        return self.waiting + self.running


class Worker:
    def __init__(
        self,
        config: WorkerConfig,
        registry: handlers.Registry = handlers.registry,
        *,
        until_empty: bool = False,
        serve_probes: ProbeServing | None = None,
        batch_runtime: Callable[[Worker], Any] | None = None,
        compare_declarations: DeclarationCheck | None = None,
    ) -> None:
        """`until_empty`: drain mode (pyworker.testing.drain): return from run() once a claim
        made with nothing in flight finds nothing, instead of sleeping until a signal; no signal
        handlers and no listener, so it runs in any thread (a test's). `serve_probes`: what
        serves the probes of config.metrics_port (pyworker.admin.probes.serve), from before the
        worker registers until it has stopped. `batch_runtime`: what runs the async roles once
        the worker has registered (`--batch-runtime`: pyworker.admin.batches), its shares of the
        concurrency taken from the dispatcher's. `compare_declarations`: what compares the roles
        the handlers declare with the database's before the worker registers, when any of its
        roles is declared (`pyworker`: pyworker.admin.declarations.compare_declarations)."""
        if config.metrics_port is not None and serve_probes is None:
            raise ConfigurationError(
                f"metrics port {config.metrics_port}: nothing serves the probes"
                " (pass serve_probes=pyworker.admin.probes.serve, as `pyworker --metrics-port` does)"
            )
        # A multi-host URL without target_session_attrs may land on a standby: the worker's own
        # connections ask for the primary (warned about at start).
        self._hosts_without_session_attrs = hosts_without_session_attrs(config.database_url)
        config = dataclasses.replace(
            config,
            database_url=read_write_by_default(config.database_url),
            listen_database_url=config.listen_database_url and read_write_by_default(config.listen_database_url),
        )
        self.config = config
        self.registry = registry
        self.until_empty = until_empty
        # How many tasks the worker claimed in all; whether it has registered and begun to claim.
        self.taken = 0
        self.started = False
        self.roles = config.role_names
        self._role_states = {role: RoleState(share=config.share(role)) for role in self.roles}
        self.metrics = WorkerMetrics()
        self._probes = serve_probes and serve_probes(self)
        self.db = worker_database(config, self.metrics, "dispatcher")
        self.host = socket.gethostname()
        # With one run timeout for all roles, the attempts' run deadlines come in the order they began.
        self._one_run_timeout = True
        # How many tasks the worker holds at most: --concurrency running, and with a larger
        # --prefetch the rest claimed ahead, waiting their turn.
        self.capacity = max(config.concurrency, config.prefetch)
        self._concurrency = config.concurrency
        self._batch_runtime = batch_runtime
        self._compare_declarations = compare_declarations
        self._batch: Any = None
        self._dispatched_roles = self.roles
        self._doorbell = Doorbell()
        self._exiting = threading.Event()
        # Set to heartbeat now rather than at the next interval (a notification that a held task
        # was cancelled or taken away), and when exiting.
        self._beat_now = threading.Event()
        # The tasks claimed and not yet recorded (heartbeated), those not begun yet, those whose
        # handler runs (in the order they began), those of these aborted and winding down, and
        # the completions waiting to be recorded in one call. Only the main thread changes them,
        # except that the recorder thread drops from _held the tasks it recorded; the heartbeat
        # thread reads copies.
        self._held: dict[int, Task] = {}
        self._waiting: deque[Task] = deque()
        self._waiting_ids: set[int] = set()
        self._running: dict[int, Attempt] = {}
        self._winding_down: dict[int, Attempt] = {}
        self._recorder = OutcomeRecorder(
            config, self.db, self._held, self._run_timeout_of, self._doorbell, self.metrics
        )
        # When the dispatcher last turned (its loop, or a try of a database call): /healthz.
        self.last_turn = time.monotonic()
        # What the handlers and the heartbeat thread tell the main thread, with a ring.
        self._outcomes: queue.SimpleQueue[tuple[Attempt, Outcome]] = queue.SimpleQueue()
        self._aborted: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._pool = HandlerPool()
        # The handlers' own connections, one per attempt that asks (task.database()).
        self._connections = HandlerConnections(
            config.database_url,
            size=config.concurrency,
            application_name=f"pyworker {config.worker_id} handler",
            pooled=config.pooled,
        )
        self._event_loop: EventLoopThread | None = None
        # Loops replaced because a handler blocked them, while their thread lives; the loops the
        # watchdogs report blocked (for the main thread); the sync attempts ended while their
        # handler still runs, each holding a pool thread until it returns.
        self._retired_loops: list[EventLoopThread] = []
        self._blocked_loops: queue.SimpleQueue[EventLoopThread] = queue.SimpleQueue()
        self._left_behind: set[Attempt] = set()
        # Claiming stops while too many threads are left behind (--max-abandoned-threads), and
        # until this time (time.monotonic()) after a handler thread failed to start.
        self._saturated = False
        self.thread_retry_at: float | None = None
        # While claims find the database away or read-only: when to claim again.
        self._claims_unavailable = Unavailability("claim")
        self._claim_retry_at: float | None = None
        # Where the next round of claims starts: each role in turn goes first.
        self._claim_turn = 0
        # Whether the worker has somewhere to LISTEN (not pooled without a listen URL): only then
        # does it ask to be woken.
        self._wakeable = config.listen_url is not None
        self._grace_over = False
        # Written by the signal handler: plain attributes, no locks (see the module docstring).
        self._stop_requested_at: float | None = None
        self._signals = 0

    # Start-up and shut-down

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; the process exit code."""
        # Whatever happens (a refusal to start, a stop before registering, a run to its end),
        # nothing is left open behind it: for a drain in a test process as for a worker process.
        with contextlib.ExitStack() as opened:
            # Drain mode claims until nothing is ready, never waits for a notification, and leaves
            # the signals to the test process that runs it. Otherwise the signals are caught before
            # anything else: a SIGTERM while the worker starts stops it cleanly, never by default.
            if not self.until_empty:
                opened.enter_context(stop_signals(self._doorbell, self._on_signal))
            opened.callback(self._doorbell.close)
            opened.callback(self.db.close)
            if self._probes is not None:
                opened.enter_context(self._probes)
            self.started = self._start()
            if not self.started:
                log.info("Worker %s stopped before it registered", self.config.worker_id, extra=event("worker_stopped"))
                return 0
            threads = [
                threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True),
                threading.Thread(target=self._listen_loop, name="listener", daemon=True),
            ]
            if self.until_empty:
                threads.pop()
            elif self.config.listen_url is None:
                threads.pop()
                log.info(
                    "No LISTEN: the database URL is pooled (--pooled) and no --listen-database-url is given;"
                    " polling for tasks every %g s",
                    self.config.poll_interval,
                    extra=event("listener_disabled"),
                )
            self._recorder.start()
            for thread in threads:
                thread.start()
            try:
                self._loop()
            finally:
                # Every completion handed over is recorded before the worker deregisters.
                self._recorder.stop()
                self._exiting.set()
                self._beat_now.set()
                if self._event_loop is not None:
                    # Its thread and its watchdog's end with it (a drain in a test process leaves none behind).
                    self._event_loop.retire()
                for thread in threads:
                    thread.join(timeout=5)
                self._deregister()
                self._connections.close()
        log.info("Worker %s stopped", self.config.worker_id, extra=event("worker_stopped"))
        return 0

    def event_loops(self) -> list[EventLoopThread]:
        """The current event loop, if any, and the replaced ones whose thread still lives."""
        current, batch = self._event_loop, self._batch and self._batch.event_loop
        return [loop for loop in (current, batch, *self._retired_loops) if loop is not None and loop.alive]

    def abandoned_threads(self) -> int:
        """Handler threads still running for attempts already ended: sync handlers left behind,
        and the threads of replaced event loops."""
        return len(self._left_behind) + sum(loop.alive for loop in self._retired_loops)

    def _start(self) -> bool:
        """Check the schema, register, check the role's settings: fail fast on what a retry
        cannot fix; False when told to stop before it registered. Everything comes through
        taskpool_worker's grants: register_worker answers the role's settings (a worker login
        cannot read task_roles)."""
        config = self.config
        if self._hosts_without_session_attrs is not None:
            log.warning(
                "The database URL names several hosts (%s) and no target_session_attrs: libpq takes the"
                " first that answers, a standby included. The worker's own connections use"
                " target_session_attrs=read-write; add target_session_attrs=read-write to the URL so"
                " that everything else using it lands on the primary too",
                self._hosts_without_session_attrs,
                extra=event("multi_host_url_without_target_session_attrs"),
            )
        self._retrying("connect", self.db.check_schema)
        if self.stopping:
            return False
        declarations = [self.registry.declaration(role) for role in self.roles]
        declared = [declaration for declaration in declarations if declaration is not None]
        if declared and self._compare_declarations is not None:
            compare = self._compare_declarations
            self._retrying("compare the role declarations", lambda: compare(self.db, declared))
            if self.stopping:
                return False
        try:
            registrations = self._retrying(
                "register",
                lambda: self.db.register_worker(
                    config.worker_id, self.roles, self.host, os.getpid(), config.concurrency
                ),
            )
        except InvalidInput as error:
            # An unknown role: register_worker names the known ones.
            raise ConfigurationError(str(error)) from error
        if registrations is None:
            return False
        for registration in registrations:
            state = self._role_states[registration["role"]]
            state.run_timeout = registration["run_timeout"].total_seconds()
            state.stale_threshold = registration["stale_threshold"].total_seconds()
        self._one_run_timeout = len({state.run_timeout for state in self._role_states.values()}) == 1
        try:
            for registration in registrations:
                self._check_settings(registration)
            # Its claims begin at once: the roles' run timeouts are known by now.
            self._batch = self._batch_runtime and self._batch_runtime(self)
        except ConfigurationError:
            self._deregister()
            raise
        if self._batch is not None:
            self._dispatched_roles = tuple(role for role in self.roles if role not in self._batch.roles)
            self._concurrency -= sum(map(config.share, self._batch.roles))
            self.capacity = max(self._concurrency, config.prefetch)
        serves = (
            f"role: {self.roles[0]}"
            if len(self.roles) == 1
            else f"roles: {', '.join(map(str, config.roles))} (up to {config.concurrency} tasks at once)"
        )
        log.info("Starting worker %s for %s", config.worker_id, serves, extra=event("worker_started"))
        return True

    def _check_settings(self, registration: dict[str, Any]) -> None:
        """A handler for the role, and a heartbeat that keeps its tasks fresh."""
        config = self.config
        role = registration["role"]
        if config.command:
            self.registry.command(role, config.command)
        if self.registry.get(role) is None:
            known = ", ".join(self.registry.roles) or "none"
            raise ConfigurationError(
                f"no handler for role {role!r} (handlers are registered for: {known});"
                " load one with --handlers MODULE or bind a command with --command"
            )
        # Stale recovery takes back a task whose heartbeat is older than the threshold: a worker
        # beating less often would see its running tasks re-run elsewhere. Refused rather than
        # warned about: every task the worker ran would run twice, which no log line repairs.
        stale_threshold = registration["stale_threshold"].total_seconds()
        if config.heartbeat_interval >= stale_threshold:
            raise ConfigurationError(
                f"the heartbeat interval ({config.heartbeat_interval:g} s) must be shorter than"
                f" the stale_threshold of role {role!r} ({stale_threshold:g} s), or stale recovery"
                " takes back tasks while they run: lower --heartbeat-interval-ms"
            )
        if config.heartbeat_interval > stale_threshold / 2:
            log.warning(
                "The heartbeat interval (%g s) is more than half the stale_threshold of role %r (%g s):"
                " one late heartbeat and a running task is recovered and run again",
                config.heartbeat_interval,
                role,
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

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if self._signals == 1:
            self._stop_requested_at = time.monotonic()
            log.info(
                "Received %s: finishing the tasks in flight (grace %.0f s), then exiting",
                signal.Signals(signum).name,
                self.config.shutdown_grace,
                extra=event("worker_stopping"),
            )
            return
        log.warning("Received %s again: exiting now", signal.Signals(signum).name, extra=event("worker_exiting"))
        handlers.exiting_now()
        os._exit(1)

    def request_stop(self) -> None:
        """Stop as SIGTERM does (drain(): its timeout); from any thread."""
        if self._stop_requested_at is None:
            self._stop_requested_at = time.monotonic()
        self._doorbell.ring()

    @property
    def stopping(self) -> bool:
        return self._stop_requested_at is not None

    def running(self, role: str) -> int:
        """How many tasks of the role run now (read from the probes' threads)."""
        return self._role_states[role].running

    @property
    def roles_with_work(self) -> list[str]:
        """The roles whose last claim found tasks (a drain stopped at its timeout names them)."""
        return [role for role, state in self._role_states.items() if not state.idle]

    # The loop

    def _loop(self) -> None:
        """Dispatch until stopped and every task in flight is finished or handed back."""
        while True:
            # Drained before looking, so that whatever rings after the look wakes the wait below.
            self._doorbell.drain()
            now = self.last_turn = time.monotonic()
            if self._batch is not None and self._batch.failed is not None:
                raise self._batch.failed
            self._collect(now)
            self._watch(now)
            if self._recorder.flush_due(now):
                self._recorder.flush()
            if self.stopping:
                if self._waiting:
                    self._hand_back_waiting("the worker is stopping")
                if self._batch is not None:
                    self._batch.stop()
                if not self._running and (self._batch is None or self._batch.quiet):
                    break
            else:
                self._check_threads(now)
                self._begin_waiting(now)
                if self._claim_roles(now):
                    continue
            # Nothing else to do: record the buffered completions, then sleep. Unless a handler
            # finishes at once (short tasks): then go on, and record them together later.
            if self._recorder.buffered and self._running and self._doorbell.wait(COMPLETION_LINGER_SECONDS):
                continue
            self._recorder.flush()
            if (
                self.until_empty
                and not self._held
                and not self.stopping
                and not self._claiming_paused
                and not self._claims_deferred(time.monotonic())
            ):
                # Drained: nothing in flight, and a claim made with nothing in flight found
                # nothing. Else outcomes recorded since the last claim (follow-ups, a retry or a
                # snooze due now) may have made tasks ready: claim again at once.
                if (self._batch is None or self._batch.quiet) and all(state.idle and not state.held_at_claim for state in self._role_states.values()):
                    break
                if self._batch is None or not self._batch.claiming:
                    self._notify(self.roles)
                    continue
            self._doorbell.wait(min(self._sleep_time(time.monotonic()), LOOP_TURN_MAX_SECONDS))
        self._recorder.flush()

    def _hand_back_waiting(self, because: str) -> None:
        """Release the tasks claimed and not begun, no retry spent."""
        self._recorder.flush()
        waiting = list(self._waiting)
        self._waiting.clear()
        self._waiting_ids.clear()
        for state in self._role_states.values():
            state.waiting = 0
        self._recorder.release(waiting, because=because)

    def _run_timeout_of(self, role: str) -> float:
        return self._role_states[role].run_timeout

    @property
    def _claiming_paused(self) -> bool:
        return self._saturated or self.thread_retry_at is not None

    def _check_threads(self, now: float) -> None:
        """Stop claiming while --max-abandoned-threads handler threads are left behind, or for a
        poll interval after a handler thread failed to start, handing back the tasks not begun:
        a worker at its thread limit would otherwise die with the tasks it just claimed."""
        self._retired_loops = [loop for loop in self._retired_loops if loop.alive]
        if self.thread_retry_at is not None and now >= self.thread_retry_at:
            self.thread_retry_at = None
        abandoned = self.abandoned_threads()
        saturated = abandoned >= self.config.max_abandoned_threads
        if saturated and not self._saturated:
            log.error(
                "%d handler threads are left behind, still running (--max-abandoned-threads %d):"
                " claiming stops and /healthz fails until one of them returns; the tasks not begun are handed back",
                abandoned,
                self.config.max_abandoned_threads,
                extra=event("claiming_stopped"),
            )
        elif self._saturated and not saturated:
            log.info(
                "A handler thread left behind has returned (%d left behind): claiming again",
                abandoned,
                extra=event("claiming_resumed"),
            )
        self._saturated = saturated
        if self._claiming_paused and self._waiting:
            self._hand_back_waiting("the worker claims no more for now (its handler threads are used up)")

    def _free_slots(self, role: str) -> int:
        """The role's handler slots free, within the worker's, as long as the outcomes not
        recorded yet leave room to claim; none while claiming is paused (_check_threads)."""
        if self._claiming_paused:
            return 0
        state = self._role_states[role]
        return min(
            state.share - state.held,
            self._concurrency - len(self._running) - len(self._waiting),
            self._unrecorded_room(),
        )

    def _unrecorded_room(self) -> int:
        """How many more tasks the worker may hold before its recorder catches up.

        A task is held from its claim until its outcome is recorded. A handler that returns at
        once frees its slot long before the recorder has written its outcome; without this bound a
        dispatcher faster than the recorder claimed on and on (a no-op drain held 48,000 tasks
        that had run but were still running in the database, all to be run again after a crash).
        Two full batches of outcomes (COMPLETION_BATCH_MAX each) may wait: one being recorded while
        the next fills. Measured on no-op drains, back to back: with room for one batch the
        dispatcher stalled while each was recorded (--concurrency 8: 5,200-6,400 tasks/s against
        7,400-7,750 with two; --prefetch 100: 8,700-9,500 against 10,100).
        """
        return self.capacity + 2 * COMPLETION_BATCH_MAX - len(self._held)

    def _claim_due(self, role: str, now: float) -> bool:
        """A free slot for the role, and its last claim found tasks, or a notification for it
        came, or it is time to poll."""
        if self._free_slots(role) <= 0 or self._claims_deferred(now):
            return False
        state = self._role_states[role]
        return not state.idle or state.notified or now >= state.next_poll

    def _claims_deferred(self, now: float) -> bool:
        """The last claim found the database away or read-only, and its backoff runs on."""
        return self._claim_retry_at is not None and now < self._claim_retry_at

    def _claim_roles(self, now: float) -> bool:
        """Claim for each role that has room and may have tasks, each role first in turn; True
        when tasks came."""
        roles = self._dispatched_roles
        if not roles:
            return False
        self._claim_turn = (self._claim_turn + 1) % len(roles)
        claimed = False
        for role in roles[self._claim_turn :] + roles[: self._claim_turn]:
            if self._claim_due(role, now):
                tasks = self._claim(role)
                if tasks:
                    self._take(tasks, now)
                    claimed = True
        return claimed

    def _claim(self, role: str) -> list[Task]:
        """Claim what the role's free slots (or the prefetch) take; marked waiting for the role
        when none of its tasks is ready."""
        config = self.config
        state = self._role_states[role]
        state.notified = False
        state.held_at_claim = bool(self._held)
        # The free slots, or with a larger --prefetch as many more as it holds.
        want = min(
            max(state.share, config.prefetch) - state.held,
            self.capacity - len(self._running) - len(self._waiting),
            self._unrecorded_room(),
        )

        def claim() -> list[Task] | None:
            try:
                tasks = self.db.claim_and_start_tasks(role, config.worker_id, want)
            except DatabaseUnavailable as error:
                # Claim again after a backoff; the loop turns meanwhile, handing the outcomes
                # of the running attempts to the recorder, which keeps them until they are written.
                self._claim_retry_at = time.monotonic() + self._claims_unavailable.met(error)
                return None
            self._claim_retry_at = None
            self._claims_unavailable.answered()
            self.metrics.claimed_tasks(role, len(tasks))
            return tasks

        tasks = claim()
        if tasks is None:
            return []
        # A worker that cannot listen is never marked waiting: it would take the wake-ups meant
        # for those that can.
        if not tasks and self._wakeable and self._mark_waiting(role):
            # A task committed just before the mark found no one waiting: look once more.
            tasks = claim() or []
        state.idle = not tasks
        if not tasks:
            state.next_poll = time.monotonic() + self._idle_wait(role)
        return tasks

    def _idle_wait(self, role: str) -> float:
        """How long an idle role sleeps before it claims again: the poll interval, or less when
        ready tasks of the role wait for their platform's next token, which no enqueue announces."""
        try:
            wait = self.db.platform_token_wait(role)
        except DatabaseUnavailable:
            wait = None
        if wait is None:
            return self.config.poll_interval
        return min(self.config.poll_interval, max(wait, PLATFORM_TOKEN_WAIT_MIN_SECONDS))

    def _mark_waiting(self, role: str) -> bool:
        """Ask to be woken for the role's next task; True when newly asked."""
        try:
            marked = self._retrying("wait", lambda: self.db.mark_worker_waiting(self.config.worker_id, role))
        except NotFound:
            # Unregistered meanwhile (the heartbeat registers again): poll until then.
            return False
        return bool(marked)

    def _take(self, tasks: list[Task], now: float) -> None:
        """Hold the claimed tasks and begin as many as there are free slots."""
        self.taken += len(tasks)
        for task in tasks:
            self._held[task.id] = task
            self._waiting.append(task)
            self._waiting_ids.add(task.id)
            self._role_states[task.role].waiting += 1
        log_claimed(tasks)
        self._begin_waiting(now)

    def _begin_waiting(self, now: float) -> None:
        """Begin the tasks waiting their turn, in the order claimed, as their roles' shares allow."""
        if not self._waiting or len(self._running) >= self._concurrency:
            return
        blocked: list[Task] = []
        while self._waiting and len(self._running) < self._concurrency and not self._claiming_paused:
            task = self._waiting.popleft()
            state = self._role_states[task.role]
            if state.running >= state.share:
                blocked.append(task)
                continue
            self._waiting_ids.discard(task.id)
            state.waiting -= 1
            self._begin(task, now)
        self._waiting.extendleft(reversed(blocked))

    def _begin(self, task: Task, now: float) -> None:
        """Give the task to its handler: a pool thread, or the event loop for an async one."""
        if task.abort.fired:
            # Aborted while it waited its turn (cancelled, or lost): not run at all.
            self._decided(task, Outcome(duration=0.0))
            return
        if isinstance(task.payload, UnreadableJson):
            # No handler can be given it, and no retry reads it better.
            self._decided(task, Outcome(refused=f"the payload cannot be read: {task.payload.reason}", duration=0.0))
            return
        state = self._role_states[task.role]
        attempt = Attempt(task, now, now + state.run_timeout)
        task.lease = self._connections.lease()
        self._running[task.id] = attempt
        state.running += 1
        is_async = self._is_async(task.role)
        try:
            if not is_async:
                self._pool.submit(lambda: self._attempt(attempt))
            elif self._event_loop is None:
                self._event_loop = EventLoopThread(self.config.loop_block_limit, self._on_loop_blocked)
        except RuntimeError as error:
            # "can't start new thread": the process is at its thread limit.
            self.thread_retry_at = now + self.config.poll_interval
            log.error(
                "Task %s: no thread could start for its handler (%s): handing it back and claiming"
                " no more for %g s",
                task.id,
                error,
                self.config.poll_interval,
                extra=event("handler_thread_failed", task_id=task.id),
            )
            self._drop(attempt, now)
            self._recorder.release([task], duration=0.0, because="no thread could start for its handler")
            return
        if is_async:
            attempt.event_loop = self._event_loop
            attempt.future = self._event_loop.submit(run_attempt_async(self.registry, task))
            attempt.future.add_done_callback(lambda future: self._async_done(attempt, future))

    def _is_async(self, role: str) -> bool:
        state = self._role_states[role]
        if state.is_async is None:
            state.is_async = is_async_handler(self.registry.get(role))
        return state.is_async

    def _attempt(self, attempt: Attempt) -> None:
        """Run a sync handler through the middlewares (in a pool thread); queue its outcome."""
        self._outcomes.put((attempt, run_attempt(self.registry, attempt.task)))
        self._doorbell.ring()

    def _async_done(self, attempt: Attempt, future: concurrent.futures.Future) -> None:
        self._outcomes.put((attempt, async_outcome(attempt.task, future)))
        self._doorbell.ring()

    def _on_loop_blocked(self, loop: EventLoopThread) -> None:
        """A watchdog saw its loop blocked past the limit (called from the watchdog's thread)."""
        self._blocked_loops.put(loop)
        self._doorbell.ring()

    def _loop_blocked(self, blocked: EventLoopThread, now: float) -> None:
        """An async handler's step has held the event loop past --loop-block-limit-seconds: its
        attempt fails, the other attempts on that loop are handed back (no retry spent: their
        coroutines are bound to the blocked loop, so they run again from the start), and the
        async handlers run on a new loop from now on; the blocked one is cancelled and stops
        once the handler lets go of it. When the step that blocks belongs to no attempt, no one
        is to blame and the loop stays: /healthz fails until it turns again."""
        if blocked is not self._event_loop:
            return
        limit = self.config.loop_block_limit
        culprit = blocked.blocked_by
        if culprit is None:
            log.error(
                "The event loop has been blocked for more than %g s, by no handler's step: /healthz fails"
                " until it turns again. Where it is blocked:\n%s",
                limit,
                blocked.blocked_at,
                extra=event("event_loop_blocked"),
            )
            return
        log.error(
            "Task %s: its handler has blocked the event loop for more than %g s: failing its attempt,"
            " handing back the other async tasks of that loop, and starting a new loop",
            culprit.id,
            limit,
            extra=event("event_loop_replaced", task_id=culprit.id),
        )
        self._event_loop = None
        self._retired_loops = [*self._retired_loops, blocked]
        self.metrics.event_loop_replaced()
        for attempt in [attempt for attempt in self._running.values() if attempt.event_loop is blocked]:
            task = attempt.task
            # Its coroutine keeps what it borrowed until the blocked loop lets it go.
            task.lease.abandon()
            if task is culprit:
                error = EventLoopBlocked(f"the handler blocked the event loop for more than {limit:g} s")
                if blocked.blocked_at:
                    error.add_note(f"Where the event loop was blocked:\n{blocked.blocked_at}")
                task.abort.fire("blocked_event_loop")
                self._end(attempt, Outcome(error=error), now)
            elif task.abort.fired:
                # Aborted already (cancelled, timed out, lost): it ends as its abort says.
                self._end(attempt, Outcome(), now)
            else:
                task.abort.fire("event_loop_replaced")
                duration = self._drop(attempt, now)
                self._recorder.release(
                    [task], duration=duration, because="another handler blocked its event loop: it runs again"
                )
        blocked.retire()

    def _collect(self, now: float) -> None:
        """Record the outcomes the handlers queued, and start the wind-down of aborted attempts."""
        for attempt, outcome in drained(self._outcomes):
            # An attempt left behind or handed back has its outcome already.
            if self._running.get(attempt.task.id) is attempt:
                self._end(attempt, outcome, now)
            else:
                # A handler left behind returned: its thread serves the pool again.
                self._left_behind.discard(attempt)
            if attempt.future is None:
                # A pool thread is idle: the next sync handler needs no new one.
                self.thread_retry_at = None
        for blocked in drained(self._blocked_loops):
            self._loop_blocked(blocked, now)
        for task_id in drained(self._aborted):
            attempt = self._running.get(task_id)
            if attempt is not None:
                self._wind_down(attempt, now)

    def _watch(self, now: float) -> None:
        """Time out attempts past their run timeout, end those whose wind-down is over, and at
        the end of the shutdown grace abort what still runs."""
        for attempt in list(self._winding_down.values()):
            if now >= attempt.wind_down_until:
                task = attempt.task
                if attempt.future is None:
                    self._left_behind.add(attempt)
                # Its handler runs on: the connection it holds is no longer the attempt's.
                task.lease.abandon()
                if task.abort.reason == "shutdown":
                    self._end(attempt, Outcome(handed_back=True), now)
                    continue
                # The attempt ends here, as the abort says, whatever the handler does later: it
                # keeps its thread, and the pool starts another for the next task.
                log_left_behind(task)
                self._end(attempt, Outcome(), now)
        timed_out = []
        for attempt in self._running.values():
            if attempt.deadline > now:
                # In the order they began: with one run timeout the deadlines come in that order.
                if self._one_run_timeout:
                    break
                continue
            if not attempt.task.abort.fired:
                timed_out.append(attempt)
        for attempt in timed_out:
            log.warning(
                "Task %s passed its run timeout of %.0f s: aborting it",
                attempt.task.id,
                self._run_timeout_of(attempt.task.role),
                extra=event("task_timed_out", task_id=attempt.task.id),
            )
            attempt.task.abort.fire("timeout")
            self._wind_down(attempt, now)
        if self.stopping and not self._grace_over and now >= self._stop_requested_at + self.config.shutdown_grace:
            self._grace_over = True
            if self._batch is not None:
                self._batch.shutdown()
            for attempt in list(self._running.values()):
                # Handed back only when the shutdown is why the attempt stops: one that timed out
                # (or was cancelled, or lost) meanwhile ends as that says.
                attempt.task.abort.fire("shutdown")
                # Let a command handler kill its process group before the task is handed back.
                self._wind_down(attempt, now)

    def _wind_down(self, attempt: Attempt, now: float) -> None:
        """The attempt is aborted: its handler has ABORT_WIND_DOWN_SECONDS to stop."""
        if attempt.wind_down_until is None:
            attempt.wind_down_until = now + ABORT_WIND_DOWN_SECONDS
            self._winding_down[attempt.task.id] = attempt
            if attempt.future is not None:
                attempt.future.cancel()

    def _sleep_time(self, now: float) -> float:
        """Until the next thing to watch: a run deadline, a wind-down, the grace, the poll."""
        deadlines = [attempt.wind_down_until for attempt in self._winding_down.values()]
        if self.thread_retry_at is not None:
            deadlines.append(self.thread_retry_at)
        if self._claims_deferred(now):
            deadlines.append(self._claim_retry_at)
        for attempt in self._running.values():
            if not attempt.task.abort.fired:
                deadlines.append(attempt.deadline)
                if self._one_run_timeout:
                    break
        if self.stopping:
            if not self._grace_over:
                deadlines.append(self._stop_requested_at + self.config.shutdown_grace)
        else:
            for role, state in self._role_states.items():
                if self._free_slots(role) > 0:
                    deadlines.append(state.next_poll if state.idle else now + self.config.poll_interval)
        return max(0.0, min(deadlines, default=now + self.config.poll_interval) - now)

    def _end(self, attempt: Attempt, outcome: Outcome, now: float) -> None:
        """The attempt is over: record how."""
        task = attempt.task
        if task.abort.reason == "shutdown":
            outcome.handed_back = True
        outcome.duration = self._drop(attempt, now)
        self._decided(task, outcome)

    def _drop(self, attempt: Attempt, now: float) -> float:
        """The attempt no longer runs: how long it ran."""
        task = attempt.task
        del self._running[task.id]
        self._role_states[task.role].running -= 1
        self._winding_down.pop(task.id, None)
        duration = now - attempt.started
        self.metrics.ran(task.role, duration)
        return duration

    def _decided(self, task: Task, outcome: Outcome) -> None:
        """Record the outcome, in the task's context (its log lines carry its id)."""
        token = handlers.current_task.set(task)
        try:
            self._recorder.record(task, outcome)
        finally:
            handlers.current_task.reset(token)

    def _retrying(self, what: str, call: Callable[[], T], *, interruptible: bool = True) -> T | None:
        """`call()`, retried while the database is unreachable; interruptible calls give up
        (None) once the worker is stopping. A repeated completion is a no-op, and an attempt
        already ended answers TaskLost: the fenced functions make the retry safe. Each try counts
        as a turn of the loop for /healthz: a dispatcher waiting out an outage is alive."""

        def turn() -> T:
            self.last_turn = time.monotonic()
            return call()

        return retry_while_unavailable(what, turn, stopping=(lambda: self.stopping) if interruptible else None)

    # Background threads

    def _heartbeat_loop(self) -> None:
        db = worker_database(self.config, self.metrics, "heartbeat")
        try:
            while True:
                self._beat_now.wait(self.config.heartbeat_interval)
                self._beat_now.clear()
                if self._exiting.is_set():
                    break
                try:
                    self._beat(db)
                except DatabaseReadOnly as error:
                    self.metrics.heartbeat_failed()
                    read_only_notice.seen("heartbeat", error, self.config.heartbeat_interval)
                    continue
                except TaskpoolError as error:
                    self.metrics.heartbeat_failed()
                    log.warning("Heartbeat failed: %s", error, extra=event("heartbeat_failed"))
                else:
                    read_only_notice.cleared()
                # A drain (a test's worker) leaves stale tasks to the test, which recovers them
                # when it means to.
                if not self.until_empty:
                    try:
                        self._recover_stale(db)
                    except DatabaseReadOnly as error:
                        read_only_notice.seen("stale recovery", error, self.config.heartbeat_interval)
                    except TaskpoolError as error:
                        log.warning("Stale recovery failed: %s", error, extra=event("stale_recovery_failed"))
        finally:
            db.close()

    def _beat(self, db: Database) -> None:
        """Keep the registry row and every task the worker holds fresh, with one heartbeat_tasks
        call (per 1000 tasks); abort each attempt that was taken away or cancelled."""
        config = self.config
        if not db.heartbeat_worker(config.worker_id):
            db.register_worker(config.worker_id, self.roles, self.host, os.getpid(), config.concurrency)
        # A copy (dict.copy is atomic): the main thread adds and drops tasks meanwhile.
        held = list(self._held.copy().values())
        for first in range(0, len(held), HEARTBEAT_BATCH_MAX):
            tasks = held[first : first + HEARTBEAT_BATCH_MAX]
            answers = db.heartbeat_tasks(config.worker_id, tasks)
            for task in tasks:
                reason = ABORT_REASONS.get(answers.get(task.id, ""))
                # Only a task whose handler runs or has yet to run can be aborted: once its
                # outcome is decided, the answer may be about that very outcome, recorded while
                # we asked.
                if reason is None or task.abort.fired or not self._undecided(task):
                    continue
                log.warning(
                    "Task %s: heartbeat answered %s: aborting the handler",
                    task.id,
                    answers[task.id],
                    extra=event("task_aborted", task_id=task.id),
                )
                task.abort.fire(reason)
                if self._batch is not None and task.id in self._batch.running:
                    self._batch.abort(task)
                    continue
                self._aborted.put(task.id)
                self._doorbell.ring()

    def _recover_stale(self, db: Database) -> None:
        """Ask, each half stale_threshold of a role, to recover the role's stale tasks: where
        neither pg_cron nor `pyworker scheduler` runs the tick, a task whose worker died would
        otherwise stay running for ever. The database lets one worker of the role recover per
        interval; the others' calls return at once. Never on the claim path: this is the
        heartbeat thread."""
        now = time.monotonic()
        for role, state in self._role_states.items():
            stale_threshold = state.stale_threshold
            if stale_threshold is None or now < state.next_recovery:
                continue
            state.next_recovery = now + stale_threshold / 2
            recovered = db.recover_stale_tasks_of_role(role)
            if recovered:
                log.info(
                    "Recovered %d stale task(s) of role %s (no heartbeat for its stale_threshold, %g s)",
                    recovered,
                    role,
                    stale_threshold,
                    extra=event("stale_tasks_recovered"),
                )

    def _undecided(self, task: Task) -> bool:
        """The task waits its turn or its handler runs (read from another thread: lookups only)."""
        if task.id in self._waiting_ids or (self._batch is not None and task.id in self._batch.running):
            return True
        attempt = self._running.get(task.id)
        return attempt is not None and attempt.task is task

    def _listen_loop(self) -> None:
        try:
            self._listen()
        finally:
            if not self._exiting.is_set():
                self.metrics.listener_lost("the listener thread stopped on an unexpected error")

    def _listen(self) -> None:
        backoff = Backoff()
        connected_before = False
        url = self.config.listen_url
        while not self._exiting.is_set():
            deadline: CallDeadline | None = None
            try:
                with psycopg.connect(
                    url,
                    autocommit=True,
                    application_name=f"pyworker {self.config.worker_id} listener",
                    **connection_options(url),
                ) as conn:
                    if self.config.call_timeout:
                        deadline = CallDeadline(conn, self.config.call_timeout)
                    if connected_before:
                        self.metrics.reconnected("listener")()
                    connected_before = True
                    with bounded(deadline):
                        # A standby takes no LISTEN, and no task is enqueued on a read-only server:
                        # reconnect until the URL leads to the primary.
                        require_writable(conn)
                        channel = conn.execute(WORKER_WAKE_CHANNEL, {"worker_id": self.config.worker_id}).fetchone()[0]
                        conn.execute(listen_query(channel))
                    self.metrics.listener_connected()
                    # Whatever was enqueued while nobody listened: look once.
                    self._notify(self.roles)
                    backoff.reset()
                    checked = time.monotonic()
                    while not self._exiting.is_set():
                        for notification in conn.notifies(timeout=1.0):
                            self.metrics.listener_heard()
                            if notification.payload.startswith(TASK_TAKEN_PREFIX):
                                self._beat_now.set()
                                continue
                            # The payload names the role whose tasks are ready.
                            role = notification.payload
                            self._notify((role,) if role in self._role_states else self.roles)
                        # At once when a call of another connection to the server was cut.
                        suspect = deadline is not None and deadline.suspect
                        if suspect or time.monotonic() - checked >= LISTENER_CHECK_SECONDS:
                            with bounded(deadline):
                                conn.execute("SELECT 1")
                            self.metrics.listener_heard()
                            checked = time.monotonic()
            except (psycopg.Error, DatabaseReadOnly) as error:
                if self._exiting.is_set():
                    return
                pause = backoff.pause()
                translated = translate(error) if isinstance(error, psycopg.Error) else error
                if isinstance(translated, DatabaseReadOnly):
                    self.metrics.listener_lost(str(translated))
                    read_only_notice.seen("listener", translated, pause)
                else:
                    reason = deadline.reason if deadline is not None and deadline.passed else str(error).strip()
                    self.metrics.listener_lost(reason)
                    log.warning(
                        "Listener: %s; reconnecting in %.1f s",
                        reason,
                        pause,
                        extra=event("listener_reconnecting"),
                    )
                self._exiting.wait(pause)

    def _notify(self, roles: tuple[str, ...]) -> None:
        """Claim the roles' tasks again at once (called from the listener thread)."""
        for role in roles:
            self._role_states[role].notified = True
        if self._batch is not None:
            self._batch.wake(roles)
        self._doorbell.ring()


def run_worker(
    config: WorkerConfig,
    serve_probes: ProbeServing | None = None,
    batch_runtime: Callable[[Worker], Any] | None = None,
    compare_declarations: DeclarationCheck | None = None,
) -> int:
    """Load the handlers, then run one worker until it is told to stop; the exit code. The
    process's logging is its caller's to set up (the command line: pyworker.admin.logs)."""
    # Handlers (and the commands they run) that need the database find the worker's own here,
    # however it was given (--database-url or the environment).
    os.environ["DATABASE_URL"] = config.database_url
    environment.export(WORKER_ID_ENVVAR, config.worker_id)
    environment.export(POOLED_ENVVAR, "1" if config.pooled else None)
    handlers.load(config.handler_modules)
    worker = Worker(
        config, serve_probes=serve_probes, batch_runtime=batch_runtime, compare_declarations=compare_declarations
    )
    try:
        return worker.run()
    except Exception as error:
        if not worker.started:
            raise
        # Not a refusal to start: the CLI logs it as the failure of a running worker.
        raise WorkerFailed(f"worker {config.worker_id} stopped on an error: {describe(error)}") from error


def drained(waiting: queue.SimpleQueue[T]) -> Iterator[T]:
    """What `waiting` holds now, taken without waiting for more."""
    while True:
        try:
            yield waiting.get_nowait()
        except queue.Empty:
            return


def log_claimed(tasks: list[Task]) -> None:
    """One line a claim: a line a task costs a drain of short tasks dearly."""
    if len(tasks) > 1:
        ids = ", ".join(str(task.id) for task in tasks)
        log.info("Claimed %d tasks (%s)", len(tasks), ids, extra=event("tasks_claimed"))
        return
    (task,) = tasks
    where = "" if task.dispensary_id is None else f" for dispensary {task.dispensary_id}"
    log.info("Claimed task %s (%s)%s", task.id, task.role, where, extra=event("task_claimed", task_id=task.id))


def log_left_behind(task: Task) -> None:
    """The aborted attempt ends without its handler, which runs on."""
    log.warning(
        "Task %s: its handler did not stop within %.0f s of the abort (%s): leaving it behind",
        task.id, ABORT_WIND_DOWN_SECONDS, task.abort.reason, extra=event("handler_left_behind", task_id=task.id),
    )
