"""pyworker's environment variables: every one it reads is TASKPOOL_…, except DATABASE_URL and
libpq's PG* variables (and Sqitch's SQITCH_*, read as Sqitch reads them).

Before 0.7 some had other names (WORKER_ROLE, PYWORKER_CALL_TIMEOUT_SECONDS, ...). Those are
still read, deprecated: when the new name is unset (or empty) and the old one is set, the old
one's value is used and a FutureWarning says which name to set instead, once a process (the
warnings module's default: once per message). The new name wins when both are set.
docs/environment.md lists them all.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, MutableMapping

# The variables that had another name before 0.7: new name -> old name.
RENAMED = {
    "TASKPOOL_ROLE": "WORKER_ROLE",
    "TASKPOOL_WORKER_ID": "WORKER_ID",
    "TASKPOOL_POLL_INTERVAL_MS": "POLL_INTERVAL_MS",
    "TASKPOOL_HEARTBEAT_INTERVAL_MS": "HEARTBEAT_INTERVAL_MS",
    "TASKPOOL_HANDLERS": "PYWORKER_HANDLERS",
    "TASKPOOL_COMMAND": "PYWORKER_COMMAND",
    "TASKPOOL_LOG_FORMAT": "LOG_FORMAT",
    "TASKPOOL_LOG_LEVEL": "LOG_LEVEL",
    "TASKPOOL_SHUTDOWN_GRACE_SECONDS": "SHUTDOWN_GRACE_SECONDS",
    "TASKPOOL_CONCURRENCY": "WORKER_CONCURRENCY",
    "TASKPOOL_PREFETCH": "WORKER_PREFETCH",
    "TASKPOOL_POOLED": "PYWORKER_POOLED",
    "TASKPOOL_LISTEN_DATABASE_URL": "PYWORKER_LISTEN_DATABASE_URL",
    "TASKPOOL_METRICS_PORT": "PYWORKER_METRICS_PORT",
    "TASKPOOL_LOOP_BLOCK_LIMIT_SECONDS": "PYWORKER_LOOP_BLOCK_LIMIT_SECONDS",
    "TASKPOOL_MAX_ABANDONED_THREADS": "PYWORKER_MAX_ABANDONED_THREADS",
    "TASKPOOL_CALL_TIMEOUT_SECONDS": "PYWORKER_CALL_TIMEOUT_SECONDS",
    "TASKPOOL_RESTART_BACKOFF_SECONDS": "PYWORKER_RESTART_BACKOFF_SECONDS",
    "TASKPOOL_RESTART_BACKOFF_MAX_SECONDS": "PYWORKER_RESTART_BACKOFF_MAX_SECONDS",
    "TASKPOOL_CRASH_LIMIT": "PYWORKER_CRASH_LIMIT",
    "TASKPOOL_CRASH_WINDOW_SECONDS": "PYWORKER_CRASH_WINDOW_SECONDS",
    "TASKPOOL_HEALTHY_AFTER_SECONDS": "PYWORKER_HEALTHY_AFTER_SECONDS",
}


def lookup(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The value of variable `name`, else of the name it had before (warned about), else None.
    An empty value counts as unset, as click has it."""
    value = environ.get(name)
    if value:
        return value
    old = RENAMED.get(name)
    value = environ.get(old) if old else None
    if not value:
        return None
    # One line for every warning: the warnings module shows each message once from here.
    warnings.warn(f"{old} is deprecated: set {name} instead (read while {name} is unset)", FutureWarning)
    return value


def export(name: str, value: str | None, environ: MutableMapping[str, str] = os.environ) -> None:
    """Set variable `name` (None: remove it), and its old name too, for what reads the old one:
    what a worker tells its handlers (and the commands they run) in its environment."""
    for each in (name, RENAMED.get(name)):
        if each is None:
            continue
        if value is None:
            environ.pop(each, None)
        else:
            environ[each] = value
