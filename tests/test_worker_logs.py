"""What a worker's log and attempt history show of its handlers (issue 12 items 6, 7, 8): a
failing attempt's traceback at WARNING and kept with the attempt, the log level, handlers' and
libraries' own lines in the worker's format, and handler modules found in the working
directory. Real `python -m pyworker` processes (or the console script) against a real database.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner
from worker_support import WorkerProcess, Workers, enqueue, fetch_one, wait_for, wait_for_status

from pyworker.admin import cli

RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) \[[^\]]+\] ", re.M)
JSON_KEYS = {"ts", "level", "logger", "message", "worker_id", "role", "task_id", "event", "outcome", "duration"}


def run_tasks(
    pool: psycopg.Connection,
    workers: Workers,
    worker_id: str,
    payloads: list[dict[str, Any]],
    ends: tuple[str, ...] = ("completed", "pending"),
    **settings: Any,
) -> tuple[list[int], WorkerProcess]:
    """Enqueue a test_logs task per payload, run a worker until each has ended its first attempt
    (in one of `ends`), and stop it: the task ids and the stopped worker."""
    ids = [enqueue(pool, "test_logs", payload) for payload in payloads]
    worker = workers.start("test_logs", worker_id, ready=False, **settings)
    for task_id in ids:
        wait_for(
            lambda t=task_id: fetch_one(
                pool, "SELECT attempt = 1 AND status = ANY(%s) FROM worker_tasks WHERE id = %s", (list(ends), t)
            )[0],
            15,
            f"the first attempt of task {task_id} to end",
            also=worker.describe,
        )
    worker.send(signal.SIGTERM)
    assert worker.wait(10) == 0, worker.describe()
    return ids, worker


def records(log: str) -> list[str]:
    """The text log's records: each starts a line in the worker's format; a traceback, or a
    warning's source line, continues its record on the lines below."""
    starts = [match.start() for match in RECORD_START.finditer(log)]
    assert starts and starts[0] == 0, log
    return [log[start:end] for start, end in zip(starts, [*starts[1:], len(log)], strict=True)]


# Item 6: a failing attempt's traceback


def test_a_failing_attempt_logs_a_warning_with_its_traceback(
    pool: psycopg.Connection, workers: Workers
) -> None:
    (failing,), worker = run_tasks(pool, workers, "tb-text", [{"raise": "value_error"}])
    (failed,) = [record for record in records(worker.log()) if f"Task {failing} failed" in record]
    first, *traceback = failed.rstrip("\n").splitlines()
    assert first.endswith(
        f"WARNING [tb-text] Task {failing} failed: ValueError: the menu has no prices (now pending)"
    ), failed
    assert traceback[0] == "Traceback (most recent call last):", failed
    assert any("worker_handlers.py" in line and "in chatty" in line for line in traceback), failed
    assert traceback[-1] == "ValueError: the menu has no prices", failed


def test_the_attempt_history_keeps_the_traceback_and_show_prints_it(
    pool: psycopg.Connection, workers: Workers, db_url: str
) -> None:
    (failing, huge), _worker = run_tasks(
        pool, workers, "tb-history", [{"raise": "value_error"}, {"raise": "huge"}]
    )
    details = fetch_one(
        pool, "SELECT error_details FROM worker_task_attempts WHERE task_id = %s AND attempt = 1", (failing,)
    )[0]
    assert details.startswith("Traceback (most recent call last):"), details
    assert "in chatty" in details and details.endswith("ValueError: the menu has no prices\n"), details

    # A traceback longer than the bound keeps its start and its end, where the error is named.
    huge_details = fetch_one(
        pool, "SELECT error_details FROM worker_task_attempts WHERE task_id = %s AND attempt = 1", (huge,)
    )[0]
    assert len(huge_details) <= 20000
    assert huge_details.startswith("Traceback (most recent call last):")
    assert "characters cut ...]" in huge_details and huge_details.endswith("x" * 1000 + "\n")

    shown = CliRunner().invoke(cli.main, ["--database-url", db_url, "show", str(failing)])
    assert shown.exit_code == 0, shown.output
    assert "error details of attempt 1:\n    Traceback (most recent call last):\n" in shown.output
    assert "    ValueError: the menu has no prices\n" in shown.output
    as_json = CliRunner().invoke(cli.main, ["--database-url", db_url, "show", str(failing), "--json"])
    assert as_json.exit_code == 0, as_json.output
    (attempt,) = json.loads(as_json.output)["attempts"]
    assert attempt["error_details"] == details


