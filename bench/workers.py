"""Worker processes for the drain and wake-up figures: real `pyworker` processes, as operators run them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg

from bench.server import BenchError

REPO_ROOT = Path(__file__).resolve().parent.parent


def pyworker_command() -> str:
    """The pyworker script of this Python environment (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "pyworker"
    if beside.exists():
        return str(beside)
    found = shutil.which("pyworker")
    if found is None:
        raise BenchError("pyworker is not installed: run `make deps`")
    return found


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set (VmHWM), in MB; None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class WorkerGroup:
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
        self.db_url = db_url
        self.ids = [f"bench-{role}-{n}" for n in range(1, count + 1)]
        self.logs = [log_dir / f"{worker_id}.log" for worker_id in self.ids]
        log_dir.mkdir(parents=True, exist_ok=True)
        proc_env = dict(os.environ, **(env or {}))
        proc_env["DATABASE_URL"] = db_url
        # The checkout's pyworker (first on the path), this repository's bench.handlers.
        paths = [str(checkout), str(REPO_ROOT), proc_env.get("PYTHONPATH")]
        proc_env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(filter(None, paths)))
        command = pyworker_command()
        self.procs: list[subprocess.Popen] = []
        for worker_id, log in zip(self.ids, self.logs):
            with open(log, "w") as stderr:
                self.procs.append(subprocess.Popen(
                    [command, "--role", role, "--handlers", "bench.handlers",
                     "--worker-id", worker_id, *extra_args],
                    env=proc_env, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                ))

    def wait_registered(self, timeout: float = 30.0) -> None:
        """Return once every worker is in task_workers; raise with a log's tail if one died."""
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while True:
                self.check_alive()
                (count,) = conn.execute(
                    "SELECT count(*) FROM task_workers WHERE worker_id = ANY(%s)", (self.ids,)
                ).fetchone()
                if count == len(self.ids):
                    return
                if time.monotonic() > deadline:
                    raise BenchError(f"only {count} of {len(self.ids)} workers registered in {timeout:.0f} s")
                time.sleep(0.05)

    def check_alive(self) -> None:
        for proc, log in zip(self.procs, self.logs):
            if proc.poll() is not None:
                lines = log.read_text().split("\n") if log.exists() else []
                last = " / ".join([line.strip() for line in lines if line.strip()][-2:])
                raise BenchError(f"worker exited with {proc.returncode} ({log}): {last}")

    def connections(self, conn: psycopg.Connection) -> int:
        """How many connections the workers hold now (pyworker names each `pyworker <id>...`)."""
        patterns = [f"pyworker {worker_id}%" for worker_id in self.ids]
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE ANY(%s)", (patterns,)
        ).fetchone()
        return count

    def peak_rss_mb(self) -> float | None:
        """The largest peak RSS among the workers still running, in MB."""
        peaks = [p for p in (peak_rss_mb(proc.pid) for proc in self.procs) if p is not None]
        return max(peaks) if peaks else None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every worker, then SIGKILL the ones still running after `timeout` s."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
