"""The fault and abuse suite's short form (faults/, issue 7): each scenario, scaled down.

Each scenario is a test of its own (pytest-xdist spreads them over its workers) and runs in its
own copy of the deployed database with real worker processes, checking its invariants; a scenario
that fails shows its failed checks and the processes' logs. The scenarios that restart the server
(4 and 17) run on a server of their own, a promoted copy of the test server (testkit/replica.py),
so that the other tests running at the same time never see it go down. The table of the run is
written to results/faults-quick-latest.md (tests/faults_table.py). The full form, with the soak,
is `make faults`.
"""

from __future__ import annotations

from pathlib import Path

import faults_table
import pytest

from faults import scenarios
from faults.harness import Context
from testkit.replica import server_of_its_own


@pytest.mark.parametrize("number", list(scenarios.load()))
def test_scenario_holds_its_invariants(
    number: int, db_url: str, tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    if scenarios.load()[number].restarts_server:
        with server_of_its_own(db_url) as server:
            result = scenarios.run(
                number, Context(server.url_for(db_url), tmp_path, quick=True, restart_server=server.restart)
            )
    else:
        result = scenarios.run(number, Context(db_url, tmp_path, quick=True))
    faults_table.record(pytestconfig, result)
    if result.verdict == "SKIP":
        pytest.skip(result.skipped)
    error_log = tmp_path / "error.txt"
    details = error_log.read_text()[-6000:] if error_log.exists() else ""
    assert result.verdict in ("PASS", "PARTIAL"), (
        f"scenario {number} ({result.name}): {result.verdict}: {result.notes()}\n{details}"
    )
