"""A worker's own metrics and probes (`pyworker --metrics-port N`, issue 16 item 3): real worker
processes serving /metrics, /healthz and /readyz, read over HTTP and parsed with
prometheus_client's text parser."""

from __future__ import annotations

import dataclasses
import re
import socket
import time
import types
import urllib.error
import urllib.request

import psycopg
import pytest
from core_fixtures import REPO_ROOT
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from pyworker.admin.probes import ProbeServer, serve
from pyworker.config import WorkerConfig
from pyworker.errors import ConfigurationError
from pyworker.worker import Worker
from testkit.relay import Relay
from worker_support import Workers, enqueue, report_schema_version, wait_for, wait_for_status

METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"
SERVING = re.compile(r"Serving /metrics, /healthz and /readyz on port (\d+)")


def get(port: int, path: str) -> tuple[int, str]:
    """The status and body of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def samples(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The worker's /metrics, parsed: value by sample name and sorted labels."""
    status, text = get(port, "/metrics")
    assert status == 200, text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def start_serving(workers: Workers, role: str, worker_id: str) -> int:
    """Start a worker with --metrics-port 0: the port it logged it serves on."""
    worker = workers.start(role, worker_id, args=("--metrics-port", "0"))
    return int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))


def free_port_pair() -> int:
    """A port N such that N and N+1 are free now."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("", port + 1))
                except OSError:
                    continue
                return port
    pytest.fail("no two free ports in a row")


def test_a_worker_counts_what_it_handled_and_answers_its_probes(
    pool: psycopg.Connection, workers: Workers
) -> None:
    port = start_serving(workers, "test_outcome", "metrics-a")
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/readyz") == (200, "ok\n")
    assert get(port, "/nothing")[0] == 404

    done = [enqueue(pool, "test_outcome", {"raise": "nothing"}) for _ in range(2)]
    retried = enqueue(pool, "test_outcome", {"raise": "value_error"})
    failed = enqueue(pool, "test_outcome", {"raise": "permanent"})
    for task_id in done:
        wait_for_status(pool, task_id, "completed", 10)
    wait_for_status(pool, failed, "failed", 10)
    wait_for(lambda: pool.execute("SELECT retry_count FROM worker_tasks WHERE id = %s", (retried,)).fetchone()[0],
             10, "the failed attempt to be retried")

    role = (("role", "test_outcome"),)

    def handled(outcome: str) -> float:
        return samples(port)[("pyworker_tasks_total", (("outcome", outcome), ("role", "test_outcome")))]

    # The completions are recorded in batches, their counts a moment after the database's.
    wait_for(lambda: handled("completed") == 2, 10, "both completions to be counted")
    found = samples(port)
    assert handled("retried") == 1
    assert handled("failed") == 1
    assert handled("lost") == 0
    assert found[("pyworker_tasks_claimed_total", role)] == 4
    assert found[("pyworker_claims_total", role)] >= 2
    assert found[("pyworker_handler_duration_seconds_count", role)] == 4
    assert found[("pyworker_handler_duration_seconds_bucket", (("le", "+Inf"), *role))] == 4
    assert found[("pyworker_tasks_in_flight", role)] == 0
    assert found[("pyworker_heartbeat_failures_total", ())] == 0
    assert found[("pyworker_database_reconnects_total", (("connection", "dispatcher"),))] == 0

    # docs/metrics.md has a row for each metric the worker serves, and for no other (the text
    # format gives each counter a <name>_created series too, its creation time).
    families = text_string_to_metric_families(get(port, "/metrics")[1])
    served = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in families
        if not family.name.endswith("_created")
    }
    documented = set(re.findall(r"^\| `(pyworker_[a-z_]+)`", METRICS_DOC.read_text(), flags=re.M))
    assert served == documented


def test_readiness_fails_with_the_reason_while_the_schema_is_not_the_one_expected(
    pool: psycopg.Connection, workers: Workers
) -> None:
    port = start_serving(workers, "test_work", "metrics-b")
    assert get(port, "/readyz") == (200, "ok\n")
    report_schema_version(pool, "1.0.0")
    status, reason = get(port, "/readyz")
    assert status == 503
    assert "version 1.0.0, a newer major version" in reason
    # Alive all the same: restarting the worker would not help.
    assert get(port, "/healthz") == (200, "ok\n")


def test_connections_lost_are_counted_as_reconnects_and_heartbeat_failures(
    pool: psycopg.Connection, workers: Workers
) -> None:
    # The heartbeat thread also recovers the role's stale tasks, once per half stale_threshold (test_work's
    # is 2 s). A long threshold, and the first recovery waited for, leave the beat as the next use of the
    # heartbeat's connection, so it is the beat that finds the connection gone.
    pool.execute("UPDATE task_roles SET stale_threshold = interval '10 minutes' WHERE role = 'test_work'")
    port = start_serving(workers, "test_work", "metrics-c")
    sessions = "FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'pyworker metrics-c%'"
    # The heartbeat's connection opens at its first beat.
    wait_for(lambda: pool.execute(f"SELECT count(*) {sessions}").fetchone()[0] == 3, 10,
             "the dispatcher's, the listener's and the heartbeat's connections")
    wait_for(lambda: pool.execute("SELECT count(*) FROM task_role_recoveries WHERE role = 'test_work'").fetchone()[0],
             10, "the worker's first stale recovery")
    pool.execute(f"SELECT pg_terminate_backend(pid) {sessions}")
    # The dispatcher reconnects at its next claim (a poll every 200 ms), the listener at once, the
    # heartbeat after the beat that failed.
    wanted = [
        ("pyworker_database_reconnects_total", (("connection", connection),))
        for connection in ("dispatcher", "heartbeat", "listener")
    ]
    wait_for(lambda: all(samples(port)[name] >= 1 for name in wanted), 15, "every connection to reconnect")
    assert samples(port)[("pyworker_heartbeat_failures_total", ())] >= 1
    assert get(port, "/readyz") == (200, "ok\n")


def test_each_worker_process_serves_the_next_port(pool: psycopg.Connection, workers: Workers) -> None:
    port = free_port_pair()
    supervisor = workers.start(
        "test_work", "metrics-d", ready=False, args=("--processes", "2", "--metrics-port", str(port))
    )
    for number, served in enumerate((port, port + 1), start=1):
        supervisor.wait_for_log(f"Serving /metrics, /healthz and /readyz on port {served}")
        assert get(served, "/healthz") == (200, "ok\n")
        status, text = get(served, "/metrics")
        assert status == 200 and 'pyworker_tasks_in_flight{role="test_work"} 0.0' in text, (number, text)


def test_a_port_in_use_is_refused_saying_so(pool: psycopg.Connection, workers: Workers) -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, stderr = workers.run_to_exit("test_work", "metrics-e", args=("--metrics-port", str(port)))
    assert code == 2, stderr
    assert f"cannot serve metrics on port {port}" in stderr
    assert pool.execute("SELECT count(*) FROM task_workers").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--metrics-port", "65536"), "65536 is not in the range 0<=x<=65535"),
        (("--metrics-port", "65535", "--processes", "2"), "needs ports past 65535"),
    ],
)
def test_a_metrics_port_out_of_range_is_bad_usage(
    pool: psycopg.Connection, workers: Workers, args: tuple[str, ...], message: str
) -> None:
    code, stderr = workers.run_to_exit("test_work", "metrics-f", args=args)
    assert code == 2, stderr
    assert message in stderr


def test_a_metrics_port_needs_something_to_serve_it() -> None:
    """The core serves no probes itself (`pyworker --metrics-port` hands the worker
    pyworker.admin.probes.serve): a Worker given a port and no server refuses at once, naming
    what to pass, before it opens anything."""
    config = WorkerConfig(database_url="postgresql://db.invalid/tp", roles=("test_work",), metrics_port=0)
    with pytest.raises(ConfigurationError, match=r"metrics port 0: nothing serves the probes \(pass serve_probes="):
        Worker(config)
    without_port = types.SimpleNamespace(config=dataclasses.replace(config, metrics_port=None))
    with pytest.raises(ConfigurationError, match="no metrics port"), serve(without_port):  # type: ignore[arg-type]
        pass


def test_liveness_fails_with_the_reason_the_loop_gives() -> None:
    """The probe server answers what the worker's liveness says: 503 and the reason once its loop
    stalled (a real stall takes LOOP_STALLED_AFTER_SECONDS, too long for a test)."""
    stalled: list[str] = []
    probes = ProbeServer(0, CollectorRegistry(), lambda: stalled[0] if stalled else None, lambda: None, host="127.0.0.1")
    probes.start()
    try:
        assert get(probes.port, "/healthz") == (200, "ok\n")
        stalled.append("the worker's loop has not turned for 61 s")
        assert get(probes.port, "/healthz") == (503, "the worker's loop has not turned for 61 s\n")
        assert get(probes.port, "/readyz") == (200, "ok\n")
    finally:
        probes.stop()


def listener_samples(port: int) -> dict[str, float]:
    """The listener's metrics: each state's gauge by state, and the two timestamps."""
    found = samples(port)
    listener = {
        dict(labels)["state"]: value for (name, labels), value in found.items() if name == "pyworker_listener_state"
    }
    listener["since"] = found[("pyworker_listener_state_since_timestamp_seconds", ())]
    listener["last_heard"] = found[("pyworker_listener_last_heard_timestamp_seconds", ())]
    return listener


def test_a_lost_listener_is_a_metric_and_past_30_s_fails_readiness_but_never_liveness(
    pool: psycopg.Connection, db_url: str, workers: Workers
) -> None:
    # Only the listener goes through the relay: the database itself answers /readyz all along.
    params = conninfo_to_dict(db_url)
    with Relay(params.get("host") or "127.0.0.1", int(params.get("port") or 5432)) as relay:
        worker = workers.start(
            "test_work", "listener-probe", args=("--metrics-port", "0"),
            extra_env={
                "PYWORKER_CALL_TIMEOUT_SECONDS": "2",
                "PYWORKER_LISTEN_DATABASE_URL": make_conninfo(
                    db_url, host="127.0.0.1", hostaddr="", port=str(relay.port)
                ),
            },
        )
        port = int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))
        wait_for(lambda: listener_samples(port)["connected"] == 1, 15, "the listener to connect", also=worker.describe)
        connected = listener_samples(port)
        assert (connected["reconnecting"], connected["disabled"]) == (0, 0)
        assert 0 < connected["since"] <= connected["last_heard"] <= time.time()
        assert get(port, "/readyz") == (200, "ok\n")

        # A frozen peer: the idle check (every 10 s) meets the call's deadline (2 s).
        relay.freeze()
        try:
            worker.wait_for_log("Listener: the database did not answer within 2 s", timeout=30)
            lost = listener_samples(port)
            assert (lost["connected"], lost["reconnecting"]) == (0, 1)
            assert lost["since"] > connected["since"]
            assert get(port, "/readyz") == (200, "ok\n")
            status, reason = wait_for(
                lambda: (answer := get(port, "/readyz"))[0] == 503 and answer, 45,
                "/readyz to fail for the listener", also=worker.describe,
            )
            assert reason.startswith("the listener has not been listening for 3"), reason
            assert "not ready past 30 s" in reason, reason
            assert time.time() - lost["since"] >= 30
            assert get(port, "/healthz") == (200, "ok\n")
            assert worker.alive, worker.describe()
        finally:
            relay.thaw()
        wait_for(lambda: get(port, "/readyz") == (200, "ok\n"), 30, "/readyz to answer ok again", also=worker.describe)
        back = listener_samples(port)
        assert (back["connected"], back["reconnecting"]) == (1, 0)
        assert back["since"] > lost["since"]
        assert get(port, "/healthz") == (200, "ok\n")


def test_a_terminated_listener_reconnects_at_once_and_the_metric_says_since_when(
    pool: psycopg.Connection, workers: Workers
) -> None:
    port = start_serving(workers, "test_work", "listener-terminated")
    wait_for(lambda: listener_samples(port)["connected"] == 1, 15, "the listener to connect")
    first = listener_samples(port)["since"]
    # The listener names itself in application_name.
    terminated = pool.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'pyworker listener-terminated listener'"
    ).fetchone()[0]
    assert terminated == 1
    wait_for(lambda: samples(port)[("pyworker_database_reconnects_total", (("connection", "listener"),))] == 1, 15,
             "the listener to reconnect")
    wait_for(lambda: listener_samples(port)["connected"] == 1, 15, "the listener to listen again")
    assert listener_samples(port)["since"] > first
    assert get(port, "/readyz") == (200, "ok\n")


def test_a_worker_that_polls_has_its_listener_disabled_and_is_ready(pool: psycopg.Connection, workers: Workers) -> None:
    worker = workers.start("test_work", "listener-disabled", args=("--pooled", "--metrics-port", "0"))
    port = int(SERVING.search(worker.wait_for_log("Serving /metrics")).group(1))
    listener = listener_samples(port)
    assert (listener["connected"], listener["reconnecting"], listener["disabled"]) == (0, 0, 1)
    assert listener["last_heard"] == 0
    assert get(port, "/readyz") == (200, "ok\n")
