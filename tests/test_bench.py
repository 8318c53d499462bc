"""The bench harness's arithmetic and writers (bench/report.py); no figure is measured here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import (  # noqa: E402
    Row,
    Stat,
    Target,
    markdown_table,
    median,
    percentile,
    text_table,
    write_results,
)


def test_median_of_odd_and_even_counts() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [float(n) for n in range(1, 101)]  # 1..100
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 100.0
    assert percentile(values, 50) == 50.5
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_a_row_compares_its_median_with_the_ceiling() -> None:
    row = Row("drain", "2 drain", "tasks/s", Stat([900.0, 800.0, 1000.0]),
              ceiling_name="(b)", ceiling=1000.0, target=Target(">=", 0.9, "ratio"))
    assert row.ratio == 0.9
    assert row.passed is True
    assert row.cells() == ["2 drain", "900 tasks/s (800–1,000)", "(b) 1,000", "0.90", ">= 0.9×", "pass"]


def test_a_value_target_ignores_the_ceiling() -> None:
    row = Row("p99", "4 p99", "ms", Stat([12.5]), target=Target("<=", 10, "value"))
    assert row.passed is False
    assert row.cells()[1] == "12.5 ms"
    assert row.cells()[-1] == "FAIL"


def test_an_unmeasured_figure_with_a_target_fails_and_says_why() -> None:
    row = Row("drain_batched", "3 drain", "tasks/s", error="worker exited with 2",
              target=Target(">=", 1.5, "ratio"))
    assert row.passed is False
    assert row.cells()[1] == "n/a: worker exited with 2"


def test_tables_and_files(tmp_path: Path) -> None:
    rows = [
        Row("ceiling_a", "1a ceiling", "tx/s", Stat([100.0, 110.0, 90.0]), note="pgbench"),
        Row("x", "a | b", "ms", Stat([1.0]), target=Target("<=", 10, "value")),
    ]
    text = text_table(rows).splitlines()
    assert text[0].startswith("figure") and set(text[1]) <= {"-", " "}
    assert len({len(line) for line in text[:2]}) == 1
    assert "a \\| b" in markdown_table(rows)

    meta = {"started_at": "2026-01-01T00:00:00+00:00", "mode": "quick"}
    json_path, md_path = write_results(tmp_path / "results", "stamp", meta, rows)
    data = json.loads(json_path.read_text())
    assert data["meta"] == meta
    assert data["rows"][0]["stat"] == {"median": 100.0, "min": 90.0, "max": 110.0,
                                       "samples": [100.0, 110.0, 90.0]}
    assert data["rows"][1]["passed"] is True
    assert md_path.read_text() == (tmp_path / "results" / "bench-latest.md").read_text()
    assert "- 1a ceiling: pgbench" in md_path.read_text()
