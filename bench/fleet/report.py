"""The fleet bench's report as text (the terminal) and Markdown (results/), from its JSON data."""

from __future__ import annotations

from typing import Any

PLATFORM_COLUMNS = (
    "platform", "stores", "limit/s", "mean/s", "max/s", "max/limit", "slots", "waiting",
    "ready max", "late p50", "late p95", "late max", "overdue",
)


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1024 / 1024:,.1f} MB"


def platform_cells(row: dict[str, Any]) -> list[str]:
    late = row["lateness_fleet_minutes"]
    return [
        row["platform"], f"{row['stores']:,}", _num(row["limit_per_s"], 2), _num(row["mean_rate_per_s"], 2),
        _num(row["max_rate_per_s"], 2),
        _num(row["max_over_limit"], 2) + ("" if row["within_limit"] else " ABOVE"),
        _pct(row["slot_share"]), _pct(row["waiting_slot_share"]), f"{row['ready_backlog_max']:,}",
        _num(late["p50"]), _num(late["p95"]), _num(late["max"]),
        f"{row['overdue_at_end']:,}" + (f" ({row['oldest_overdue_fleet_minutes']:,.0f} min)" if row["overdue_at_end"] else ""),
    ]


def fleet_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    fleet, meta = report["fleet"], report["meta"]
    late = fleet["lateness_fleet_minutes"]
    shares = fleet["resync_slot_shares"]
    size = fleet["db_size_bytes"]
    claim, acquire = fleet["claim"], fleet["acquire_platform_request"]
    ticks = fleet["ticks"]
    return [
        ("worker slots", ", ".join(f"{role} {n}" for role, n in fleet["slots"].items())),
        ("product_resync slots idle", _pct(shares["idle"])),
        ("product_refresh slots busy", _pct(fleet["refresh_busy_share"])),
        ("slot time waiting on a limit", f"{_pct(fleet['waiting_slot_share'])} of product_resync's"),
        ("crawls completed", f"{fleet['crawls_completed']:,} (demand {fleet['crawl_demand_per_s']:.1f}/s, "
                             f"done {fleet['crawls_completed'] / meta['measured_seconds']:.1f}/s)"),
        ("lateness (fleet minutes)", f"p50 {_num(late['p50'])}, p95 {_num(late['p95'])}, max {_num(late['max'])}"),
        ("crawls due but not done at the end", f"{fleet['overdue_at_end']:,}"),
        ("database size", f"start {_mb(size['start'])}, steady (second half) mean {_mb(size['steady_mean'])}, "
                          f"end {_mb(size['end'])}"),
        ("database growth, second half", f"{_mb(fleet['db_growth_bytes_per_fleet_day'])} a fleet day"),
        ("largest tables", ", ".join(f"{name} {_mb(b)}" for name, b in fleet["largest_tables_bytes"].items())),
        ("claim calls (pg_stat_statements)",
         fleet["claim_note"] or f"{claim['calls']:,} ({claim['calls_per_s']:.1f}/s), mean {_num(claim['mean_ms'], 3)} ms"),
        ("handlers' token requests",
         fleet["claim_note"] or f"{acquire['calls']:,} ({acquire['calls_per_s']:.1f}/s), mean "
                                f"{_num(acquire['mean_ms'], 3)} ms, {_num(acquire['calls_per_request'], 2)} per request"),
        ("ticks", f"{ticks['count']:,}, mean {ticks['mean_ms']:.1f} ms, max {ticks['max_ms']:.1f} ms, "
                  f"{ticks['tasks_scheduled']:,} tasks scheduled"
                  + (f"; errors: {'; '.join(ticks['errors'])}" if ticks["errors"] else "")),
        ("retention pruned", ", ".join(f"{k} {v:,}" for k, v in sorted(fleet["retention_pruned"].items())) or "nothing"),
    ]


def settings_line(report: dict[str, Any]) -> str:
    meta = report["meta"]
    s = meta["settings"]
    return (f"{s['stores']:,} stores, compression {s['compression']:g}× (cadence {meta['cadence_seconds']:g} s, "
            f"tick every {meta['tick_seconds']:.2f} s), {meta['measured_seconds']:.0f} s measured, "
            f"rates over {meta['rate_window_seconds']:g} s windows, {s['products']} products a menu, "
            f"retention keeps {s['keep_fleet_hours']:g} fleet hours; {meta['machine']}; {meta['revision']}")


NOTES = (
    "limit/s, mean/s, max/s: requests let through (platform_governance.requests_total) a second of bench "
    "time; max/s is the highest over any window; the token bucket allows the limit plus its burst "
    "(5 s worth) a window: ABOVE marks more than that.",
    "slots: the platform's share of product_resync's slot time, from each attempt's start to its end "
    "(with idle, they sum to 100%); waiting: the share of all those slots' time spent in await_turn "
    "(taking a token its claim did not take, and sleeping until it is due).",
    "late: how long after its due time (scheduled_for) a crawl completed, in fleet minutes; overdue: "
    "crawls due and not done when the run ends (the oldest's lateness so far, in fleet minutes); "
    "ready max: the most resync tasks due and waiting at once.",
)


def text_report(report: dict[str, Any]) -> str:
    rows = [list(PLATFORM_COLUMNS)] + [platform_cells(row) for row in report["platforms"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(PLATFORM_COLUMNS))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    pairs = fleet_lines(report)
    label_width = max(len(label) for label, _ in pairs)
    lines += [""] + [f"{label.ljust(label_width)}  {value}" for label, value in pairs]
    lines += ["", settings_line(report), *(f"  {note}" for note in NOTES)]
    return "\n".join(lines)


def markdown_report(report: dict[str, Any]) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    lines = [f"# make bench-fleet, {report['meta']['started_at']}", "", settings_line(report), "",
             row(list(PLATFORM_COLUMNS)), row(["---"] * len(PLATFORM_COLUMNS))]
    lines += [row(platform_cells(r)) for r in report["platforms"]]
    lines += ["", row(["fleet", "value"]), row(["---", "---"])]
    lines += [row([label, value]) for label, value in fleet_lines(report)]
    lines += [""] + [f"- {note}" for note in NOTES]
    return "\n".join(lines) + "\n"
