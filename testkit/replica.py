"""Servers copied from the server under test, on loopback: the short form of a failover.

`Replica(url)`: `pg_basebackup -R` copies `url`'s server (its default wal_level = replica and
initdb's `host replication all 127.0.0.1/32 trust` entry are all it needs: scripts/cluster keeps
both) into a directory of its own, which then runs as a hot standby on its own port until
`promote()` makes it a primary (`catch_up()` waits until it has replayed what its primary wrote).
`Replica(url, standby=False)` is the same copy started as a primary of its own (no
standby.signal): a failover test's primary, apart from the shared test server, whose own replica
is then `Replica(primary.url_for(url))`.

As root, everything runs as the `postgres` OS user, as scripts/cluster does, in a directory under
the system's temporary directory that user can reach. The faults a failover test needs:
`halt()` stops the server at once (immediate mode: its sessions cut, no checkpoint), `freeze()`
stops its postmaster and every backend (SIGSTOP: they hold their sockets and answer nothing).
`stop()` ends the server this started, by its postmaster's PID (a frozen one is killed, never
thawed: an old primary that wakes up would take writes beside the new one), and removes the
directory. `server_of_its_own()`: such a primary for a test that
restarts its server or changes a server-wide setting.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from testkit.ports import free_port
from testkit.fleet import descendants, kill_if_running, process_gone
from testkit.waiting import wait_until

PG_BINDIR = Path(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"))

# Settings of a copy that runs as a primary of its own, whatever the test server had when it was
# copied (another test may have made it read-only for a moment).
PRIMARY_SETTINGS = {"default_transaction_read_only": "off", "synchronous_standby_names": "''"}


class ReplicaError(Exception):
    """The replica could not be made, started or promoted."""


@dataclass
class Replica:
    """A copy of `primary_url`'s server on 127.0.0.1:`port`: a hot standby, or with
    `standby=False` a primary of its own."""

    primary_url: str
    standby: bool = True
    port: int = field(default_factory=free_port)
    directory: Path = field(init=False)
    frozen: bool = field(default=False, init=False)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "postgresql.log"

    def url_for(self, url: str) -> str:
        """`url`'s database and user, on this server."""
        return make_conninfo(url, host="127.0.0.1", hostaddr="", port=str(self.port))

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
            "pg_basebackup", "-D", str(self.data), *(["-R"] if self.standby else []), "-X", "stream",
            "--checkpoint=fast", "--no-sync", "--no-manifest", "-h", primary.get("host") or "127.0.0.1", "-p", str(primary.get("port") or 5432),
            "-U", primary.get("user") or "postgres",
        )
        # The copied settings name the source's port and socket directory: the copy's own win.
        # A copy lives for one test: no fsync (what its processes wrote survives their being
        # killed all the same, in the system's page cache; only a crash of the host loses it).
        settings = {"port": str(self.port), "unix_socket_directories": f"'{self.directory}'", "fsync": "off"}
        if not self.standby:
            settings.update(PRIMARY_SETTINGS)
        with open(self.data / "postgresql.auto.conf", "a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(int(timeout)), "-s", "start")
        wait_until(self._answers, timeout, f"the copy to accept connections on port {self.port}",
                   also=self.log_tail, error=ReplicaError)

    def promote(self, timeout: float = 180.0) -> None:
        """Make it a primary (pg_ctl promote), waiting until it takes writes. The standby replays
        the other tests' DROP DATABASEs, each waiting on its restartpoint, which a busy machine
        has stretched past 60 s: `timeout` bounds a hang only."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", str(int(timeout)), "-s", "promote")

    def catch_up(self, timeout: float = 60.0) -> None:
        """Wait until this standby has replayed all that its primary had written when called."""
        with psycopg.connect(self.primary_url, autocommit=True) as primary:
            written = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        with psycopg.connect(self.url_for(self.primary_url), autocommit=True) as standby:
            wait_until(
                lambda: standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (written,)).fetchone()[0],
                timeout, f"the standby on port {self.port} to replay its primary's WAL up to {written}",
                also=self.log_tail, error=ReplicaError,
            )

    def restart(self, timeout: float = 120.0) -> None:
        """pg_ctl -m immediate restart (a crash, then recovery), waiting until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-m", "immediate", "-w",
                  "-t", str(int(timeout)), "-s", "restart")
        wait_until(self._answers, timeout, f"the restarted server to accept connections on port {self.port}",
                   also=self.log_tail, error=ReplicaError)

    @property
    def postmaster_pid(self) -> int | None:
        """The running postmaster's PID (the first line of postmaster.pid), None when it is stopped."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return None

    def halt(self) -> None:
        """Stop it at once (pg_ctl stop -m immediate), as a crash would: every session cut, its
        files kept (the log)."""
        if self.postmaster_pid is not None:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-s", "stop")

    def freeze(self) -> None:
        """SIGSTOP its postmaster and every process below it: it holds its connections and
        answers nothing, as a hung host does (its kernel still acknowledges)."""
        postmaster = self.postmaster_pid
        if postmaster is None:
            raise ReplicaError(f"the server on port {self.port} is not running: nothing to freeze")
        self.frozen = True
        for pid in (postmaster, *descendants(postmaster)):
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Stop the server this started (immediate mode; a frozen one killed), then remove its directory."""
        if not hasattr(self, "directory"):
            return
        if self.frozen:
            self._kill()
        else:
            self.halt()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _kill(self) -> None:
        """SIGKILL the postmaster and its processes (stopped or not), then remove its shared
        memory segment, which only a postmaster that exits by itself removes."""
        postmaster = self.postmaster_pid
        if postmaster is None:
            return
        segment = (self.data / "postmaster.pid").read_text().splitlines()[6:7]
        for pid in (*descendants(postmaster), postmaster):
            kill_if_running(pid)
        wait_until(lambda: process_gone(postmaster), 10, f"postmaster {postmaster} to die", error=ReplicaError)
        if segment and len(segment[0].split()) == 2:
            subprocess.run(["ipcrm", "-m", segment[0].split()[1]], capture_output=True)

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
    """`url`'s server copied and started as a primary: one no other test uses, for a test that restarts
    its server or changes a server-wide setting while other tests run on the shared one
    (pytest-xdist). Its databases are those of `url`'s server at the copy: url_for(url) is
    `url`'s database on it."""
    with Replica(url, standby=False) as copy:
        yield copy
