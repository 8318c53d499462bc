"""Worker processes for the drain and wake-up figures: real `pyworker` processes, as operators run
them, on the test kit's fleet (testkit.fleet)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import psycopg

from bench.server import BenchError
from testkit.env import REPO_ROOT
from testkit.fleet import Fleet, peak_rss_mb, pyworker_argv, worker_env
from testkit.waiting import wait_until


class WorkerGroup(Fleet):
    """`count` worker processes of one role, each logging to <log_dir>/<worker id>.log."""

    def __init__(
        self,
        db_url: str,
        role: str,
        count: int,
        log_dir: Path,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        checkout: Path = REPO_ROOT,
    ) -> None:
        # In the checkout, whose pyworker comes first on the path; this repository's bench.handlers.
        super().__init__(log_dir, error=BenchError, cwd=checkout)
        self.db_url = db_url
        self.ids = [f"bench-{role}-{n}" for n in range(1, count + 1)]
        proc_env = worker_env(db_url, pythonpath=[checkout], **(env or {}))
        for worker_id in self.ids:
            argv = pyworker_argv("--role", role, "--handlers", "bench.handlers", "--worker-id", worker_id, *extra_args)
            self.start(worker_id, argv, proc_env)

    def wait_registered(self, timeout: float = 30.0) -> None:
        """Return once every worker is in task_workers; raise with a log's tail if one died."""
        with psycopg.connect(self.db_url, autocommit=True) as conn:

            def registered() -> bool:
                self.check_alive()
                query = "SELECT count(*) = %s FROM task_workers WHERE worker_id = ANY(%s)"
                return conn.execute(query, (len(self.ids), self.ids)).fetchone()[0]

            wait_until(registered, timeout, f"the {len(self.ids)} workers to register", error=BenchError)

    def connections(self, conn: psycopg.Connection) -> int:
        """How many connections the workers hold now (pyworker names each `pyworker <id>...`)."""
        patterns = [f"pyworker {worker_id}%" for worker_id in self.ids]
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE ANY(%s)", (patterns,)
        ).fetchone()
        return count

    def peak_rss_mb(self) -> float | None:
        """The largest peak RSS among the workers still running, in MB."""
        peaks = [p for p in (peak_rss_mb(process.pid) for process in self.processes.values()) if p is not None]
        return max(peaks) if peaks else None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every worker, then SIGKILL the ones still running after `timeout` s."""
        super().stop(timeout)
