"""`pyworker` processes (workers, the scheduler) started as operators start them, with their logs.

Each process runs in a session of its own (a Ctrl-C on the harness's terminal does not reach it;
the harness ends it), writes its stderr (and stdout, unless given a file of its own) to a log,
and is ended by PID: gracefully (SIGTERM, SIGKILL after a grace period), by a signal to it or to
its process group, or killed with the commands it runs. A Fleet holds them by name; its failures
are raised as the harness's own error (pytest's failure, ScenarioError, BenchError).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.env import REPO_ROOT
from testkit.waiting import WaitTimeout, wait_until

# The environment variables that configure a worker: none leaks from the harness's environment.
SETTING_PREFIXES = ("WORKER_", "PYWORKER_", "POLL_", "HEARTBEAT_", "LOG_", "SHUTDOWN_")

Error = Callable[[str], BaseException]


def pyworker_argv(*args: str) -> list[str]:
    """`python -m pyworker ARGS`, with this interpreter (the venv's)."""
    return [sys.executable, "-m", "pyworker", *args]


def worker_env(
    database_url: str, *, pythonpath: Iterable[str | Path] = (), **settings: object
) -> dict[str, str]:
    """os.environ without any worker setting, plus DATABASE_URL, `settings` (environment
    variables: TASKPOOL_ROLE=..., None leaves one out), and `pythonpath` then this repository
    first on PYTHONPATH (for the harness's handlers and the kit)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(SETTING_PREFIXES)}
    paths = [*map(str, pythonpath), str(REPO_ROOT), os.environ.get("PYTHONPATH")]
    env.update(
        DATABASE_URL=database_url,
        PYTHONPATH=os.pathsep.join(dict.fromkeys(filter(None, paths))),
        PYTHONUNBUFFERED="1",
    )
    env.update({key: str(value) for key, value in settings.items() if value is not None})
    return env


def process_gone(pid: int) -> bool:
    """True when no process `pid` runs any more.

    A zombie counts as gone: it has exited, only nobody reaped it. Here the init process does
    not reap orphans, so a killed command's orphaned child stays a zombie for good.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    # The state follows the command name, which is in parentheses and may contain spaces.
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def descendants(pid: int) -> list[int]:
    """The PIDs of the processes below `pid`, children first."""
    found: list[int] = []
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return found
    for thread in threads:
        try:
            children = [int(child) for child in (thread / "children").read_text().split()]
        except FileNotFoundError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def kill_if_running(pid: int) -> None:
    """SIGKILL `pid` unless it is gone."""
    if not process_gone(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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


@dataclass
class Process:
    """A process the harness starts, its log appended across restarts.

    `stdout_path`: a file of its own for stdout (default: the log, with stderr)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    cwd: Path = REPO_ROOT
    stdout_path: Path | None = None
    error: Error = WaitTimeout
    popen: subprocess.Popen | None = None
    restarts: int = 0

    def start(self) -> None:
        # A restart appends to the log; a first start begins a new one.
        mode = "ab" if self.restarts else "wb"
        with open(self.log_path, mode) as log:
            out = open(self.stdout_path, mode) if self.stdout_path else log
            try:
                self.popen = subprocess.Popen(
                    self.argv,
                    env=self.env,
                    cwd=self.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=log,
                    start_new_session=True,
                )
            finally:
                if out is not log:
                    out.close()

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit code once it has exited, else None."""
        return None if self.popen is None else self.popen.poll()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def describe(self, lines: int = 40) -> str:
        """The process's state and the last `lines` lines of its log."""
        code = self.returncode
        state = "running" if code is None else f"exited with {code}"
        log = self.log().splitlines()
        cut = f" (last {lines} of {len(log)} lines; all in {self.log_path})" if len(log) > lines else ""
        tail = "\n".join(log[-lines:])
        return f"--- {self.name} (pid {self.pid}, {state}) log{cut}:\n{tail}"

    def wait_for_log(self, text: str, timeout: float = 10.0, *, since_restart: bool = False) -> str:
        """The log once it contains `text` (with `since_restart`, once more than before the last
        restart); fails at once if the process exits first."""
        times = self.restarts + 1 if since_restart else 1

        def found() -> str | None:
            log = self.log()
            if log.count(text) >= times:
                return log
            if not self.alive:
                raise self.error(f"{self.name} exited before logging {text!r}\n{self.describe()}")
            return None

        return wait_until(found, timeout, f"{text!r} in the log of {self.name}", also=self.describe, error=self.error)

    def send(self, signum: int) -> None:
        """Send `signum` to the process itself."""
        assert self.popen is not None
        self.popen.send_signal(signum)

    def signal(self, signum: int) -> None:
        """Send `signum` to its process group (its session: it and what it started), if alive."""
        if self.alive:
            os.killpg(self.pid, signum)

    def wait(self, timeout: float) -> int:
        """The exit code; fails if it is still running after `timeout` seconds."""
        assert self.popen is not None
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise self.error(f"{self.name} still running after {timeout:g} s\n{self.describe()}") from None

    def terminate(self) -> None:
        """SIGTERM its group, once (a second SIGTERM tells pyworker to exit at once); a stopped
        process is woken first."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)

    def wait_or_kill(self, timeout: float) -> int | None:
        """Its exit code within `timeout` seconds, else SIGKILL its group and wait."""
        if self.popen is None:
            return None
        try:
            return self.popen.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return self.popen.wait(timeout=10)

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after `grace` seconds; its exit code."""
        if self.alive:
            self.terminate()
        return self.wait_or_kill(grace)

    def kill(self) -> None:
        """SIGKILL it and every process below it (commands run in sessions of their own), by PID."""
        if self.alive:
            # Collected before it dies and they are orphaned. SIGKILL ends a stopped process too.
            children = descendants(self.pid)
            self.popen.kill()
            for pid in children:
                kill_if_running(pid)
        if self.popen is not None:
            self.popen.wait(timeout=10)


@dataclass
class Fleet:
    """Processes by name, their logs in `log_dir`; stop() or kill_all() ends the living ones."""

    log_dir: Path
    error: Error = WaitTimeout
    cwd: Path = REPO_ROOT
    processes: dict[str, Process] = field(default_factory=dict)

    def add(
        self, name: str, argv: list[str], env: Mapping[str, str], *, separate_stdout: bool = False,
        cwd: Path | None = None, kind: type[Process] = Process, **fields: Any,
    ) -> Process:
        """A process named `name` (a `kind`, given `fields`), not started yet: its log is
        <log_dir>/<name>.log (with `separate_stdout`, <name>.stderr.log and <name>.stdout.log).
        A name stays with its process while it runs: reusing it then fails."""
        if name in self.processes and self.processes[name].alive:
            raise self.error(f"{name} is already running (pid {self.processes[name].pid})")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if separate_stdout:
            log, out = self.log_dir / f"{name}.stderr.log", self.log_dir / f"{name}.stdout.log"
        else:
            log, out = self.log_dir / f"{name}.log", None
        process = kind(name, list(argv), dict(env), log, cwd or self.cwd, out, self.error, **fields)
        self.processes[name] = process
        return process

    def start(self, name: str, argv: list[str], env: Mapping[str, str], **options: object) -> Process:
        """add() and start a process."""
        process = self.add(name, argv, env, **options)
        process.start()
        return process

    def restart(self, name: str) -> Process:
        """Start `name` again (after it ended), under the same name and log."""
        process = self.processes[name]
        process.restarts += 1
        process.start()
        return process

    def check_alive(self) -> None:
        """Fail when a process has exited, with its log's tail."""
        for process in self.processes.values():
            if process.popen is not None and not process.alive:
                raise self.error(process.describe(lines=5))

    def exit_codes(self) -> dict[str, int | None]:
        """Each process's exit code (None: still running)."""
        return {name: process.returncode for name, process in self.processes.items()}

    def logs(self) -> dict[str, str]:
        return {name: process.log() for name, process in self.processes.items()}

    def describe(self) -> str:
        return "\n".join(process.describe() for process in self.processes.values())

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM every living process at once, then SIGKILL those still running after `grace` s."""
        living = [process for process in self.processes.values() if process.alive]
        for process in living:
            process.terminate()
        deadline = time.monotonic() + grace
        for process in living:
            process.wait_or_kill(deadline - time.monotonic())

    def kill_all(self) -> None:
        """SIGKILL every process still running, and the commands it runs."""
        for process in self.processes.values():
            process.kill()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