def test_log_level_and_v_set_what_is_logged(pool: psycopg.Connection, workers: Workers) -> None:
    def handler_debug_logged(log: str) -> bool:
        return "the menu request in full" in log

    (failing,), quiet = run_tasks(pool, workers, "level-env", [{"raise": "value_error"}], log_level="warning")
    log = quiet.log()
    assert "Starting worker" not in log and "fetching the menu" not in log, log
    assert f"WARNING [level-env] Task {failing} failed: ValueError" in log, log

    _ids, default = run_tasks(pool, workers, "level-default", [{}])
    assert "Starting worker level-default" in default.log()
    assert not handler_debug_logged(default.log()), default.log()

    _ids, option = run_tasks(pool, workers, "level-option", [{}], args=("--log-level", "DEBUG"))
    assert handler_debug_logged(option.log()), option.log()

    _ids, verbose = run_tasks(pool, workers, "level-v", [{}], args=("-v",))
    assert handler_debug_logged(verbose.log()), verbose.log()

    # An explicit level wins over -v.
    _ids, both = run_tasks(pool, workers, "level-both", [{}], args=("-v",), log_level="info")
    assert not handler_debug_logged(both.log()) and "fetching the menu" in both.log(), both.log()


# Item 7: handlers' and libraries' own lines


def test_handlers_libraries_and_warnings_log_in_the_workers_text_format(
    pool: psycopg.Connection, workers: Workers
) -> None:
    (task_id,), worker = run_tasks(pool, workers, "chatty-text", [{}])
    log = worker.log()
    texts = records(log)
    for expected in [
        f"INFO [chatty-text] task {task_id}: fetching the menu",
        f"WARNING [chatty-text] task {task_id}: connection pool is full",
        f"UserWarning: task {task_id}: menu_v1 is deprecated",
        f"ERROR [chatty-text] Thread helper-of-{task_id} died: the helper thread of task {task_id} gave up",
        f"INFO [chatty-text] Task {task_id} completed successfully",
    ]:
        assert any(expected in record for record in texts), (expected, log)


def test_every_json_line_is_json_tagged_with_the_task_event_outcome_and_duration(
    pool: psycopg.Connection, workers: Workers
) -> None:
    (done, failing), worker = run_tasks(
        pool, workers, "chatty-json", [{}, {"raise": "value_error"}], log_format="json"
    )
    entries = [json.loads(line) for line in worker.log().splitlines()]
    for entry in entries:
        assert JSON_KEYS <= entry.keys(), entry
        assert entry["worker_id"] == "chatty-json" and entry["role"] == "test_logs", entry

    def only(predicate: Any) -> dict[str, Any]:
        (entry,) = [entry for entry in entries if predicate(entry)]
        return entry

    for task_id in (done, failing):
        claimed = only(lambda e, t=task_id: e["message"] == f"Claimed task {t} (test_logs)")
        assert (claimed["task_id"], claimed["event"]) == (task_id, "task_claimed")
        # The handler's own lines, its library's and its warning carry its task.
        for text, level, logger in [
            (f"task {task_id}: fetching the menu", "info", "worker_handlers"),
            (f"task {task_id}: connection pool is full", "warning", "acme_client"),
            (f"task {task_id}: menu_v1 is deprecated", "warning", "py.warnings"),
        ]:
            line = only(lambda e, x=text: x in e["message"])
            assert (line["task_id"], line["level"], line["logger"]) == (task_id, level, logger), line
        # A thread the handler starts has a context of its own (no task), and its death is a line.
        died = only(lambda e, t=task_id: e["message"].startswith(f"Thread helper-of-{t} died"))
        assert (died["event"], died["level"]) == ("thread_died", "error"), died
        assert died["traceback"].endswith(f"RuntimeError: the helper thread of task {task_id} gave up")

    completed = only(lambda e: e["event"] == "task_completed")
    assert (completed["task_id"], completed["outcome"], completed["level"]) == (done, "completed", "info")
    failed = only(lambda e: e["event"] == "task_failed")
    assert (failed["task_id"], failed["outcome"], failed["level"]) == (failing, "retried", "warning")
    assert failed["message"] == f"Task {failing} failed: ValueError: the menu has no prices (now pending)"
    assert failed["traceback"].startswith("Traceback (most recent call last):")
    assert failed["traceback"].endswith("ValueError: the menu has no prices")
    for ended in (completed, failed):
        assert isinstance(ended["duration"], float) and ended["duration"] >= 0, ended
    started = only(lambda e: e["event"] == "worker_started")
    assert (started["task_id"], started["outcome"], started["duration"]) == (None, None, None)



