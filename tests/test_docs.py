"""The pages in docs/: every ```sql block runs, in order, in a freshly deployed database (one per
page), and every ```python block compiles, as tests/test_readme.py does for the README. The
pages in RUN_SHELL also run their shell blocks, in their place among the SQL, as the README's
are run. The guides' complete examples are run in full by their own tests (test_client.py runs
docs/client.md's, test_docs_testing.py docs/examples/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from core_fixtures import REPO_ROOT
from test_readme import examples_in, run_shell, run_sql, runs_something, without_make

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))

# The pages whose shell blocks run too: their commands act on a fresh deploy and then end. The
# other pages' shell blocks start workers, the demo or the bench, which tests of their own run.
RUN_SHELL = {"cli.md"}

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
