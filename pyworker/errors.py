"""The exceptions pyworker raises, and the one place database errors become them.

Each exception's docstring is its default message. `translate` maps a psycopg error to one of
these by SQLSTATE class, so callers never look at SQLSTATEs themselves.
"""

from __future__ import annotations

import math

import psycopg
from psycopg import errors as pg_errors


class TaskpoolError(Exception):
    """taskpool could not do that."""

    def __init__(self, message: str | None = None, *, hint: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} ({self.hint})" if self.hint else text


class InvalidInput(TaskpoolError):
    """The database refused a value: it says which and what is allowed."""


class NotFound(TaskpoolError):
    """No such task."""


class Refused(TaskpoolError):
    """The task is not in a state that allows this."""


class TaskLost(Refused):
    """This worker no longer owns that attempt of the task: nothing was recorded."""


class SchemaMissing(TaskpoolError):
    """The database has no taskpool schema: install it with `pyworker schema apply` (from a
    taskpool checkout: `make deploy`)."""


class SchemaMismatch(TaskpoolError):
    """The database's taskpool schema is not one this pyworker was written for."""


class ConfigurationError(TaskpoolError):
    """The worker cannot start as configured."""


class DatabaseUnavailable(TaskpoolError):
    """The database connection failed or was lost."""


class DatabaseReadOnly(DatabaseUnavailable):
    """The server is read-only (a standby, or a primary set read-only): nothing can be written
    there, so it counts as unavailable until a writable primary answers."""


# What the worker logs, once, when it finds the server read-only: the fix for a failover.
READ_ONLY_HINT = (
    "behind a failover, name every node in a multi-host URL with target_session_attrs=read-write,"
    " or connect through a proxy that follows the primary"
)


class WorkerFailed(TaskpoolError):
    """A running worker stopped on an error (it had started: this is no refusal to start)."""


class PermanentError(Exception):
    """Raised by a handler: fail the task now, without retrying."""


# The longest snooze: a delay the database stores and Python reads back as a datetime. Longer
# is a mistake (a delay in milliseconds, an infinity): the attempt fails and says so.
SNOOZE_MAX_SECONDS = 366 * 24 * 3600


class Snooze(Exception):
    """Raised by a handler: put the task back to pending for `seconds`, spending no retry."""

    def __init__(self, seconds: float) -> None:
        if seconds != seconds or abs(seconds) == math.inf:
            raise ValueError(f"Snooze needs a finite delay in seconds, not {seconds}")
        if seconds < 0:
            raise ValueError(f"Snooze needs a delay of 0 seconds or more, not {seconds}")
        if seconds > SNOOZE_MAX_SECONDS:
            raise ValueError(
                f"Snooze needs a delay of at most {SNOOZE_MAX_SECONDS} seconds (366 days), not {seconds}"
            )
        super().__init__(f"snoozed for {seconds} s")
        self.seconds = seconds


# SQLSTATEs the taskpool functions raise on purpose (docs/sql-reference.md, Bad input).
_BY_SQLSTATE: dict[str, type[TaskpoolError]] = {
    "P0002": NotFound,
    "55000": Refused,
    "23505": Refused,
    "23503": InvalidInput,
    "23514": Refused,
    "54000": InvalidInput,
    "42883": SchemaMissing,
    "42P01": SchemaMissing,
}


# A write refused on a read-only server (a standby, default_transaction_read_only): unavailable
# there, not bad input, whatever the statement.
READ_ONLY_SQL_TRANSACTION = "25006"


def translate(error: psycopg.Error) -> TaskpoolError:
    """The pyworker exception for a psycopg error."""
    sqlstate = error.sqlstate or ""
    if sqlstate == READ_ONLY_SQL_TRANSACTION:
        return DatabaseReadOnly(f"the server is read-only: {error.diag.message_primary or str(error).strip()}")
    kind = _BY_SQLSTATE.get(sqlstate)
    if kind is None and sqlstate.startswith("22"):
        kind = InvalidInput
    # The SQLSTATEs above come first: psycopg files 55000 and 54000 under OperationalError.
    if kind is None and (
        isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))
        and not isinstance(error, pg_errors.QueryCanceled)
    ):
        return DatabaseUnavailable(f"database connection failed: {str(error).strip()}")
    diag = error.diag
    message = diag.message_primary or str(error).strip()
    if kind is None:
        kind = TaskpoolError
    if kind is SchemaMissing:
        return SchemaMissing(f"{' '.join(SchemaMissing.__doc__.split())} ({message})")
    return kind(message, hint=diag.message_hint)
