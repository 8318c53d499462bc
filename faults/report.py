"""A scenario's result, and the suite's one table (printed, and written to results/ as JSON and Markdown)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from faults.checker import Check, Metrics, as_dict

COLUMNS = [
    "#", "scenario", "workers (proc.×conc.)", "faults injected", "tasks", "lost", "dup. completions", "dup. executions",
    "store overlaps", "recovery p50 / p99 / max (s)", "verdict",
]


@dataclass
class Result:
    """What one scenario did and found."""

    # The table's columns, as row() fills them, and what the notes under it say of the figures.
    columns = COLUMNS
    notes_heading = "Notes (figures reported, not asserted; recovery counts the orphans in parentheses):"

    number: int
    name: str
    form: str = "full"
    faults: str = "-"
    # The worker fleets it ran, "processes×concurrency" each ("-": none).
    workers: str = "-"
    metrics: Metrics | None = None
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    partial: str | None = None
    error: str | None = None
    seconds: float = 0.0

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = value

    def hold(self, metrics: Metrics, *, overlaps: bool = True) -> None:
        """Keep `metrics` and check the common invariants (store overlaps unless not applicable)."""
        self.metrics = metrics
        for check in metrics.invariants():
            if overlaps or check.name != "no store overlaps":
                self.checks.append(check)

    @property
    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.skipped is not None:
            return "SKIP"
        if self.failed_checks or not self.checks:
            return "FAIL"
        if self.partial is not None:
            return "PARTIAL"
        return "PASS"

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "name": self.name,
            "form": self.form,
            "faults": self.faults,
            "workers": self.workers,
            "verdict": self.verdict,
            "metrics": as_dict(self.metrics) if self.metrics else None,
            "checks": [vars(check) for check in self.checks],
            "figures": self.figures,
            "skipped": self.skipped,
            "partial": self.partial,
            "error": self.error,
            "seconds": round(self.seconds, 1),
        }

    def row(self) -> list[str]:
        m = self.metrics
        dash = "-"
        if m is None:
            cells = [dash] * 5
            recovery = dash
        else:
            cells = [str(m.tasks), str(m.lost), str(m.duplicated_completions),
                     str(m.duplicate_executions), str(m.store_overlaps)]
            r = m.recovery_summary()
            recovery = (
                dash if r["p50"] is None
                else f"{r['p50']:.2f} / {r['p99']:.2f} / {r['max']:.2f} ({r['orphans']})"
            )
        return [str(self.number), self.name, self.workers, self.faults, *cells, recovery, self.verdict]

    def notes(self) -> str:
        """One line: the figures, then what failed or why it was skipped."""
        parts = [f"{key}: {format_value(value)}" for key, value in self.figures.items()]
        parts += [f"FAILED {c.name}: {c.detail}" for c in self.failed_checks]
        for label, text in (("skipped", self.skipped), ("partial", self.partial), ("error", self.error)):
            if text:
                parts.append(f"{label}: {text}")
        return "; ".join(parts)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {format_value(v)}" for k, v in value.items())
    return str(value)


def markdown(results: list[Result], title: str) -> str:
    columns = results[0].columns
    lines = [f"### {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in r.row()) + " |" for r in results]
    lines += ["", results[0].notes_heading, ""]
    lines += [f"- {r.number}. {r.name}: {r.notes() or '-'}" for r in results]
    return "\n".join(lines) + "\n"


def text_table(results: list[Result]) -> str:
    columns = results[0].columns
    rows = [columns, *(r.row() for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    out = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)


def write(results: list[Result], directory: Path, form: str, suite: str = "faults") -> tuple[Path, Path]:
    """results/<suite>-<form>-<time>.{json,md} and results/<suite>-<form>-latest.md; the two paths."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    title = f"make {suite} ({form} form), {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
    json_path = directory / f"{suite}-{form}-{stamp}.json"
    md_path = directory / f"{suite}-{form}-{stamp}.md"
    json_path.write_text(json.dumps([r.as_dict() for r in results], indent=2, default=str) + "\n")
    text = markdown(results, title)
    md_path.write_text(text)
    (directory / f"{suite}-{form}-latest.md").write_text(text)
    return json_path, md_path
