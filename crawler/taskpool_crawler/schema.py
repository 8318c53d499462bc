"""The crawler's Sqitch project (its tables and functions, which require the core's), named by
the package's `pyworker.schemas` entry point so that pyworker's test databases deploy it after
the core's (pyworker.testing.database.plugin_projects)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def sqitch_project() -> Path:
    """The project the package carries (taskpool_crawler/sqitch/), else, for an editable install
    of a taskpool checkout, the one beside the package (crawler/sqitch/), where Sqitch reads it."""
    packaged = Path(str(resources.files("taskpool_crawler").joinpath("sqitch")))
    if (packaged / "sqitch.plan").is_file():
        return packaged
    beside = Path(__file__).resolve().parents[1] / "sqitch"
    if (beside / "sqitch.plan").is_file():
        return beside
    raise FileNotFoundError(f"this taskpool_crawler carries no Sqitch project (neither {packaged} nor {beside})")
