"""tinyproxy instances on loopback, for the demo and the tests: real HTTP proxies to rotate.

Each instance runs in the foreground (`tinyproxy -d`) with a config file of its own under its
directory (its port, its log, its pid file), listening on 127.0.0.1 only and serving 127.0.0.1
only; a system tinyproxy service, if any, is neither used nor touched. Debian's tinyproxy
package provides the program (`make deps` installs it).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 10.0
STOP_SECONDS = 5.0
# A port picked free may be taken before tinyproxy binds it: try another, this many times.
PORT_ATTEMPTS = 5


@dataclass
class Tinyproxy:
    """A running tinyproxy: its loopback port, its files and its process."""

    name: str
    directory: Path
    port: int
    process: subprocess.Popen
    user: str | None = None
    password: str | None = None

    @property
    def url(self) -> str:
        """The URL to register (with its credentials, when it asks for some)."""
        credentials = f"{self.user}:{self.password}@" if self.user else ""
        return f"http://{credentials}127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "tinyproxy.log"

    @property
    def pid(self) -> int:
        return self.process.pid

    def requests(self) -> int:
        """How many requests its log shows it received."""
        if not self.log_file.exists():
            return 0
        return sum(
            "Request (file descriptor" in line
            for line in self.log_file.read_text(errors="replace").splitlines()
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM it by its PID, SIGKILL it if it does not exit in time."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def start_tinyproxy(
    directory: Path, name: str, *, user: str | None = None, password: str | None = None
) -> Tinyproxy:
    """Start a tinyproxy whose files go under `directory`, with Basic credentials if given;
    return once it accepts connections. RuntimeError when it cannot start."""
    program = shutil.which("tinyproxy") or shutil.which("tinyproxy", path="/usr/sbin:/usr/bin")
    if program is None:
        raise RuntimeError("tinyproxy is not installed (Debian's tinyproxy package; `make deps` installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    for _ in range(PORT_ATTEMPTS):
        port = _free_port()
        lines = [
            f"Port {port}",
            "Listen 127.0.0.1",
            "Allow 127.0.0.1",
            "Timeout 30",
            "MaxClients 100",
            "LogLevel Info",
            f'LogFile "{directory / "tinyproxy.log"}"',
            f'PidFile "{directory / "tinyproxy.pid"}"',
        ]
        if user:
            lines.append(f"BasicAuth {user} {password}")
        config = directory / "tinyproxy.conf"
        config.write_text("\n".join(lines) + "\n")
        with open(directory / "stderr.log", "ab") as stderr:
            process = subprocess.Popen(
                [program, "-d", "-c", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proxy = Tinyproxy(name, directory, port, process, user, password)
        deadline = time.monotonic() + START_SECONDS
        while proxy.running() and time.monotonic() < deadline:
            if _listening(port):
                return proxy
            time.sleep(0.05)
        proxy.stop()
    raise RuntimeError(f"tinyproxy {name} did not start: see {directory}")
