"""The guides in docs/: every ```sql block runs, in order, in a freshly deployed database (one
per guide), and every ```python block compiles, as tests/test_readme.py does for the README.
The guides' complete examples are run in full by their own tests (test_client.py runs
docs/client.md's, test_docs_testing.py docs/examples/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from core_fixtures import REPO_ROOT
from test_readme import examples_in, run_sql

GUIDES = sorted((REPO_ROOT / "docs").glob("*.md"))


def test_there_are_guides() -> None:
    assert {guide.name for guide in GUIDES} >= {
        "client.md", "workers.md", "supervisor.md", "commands.md", "testing.md", "tracing.md",
    }


@pytest.mark.parametrize("guide", GUIDES, ids=lambda guide: guide.name)
def test_a_guides_examples_run(guide: Path, db_url: str) -> None:
    for example in examples_in(guide.read_text()):
        if example.not_run:
            continue
        if example.kind == "sql":
            run_sql(example, db_url)
        elif example.kind == "python":
            compile(example.text, f"{guide.name} line {example.line}", "exec")
