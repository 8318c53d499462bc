"""A streaming replica of the server under test, on loopback: the short form of a failover.

`pg_basebackup -R` copies the server (its default wal_level = replica and initdb's `host
replication all 127.0.0.1/32 trust` entry are all it needs: scripts/cluster keeps both) into a
directory of its own, which then runs as a hot standby on its own port until `promote()` makes
it a primary (server_of_its_own: a private server for a test that restarts it). As root, everything runs as the `postgres` OS user, as scripts/cluster does, in a
directory under the system's temporary directory that user can reach. `stop()` stops that server
(pg_ctl, by its data directory: the postmaster this started) and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from testkit.waiting import wait_until

PG_BINDIR = Path(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"))


class ReplicaError(Exception):
    """The replica could not be made, started or promoted."""


def free_port() -> int:
    """A port nothing listens on now (the system's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Replica:
    """A hot standby of `primary_url`'s server on 127.0.0.1:`port`."""

    primary_url: str
    port: int = field(default_factory=free_port)
    directory: Path = field(init=False)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "postgresql.log"

    def url_for(self, url: str) -> str:
        """`url`'s database and user, on this replica."""
        return make_conninfo(url, host="127.0.0.1", port=str(self.port))

    def start(self, timeout: float = 60.0) -> Replica:
        self.directory = Path(tempfile.mkdtemp(prefix="taskpool-replica-"))
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        primary = conninfo_to_dict(self.primary_url)
        self._run(
            "pg_basebackup", "-D", str(self.data), "-R", "-X", "stream", "--checkpoint=fast",
            "-h", primary.get("host") or "127.0.0.1", "-p", str(primary.get("port") or 5432),
            "-U", primary.get("user") or "postgres",
        )
        # The copied settings name the primary's port and socket directory: the replica's own win.
        with open(self.data / "postgresql.auto.conf", "a") as settings:
            settings.write(f"port = {self.port}\nunix_socket_directories = '{self.directory}'\n")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(int(timeout)), "-s", "start")
        wait_until(self._answers, timeout, f"the replica to accept connections on port {self.port}",
                   also=self.log_tail, error=ReplicaError)

    def promote(self, timeout: float = 180.0) -> None:
        """Make it a primary (pg_ctl promote), waiting until it takes writes. The standby replays
        the other tests' DROP DATABASEs, each waiting on its restartpoint, which a busy machine
        has stretched past 60 s: `timeout` bounds a hang only."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", str(int(timeout)), "-s", "promote")

    def restart(self, timeout: float = 120.0) -> None:
        """pg_ctl -m immediate restart (a crash, then recovery), waiting until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-m", "immediate", "-w",
                  "-t", str(int(timeout)), "-s", "restart")
        wait_until(self._answers, timeout, f"the restarted server to accept connections on port {self.port}",
                   also=self.log_tail, error=ReplicaError)

    def stop(self) -> None:
        """Stop the server this started (immediate mode), then remove its directory."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-s", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)

    def _answers(self) -> bool:
        try:
            psycopg.connect(self.url_for(self.primary_url), connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def _run(self, program: str, *args: str) -> None:
        argv = [str(PG_BINDIR / program), *args]
        if os.geteuid() == 0:
            argv[:0] = ["runuser", "-u", "postgres", "--"]
        done = subprocess.run(argv, capture_output=True, text=True, cwd="/")
        if done.returncode != 0:
            raise ReplicaError(f"{program} failed ({done.returncode}): {done.stderr.strip()}\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text().splitlines()[-lines:])
        except (FileNotFoundError, AttributeError):
            return "(no replica log)"

    def __enter__(self) -> Replica:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def server_of_its_own(url: str) -> Iterator[Replica]:
    """`url`'s server copied and promoted: a primary no other test uses, for a test that restarts
    its server or changes a server-wide setting while other tests run on the shared one
    (pytest-xdist). Its databases are those of `url`'s server at the copy: url_for(url) is
    `url`'s database on it."""
    with Replica(url) as copy:
        copy.promote()
        yield copy