def test_a_worker_that_cannot_start_says_why_in_json_too(pool: psycopg.Connection, workers: Workers) -> None:
    code, stderr = workers.run_to_exit("test_command", "refused-json", log_format="json")
    assert code == 2, stderr
    entries = [json.loads(line) for line in stderr.splitlines()]
    (refusal,) = [entry for entry in entries if entry["event"] == "worker_refused_to_start"]
    assert "no handler for role 'test_command'" in refusal["message"], refusal
    assert (refusal["level"], refusal["worker_id"], refusal["role"]) == ("error", "refused-json", "test_command")


def test_a_running_worker_that_fails_says_so_and_not_that_it_refused_to_start(
    pool: psycopg.Connection, workers: Workers
) -> None:
    worker = workers.start("test_outcome", "fails-json", log_format="json")
    # The claim function vanishes under the running worker: no retry brings it back.
    pool.execute("ALTER FUNCTION claim_and_start_tasks(text, text, integer) RENAME TO claim_and_start_tasks_gone")
    assert worker.wait(15) == 1, worker.describe()
    entries = [json.loads(line) for line in worker.log().splitlines()]
    events = [entry["event"] for entry in entries]
    assert "worker_refused_to_start" not in events, worker.describe()
    (failure,) = [entry for entry in entries if entry["event"] == "worker_failed"]
    assert "worker fails-json stopped on an error" in failure["message"], failure
    assert "claim_and_start_tasks" in failure["message"], failure


# Item 8: handler modules in the working directory


def console_script() -> tuple[str]:
    """The installed `pyworker` script, whose own directory, not the working one, Python puts
    first on the import path."""
    script = Path(sys.executable).parent / "pyworker"
    assert script.exists(), f"no console script beside {sys.executable}: run `make deps`"
    return (str(script),)


def test_the_console_script_finds_a_handler_module_in_the_working_directory(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shop_tasks.py").write_text(
        "from pyworker.handlers import handler\n\n"
        "@handler('test_logs')\n"
        "def run(task):\n"
        "    return {'from': 'shop_tasks'}\n"
    )
    task_id = enqueue(pool, "test_logs", {})
    worker = workers.start(
        "test_logs", "cwd-handlers", program=console_script(), cwd=project, handlers=None,
        args=("--handlers", "shop_tasks"),
    )
    row = wait_for_status(pool, task_id, "completed", 15, also=worker.describe)
    assert row["result"] == {"from": "shop_tasks"}


def test_a_handler_module_not_found_names_pythonpath_and_the_directories_searched(
    workers: Workers, tmp_path: Path
) -> None:
    code, stderr = workers.run_to_exit(
        "test_logs", "cwd-missing", program=console_script(), cwd=tmp_path, handlers=None,
        args=("--handlers", "no_such_tasks"),
    )
    assert code == 2, stderr
    assert "cannot import handler module 'no_such_tasks': no module 'no_such_tasks'" in stderr
    assert "PYTHONPATH" in stderr
    searched = stderr.split("searched: ", 1)[1]
    assert str(tmp_path) in searched and str(Path(sys.executable).parent) in searched, stderr
