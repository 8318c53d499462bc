"""External commands as handlers (`--command`, Registry.command): the task goes to the command's
stdin as JSON; its stdout's JSON is the result, or its last stdout line is an envelope
({"result": ...}, {"error": ..., "retryable": false}, {"snooze": seconds}); exit 75 retries, exit
65 fails for good, any other non-zero exit (or a signal) fails the attempt, retryable, with the
tail of stderr. docs/commands.md has the protocol. The command runs in its own process group,
killed with all its children when the attempt is aborted; the attempt ends when the command
exits, and what it left running in its group is killed then."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyworker.db import storable_text
from pyworker.task import TASK_COLUMNS, Task
from pyworker.errors import ConfigurationError, Snooze
from pyworker.handlers import Aborted, Completion, current_task, on_exit_now

STDERR_TAIL_CHARS = 2000
KILL_GRACE_SECONDS = 2.0

# Children of running command handlers, killed too when the worker must exit at once.
_running_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()


def kill_process_group(process: subprocess.Popen, grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the process's whole group, then after `grace` seconds SIGKILL what is left."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        # The leader may be gone while its children still run in its group.
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@on_exit_now
def kill_running_children() -> None:
    """SIGKILL every command handler's process group at once (the worker is exiting)."""
    with _children_lock:
        children = list(_running_children)
    for child in children:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# The command protocol (docs/commands.md). Exit codes with a meaning of their own, from BSD's
# sysexits.h: 75 EX_TEMPFAIL, "try again later", retries the task; 65 EX_DATAERR, "the input data
# was incorrect", fails it for good: the same payload cannot do better on another attempt. Every
# other non-zero exit, and a death by signal, is a retryable failure, as before the protocol.
EXIT_RETRY = 75
EXIT_PERMANENT = 65
# The keys of an envelope, the JSON object a command may print as its last stdout line; exactly one
# of the first three says what it is.
ENVELOPE_KINDS = ("result", "error", "snooze")
ENVELOPE_KEYS = frozenset({*ENVELOPE_KINDS, "follow_ups", "retryable"})
# A command printing more than this on stdout is killed and its attempt fails: a result belongs in
# the task table only when it is small, and the worker must not hold unbounded output in memory.
COMMAND_STDOUT_MAX_BYTES = 4 * 1024 * 1024
# How much of stderr the worker keeps while the command runs (the rest is read and dropped).
COMMAND_STDERR_KEEP_BYTES = 64 * 1024
# The output before the last line (a command's log), kept this long: in the failed attempt's
# error_data, or logged with a success.
STDOUT_TAIL_CHARS = 2000
# error_data must fit fail_task's bound (16384 bytes as jsonb text): the tails are cut to fit this.
ERROR_DATA_MAX_BYTES = 12000
_READ_CHUNK = 65536

log = logging.getLogger("pyworker")


