"""The pages in docs/: every ```sql block runs, in order, in a freshly deployed database (one per
page), and every ```python block compiles, as tests/test_readme.py does for the README. The
pages in RUN_SHELL also run their shell blocks, in their place among the SQL, as the README's
are run. The guides' complete examples are run in full by their own tests (test_client.py runs
docs/client.md's, test_docs_testing.py docs/examples/)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
import sys
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from core_fixtures import REPO_ROOT
from dashboard_support import dashboard_server
from test_readme import a_newcomers_environment, examples_in, run_example, run_shell, run_sql, runs_something, without_make

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))

# The pages whose shell blocks run too: their commands act on a fresh deploy and then end. The
# other pages' shell blocks start workers, the demo or the bench, which tests of their own run.
RUN_SHELL = {"cli.md"}

# The pages whose shell blocks call the dashboard's API: run on a dashboard started for them, its
# address in DASHBOARD and its token in TASKPOOL_DASHBOARD_TOKEN, as the page says.
RUN_ON_A_DASHBOARD = {"dashboard.md"}

# The pages the README's table of contents promises.
PROMISED = {
    "README.md", "concepts.md", "sql-reference.md", "worker.md", "cli.md",
    "schedules.md", "operations.md", "performance.md", "reliability.md", "crawler.md",
    "client.md", "supervisor.md", "commands.md", "testing.md", "tracing.md", "dashboard.md",
}


def test_there_are_the_promised_pages() -> None:
    assert {page.name for page in PAGES} >= PROMISED


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_a_pages_examples_run(page: Path, db_url: str) -> None:
    for example in examples_in(page.read_text(), source=f"docs/{page.name}"):
        if example.not_run:
            continue
        if example.kind == "sql":
            run_sql(example, db_url)
        elif example.kind == "python":
            compile(example.text, example.where(), "exec")
        elif page.name in RUN_SHELL:
            script = without_make(example)
            if runs_something(script):
                run_shell(example, script, db_url)


def test_the_cli_page_has_shell_examples_to_run() -> None:
    for name in RUN_SHELL:
        kinds = {example.kind for example in examples_in((DOCS / name).read_text()) if not example.not_run}
        assert "shell" in kinds, f"docs/{name} is in RUN_SHELL but has no shell block to run"


def crawled_payload(db_url: str, storage_root: Path) -> None:
    """A store in AZ with one payload, stored as the crawl stores it (gzip, under the storage's
    payloads/ layout) and recorded through record_crawl_payload."""
    fetched_at = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    menu = {"products": [{"id": "p1", "name": "Blue Dream 3.5g", "price": 35.0, "stock": 12}]}
    data = gzip.compress(json.dumps(menu).encode(), mtime=0)
    with psycopg.connect(db_url, autocommit=True) as conn:
        (store,) = conn.execute(
            "SELECT id FROM add_store('Docs Dispensary', platform => 'simulated', state_code => 'AZ')"
        ).fetchone()
        key = f"payloads/2026/03/01/store_{store}_20260301T120000000000Z.json.gz"
        (storage_root / key).parent.mkdir(parents=True)
        (storage_root / key).write_bytes(data)
        conn.execute(
            "SELECT record_crawl_payload(%s, %s, %s, %s, %s)",
            (store, fetched_at, key, len(data), hashlib.sha256(data).hexdigest()),
        )


@pytest.mark.parametrize("name", sorted(RUN_ON_A_DASHBOARD))
def test_a_pages_api_examples_run_on_a_dashboard(name: str, db_url: str, tmp_path: Path) -> None:
    token = secrets.token_hex(16)
    crawled_payload(db_url, tmp_path)
    ran = 0
    with dashboard_server(db_url, token, env={"TASKPOOL_STORAGE": str(tmp_path)}) as dashboard:
        env = a_newcomers_environment(
            DATABASE_URL=db_url,
            PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            DASHBOARD=dashboard.url,
            TASKPOOL_DASHBOARD_TOKEN=token,
        )
        for example in examples_in((DOCS / name).read_text(), source=f"docs/{name}"):
            if example.not_run or example.kind != "shell":
                continue
            script = without_make(example)
            if runs_something(script):
                run_example(example, ["bash", "-x", "-e", "-u", "-o", "pipefail"], script, env)
                ran += 1
    assert ran, f"docs/{name} is in RUN_ON_A_DASHBOARD but has no shell block to run"

