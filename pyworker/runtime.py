"""What every long-running pyworker process shares (the worker, the supervisor of --processes, the
scheduler): a doorbell to sleep on, stop signals that ring it, and calls retried with jittered
backoff while the database is unreachable or read-only (a read-only server is logged once per
process, each retry at debug level: every thread meets it).

A pipe rather than an Event because a Python signal handler must not take a lock the interrupted
code may hold; with signal.set_wakeup_fd the interpreter writes the byte itself, and the handlers
installed here only count and remember the signal.
"""

from __future__ import annotations

import logging
import os
import random
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pyworker.errors import READ_ONLY_HINT, DatabaseReadOnly, DatabaseUnavailable
from pyworker.logs import event

log = logging.getLogger("pyworker")

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
BACKOFF_FIRST = 0.1
# The longest pause between a lost connection's retries: a few seconds, so that work resumes within
# that of the new primary's taking writes after a failover (the retries of a fleet against a server
# that is away are spread by jitter).
BACKOFF_MAX = 3.0


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

    def wait(self, timeout: float | None) -> bool:
        """Sleep until a ring or `timeout`; True when it rang."""
        # Drained only when it rang: a ring after the timeout stays for the next wait.
        rang = bool(select.select([self._read], [], [], timeout)[0])
        if rang:
            self.drain()
        return rang

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


@contextmanager
def stop_signals(
    doorbell: Doorbell, on_signal: Callable[[int], None], *, also: tuple[signal.Signals, ...] = ()
) -> Iterator[None]:
    """SIGTERM and SIGINT (and `also`) call `on_signal(signum)` and ring `doorbell`, until the
    block ends and the previous handlers are back. Outside the main thread (a drain in a test's
    thread) nothing is installed: signals are the main thread's."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_fd = signal.set_wakeup_fd(doorbell.write_fd, warn_on_full_buffer=False)
    previous = {
        signum: signal.signal(signum, lambda number, _frame: on_signal(number))
        for signum in (*STOP_SIGNALS, *also)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)


class Backoff:
    """Jittered exponential pauses: each a random time between half the current delay and the
    delay, which doubles up to `most`; reset() after a success."""

    def __init__(self, first: float = BACKOFF_FIRST, most: float = BACKOFF_MAX) -> None:
        self.first = first
        self.most = max(most, first)
        self._delay = first

    def pause(self) -> float:
        pause = random.uniform(self._delay / 2, self._delay)
        self._delay = min(self._delay * 2, self.most)
        return pause

    def reset(self) -> None:
        self._delay = self.first


class ReadOnlyNotice:
    """A process's one warning that its database is read-only, and its one line once it takes
    writes again: every thread of a worker meets the read-only server, retries with backoff, and
    logs each try at debug level only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: float | None = None

    def seen(self, what: str, error: DatabaseReadOnly, pause: float) -> None:
        """`what` met the read-only server and tries again in `pause` seconds."""
        with self._lock:
            first = self._since is None
            if first:
                self._since = time.monotonic()
        if first:
            log.warning(
                "The database is read-only (%s): nothing is claimed or recorded until a writable primary"
                " answers; reconnecting with backoff (%s)",
                error,
                READ_ONLY_HINT,
                extra=event("database_read_only"),
            )
        log.debug("%s: %s; retrying in %.1f s", what, error, pause, extra=event("database_read_only"))

    def cleared(self) -> None:
        """A write went through: the database takes writes again."""
        if self._since is None:
            return
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            log.info(
                "The database takes writes again (read-only for %.0f s)",
                time.monotonic() - since,
                extra=event("database_writable"),
            )


read_only_notice = ReadOnlyNotice()


class Unavailability:
    """One call site's retries while the database is away: a warning a try (a read-only server:
    the process's one warning, then debug lines), jittered backoff, and a line once it answers."""

    def __init__(self, what: str, *, most: float = BACKOFF_MAX) -> None:
        self.what = what
        self.backoff = Backoff(most=most)
        self.failed = self.read_only = False

    def met(self, error: DatabaseUnavailable) -> float:
        """Say so; how long to wait before the next try."""
        pause = self.backoff.pause()
        if isinstance(error, DatabaseReadOnly):
            self.read_only = True
            read_only_notice.seen(self.what, error, pause)
        else:
            self.failed = True
            log.warning("%s: %s; retrying in %.1f s", self.what, error, pause, extra=event("database_unavailable"))
        return pause

    def answered(self) -> None:
        """The call went through."""
        if self.read_only:
            read_only_notice.cleared()
        if self.failed:
            log.info("%s: the database answers again", self.what, extra=event("database_available"))
        self.failed = self.read_only = False
        self.backoff.reset()


def retry_while_unavailable(
    what: str,
    call: Callable[[], T],
    *,
    stopping: Callable[[], bool] | None = None,
    sleep: Callable[[float], Any] = time.sleep,
    most: float = BACKOFF_MAX,
) -> T | None:
    """`call()`, retried with jittered backoff while it raises DatabaseUnavailable; None once
    `stopping()` says so (never, without it). A retried call may repeat one whose answer was
    lost with the connection: the fenced SQL functions make that safe."""
    unavailability = Unavailability(what, most=most)
    while True:
        try:
            result = call()
        except DatabaseUnavailable as error:
            if stopping is not None and stopping():
                return None
            sleep(unavailability.met(error))
        else:
            unavailability.answered()
            return result
