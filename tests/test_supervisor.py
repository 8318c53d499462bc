"""The supervisor of `pyworker --processes M` (docs/supervisor.md): it restarts a worker process
that dies, with the same worker id and a growing backoff, gives up after repeated crashes, stops
at once on a configuration error, and after SIGTERM restarts nothing and exits with a code that
reflects its children. Real `python -m pyworker` processes against a real database.
"""

from __future__ import annotations

import os
import signal

import psycopg
from worker_support import Workers, enqueue, fetch_one, wait_for, wait_for_status

FAST = {
    "TASKPOOL_RESTART_BACKOFF_SECONDS": "0.2",
    "TASKPOOL_CRASH_WINDOW_SECONDS": "60",
}


def registered_pids(pool: psycopg.Connection) -> dict[str, int]:
    return dict(pool.execute("SELECT worker_id, pid FROM task_workers ORDER BY 1").fetchall())


def start_pool(workers: Workers, name: str, env: dict[str, str], role: str = "test_outcome", **settings):
    """A `--processes 2` supervisor of `role` with `env` added to its environment."""
    return workers.start(role, name, ready=False, args=("--processes", "2"), extra_env=env, **settings)


def test_a_killed_worker_process_is_restarted_with_its_id_and_works_on(
    pool: psycopg.Connection, workers: Workers
) -> None:
    parent = start_pool(workers, "sup", FAST)
    pids = wait_for(
        lambda: (found := registered_pids(pool)).keys() == {"sup-1", "sup-2"} and found,
        15,
        "both worker processes to register",
        also=parent.describe,
    )
    os.kill(pids["sup-1"], signal.SIGKILL)
    log = parent.wait_for_log(f"Worker process sup-1 (pid {pids['sup-1']}) was killed by SIGKILL; restarting it in 0.2 s")
    assert "1 crash(es) within 60 s; the supervisor gives up at 5" in log
    parent.wait_for_log("Worker process sup-1 restarted (pid ")
    # The same id, a new process: registered again.
    wait_for(
        lambda: registered_pids(pool).get("sup-1") not in (None, pids["sup-1"]),
        15,
        "sup-1 to register again",
        also=parent.describe,
    )
    assert registered_pids(pool)["sup-2"] == pids["sup-2"]
    task_ids = [enqueue(pool, "test_outcome", {"raise": "nothing"}) for _ in range(6)]
    for task_id in task_ids:
        wait_for_status(pool, task_id, "completed", 10, also=parent.describe)

    # A child stopped on its own (SIGTERM to it alone, exit 0) was not asked by the supervisor:
    # restarted too, its backoff doubled.
    again = registered_pids(pool)["sup-1"]
    os.kill(again, signal.SIGTERM)
    parent.wait_for_log(
        f"Worker process sup-1 (pid {again}) exited with code 0 without being asked to stop; restarting it in 0.4 s"
    )
    wait_for(
        lambda: registered_pids(pool).get("sup-1") not in (None, again),
        15,
        "sup-1 to register a third time",
        also=parent.describe,
    )

    parent.send(signal.SIGTERM)
    assert parent.wait(15) == 0
    assert "Supervisor stopped: every worker process has exited (exit code 0)" in parent.log()
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


def test_the_supervisor_gives_up_after_repeated_crashes_and_stops_the_others(
    pool: psycopg.Connection, workers: Workers
) -> None:
    parent = start_pool(
        workers,
        "crashy",
        {**FAST, "TASKPOOL_RESTART_BACKOFF_SECONDS": "0.1", "TASKPOOL_CRASH_LIMIT": "3",
         "CRASH_WORKER_SUFFIX": "-2"},
        handlers="crashing_handlers",
    )
    code = parent.wait(30)
    log = parent.log()
    assert code == 1, log
    # The backoff doubles: 0.1 s, then 0.2 s; the third crash within the window gives up.
    assert "Worker process crashy-2 (pid " in log
    assert "exited with code 3; restarting it in 0.1 s" in log
    assert "exited with code 3; restarting it in 0.2 s" in log
    assert "exited with code 3: 3 crashes within 60 s, giving up: stopping the others" in log
    assert log.count("Worker process crashy-2 restarted") == 2
    # The healthy one was stopped cleanly (SIGTERM) and deregistered.
    assert "Worker process crashy-1 (pid " in log and "exited with code 0" in log
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0


def test_a_worker_process_that_cannot_start_as_configured_is_not_restarted(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # test_command has no handler among the test handlers (it is the --command tests' role):
    # each child exits 2.
    parent = workers.start("test_command", "nohandler", ready=False, args=("--processes", "2"))
    code = parent.wait(20)
    log = parent.log()
    assert code == 2, log
    assert "exited with code 2: it cannot start as configured, and neither would a restart" in log
    assert "restarting it" not in log and " restarted (pid" not in log


def test_after_sigterm_no_child_is_restarted_and_the_exit_code_reflects_them(
    pool: psycopg.Connection, workers: Workers
) -> None:
    parent = start_pool(workers, "term", FAST, role="test_work", grace=30.0)
    wait_for(
        lambda: registered_pids(pool).keys() == {"term-1", "term-2"},
        15,
        "both worker processes to register",
        also=parent.describe,
    )
    # A long task keeps one child busy through the 30 s grace after the signal.
    task_id = enqueue(pool, "test_work", {"seconds": 60})
    busy = wait_for_status(pool, task_id, "running", 10, also=parent.describe)["worker_id"]
    busy_pid = registered_pids(pool)[busy]
    parent.send(signal.SIGTERM)
    parent.wait_for_log("Received SIGTERM: forwarding it to the worker processes; none is restarted from now on")
    idle = "term-2" if busy == "term-1" else "term-1"
    parent.wait_for_log(f"Worker process {idle} (pid ")
    # The busy child dies hard after the signal: not restarted.
    os.kill(busy_pid, signal.SIGKILL)
    code = parent.wait(15)
    log = parent.log()
    assert code == 128 + signal.SIGKILL, log
    assert f"Worker process {busy} (pid {busy_pid}) was killed by SIGKILL" in log
    assert "restarting it" not in log and " restarted (pid" not in log
    assert "Supervisor stopped: every worker process has exited (exit code 137)" in log


def test_a_bad_supervisor_setting_is_refused_before_any_child_starts(
    pool: psycopg.Connection, workers: Workers
) -> None:
    parent = start_pool(workers, "badset", {"TASKPOOL_CRASH_LIMIT": "0"})
    code = parent.wait(15)
    log = parent.log()
    assert code == 2, log
    assert "TASKPOOL_CRASH_LIMIT must be a whole number above 0, not '0'" in log
    assert fetch_one(pool, "SELECT count(*) FROM task_workers")[0] == 0
