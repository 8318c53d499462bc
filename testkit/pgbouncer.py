"""A PgBouncer of its own in front of the server under test, in transaction pooling mode.

Debian's `pgbouncer` (make deps), with its configuration, auth file, log and pid file in a
directory of its own. PgBouncer refuses to run as root: as root it runs as the `postgres` OS user
(`-u postgres`, as the project cluster does). Clients authenticate to it with SCRAM and a password
of its auth file; it reaches the server as the client's user. It is ended by its PID.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from testkit import ports
from testkit.waiting import wait_until

# The setting that fixes the port (the harness's own range); else the system picks a free one.
PORT_ENVVAR = "PGBOUNCER_PORT"


class PgBouncerError(Exception):
    """PgBouncer is missing, or did not start."""


def free_port() -> int:
    """$PGBOUNCER_PORT, else a port nothing listens on now (testkit/ports.py)."""
    if os.environ.get(PORT_ENVVAR):
        return int(os.environ[PORT_ENVVAR])
    return ports.free_port()


def version() -> tuple[int, ...]:
    """The installed PgBouncer's version, e.g. (1, 18, 0)."""
    first_line = subprocess.run([_binary(), "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(part) for part in first_line.split()[1].split("."))


def _binary() -> str:
    found = shutil.which("pgbouncer", path=f"/usr/sbin:/usr/bin:{os.environ.get('PATH', '')}")
    if found is None:
        raise PgBouncerError("pgbouncer is not installed: run `make deps`")
    return found


@dataclass
class PgBouncer:
    """PgBouncer on 127.0.0.1:`port` in front of `server_url`'s server, pooling each database and
    user in transactions, at most `pool_size` server connections each."""

    server_url: str
    port: int = field(default_factory=free_port)
    pool_size: int = 4
    password: str = field(default_factory=lambda: secrets.token_hex(8))
    directory: Path = field(init=False)
    process: subprocess.Popen | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.server = conninfo_to_dict(self.server_url)
        self.user = self.server.get("user") or "postgres"

    @property
    def log(self) -> Path:
        return self.directory / "pgbouncer.log"

    def url_for(self, url: str) -> str:
        """`url`'s database and user (on the server), reached through this PgBouncer."""
        return make_conninfo(url, host="127.0.0.1", port=str(self.port), password=self.password)

    def admin_url(self) -> str:
        """PgBouncer's admin console (the `pgbouncer` database; the simple query protocol only)."""
        return make_conninfo(self.url_for(self.server_url), dbname="pgbouncer")

    def start(self, timeout: float = 10.0) -> PgBouncer:
        binary = _binary()
        self.directory = Path(tempfile.mkdtemp(prefix="taskpool-pgbouncer-"))
        host = self.server.get("host") or self.server.get("hostaddr") or "127.0.0.1"
        server_port = self.server.get("port") or "5432"
        (self.directory / "userlist.txt").write_text(f'"{self.user}" "{self.password}"\n')
        config = self.directory / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host={host} port={server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = scram-sha-256\n"
            f"auth_file = {self.directory / 'userlist.txt'}\n"
            f"admin_users = {self.user}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            "max_client_conn = 200\n"
            f"logfile = {self.log}\n"
            f"pidfile = {self.directory / 'pgbouncer.pid'}\n"
        )
        argv = [binary, str(config)]
        if os.geteuid() == 0:
            argv[1:1] = ["-u", "postgres"]
            for path in (self.directory, *self.directory.iterdir()):
                shutil.chown(path, "postgres", "postgres")
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_until(self._answers, timeout, f"PgBouncer to listen on port {self.port}",
                   also=self.log_tail, error=PgBouncerError)
        return self

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise PgBouncerError(f"pgbouncer exited with {self.process.returncode}\n{self.log_tail()}")
        try:
            psycopg.connect(self.url_for(self.server_url), connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text().splitlines()[-lines:])
        except FileNotFoundError:
            return "(no pgbouncer log)"

    def server_pids(self, dbname: str) -> list[int]:
        """The backend PIDs of the server connections PgBouncer holds for `dbname` (SHOW SERVERS)."""
        with psycopg.connect(self.admin_url(), autocommit=True, cursor_factory=psycopg.ClientCursor) as admin:
            cursor = admin.execute("SHOW SERVERS")
            columns = [column.name for column in cursor.description]
            rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
        return [int(row["remote_pid"]) for row in rows if row["database"] == dbname]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM by PID (SIGKILL after `timeout` s), then remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
