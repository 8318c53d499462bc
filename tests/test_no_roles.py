"""A database with the core alone and no role (what `pyworker schema apply` leaves, the crawler
not deployed): enqueueing and starting a worker name the unknown role, "Known roles: none.",
instead of failing with "RAISE statement option cannot be null"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from worker_support import Workers, cli_runner_for


@pytest.fixture
def core_only_url(empty_db_url: str) -> str:
    """An empty database into which `pyworker schema apply` put the core's schema."""
    applied = cli_runner_for(empty_db_url)("schema", "apply")
    assert applied.exit_code == 0, applied.output
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM task_roles").fetchone() == (0,)
    return empty_db_url


@pytest.fixture
def core_only_workers(core_only_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(core_only_url, tmp_path)
    try:
        yield started
    finally:
        started.kill_all()


def test_enqueue_names_the_unknown_role(core_only_url: str) -> None:
    result = cli_runner_for(core_only_url)("enqueue", "store_discovery")
    assert result.exit_code == 2, result.output
    assert "unknown role 'store_discovery'" in result.stderr
    assert "Known roles: none." in result.stderr
    assert "cannot be null" not in result.stderr
    with psycopg.connect(core_only_url) as conn:
        assert conn.execute("SELECT count(*) FROM worker_tasks").fetchone() == (0,)


def test_a_worker_names_the_unknown_role_and_exits_2(core_only_workers: Workers, core_only_url: str) -> None:
    code, stderr = core_only_workers.run_to_exit("store_discovery", "w-no-roles")
    assert code == 2, stderr
    assert "unknown role 'store_discovery'" in stderr and "Known roles: none." in stderr
    assert "cannot be null" not in stderr
    with psycopg.connect(core_only_url) as conn:
        assert conn.execute("SELECT count(*) FROM task_workers").fetchone() == (0,)
