"""`pyworker --processes M`: M worker processes under a supervisor that restarts each one that
dies, with backoff, and gives up on one that keeps crashing (docs/supervisor.md)."""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from pyworker.admin.logs import setup as setup_logs, warn_if_pid_1
from pyworker.config import POOLED_ENVVAR, WORKER_ID_ENVVAR, WorkerConfig
from pyworker.environment import lookup
from pyworker.errors import ConfigurationError
from pyworker.logs import event
from pyworker.runtime import Doorbell, stop_signals

if TYPE_CHECKING:
    from pyworker.admin.cli import Settings

log = logging.getLogger("pyworker")


def worker_environment(settings: Settings, ctx: click.Context) -> dict[str, str]:
    """This process's environment with every worker option of the command line (`settings`)
    set in its variable, as the worker processes read them."""
    environment = {**os.environ, "DATABASE_URL": settings.database_url}
    if settings.pooled:
        environment[POOLED_ENVVAR] = "1"
    for param in ctx.command.params:
        value = settings.worker.get(param.name or "")
        if isinstance(param, click.Option) and param.envvar and value is not None:
            environment[str(param.envvar)] = " ".join(value) if param.multiple else str(value)
    return environment


def run_workers(config: WorkerConfig, processes: int, environment: dict[str, str]) -> int:
    """Run `processes` worker processes (ids <worker_id>-1..M), each with `environment` (every
    setting of `config` in its variable) and its own TASKPOOL_WORKER_ID, under a Supervisor: a child that
    dies is restarted with the same id, SIGTERM/SIGINT are forwarded (docs/supervisor.md).
    With a metrics port N, worker i serves N+i-1 (port 0: each its own free port); the
    supervisor itself serves nothing."""
    envs = [{**environment, WORKER_ID_ENVVAR: f"{config.worker_id}-{number}"} for number in range(1, processes + 1)]
    if config.metrics_port:
        for number, env in enumerate(envs):
            env["TASKPOOL_METRICS_PORT"] = str(config.metrics_port + number)
    setup_logs(config.log_format, config.log_level, config.worker_id, " ".join(config.role_names))
    warn_if_pid_1()
    return Supervisor(envs, SupervisorSettings.from_environ()).run()


# The supervisor of `--processes M` (docs/supervisor.md). A child that exits without being asked
# to waits RESTART_BACKOFF_FIRST seconds before its restart, twice as long after each further
# crash in a row (at most RESTART_BACKOFF_MAX); a child that ran HEALTHY_AFTER_SECONDS counts as
# healthy again and its next crash starts over. CRASH_LIMIT crashes of one child within
# CRASH_WINDOW_SECONDS: the supervisor gives up, stops the others and exits 1. Each has an
# environment variable (SupervisorSettings.from_environ) for tests and unusual deployments.
RESTART_BACKOFF_FIRST = 1.0
RESTART_BACKOFF_MAX = 30.0
CRASH_LIMIT = 5
CRASH_WINDOW_SECONDS = 60.0
HEALTHY_AFTER_SECONDS = 60.0
# A child that exits 2 could not start as configured (unknown role, no handler, bad option): every
# restart would end the same, so the supervisor stops the others and exits 2 at once.
EXIT_CONFIGURATION = 2
EXIT_GAVE_UP = 1


