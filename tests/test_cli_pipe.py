"""A command whose output is cut short by its reader (`pyworker list | head -1`) ends quietly with
status 0: no BrokenPipeError, no message, run through a real shell pipe."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import psycopg
import pytest

# Enough rows that the listing outgrows the pipe's buffer (64 KiB): the writer meets a closed pipe.
TASKS = 1500


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["table", "json"])
def test_piping_a_long_listing_into_head_is_quiet_and_succeeds(
    conn: psycopg.Connection, db_url: str, output: list[str]
) -> None:
    specs = [{"role": "analytics_refresh", "payload": {"n": n}} for n in range(TASKS)]
    conn.execute("SELECT enqueue_tasks(%s::jsonb)", (json.dumps(specs),))
    command = [sys.executable, "-m", "pyworker", "list", "--limit", "1000", "--wide", *output]
    pipeline = f"set -o pipefail; {shlex.join(command)} | head -1"
    result = subprocess.run(
        ["bash", "-c", pipeline], env={"PATH": "/usr/bin:/bin", "DATABASE_URL": db_url},
        capture_output=True, text=True, timeout=120,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert len(result.stdout.splitlines()) == 1
