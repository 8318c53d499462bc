"""The fault and abuse suite's short form (faults/, issue 7): each scenario, scaled down.

Each scenario runs in its own copy of the deployed database with real worker processes and
checks its invariants; a scenario that fails shows its failed checks and the processes' logs.
The table of the run is written to results/faults-quick-latest.md. The full form, with the
soak, is `make faults`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from faults import report, scenarios
from faults.harness import REPO_ROOT, Context


@pytest.fixture(scope="module")
def table() -> Iterator[list[report.Result]]:
    """The results of this module's scenarios, written to results/ at the end."""
    results: list[report.Result] = []
    yield results
    if results:
        report.write(results, REPO_ROOT / "results", "quick")


@pytest.mark.parametrize("number", list(scenarios.load()))
def test_scenario_holds_its_invariants(
    number: int, db_url: str, tmp_path: Path, table: list[report.Result]
) -> None:
    result = scenarios.run(number, Context(db_url, tmp_path, quick=True))
    table.append(result)
    if result.verdict == "SKIP":
        pytest.skip(result.skipped)
    error_log = tmp_path / "error.txt"
    details = error_log.read_text()[-6000:] if error_log.exists() else ""
    assert result.verdict in ("PASS", "PARTIAL"), (
        f"scenario {number} ({result.name}): {result.verdict}: {result.notes()}\n{details}"
    )
