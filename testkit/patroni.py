"""A real high-availability pair on loopback: etcd, two PostgreSQL 15 nodes under Patroni, HAProxy.

The failover suite (faults/ha) runs its scenarios on it. From the Debian packages `patroni`,
`etcd-server` and `haproxy`: one etcd member (the DCS), two Patroni nodes each running a
PostgreSQL 15 server in a directory of its own, and HAProxy routing one port to whichever node
answers 200 on Patroni's `/primary` health check (Patroni's documented setup, with shorter
intervals). Everything lives in one temporary directory, removed by stop(); as root, etcd, Patroni
and PostgreSQL run as the `postgres` OS user (initdb and pg_ctl refuse root), through setpriv,
which execs: the PID the harness holds is the program's own.

Every process is started, signalled and stopped by PID: Patroni's postmaster runs in a session of
its own (it outlives Patroni by design), so a node's PostgreSQL processes are its postmaster (the
first line of postmaster.pid) and that postmaster's descendants. Nothing is ever looked up by name:
other PostgreSQL servers may run on the machine.

Patroni settings are short (ttl 10 s, loop_wait 1 s, retry_timeout 4 s) so that a failover takes
seconds, and `maximum_lag_on_failover` is large so that a lagging replica is still promoted when
replication is asynchronous (what an asynchronous failover costs is what the suite measures).
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from testkit.ports import free_port, is_free
from testkit.fleet import Fleet, Process, descendants, kill_if_running, process_gone
from testkit.waiting import wait_until

PG_BINDIR = Path(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"))
# The Debian packages the pair runs on (make faults-ha installs them when missing).
PROGRAMS = {"patroni": "patroni", "patronictl": "patroni", "etcd": "etcd-server", "haproxy": "haproxy"}
TTL = 10
LOOP_WAIT = 1
RETRY_TIMEOUT = 4
# HAProxy asks each node's /primary this often; a node failing FALL checks in a row is down, and
# its sessions are shut (a worker on a demoted or frozen primary is cut loose at once).
CHECK_INTERVAL_MS = 1000
CHECK_FALL = 2


# Patroni's two etcd APIs: `etcd` (v2) renews the leader key by compare-and-swap on its value;
# Patroni 3.0.2's `etcd3` renews it with a new lease and an unconditional put when its lease has
# expired, so a leader frozen past its TTL, thawed, overwrites the key the replica promoted in its
# place took, and leads again (the failover suite's frozen primary shows what that loses).
DCS_APIS = ("etcd", "etcd3")


class HAError(Exception):
    """The pair could not be started, or did not reach the state asked for in time."""


def missing_programs() -> list[str]:
    """The Debian packages whose programs the pair needs and this machine lacks."""
    return sorted({package for program, package in PROGRAMS.items() if shutil.which(program) is None})


@dataclass
class Ports:
    """Free loopback ports, from `low`..`high` when given (a range of one's own), else any free one below the ephemeral range
    (testkit/ports.py)."""

    low: int | None = None
    high: int | None = None
    taken: set[int] = field(default_factory=set)

    @classmethod
    def parse(cls, text: str | None) -> Ports:
        """'LOW-HIGH', or None/'' for the system's pick; ValueError naming the text otherwise."""
        if not text:
            return cls()
        try:
            low, high = (int(part) for part in text.split("-"))
        except ValueError:
            raise ValueError(f"a port range is LOW-HIGH (e.g. 56300-56399), not {text!r}") from None
        if not 1024 <= low <= high <= 65535:
            raise ValueError(f"a port range is within 1024-65535, low first, not {text!r}")
        return cls(low, high)

    def take(self) -> int:
        if self.low is None or self.high is None:
            try:
                port = free_port(self.taken)
            except OSError as error:
                raise HAError(str(error)) from None
        else:
            candidates = [port for port in range(self.low, self.high + 1) if port not in self.taken]
            random.shuffle(candidates)
            port = next((candidate for candidate in candidates if is_free(candidate)), 0)
            if not port:
                raise HAError(f"no free port left in {self.low}-{self.high}")
        self.taken.add(port)
        return port


def _as_postgres(argv: list[str]) -> list[str]:
    """`argv` run as the postgres OS user when we are root (setpriv execs: same PID)."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *argv]


def _http(url: str, timeout: float = 1.0) -> tuple[int, Any]:
    """(status, JSON body or None) of a GET; (0, None) when nothing answers in time."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, _json(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, _json(error.read())
    except (OSError, ValueError):
        return 0, None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


@dataclass
class Node:
    """One Patroni member and the PostgreSQL server it runs."""

    name: str
    pg_port: int
    rest_port: int
    directory: Path
    process: Process | None = None
    # The PIDs freeze() stopped, for thaw().
    frozen: list[int] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def config(self) -> Path:
        return self.directory / "patroni.yml"

    def url(self, dbname: str = "postgres", **options: str) -> str:
        return make_conninfo(f"postgresql://postgres@127.0.0.1:{self.pg_port}/{dbname}", **options)

    def rest(self, path: str, timeout: float = 1.0) -> tuple[int, Any]:
        return _http(f"http://127.0.0.1:{self.rest_port}{path}", timeout)

    def is_primary(self) -> bool:
        return self.rest("/primary")[0] == 200

    def postmaster_pid(self) -> int | None:
        """The running postmaster's PID (postmaster.pid), or None."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None
        return None if process_gone(pid) else pid

    def postgres_pids(self) -> list[int]:
        """The postmaster, then every process below it."""
        postmaster = self.postmaster_pid()
        return [] if postmaster is None else [postmaster, *descendants(postmaster)]

    def child_pid(self, kind: str) -> int | None:
        """The PID of the postmaster's child whose title names `kind` (walreceiver, startup, ...)."""
        for pid in self.postgres_pids()[1:]:
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except FileNotFoundError:
                continue
            if kind in title:
                return pid
        return None


class HAPair:
    """etcd, nodes node1 and node2 (node1 bootstraps and leads first), HAProxy on `haproxy_port`.

    `synchronous`: Patroni's synchronous_mode (a commit is acknowledged once the replica has it).
    `dcs`: the etcd API Patroni uses (DCS_APIS).
    """

    def __init__(self, log_dir: Path, *, ports: Ports | None = None, synchronous: bool = False,
                 ttl: int = TTL, dcs: str = "etcd") -> None:
        if dcs not in DCS_APIS:
            raise ValueError(f"the DCS API is one of {', '.join(DCS_APIS)}, not {dcs!r}")
        self.dcs = dcs
        self.log_dir = log_dir
        self.ports = ports or Ports()
        self.synchronous = synchronous
        self.ttl = ttl
        self.scope = f"taskpool-ha-{os.getpid()}-{random.randrange(1 << 30):x}"
        self.fleet = Fleet(log_dir, error=HAError)
        self.directory: Path | None = None
        self.nodes: dict[str, Node] = {}
        self.etcd_port = self.etcd_peer_port = self.haproxy_port = 0

    # URLs

    def url(self, dbname: str = "postgres") -> str:
        """Through HAProxy: always the primary."""
        return f"postgresql://postgres@127.0.0.1:{self.haproxy_port}/{dbname}"

    def multi_host_url(self, dbname: str = "postgres") -> str:
        """Both nodes, libpq picking the one that takes writes."""
        hosts = ",".join(f"127.0.0.1:{node.pg_port}" for node in self.nodes.values())
        return f"postgresql://postgres@{hosts}/{dbname}?target_session_attrs=read-write"

    # Starting and stopping

    def start(self, timeout: float = 120.0) -> HAPair:
        missing = missing_programs()
        if missing:
            raise HAError(f"missing Debian packages: {' '.join(missing)} (make faults-ha installs them)")
        self.directory = Path(tempfile.mkdtemp(prefix="taskpool-ha-"))
        try:
            if os.geteuid() == 0:
                shutil.chown(self.directory, "postgres", "postgres")
            self._start_etcd()
            for name in ("node1", "node2"):
                node = Node(name, self.ports.take(), self.ports.take(), self.directory / name)
                node.directory.mkdir(mode=0o700)
                if os.geteuid() == 0:
                    shutil.chown(node.directory, "postgres", "postgres")
                node.config.write_text(json.dumps(self._patroni_config(node), indent=2))
                self.nodes[name] = node
            self.start_node("node1")
            wait_until(self.nodes["node1"].is_primary, timeout, "node1 to bootstrap and lead",
                       interval=0.3, also=self.describe, error=HAError)
            self.start_node("node2")
            self.wait_streaming(timeout)
            self._start_haproxy()
            # HAProxy takes a server with checks for up until they fail: the replica too, at first.
            wait_until(lambda: self.haproxy_states() == {"node1": "UP", "node2": "DOWN"}, timeout,
                       "HAProxy to route to node1 alone", interval=0.3, also=self.describe, error=HAError)
            self.wait_writable(self.url(), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_etcd(self) -> None:
        self.etcd_port, self.etcd_peer_port = self.ports.take(), self.ports.take()
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
        argv = [
            "etcd", "--name", "etcd1", "--data-dir", str(self.directory / "etcd"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"etcd1={peer}", "--initial-cluster-state", "new",
            "--initial-cluster-token", self.scope, "--enable-v2=true",
        ]
        self.fleet.start("etcd", _as_postgres(argv), self._env())
        wait_until(lambda: _http(f"{client}/health")[0] == 200, 30, "etcd to answer",
                   interval=0.2, also=self.describe, error=HAError)

    def _patroni_config(self, node: Node) -> dict[str, Any]:
        parameters = {
            "max_connections": 100,
            "max_wal_senders": 5,
            "max_replication_slots": 5,
            "wal_log_hints": "on",
            "hot_standby": "on",
            "wal_keep_size": "256MB",
        }
        return {
            "scope": self.scope,
            "name": node.name,
            "restapi": {"listen": f"127.0.0.1:{node.rest_port}", "connect_address": f"127.0.0.1:{node.rest_port}"},
            self.dcs: {"hosts": [f"127.0.0.1:{self.etcd_port}"], "protocol": "http"},
            "bootstrap": {
                "dcs": {
                    "ttl": self.ttl,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1 << 40,
                    "synchronous_mode": self.synchronous,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True, "parameters": parameters},
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{node.pg_port}",
                "connect_address": f"127.0.0.1:{node.pg_port}",
                "data_dir": str(node.data),
                "bin_dir": str(PG_BINDIR),
                "pgpass": str(node.directory / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "postgres"},
                    "rewind": {"username": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(node.directory)},
            },
        }

    def _start_haproxy(self) -> None:
        self.haproxy_port = self.ports.take()
        servers = "\n".join(
            f"    server {node.name} 127.0.0.1:{node.pg_port} check port {node.rest_port}"
            for node in self.nodes.values()
        )
        config = self.directory / "haproxy.cfg"
        config.write_text(f"""global
    maxconn 1000
    stats socket {self.directory / "haproxy.sock"} mode 600 level user
defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen primary
    bind 127.0.0.1:{self.haproxy_port}
    option httpchk
    http-check send meth GET uri /primary
    http-check expect status 200
    default-server inter {CHECK_INTERVAL_MS}ms fall {CHECK_FALL} rise 1 on-marked-down shutdown-sessions
{servers}
""")
        self.fleet.start("haproxy", ["haproxy", "-db", "-f", str(config)], self._env())

    def haproxy_states(self) -> dict[str, str]:
        """Each node's state as HAProxy sees it (UP, DOWN, ...), from its stats socket."""
        try:
            with socket.socket(socket.AF_UNIX) as stats:
                stats.settimeout(2)
                stats.connect(str(self.directory / "haproxy.sock"))
                stats.sendall(b"show stat\n")
                text = b"".join(iter(lambda: stats.recv(65536), b"")).decode()
        except OSError:
            return {}
        rows = list(csv.reader(text.lstrip("# ").splitlines()))
        if not rows:
            return {}
        header = rows[0]
        name, status = header.index("svname"), header.index("status")
        return {row[name]: row[status].split()[0] for row in rows[1:]
                if len(row) > status and row[name] in self.nodes}

    def _env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        env.update(HOME=str(self.directory), LC_ALL="C.UTF-8")
        return env

    def start_node(self, name: str) -> None:
        """Start (or start again) node `name`'s Patroni, which starts its PostgreSQL."""
        node = self.nodes[name]
        argv = _as_postgres(["patroni", str(node.config)])
        if name in self.fleet.processes:
            node.process = self.fleet.restart(name)
        else:
            node.process = self.fleet.start(name, argv, self._env())

    def stop(self) -> None:
        """Stop HAProxy, every node (Patroni stops its server; what is left is killed by PID),
        etcd; remove the directory. Safe to call on a pair half started."""
        haproxy = self.fleet.processes.get("haproxy")
        if haproxy is not None:
            haproxy.stop(5)
        leader = self.leader()
        # The replica first: a leader stopped first would hand its lead over on the way out.
        for node in sorted(self.nodes.values(), key=lambda node: node is leader):
            self.thaw(node.name)
            if node.process is not None:
                node.process.stop(20)
            for pid in reversed(node.postgres_pids()):
                kill_if_running(pid)
        self.fleet.kill_all()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    # State

    def leader(self) -> Node | None:
        """The node whose Patroni says it is the primary (None during a failover)."""
        return next((node for node in self.nodes.values() if node.is_primary()), None)

    def other(self, node: Node) -> Node:
        return next(other for other in self.nodes.values() if other is not node)

    def members(self) -> list[dict[str, Any]]:
        """Patroni's /cluster member list, from whichever node answers."""
        for node in self.nodes.values():
            status, body = node.rest("/cluster")
            if status == 200 and body:
                return body.get("members", [])
        return []

    def describe(self) -> str:
        return json.dumps(self.members()) + "\n" + self.fleet.describe()

    def wait_streaming(self, timeout: float = 120.0, *, synchronous: bool | None = None) -> None:
        """Until both members run, one the leader, the other a replica streaming from it (and,
        `synchronous` (default: the pair's), its synchronous standby)."""
        def streaming() -> bool:
            members = self.members()
            leaders = [m for m in members if m.get("role") == "leader" and m.get("state") == "running"]
            replicas = [m for m in members if m.get("role") in ("replica", "sync_standby")
                        and m.get("state") in ("streaming", "running")]
            return len(leaders) == 1 and len(replicas) == 1
        wait_until(streaming, timeout, "a leader and a streaming replica", interval=0.5,
                   also=self.describe, error=HAError)
        if self.synchronous if synchronous is None else synchronous:
            wait_until(lambda: any(m.get("role") == "sync_standby" for m in self.members()), timeout,
                       "the replica to become the synchronous standby", interval=0.5, also=self.describe, error=HAError)

    @staticmethod
    def writable(url: str) -> bool:
        """`url` reaches a server that takes writes now."""
        try:
            with psycopg.connect(url, connect_timeout=2, autocommit=True) as conn:
                conn.execute("SET statement_timeout = '2s'")
                return conn.execute("SELECT NOT pg_is_in_recovery()").fetchone()[0]
        except psycopg.Error:
            return False

    def wait_writable(self, url: str, timeout: float = 60.0) -> None:
        wait_until(lambda: self.writable(url), timeout, f"{url} to take writes", interval=0.3,
                   also=self.describe, error=HAError)

    # Faults

    def kill_postmaster(self, name: str) -> int:
        """kill -9 node `name`'s postmaster (its backends follow it); the PID killed."""
        pid = self.nodes[name].postmaster_pid()
        if pid is None:
            raise HAError(f"{name} runs no postmaster")
        os.kill(pid, signal.SIGKILL)
        return pid

    def lose(self, name: str) -> None:
        """Node `name` gone at once: kill -9 its Patroni and every PostgreSQL process of it."""
        node = self.nodes[name]
        pids = node.postgres_pids()
        if node.process is not None:
            node.process.signal(signal.SIGKILL)
        for pid in pids:
            kill_if_running(pid)
        if node.process is not None and node.process.popen is not None:
            node.process.popen.wait(timeout=10)

    def freeze(self, name: str) -> list[int]:
        """SIGSTOP node `name`'s Patroni, then its postmaster, then the postmaster's children
        (listed once it cannot fork another); the PIDs stopped."""
        node = self.nodes[name]
        stopped = []
        if node.process is not None and node.process.alive:
            node.process.signal(signal.SIGSTOP)
            stopped.append(node.process.pid)
        postmaster = node.postmaster_pid()
        if postmaster is not None:
            os.kill(postmaster, signal.SIGSTOP)
            stopped.append(postmaster)
            for pid in descendants(postmaster):
                _signal(pid, signal.SIGSTOP)
                stopped.append(pid)
        node.frozen = stopped
        return stopped

    def thaw(self, name: str) -> None:
        """SIGCONT what freeze() stopped, children first."""
        node = self.nodes[name]
        for pid in reversed(node.frozen):
            _signal(pid, signal.SIGCONT)
        if node.process is not None and node.process.alive:
            node.process.signal(signal.SIGCONT)
        node.frozen = []

    def switchover(self, leader: str, candidate: str) -> subprocess.CompletedProcess:
        """`patronictl switchover` from `leader` to `candidate`, now."""
        done = subprocess.run(
            ["patronictl", "-c", str(self.nodes[leader].config), "switchover", "--leader", leader,
             "--candidate", candidate, "--force"],
            capture_output=True, text=True, env=self._env(), timeout=60,
        )
        if done.returncode != 0:
            raise HAError(f"patronictl switchover failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done

    def __enter__(self) -> HAPair:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass

