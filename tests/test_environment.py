"""Every environment variable pyworker reads is TASKPOOL_… (DATABASE_URL and libpq's PG* aside),
docs/environment.md lists them all, and the names of before 0.7 are still read: with a warning,
once, when the new name is unset; the new name wins when both are set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from core_fixtures import REPO_ROOT
from markdown_it import MarkdownIt

from pyworker import environment
from pyworker.environment import RENAMED

DOC = REPO_ROOT / "docs" / "environment.md"
SOURCES = [REPO_ROOT / "pyworker", REPO_ROOT / "crawler" / "taskpool_crawler"]
VARIABLE = re.compile(r"""["'](TASKPOOL_[A-Z0-9_]+)["']""")


def documented() -> dict[str, str]:
    """docs/environment.md's table: each variable and its name before 0.7 ('' when none)."""
    tokens = MarkdownIt().enable("table").parse(DOC.read_text())
    rows: list[list[str]] = []
    for index, token in enumerate(tokens):
        if token.type == "tr_open":
            cells = []
            for inner in tokens[index + 1:]:
                if inner.type == "tr_close":
                    break
                if inner.type == "inline":
                    cells.append(inner.content.strip("` "))
            rows.append(cells)
    header, *body = rows
    assert header[0] == "variable" and header[-1] == "before 0.7", header
    return {cells[0]: cells[-1] for cells in body}


def read_in_source() -> set[str]:
    """The TASKPOOL_ variables the packages' code names."""
    return {
        name
        for root in SOURCES
        for path in root.rglob("*.py")
        for name in VARIABLE.findall(path.read_text())
    }


def test_the_reference_lists_every_variable_the_code_reads_and_no_other() -> None:
    table = documented()
    assert set(table) == read_in_source() | {"DATABASE_URL"}
    assert not [name for name in table if not name.startswith("TASKPOOL_") and name != "DATABASE_URL"]


def test_the_reference_gives_each_renamed_variable_its_old_name() -> None:
    assert {name: old for name, old in documented().items() if old} == RENAMED


def test_every_old_name_has_a_new_taskpool_name_and_no_new_name_is_old() -> None:
    assert all(name.startswith("TASKPOOL_") for name in RENAMED)
    assert not set(RENAMED.values()) & set(RENAMED)


def test_the_new_name_is_read_first_and_wins_when_both_are_set() -> None:
    environ = {"TASKPOOL_PREFETCH": "8", "WORKER_PREFETCH": "4"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert environment.lookup("TASKPOOL_PREFETCH", environ) == "8"


def test_the_old_name_is_read_with_a_warning_naming_both_when_the_new_is_unset_or_empty() -> None:
    for environ in ({"WORKER_PREFETCH": "4"}, {"TASKPOOL_PREFETCH": "", "WORKER_PREFETCH": "4"}):
        with pytest.warns(FutureWarning, match="WORKER_PREFETCH is deprecated: set TASKPOOL_PREFETCH instead"):
            assert environment.lookup("TASKPOOL_PREFETCH", environ) == "4"
    assert environment.lookup("TASKPOOL_PREFETCH", {}) is None


def test_export_sets_both_names_for_handlers_and_removes_both() -> None:
    environ: dict[str, str] = {}
    environment.export("TASKPOOL_WORKER_ID", "w-1", environ)
    assert environ == {"TASKPOOL_WORKER_ID": "w-1", "WORKER_ID": "w-1"}
    environment.export("TASKPOOL_WORKER_ID", None, environ)
    assert environ == {}


def pyworker(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command, with `env` and nothing else of the caller's worker settings."""
    base = {
        name: value for name, value in os.environ.items()
        if name not in RENAMED and name not in RENAMED.values()
    }
    return subprocess.run(
        [sys.executable, "-m", "pyworker", *args], env={**base, **env}, cwd=cwd,
        capture_output=True, text=True, timeout=120,
    )


def test_the_cli_reads_an_old_name_and_warns_once(db_url: str, tmp_path: Path) -> None:
    # Read twice in this run (the option and the Database's own default): warned about once.
    result = pyworker(["version"], {"DATABASE_URL": db_url, "PYWORKER_CALL_TIMEOUT_SECONDS": "15"}, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("PYWORKER_CALL_TIMEOUT_SECONDS is deprecated: set TASKPOOL_CALL_TIMEOUT_SECONDS") == 1


def test_the_cli_refuses_a_bad_value_under_the_old_name_and_takes_the_new_over_it(
    db_url: str, tmp_path: Path
) -> None:
    old_only = pyworker(["version"], {"DATABASE_URL": db_url, "POLL_INTERVAL_MS": "0"}, tmp_path)
    assert old_only.returncode == 2, old_only.stdout + old_only.stderr
    assert "--poll-interval-ms" in old_only.stderr and "POLL_INTERVAL_MS is deprecated" in old_only.stderr
    both = pyworker(
        ["version"], {"DATABASE_URL": db_url, "POLL_INTERVAL_MS": "0", "TASKPOOL_POLL_INTERVAL_MS": "100"}, tmp_path
    )
    assert (both.returncode, both.stderr) == (0, ""), both.stderr