class CommandFailed(Exception):
    """An external command handler failed: it exited non-zero, was killed by a signal, printed an
    error envelope, or printed something that is neither a result nor a valid envelope.

    `retryable`: whether the attempt may be retried. `error_data`: the failure as a JSON object
    (exit code, signal, tails of stderr and stdout), kept with the attempt by fail_task.
    """

    def __init__(self, message: str, *, retryable: bool = True, error_data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.error_data = error_data


def bounded_error_data(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its *_tail strings cut (oldest text first) until it fits ERROR_DATA_MAX_BYTES."""
    data = {key: storable_text(value) if isinstance(value, str) else value for key, value in data.items()}
    keep = STDOUT_TAIL_CHARS
    while len(json.dumps(data, ensure_ascii=False, separators=(", ", ": ")).encode()) > ERROR_DATA_MAX_BYTES:
        tails = [key for key, value in data.items() if key.endswith("_tail") and isinstance(value, str) and value]
        if not tails or keep == 0:
            # Nothing left to cut: keep the keys that are not text.
            data = {key: value for key, value in data.items() if not isinstance(value, str) or key == "type"}
            break
        keep //= 2
        for key in tails:
            data[key] = data[key][-keep:] if keep else ""
    return data


@dataclass
class CommandRun:
    """What a command did: its exit status, its stdout (whole, unless it overflowed) and the tail
    of its stderr."""

    returncode: int
    stdout: bytes
    stderr: bytes
    overflowed: bool = False

    @property
    def signal_name(self) -> str | None:
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def stderr_tail(self) -> str:
        return self.stderr.decode(errors="replace")[-STDERR_TAIL_CHARS:].strip()


def task_as_json(task: Task) -> dict[str, Any]:
    """The task as JSON-ready data, what the command reads on stdin: its columns, times in
    ISO 8601, the claim_token as its text."""
    # Not dataclasses.asdict: it deep-copies every field, and the abort signal holds a lock.
    data = {}
    for name in TASK_COLUMNS:
        value = getattr(task, name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, uuid.UUID):
            value = str(value)
        data[name] = value
    return data

class CommandHandler:
    """Runs a task through an external command: task JSON on stdin; its last stdout line may be an
    envelope ({"result": ...}, {"error": ..., "retryable": false}, {"snooze": seconds}), else its
    stdout's JSON is the result; exit 75 retries, 65 fails for good (docs/commands.md)."""

    def __init__(self, argv: Sequence[str]) -> None:
        if not argv:
            raise ConfigurationError("a command handler needs a command to run")
        self.argv = list(argv)

    def __repr__(self) -> str:
        return f"CommandHandler({self.argv!r})"

    def __call__(self, task: Task) -> Any:
        stdin = json.dumps(task_as_json(task)).encode()
        # Its own session and process group: the whole tree can be killed, and a signal sent to
        # the worker's terminal group does not reach it before the worker decides.
        process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        with _children_lock:
            _running_children.add(process)
        try:
            run = self._communicate(process, stdin, task)
        finally:
            with _children_lock:
                _running_children.discard(process)
        return interpret(run)

    @staticmethod
    def _communicate(process: subprocess.Popen, stdin: bytes, task: Task) -> CommandRun:
        """Feed stdin and collect the output (stdout up to COMMAND_STDOUT_MAX_BYTES, the end of
        stderr) until the command exits, killing the process group when the attempt aborts or
        stdout overflows.

        The command's exit ends the attempt, not the end of its output: a background child it
        leaves behind may hold stdout open for ever. Once the command has exited, what is left of
        its process group is killed and what its pipes already hold is read, without waiting for
        an end of file that may never come."""
        selector = selectors.DefaultSelector()
        pending = memoryview(stdin)
        streams = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
        in_fd = process.stdin.fileno()
        for fd in (in_fd, out_fd, err_fd):
            os.set_blocking(fd, False)
        selector.register(in_fd, selectors.EVENT_WRITE)
        selector.register(out_fd, selectors.EVENT_READ)
        selector.register(err_fd, selectors.EVENT_READ)
        open_files = {in_fd: process.stdin, out_fd: process.stdout, err_fd: process.stderr}

        def close(fd: int) -> None:
            selector.unregister(fd)
            try:
                open_files.pop(fd).close()
            except OSError:
                pass

        def abort_if_fired() -> None:
            if task.abort.fired:
                for fd in list(open_files):
                    close(fd)
                kill_process_group(process)
                process.wait()
                raise Aborted(task.abort.reason)

        def read(fd: int) -> bool:
            """Read what the pipe holds now into its stream; whether it gave anything."""
            try:
                data = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                return False
            if not data:
                close(fd)
                return False
            buffer = streams[fd]
            buffer += data
            if fd == err_fd and len(buffer) > COMMAND_STDERR_KEEP_BYTES:
                del buffer[:-COMMAND_STDERR_KEEP_BYTES]
            return True

        def overflowed() -> bool:
            return len(streams[out_fd]) > COMMAND_STDOUT_MAX_BYTES

        try:
            while process.poll() is None and not overflowed():
                abort_if_fired()
                if out_fd not in open_files and err_fd not in open_files:
                    # Both pipes closed: only the exit is left to wait for.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=0.1)
                    continue
                for key, _events in selector.select(timeout=0.1):
                    fd = key.fd
                    if fd not in open_files:
                        continue
                    if fd == in_fd:
                        try:
                            written = os.write(fd, pending[:_READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            # The command does not read its stdin: its business.
                            close(fd)
                            continue
                        pending = pending[written:]
                        if not pending:
                            close(fd)
                        continue
                    read(fd)
                    if overflowed():
                        break
            # Exited (or overflowed): whatever is left of its process group is killed, so that
            # nothing writes after this, and the pipes give up what they already hold.
            kill_process_group(process)
            for fd in (out_fd, err_fd):
                while fd in open_files and not overflowed() and read(fd):
                    pass
            process.wait()
        finally:
            for fd in list(open_files):
                close(fd)
            selector.close()
        return CommandRun(process.returncode, bytes(streams[out_fd]), bytes(streams[err_fd]), overflowed())


def _last_line(stdout: bytes) -> tuple[bytes, bytes]:
    """The output before the last non-blank line, and that line."""
    stripped = stdout.rstrip()
    cut = stripped.rfind(b"\n")
    return stripped[: cut + 1], stripped[cut + 1 :].strip()


def _candidate(stdout: bytes) -> tuple[str, Any, bytes]:
    """What stdout says: ("empty", None, b""), ("json", value, log before it) with the whole of
    stdout or its last line as the value, or ("not_json", why, log)."""
    if not stdout.strip():
        return "empty", None, b""
    # The whole output first: a result printed over several lines (indented JSON) stays a result.
    try:
        return "json", json.loads(stdout.decode("utf-8")), b""
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        pass
    before, line = _last_line(stdout)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return "not_json", f"its last stdout line is not UTF-8 (byte 0x{line[error.start]:02x} at {error.start})", before
    try:
        return "json", json.loads(text), before
    except (json.JSONDecodeError, RecursionError) as error:
        return "not_json", f"its stdout is not JSON, nor is its last line: {error}", before


def is_envelope(value: Any) -> bool:
    """A non-empty JSON object whose keys are all envelope keys (docs/commands.md)."""
    return isinstance(value, dict) and bool(value) and value.keys() <= ENVELOPE_KEYS


def _envelope_problem(envelope: dict[str, Any]) -> str | None:
    """Why this envelope is not a valid one, or None."""
    kinds = [kind for kind in ENVELOPE_KINDS if kind in envelope]
    if len(kinds) != 1:
        return (
            "an envelope needs exactly one of \"result\", \"error\", \"snooze\", not "
            + (", ".join(kinds) if kinds else "none")
        )
    kind = kinds[0]
    if "follow_ups" in envelope and kind != "result":
        return "\"follow_ups\" goes only with \"result\""
    if "retryable" in envelope and kind != "error":
        return "\"retryable\" goes only with \"error\""
    if kind == "result" and "follow_ups" in envelope:
        follow_ups = envelope["follow_ups"]
        if not isinstance(follow_ups, list) or not all(isinstance(spec, dict) for spec in follow_ups):
            return "\"follow_ups\" must be a list of task specs (JSON objects)"
    if kind == "error":
        if not isinstance(envelope["error"], str) or not envelope["error"].strip():
            return "\"error\" must be a non-empty string"
        if not isinstance(envelope.get("retryable", True), bool):
            return "\"retryable\" must be true or false"
    if kind == "snooze":
        seconds = envelope["snooze"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            return "\"snooze\" must be a number of seconds"
        try:
            Snooze(seconds)
        except ValueError as error:
            return str(error)
    return None


def interpret(run: CommandRun) -> Any:
    """The attempt's outcome from what the command did: its result (or a Completion with
    follow-ups), or CommandFailed, or Snooze (docs/commands.md has the table)."""
    signal_name = run.signal_name
    data: dict[str, Any] = {
        "type": "CommandFailed",
        "exit_code": None if signal_name else run.returncode,
        "signal": signal_name,
        "stderr_tail": run.stderr_tail(),
    }

    def failed(message: str, *, retryable: bool, reason: str, log_before: bytes | None = None) -> CommandFailed:
        extra = {"reason": reason, "retryable": retryable}
        if log_before is None:
            log_before = run.stdout
        stdout_tail = log_before.decode(errors="replace")[-STDOUT_TAIL_CHARS:].strip()
        if stdout_tail:
            extra["stdout_tail"] = stdout_tail
        return CommandFailed(message, retryable=retryable, error_data=bounded_error_data({**data, **extra}))

    if run.overflowed:
        raise failed(
            f"command printed more than {COMMAND_STDOUT_MAX_BYTES} bytes on stdout: killed",
            retryable=True,
            reason="stdout_too_large",
            log_before=run.stdout[-STDOUT_TAIL_CHARS:],
        )
    tail = data["stderr_tail"]
    if signal_name is not None:
        raise failed(f"command killed by {signal_name}: {tail}", retryable=True, reason="signal")
    kind, value, before = _candidate(run.stdout)
    envelope = value if kind == "json" and is_envelope(value) else None
    if run.returncode != 0:
        # The exit code decides; an error envelope names the error.
        retryable = run.returncode != EXIT_PERMANENT
        if envelope is not None and isinstance(envelope.get("error"), str) and envelope["error"].strip():
            message = f"command exited with status {run.returncode}: {envelope['error']}"
            raise failed(message, retryable=retryable, reason="exit_code", log_before=before)
        raise failed(f"command exited with status {run.returncode}: {tail}", retryable=retryable, reason="exit_code")
    if kind == "empty":
        return None
    if kind == "not_json":
        raise failed(f"command printed something that is not JSON: {value}", retryable=True, reason="bad_output")
    if envelope is None:
        _log_output(before)
        return value
    problem = _envelope_problem(envelope)
    if problem is not None:
        raise failed(f"command printed an invalid envelope: {problem}", retryable=True, reason="bad_envelope", log_before=before)
    _log_output(before)
    if "error" in envelope:
        retryable = envelope.get("retryable", True)
        raise failed(envelope["error"], retryable=retryable, reason="envelope", log_before=before)
    if "snooze" in envelope:
        raise Snooze(envelope["snooze"])
    if "follow_ups" in envelope:
        return Completion(envelope["result"], envelope["follow_ups"])
    return envelope["result"]


def _log_output(before: bytes) -> None:
    """Log the tail of what the command printed before its result (its log), if anything."""
    text = before.decode(errors="replace")[-STDOUT_TAIL_CHARS:].strip()
    if text:
        task = current_task.get()
        log.info(
            "Task %s: command output: %s",
            task.id if task is not None else "?",
            text,
            extra={"event": "command_output", "outcome": None, "duration": None},
        )
