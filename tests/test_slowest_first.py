"""tests/slowest_first.py: every entry names a test file, or a test function in it, that exists,
and the sort puts the named tests first, in the list's order."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from core_fixtures import REPO_ROOT
from slowest_first import SLOWEST, WAITS_FOR_THE_CLOCK, _rank, _sort_key


def test_every_entry_names_an_existing_file_or_test_function() -> None:
    missing = []
    for entry in SLOWEST:
        path, _, test = entry.partition("::")
        source = REPO_ROOT / path
        if not source.is_file():
            missing.append(entry)
            continue
        if test:
            functions = {node.name for node in ast.walk(ast.parse(source.read_text()))
                         if isinstance(node, ast.FunctionDef)}
            if test.split("[", 1)[0] not in functions:
                missing.append(entry)
    assert not missing, f"tests/slowest_first.py: update SLOWEST, these name nothing: {missing}"


def test_named_tests_rank_in_list_order_and_the_rest_after_them() -> None:
    assert _rank("tests/test_package.py::test_sqitch_deploys_and_reverts_what_apply_installed") == 0
    registry = _rank("tests/test_package.py::test_the_registry_is_the_one_sqitch_writes@package_registry")
    assert registry == 1
    # A file's entry ranks the tests of it that are not named before it.
    assert _rank("tests/test_package.py::test_the_wheel_holds_the_core_its_schema_and_py_typed") == len(SLOWEST) - 1
    first_fault = _rank("tests/test_faults.py::test_scenario_holds_its_invariants[17]")
    assert first_fault < _rank("tests/test_faults.py::test_scenario_holds_its_invariants[4]")
    # [1] is not named on its own: it ranks with the whole file's entry, after the named ones.
    assert _rank("tests/test_faults.py::test_scenario_holds_its_invariants[1]") == SLOWEST.index("tests/test_faults.py")
    # A prefix of a name is not the name.
    assert _rank("tests/test_faults.py::test_scenario_holds_its_invariants[170]") != first_fault
    assert _rank("tests/test_cli.py::test_anything") == len(SLOWEST)


@dataclass
class MarkedItem:
    """What the sort reads of a pytest.Item: its node id and its markers."""

    nodeid: str
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.markers else None


def test_a_test_that_waits_for_the_clock_goes_before_every_named_one() -> None:
    first_named = MarkedItem(SLOWEST[0])
    waits = MarkedItem("tests/test_cron.py::test_pg_cron_fires_the_tick", (WAITS_FOR_THE_CLOCK,))
    unnamed = MarkedItem("tests/test_cli.py::test_anything")
    assert sorted([unnamed, first_named, waits], key=_sort_key) == [waits, first_named, unnamed]

