"""`pyworker scheduler`: tick the schedules on a loop, for servers without pg_cron (or once,
with --once, for a cron job that runs it every minute).

Each tick is one call of tick_schedules(), the call pg_cron makes. Ticks may race (two
schedulers, a scheduler and pg_cron, a person in psql): the tick locks the due schedules with
SKIP LOCKED and moves them on before it commits, so each due schedule runs once.

The first tick is at once, then one every interval from the start of the last good tick. A lost
connection or a read-only server (a standby) is retried with jittered backoff (the next call
connects again, and may reach the new primary); any other error is
logged and the tick tried again at the next interval. SIGTERM or SIGINT stop the loop at once,
even mid-wait: the interpreter writes the signal to a self-pipe (signal.set_wakeup_fd) that the
wait selects on, and the handler itself only sets a plain attribute, taking no lock.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from pyworker.admin.logs import setup as setup_logs
from pyworker.admin.queries import AdminDatabase
from pyworker.errors import TaskpoolError
from pyworker.logs import event
from pyworker.runtime import BACKOFF_FIRST, BACKOFF_MAX, Doorbell, retry_while_unavailable, stop_signals

log = logging.getLogger("pyworker")

# The schedules, the tick, resync planning and capacity came with this schema version.
SCHEDULES_SCHEMA_VERSION = (0, 2, 0)


class Scheduler:
    def __init__(self, database_url: str, interval: float, scheduler_id: str, *, pooled: bool = False) -> None:
        if interval <= 0:
            raise ValueError(f"the tick interval must be positive, not {interval} s")
        self.interval = interval
        self.scheduler_id = scheduler_id
        self.db = AdminDatabase(database_url, application_name=f"pyworker scheduler {scheduler_id}", pooled=pooled)
        self._doorbell = Doorbell()
        # Written by the signal handler: plain attributes, no locks (see the module docstring).
        self._stop_signal: int | None = None
        self._signals = 0

    @property
    def stopping(self) -> bool:
        return self._stop_signal is not None

    def run(self) -> int:
        """Tick until SIGTERM/SIGINT; the exit code (0). SchemaMissing when there is no tick."""
        try:
            with stop_signals(self._doorbell, self._on_signal):
                if self._retrying("connect", self._check_schema):
                    log.info(
                        "Starting scheduler %s: a tick every %g s",
                        self.scheduler_id,
                        self.interval,
                        extra=event("scheduler_started"),
                    )
                    self._loop()
        finally:
            self.db.close()
            self._doorbell.close()
        if self.stopping:
            log.info(
                "Received %s: stopping", signal.Signals(self._stop_signal).name, extra=event("scheduler_stopping")
            )
        log.info("Scheduler %s stopped", self.scheduler_id, extra=event("scheduler_stopped"))
        return 0

    def tick_once(self) -> int:
        """One tick, for a cron job (a Kubernetes CronJob): the exit code, 0 once it ran. Nothing
        is retried: a TaskpoolError (no database, no schema, a failed tick) goes up to the CLI,
        which exits 1, and the cron job's next run is the retry."""
        try:
            self._check_schema()
            log_report(self.db.tick_schedules())
        finally:
            self.db.close()
            self._doorbell.close()
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
        """`call()`, retried while the database is unreachable, never waiting longer than the
        interval between two tries; None once the scheduler is stopping."""
        return retry_while_unavailable(
            what,
            call,
            stopping=lambda: self.stopping,
            sleep=lambda pause: self._wait_until(time.monotonic() + pause),
            most=min(BACKOFF_MAX, max(self.interval, BACKOFF_FIRST)),
        )

    def _wait_until(self, deadline: float) -> None:
        """Sleep until `deadline` (time.monotonic()) or a stop signal, whichever comes first."""
        while not self.stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._doorbell.wait(remaining)

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if self._signals == 1:
            self._stop_signal = signum
            return
        # A second signal while a tick hangs (a lock, a dead server): do not wait for it.
        raise KeyboardInterrupt


def log_report(report: dict[str, Any]) -> None:
    """One line for a tick that did something, plus a warning per schedule that failed; one line
    for the retention it applied, plus a warning per policy that failed."""
    log_retention(report.get("retention") or {})
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


def log_retention(retention: dict[str, dict[str, Any]]) -> None:
    """The tick's retention: the policies that deleted something or failed, by name."""
    if not retention:
        return
    pruned = sum(outcome["pruned"] for outcome in retention.values())
    details = ", ".join(f"{policy}: {outcome['pruned']}" for policy, outcome in retention.items())
    log.info("Retention: pruned %d row%s (%s)", pruned, _s(pruned), details, extra=event("retention"))
    for policy, outcome in retention.items():
        if outcome.get("error"):
            log.warning(
                "Retention policy %s failed: %s", policy, outcome["error"], extra=event("retention_failed")
            )


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def run_scheduler(
    database_url: str, interval: float, scheduler_id: str, log_format: str, log_level: str, once: bool,
    *, pooled: bool = False,
) -> int:
    """Log as the worker does (tagged with `scheduler_id`), then tick once, or until told to stop."""
    setup_logs(log_format, log_level, scheduler_id)
    scheduler = Scheduler(database_url, interval, scheduler_id, pooled=pooled)
    return scheduler.tick_once() if once else scheduler.run()
