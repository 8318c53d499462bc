"""docs/testing.md: its complete example is the files of docs/examples/, and their tests pass,
run by pytest as a user runs them (in a subprocess, with the taskpool plugin as installed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC = REPO_ROOT / "docs" / "testing.md"
EXAMPLES = REPO_ROOT / "docs" / "examples"


def run_pytest(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_doc_shows_the_example_files_as_they_are():
    doc = DOC.read_text()
    blocks = re.findall(r"<!-- docs/examples/(\S+?)(?::| -->).*?\n```python\n(.*?)```", doc, flags=re.S)
    assert [name for name, _code in blocks] == ["greetings.py", "test_greetings.py"]
    for name, code in blocks:
        assert code == (EXAMPLES / name).read_text(), f"docs/testing.md's {name} differs from docs/examples/{name}"


def test_the_example_tests_pass_with_and_without_a_database():
    result = run_pytest("-v", str(EXAMPLES), cwd=EXAMPLES)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "5 passed" in output, output
    assert "test_a_worker_greets_and_logs PASSED" in output, output


def test_the_plugin_is_harmless_when_unused(tmp_path: Path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = {
        **os.environ,
        # Nothing answers here, and there is no Sqitch project there: neither is looked at.
        "TASKPOOL_TEST_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/nowhere",
        "TASKPOOL_SQITCH_DIR": str(tmp_path / "missing"),
    }
    result = run_pytest(str(tmp_path), cwd=tmp_path, env=env)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr
    # And it can be turned off.
    result = run_pytest("-p", "no:taskpool", "--fixtures", str(tmp_path), cwd=tmp_path, env=env)
    assert result.returncode == 0 and "taskpool_template" not in result.stdout


def test_the_fixture_says_what_is_missing(tmp_path: Path):
    (tmp_path / "test_db.py").write_text("def test_db(taskpool):\n    pass\n")
    env = {**os.environ, "TASKPOOL_SQITCH_DIR": str(tmp_path / "missing")}
    result = run_pytest(str(tmp_path), cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert "the taskpool fixture: no Sqitch project (sqitch.plan) in TASKPOOL_SQITCH_DIR=" in result.stdout
    env = {**os.environ, "TASKPOOL_TEST_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/nowhere"}
    result = run_pytest(str(tmp_path), cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert "the taskpool fixture: cannot connect to the test server" in result.stdout
