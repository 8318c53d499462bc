"""pytest's root: the core's fixtures for tests/ and crawler/tests/ alike.

tests/core_fixtures.py holds them (db_url, conn, pool, workers, empty_db_url, worker_login_url,
monitor_login_url, run), and tests/package_fixtures.py the wheel's (checkout_wheel, wheel_home),
loaded here as plugins so that both folders see the same fixtures, made once per session (a
conftest's fixtures reach only its own folder). tests/ goes first on the import path: the
fixtures and the tests import its helper modules (worker_support, ...) by their bare names.
"""

import sys
from pathlib import Path

CORE_TESTS = str(Path(__file__).resolve().parent / "tests")
if CORE_TESTS not in sys.path:
    sys.path.insert(0, CORE_TESTS)

# package_fixtures: the checkout's wheel and a venv with it installed, made once per run.
# faults_table: the fault suite's table (results/), written once per run, xdist or not.
# slowest_first: the slowest tests start first (make test-py: --no-loadscope-reorder).
pytest_plugins = ["core_fixtures", "package_fixtures", "faults_table", "slowest_first"]