@dataclass(frozen=True)
class SupervisorSettings:
    backoff_first: float = RESTART_BACKOFF_FIRST
    backoff_max: float = RESTART_BACKOFF_MAX
    crash_limit: int = CRASH_LIMIT
    crash_window: float = CRASH_WINDOW_SECONDS
    healthy_after: float = HEALTHY_AFTER_SECONDS

    ENVIRONMENT = {
        "backoff_first": "TASKPOOL_RESTART_BACKOFF_SECONDS",
        "backoff_max": "TASKPOOL_RESTART_BACKOFF_MAX_SECONDS",
        "crash_limit": "TASKPOOL_CRASH_LIMIT",
        "crash_window": "TASKPOOL_CRASH_WINDOW_SECONDS",
        "healthy_after": "TASKPOOL_HEALTHY_AFTER_SECONDS",
    }

    @classmethod
    def from_environ(cls, environ: dict[str, str] | None = None) -> SupervisorSettings:
        """The defaults, each replaced by its environment variable if set; ConfigurationError
        for a value that is not a positive number (a crash limit: a whole one)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, variable in cls.ENVIRONMENT.items():
            text = lookup(variable, environ)
            if text is None or text == "":
                continue
            try:
                value = int(text) if name == "crash_limit" else float(text)
            except ValueError:
                value = None
            if value is None or not 0 < value < math.inf:
                kind = "a whole number" if name == "crash_limit" else "a number of seconds"
                raise ConfigurationError(f"{variable} must be {kind} above 0, not {text!r}")
            values[name] = value
        return cls(**values)


def exit_status(returncode: int) -> str:
    """How a child ended, for a log line: 'exited with code 3' or 'was killed by SIGKILL'."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def shell_code(returncode: int) -> int:
    """A child's return code as a shell reports it: a death by signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(eq=False)
class Child:
    """One worker process slot: its id and environment, the process running in it (None while a
    restart waits), when that started, its crashes in a row and their times."""

    worker_id: str
    env: dict[str, str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    restart_at: float | None = None
    crashes_in_a_row: int = 0
    crash_times: deque | None = None
    returncode: int | None = None


class Supervisor:
    """Runs the worker processes of `--processes M`, restarts each that dies, forwards
    SIGTERM/SIGINT and exits once all have exited after a signal (docs/supervisor.md)."""

    def __init__(self, envs: list[dict[str, str]], settings: SupervisorSettings | None = None) -> None:
        self.settings = settings or SupervisorSettings()
        self.children = [Child(env[WORKER_ID_ENVVAR], env, crash_times=deque()) for env in envs]
        self._doorbell = Doorbell()
        self._signals: list[int] = []
        self.stopping = False
        self.exit_code: int | None = None

    def run(self) -> int:
        try:
            # SIGCHLD only to wake the loop when a child exits (the wake-up fd is written for it).
            with stop_signals(self._doorbell, self._on_signal, also=(signal.SIGCHLD,)):
                for child in self.children:
                    self._start(child)
                while True:
                    self._forward_signals()
                    now = time.monotonic()
                    for child in self.children:
                        self._check(child, now)
                    if all(child.process is None and child.restart_at is None for child in self.children):
                        break
                    self._doorbell.wait(self._sleep_time(time.monotonic()))
        finally:
            self._doorbell.close()
        code = self.exit_code
        if code is None:
            code = max((shell_code(child.returncode or 0) for child in self.children), default=0)
        log.info("Supervisor stopped: every worker process has exited (exit code %d)", code, extra=event("supervisor_stopped"))
        return code

    def _on_signal(self, signum: int) -> None:
        # No locks, no logging in a signal handler: the loop forwards it.
        if signum != signal.SIGCHLD:
            self._signals.append(signum)

    def _forward_signals(self) -> None:
        while self._signals:
            signum = self._signals.pop(0)
            if not self.stopping:
                log.info(
                    "Received %s: forwarding it to the worker processes; none is restarted from now on",
                    signal.Signals(signum).name,
                    extra=event("supervisor_stopping"),
                )
            self._stop(signum)

    def _stop(self, signum: int) -> None:
        """Send `signum` to every running child and restart none from now on."""
        self.stopping = True
        for child in self.children:
            child.restart_at = None
            if child.process is not None and child.process.poll() is None:
                child.process.send_signal(signum)

    def _start(self, child: Child) -> None:
        # Own sessions: a Ctrl-C on the terminal reaches only this process, which forwards it
        # once; a second, direct signal would make a worker exit at once.
        child.process = subprocess.Popen([sys.executable, "-m", "pyworker"], env=child.env, start_new_session=True)
        child.started = time.monotonic()
        child.restart_at = None
        child.returncode = None

    def _check(self, child: Child, now: float) -> None:
        """Reap a child that exited, and decide: restart it later, give up, or leave it exited."""
        if child.process is None:
            if child.restart_at is not None and now >= child.restart_at and not self.stopping:
                self._start(child)
                log.info(
                    "Worker process %s restarted (pid %d)",
                    child.worker_id,
                    child.process.pid,
                    extra=event("worker_process_restarted"),
                )
            return
        returncode = child.process.poll()
        if returncode is None:
            return
        pid = child.process.pid
        child.process = None
        child.returncode = returncode
        how = exit_status(returncode)
        if self.stopping:
            log.info("Worker process %s (pid %d) %s", child.worker_id, pid, how, extra=event("worker_process_exited"))
            return
        # Not asked to stop: a crash, even with code 0 (a worker exits only when told to).
        if returncode == EXIT_CONFIGURATION:
            log.error(
                "Worker process %s (pid %d) %s: it cannot start as configured, and neither would a"
                " restart: stopping the others",
                child.worker_id,
                pid,
                how,
                extra=event("supervisor_giving_up"),
            )
            self.exit_code = EXIT_CONFIGURATION
            self._stop(signal.SIGTERM)
            return
        settings = self.settings
        if now - child.started >= settings.healthy_after:
            child.crashes_in_a_row = 0
        child.crashes_in_a_row += 1
        child.crash_times.append(now)
        while child.crash_times and now - child.crash_times[0] > settings.crash_window:
            child.crash_times.popleft()
        if len(child.crash_times) >= settings.crash_limit:
            log.error(
                "Worker process %s (pid %d) %s: %d crashes within %g s, giving up: stopping the others",
                child.worker_id,
                pid,
                how,
                len(child.crash_times),
                settings.crash_window,
                extra=event("supervisor_giving_up"),
            )
            self.exit_code = EXIT_GAVE_UP
            self._stop(signal.SIGTERM)
            return
        delay = min(settings.backoff_first * 2 ** (child.crashes_in_a_row - 1), settings.backoff_max)
        child.restart_at = now + delay
        log.warning(
            "Worker process %s (pid %d) %s%s; restarting it in %.1f s, at %s (%d crash(es) within %g s;"
            " the supervisor gives up at %d)",
            child.worker_id,
            pid,
            how,
            " without being asked to stop" if returncode == 0 else "",
            delay,
            time.strftime("%H:%M:%S", time.localtime(time.time() + delay)),
            len(child.crash_times),
            settings.crash_window,
            settings.crash_limit,
            extra=event("worker_process_crashed"),
        )

    def _sleep_time(self, now: float) -> float:
        """Until the next restart is due, and at most a second (a missed SIGCHLD costs no more)."""
        due = [child.restart_at for child in self.children if child.restart_at is not None]
        return max(0.0, min([now + 1.0, *due]) - now)
