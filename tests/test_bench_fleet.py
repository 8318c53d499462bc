"""The fleet bench (bench/fleet, `make bench-fleet`): its arithmetic, and a run in its smallest form
whose report must have its shape and hold its invariants. No timing is asserted: the bench
measures speed, the test only that what it reports is coherent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fleet import figures  # noqa: E402
from bench.fleet.__main__ import FleetBenchError, check_connections  # noqa: E402
from bench.fleet.report import text_report  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_the_stores_split_by_share_and_mix_in_discovery_rounds() -> None:
    counts = figures.store_counts(24_000)
    assert counts == {"dutchie": 9600, "jane": 7200, "leafly": 4800, "weedmaps": 2400}
    assert sum(figures.store_counts(10).values()) == 10
    rounds = figures.discovery_rounds(counts, 240)
    assert sum(count for _, _, count in rounds) == 24_000
    # Every round holds every platform: ids in insertion order mix the platforms.
    assert [name for name, _, _ in rounds[:4]] == ["dutchie", "jane", "leafly", "weedmaps"]
    assert rounds[4] == ("dutchie", 40, 40)


def test_the_workers_are_as_the_manifests_say() -> None:
    fleet = figures.manifest_fleet(REPO_ROOT / "kubernetes", ["product_resync", "product_refresh"])
    assert fleet["product_resync"] == figures.RoleFleet("product_resync", 20, 10)
    # product_refresh's patch sets no concurrency: the base Deployment's.
    assert fleet["product_refresh"].concurrency == 4


def test_the_highest_rate_is_over_a_whole_window() -> None:
    samples = [(0.0, 0), (1.0, 10), (2.0, 12), (3.0, 14), (4.0, 16)]
    assert figures.max_window_rate(samples, 1.0) == 10.0
    assert figures.max_window_rate(samples, 2.0) == 6.0
    assert figures.max_window_rate(samples, 5.0) is None
    assert figures.mean_rate(samples) == 4.0


def test_slot_shares_and_idle_sum_to_one() -> None:
    shares = figures.slot_shares({"dutchie": 30.0, "jane": 10.0}, 100.0, ["dutchie", "jane", "leafly"])
    assert shares == pytest.approx({"dutchie": 0.3, "jane": 0.1, "leafly": 0.0, "idle": 0.6})
    assert figures.slot_shares({}, 0.0, ["dutchie"]) == {"dutchie": 0.0, "idle": 1.0}


def test_the_bucket_allows_five_seconds_of_burst() -> None:
    assert figures.bucket_burst(1200) == 100.0
    assert figures.bucket_burst(6) == 1.0
    assert figures.compressed_limit(figures.PLATFORMS[3], 24) == 8 * 24


def test_a_fleet_that_would_exhaust_the_servers_connections_is_refused(db_url: str) -> None:
    with pytest.raises(FleetBenchError, match=r"may hold 24000 connections") as refused:
        check_connections(db_url, {"product_resync": (1000, 20)})
    assert "--max-pods" in str(refused.value) and "max_connections" in str(refused.value)
    check_connections(db_url, {"product_resync": (1, 20)})


def test_the_smallest_fleet_run_reports_rates_within_limits_and_whole_shares(
    db_url: str, tmp_path: Path
) -> None:
    command = [
        sys.executable, "-m", "bench.fleet", "--in-database", db_url, "--stores", "40",
        "--compression", "240", "--duration", "15", "--max-pods", "1", "--rate-window", "5",
        "--results-dir", str(tmp_path / "results"), "--json",
    ]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)

    assert set(report) == {"meta", "platforms", "fleet"}
    assert [row["platform"] for row in report["platforms"]] == [p.name for p in figures.PLATFORMS]
    assert sum(row["stores"] for row in report["platforms"]) == 40
    for row in report["platforms"]:
        assert row["limit_per_s"] > 0
        # Never above the limit: the token bucket's rate plus its burst over the window.
        assert row["within_limit"], row
        if row["max_rate_per_s"] is not None:
            assert row["max_rate_per_s"] <= row["bucket_allowance_per_s"] + 1 / report["meta"]["rate_window_seconds"]
        assert 0 <= row["slot_share"] <= 1
        assert 0 <= row["waiting_slot_share"] <= row["slot_share"] + 1e-9
        late = row["lateness_fleet_minutes"]
        if late["count"]:
            assert 0 <= late["p50"] <= late["p95"] <= late["max"]

    fleet = report["fleet"]
    assert fleet["slots"] == {"product_resync": 20, "product_refresh": 4, "payload_file_removal": 1}
    shares = fleet["resync_slot_shares"]
    assert set(shares) == {*(p.name for p in figures.PLATFORMS), "idle"}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert fleet["crawls_completed"] > 0
    assert fleet["crawls_completed"] == sum(row["lateness_fleet_minutes"]["count"] for row in report["platforms"])
    assert fleet["ticks"]["count"] > 0 and not fleet["ticks"]["errors"]
    assert fleet["db_size_bytes"]["start"] > 0 and fleet["db_size_bytes"]["max"] >= fleet["db_size_bytes"]["end"]
    if fleet["claim"] is None:
        assert "pg_stat_statements" in fleet["claim_note"]
    else:
        assert fleet["claim"]["calls"] > 0 and fleet["claim"]["mean_ms"] > 0

    written = json.loads((tmp_path / "results" / "bench-fleet-latest.json").read_text())
    assert written == report
    table = text_report(report)
    assert table.splitlines()[0].split()[:3] == ["platform", "stores", "limit/s"]
    platform_lines = table.split("\n\n")[0].splitlines()[2:]
    assert [line.split()[0] for line in platform_lines] == [p.name for p in figures.PLATFORMS]
    assert not any("ABOVE" in line for line in platform_lines)
    assert (tmp_path / "results" / "bench-fleet-latest.md").read_text().startswith("# make bench-fleet")
