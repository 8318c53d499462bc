"""The taskpool pytest plugin: the `taskpool` fixture, a throwaway database with taskpool deployed.

Installed with the package as an entry-point plugin (`pytest11`, name `taskpool`): every pytest
run in an environment with pyworker installed loads it. It only adds two options and two
fixtures; nothing connects to a database until a test asks for the `taskpool` fixture. `-p no:taskpool` turns it off.

    def test_emails_go_out(taskpool):
        taskpool.add_role("send_email", max_retries=0)
        task_id = taskpool.enqueue("send_email", {"to": "a@example.com"})
        done = taskpool.drain(registry)                 # a real worker, in this thread
        assert done.task(task_id).status == "completed"

The schema is deployed (as `pyworker schema apply` does) once per test session into a template
database, and each test that asks for the fixture gets a fresh copy of it, dropped after the
test; the template is dropped at the end of the session. Server: --taskpool-database-url, else
TASKPOOL_TEST_DATABASE_URL, else DATABASE_URL, else pyworker's default; Sqitch project:
--taskpool-sqitch-dir, else TASKPOOL_SQITCH_DIR, else the one the package carries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyworker.testing.database import TaskpoolDatabase, Template


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("taskpool", "taskpool test databases (the `taskpool` fixture)")
    group.addoption(
        "--taskpool-database-url",
        default=None,
        help="the server the throwaway taskpool databases are made on (default:"
        " $TASKPOOL_TEST_DATABASE_URL, else $DATABASE_URL)",
    )
    group.addoption(
        "--taskpool-sqitch-dir",
        default=None,
        help="the taskpool Sqitch project to deploy (default: $TASKPOOL_SQITCH_DIR, else the"
        " one the package carries)",
    )


@pytest.fixture(scope="session")
def taskpool_template(request: pytest.FixtureRequest) -> Iterator[Template]:
    """The session's template database: taskpool deployed once, copied for each test."""
    from pyworker.testing.database import TestDatabaseError, Template

    try:
        template = Template(
            request.config.getoption("taskpool_database_url"),
            request.config.getoption("taskpool_sqitch_dir"),
        )
        try:
            template.create()
        except BaseException:
            template.drop()
            raise
    except TestDatabaseError as error:
        pytest.fail(f"the taskpool fixture: {error}", pytrace=False)
    try:
        yield template
    finally:
        template.drop()


@pytest.fixture
def taskpool(taskpool_template: Template) -> Iterator[TaskpoolDatabase]:
    """A fresh database with taskpool deployed, dropped after the test
    (pyworker.testing.database.TaskpoolDatabase: url, add_role, enqueue, drain, tasks, advance)."""
    database = taskpool_template.copy()
    try:
        yield database
    finally:
        database.drop()
