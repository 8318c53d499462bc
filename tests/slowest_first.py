"""The slowest tests start first, so that none of them is the last one running (pytest plugin).

`make test-py` runs the suite on pytest-xdist workers with --dist loadgroup and
--no-loadscope-reorder: the workers take the tests (an xdist_group as one unit) in the order of
the collection, which this plugin sorts: the tests named in SLOWEST, in that order, then the rest
as collected. Without it a test of two minutes collected last runs alone at the end while the
other workers idle. The order changes no test's outcome; tests/test_slowest_first.py checks that
every entry still names a test, so that the list cannot silently rot.

Before them all come the tests marked `waits_for_the_clock` (the one that waits for pg_cron's
next minute): they sleep through their wait while the other tests run beside them.

Each entry is a node id prefix: a file (every test in it) or a file::test, with or without
parameters. Seconds are one run's (setup plus call) on this 2-core machine under a full suite,
to rank them; refresh them from a run's `--durations` when they drift.
"""

from __future__ import annotations

import pytest

WAITS_FOR_THE_CLOCK = "waits_for_the_clock"

SLOWEST = [
    # Sqitch deploys: the wheel and its venv first (tests/package_fixtures.py, once per run).
    "tests/test_package.py::test_sqitch_deploys_and_reverts_what_apply_installed",
    # An xdist_group: its two deployed databases, then the upgrade from Sqitch.
    "tests/test_package.py::test_the_registry_is_the_one_sqitch_writes",
    "tests/test_package.py::test_upgrade_takes_over_from_sqitch_at_a_tag",
    "tests/test_package.py::test_the_installed_wheel_applies_the_schema_and_runs_a_task",
    "tests/test_package.py::test_upgrade_moves_a_database_of_the_combined_plan_in_place",
    "tests/test_make_psql.py",  # 170 s: a cluster of its own, Sqitch's full deploy
    "tests/test_readme_tour.py",  # 45-430 s: a wheel-only install, the tour
    "tests/test_docs.py::test_a_pages_examples_run[cli.md]",  # 30-320 s
    "tests/test_dashboard_security.py::test_hostile_action_fields_and_names_get_a_4xx_never_a_500",
    "tests/test_dashboard_security.py::test_hostile_query_parameters_get_a_400_naming_them_never_a_500",
    "tests/test_dashboard_layout.py",  # a browser each: 60-330 s
    "tests/test_read_only.py",  # an xdist_group: a server of its own and its standbys
    "tests/test_faults.py::test_scenario_holds_its_invariants[17]",
    "tests/test_faults.py::test_scenario_holds_its_invariants[4]",
    "tests/test_faults.py::test_scenario_holds_its_invariants[13]",
    "tests/test_faults.py::test_scenario_holds_its_invariants[11]",
    "tests/test_faults.py::test_scenario_holds_its_invariants[12]",
    "tests/test_dashboard_security.py::test_the_command_requires_a_log_in_beyond_loopback",
    "crawler/tests/test_crawler_demo.py",  # an xdist_group: 120 s
    "tests/test_roles.py::test_sync_creates_a_declared_role_and_its_dry_run_writes_nothing",
    "tests/test_faults.py::test_scenario_holds_its_invariants[7]",
    "tests/test_docs_testing.py",  # pytest runs of their own: 45-60 s each
    "tests/test_roles.py::test_roles_list_and_show",
    "tests/test_readme.py",
    "crawler/tests/test_crawler_hostile.py::test_a_gzip_bomb_is_refused_at_the_decompressed_limit",
    "crawler/tests/test_simulator.py::test_menus_drift_at_each_4_hour_step",
    # Waits out the 30 s after which a lost listener fails readiness.
    "tests/test_worker_metrics.py::test_a_lost_listener_is_a_metric_and_past_30_s_fails_readiness_but_never_liveness",
    "crawler/tests/test_crawler_object_storage.py",  # a moto S3 server each: 20-55 s
    "tests/test_failover.py",
    "tests/test_dashboard.py",  # an xdist_group: a browser for the module
    "crawler/tests/test_crawler_dashboard.py",  # an xdist_group
    "tests/test_no_roles.py",
    "tests/test_testing_drain.py",
    "crawler/tests/test_crawler_e2e.py",
    "tests/test_worker_prefetch.py::test_two_prefetching_workers_drain_600_tasks_each_completed_once",
    "tests/test_deadlines.py",
    "tests/test_faults.py",
    "tests/test_package.py",
]


def _matches(nodeid: str, entry: str) -> bool:
    # An xdist_group's tests carry "@group" at the end of their node id.
    nodeid = nodeid.split("@", 1)[0] if "@" in nodeid.rpartition("]")[2] else nodeid
    return nodeid == entry or nodeid.startswith((entry + "::", entry + "["))


def _rank(nodeid: str) -> int:
    return next((rank for rank, entry in enumerate(SLOWEST) if _matches(nodeid, entry)), len(SLOWEST))


def _sort_key(item: pytest.Item) -> tuple[bool, int]:
    return item.get_closest_marker(WAITS_FOR_THE_CLOCK) is None, _rank(item.nodeid)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{WAITS_FOR_THE_CLOCK}: waits on the wall clock (pg_cron's minute); starts first"
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # trylast: after xdist has appended "@group" to the node ids of an xdist_group's tests.
    items.sort(key=_sort_key)
