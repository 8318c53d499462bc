"""`pyworker scheduler`: tick the schedules on a loop, for servers without pg_cron.

Each tick is one call of tick_schedules(), the call pg_cron makes. Ticks may race (two
schedulers, a scheduler and pg_cron, a person in psql): the tick locks the due schedules with
SKIP LOCKED and moves them on before it commits, so each due schedule runs once.

The first tick is at once, then one every interval from the start of the last good tick. A lost
connection is retried with jittered backoff (the next call connects again); any other error is
logged and the tick tried again at the next interval. SIGTERM or SIGINT stop the loop at once,
even mid-wait: the interpreter writes the signal to a self-pipe (signal.set_wakeup_fd) that the
wait selects on, and the handler itself only sets a plain attribute, taking no lock.
"""

from __future__ import annotations

import logging
import random
import signal
import threading
import time
from typing import Any

from pyworker.db import SCHEDULES_SCHEMA_VERSION, Database
from pyworker.errors import DatabaseUnavailable, TaskpoolError
from pyworker import logs
from pyworker.logs import event
from pyworker.worker import BACKOFF_FIRST, BACKOFF_MAX, Doorbell

log = logging.getLogger("pyworker")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Scheduler:
    def __init__(self, database_url: str, interval: float, scheduler_id: str) -> None:
        if interval <= 0:
            raise ValueError(f"the tick interval must be positive, not {interval} s")
        self.interval = interval
        self.scheduler_id = scheduler_id
        self.db = Database(database_url, application_name=f"pyworker scheduler {scheduler_id}")
        self._doorbell = Doorbell()
        # Written by the signal handler: plain attributes, no locks (see the module docstring).
        self._stop_signal: int | None = None
        self._signals = 0

    @property
    def stopping(self) -> bool:
        return self._stop_signal is not None

    def run(self) -> int:
        """Tick until SIGTERM/SIGINT; the exit code (0). SchemaMissing when there is no tick."""
        previous = self._install_signal_handlers()
        try:
            if self._retrying("connect", self._check_schema):
                log.info(
                    "Starting scheduler %s: a tick every %g s",
                    self.scheduler_id,
                    self.interval,
                    extra=event("scheduler_started"),
                )
                self._loop()
        finally:
            self._restore_signal_handlers(previous)
            self.db.close()
            self._doorbell.close()
        if self.stopping:
            log.info(
                "Received %s: stopping", signal.Signals(self._stop_signal).name, extra=event("scheduler_stopping")
            )
        log.info("Scheduler %s stopped", self.scheduler_id, extra=event("scheduler_stopped"))
        return 0

    def _check_schema(self) -> bool:
        self.db.check_schema(SCHEDULES_SCHEMA_VERSION)
        return True

    def _loop(self) -> None:
        while not self.stopping:
            started = time.monotonic()
            try:
                report = self._retrying("tick", self.db.tick_schedules)
            except TaskpoolError as error:
                log.error(
                    "Tick failed: %s; trying again in %g s", error, self.interval, extra=event("tick_failed")
                )
            else:
                if report is not None:
                    log_report(report)
            self._wait_until(started + self.interval)

    def _retrying(self, what: str, call: Any) -> Any:
        """`call()`, retried with jittered backoff while the database is unreachable; None once
        the scheduler is stopping."""
        delay = BACKOFF_FIRST
        failed = False
        while not self.stopping:
            try:
                result = call()
            except DatabaseUnavailable as error:
                failed = True
                pause = random.uniform(delay / 2, delay)
                log.warning("%s: %s; retrying in %.1f s", what, error, pause, extra=event("database_unavailable"))
                self._wait_until(time.monotonic() + pause)
                delay = min(delay * 2, BACKOFF_MAX, max(self.interval, BACKOFF_FIRST))
            else:
                if failed:
                    log.info("%s: the database answers again", what, extra=event("database_available"))
                return result
        return None

    def _wait_until(self, deadline: float) -> None:
        """Sleep until `deadline` (time.monotonic()) or a stop signal, whichever comes first."""
        while not self.stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._doorbell.wait(remaining)

    # Signals

    def _install_signal_handlers(self) -> dict[int, Any] | None:
        """Our handlers (main thread only); what they replaced, to put back at the end."""
        if threading.current_thread() is not threading.main_thread():
            return None
        previous: dict[int, Any] = {
            0: signal.set_wakeup_fd(self._doorbell.write_fd, warn_on_full_buffer=False)
        }
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict[int, Any] | None) -> None:
        if previous is None:
            return
        for signum in STOP_SIGNALS:
            signal.signal(signum, previous[signum])
        signal.set_wakeup_fd(previous[0])

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals += 1
        if self._signals == 1:
            self._stop_signal = signum
            return
        # A second signal while a tick hangs (a lock, a dead server): do not wait for it.
        raise KeyboardInterrupt


def log_report(report: dict[str, Any]) -> None:
    """One line for a tick that did something, plus a warning per schedule that failed."""
    runs = report.get("schedules") or []
    recovered = report.get("recovered") or 0
    if not runs and not recovered:
        return
    created = sum(run["tasks"] or 0 for run in runs)
    failed = [run for run in runs if run.get("error")]
    details = ", ".join(f"{run['schedule']}: {run['tasks']}" for run in runs)
    log.info(
        "Tick: ran %d schedule%s, created %d task%s, %d error%s, recovered %d stale task%s%s",
        len(runs),
        _s(len(runs)),
        created,
        _s(created),
        len(failed),
        _s(len(failed)),
        recovered,
        _s(recovered),
        f" ({details})" if details else "",
        extra=event("tick"),
    )
    for run in failed:
        log.warning("Schedule %s failed: %s", run["schedule"], run["error"], extra=event("schedule_failed"))


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def run_scheduler(
    database_url: str, interval: float, scheduler_id: str, log_format: str, log_level: str
) -> int:
    """Log as the worker does (tagged with `scheduler_id`), then tick until told to stop."""
    logs.setup(log_format, log_level, scheduler_id)
    return Scheduler(database_url, interval, scheduler_id).run()
