"""The fault suite's table for tests/test_faults.py: written once per run, to results/ as
`make faults-quick` writes it, with every scenario that ran in it.

Under pytest-xdist the scenarios run in several worker processes: each worker sends its results
back to the controller (xdist's workeroutput, pickled), which writes the one table at the end.
"""

from __future__ import annotations

import pickle

import pytest

from faults import report
from faults.harness import REPO_ROOT

WORKER_OUTPUT_KEY = "taskpool_fault_results"
# The results of this process's scenarios, and under xdist, in the controller, of every worker's.
results: list[report.Result] = []


def record(config: pytest.Config, result: report.Result) -> None:
    """Keep a scenario's result for the run's table."""
    results.append(result)
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_OUTPUT_KEY] = pickle.dumps(results)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """A worker finished: take its results (xdist calls this in the controller)."""
    sent = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
    if sent is not None:
        results.extend(pickle.loads(sent))


def pytest_sessionfinish(session: pytest.Session) -> None:
    if results and not hasattr(session.config, "workerinput"):
        report.write(sorted(results, key=lambda result: result.number), REPO_ROOT / "results", "quick")
