"""The bench's numbers and how they are shown: medians, percentiles, the table, JSON and Markdown.

Every figure is a list of samples (one per repetition); a row shows their median with the min and
max, the ceiling it is compared with, the ratio of the two, the target and whether it was met.
A figure that could not be measured is a row too, marked `n/a` with the reason, never a crash.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("the median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile, interpolating between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("a percentile of no values")
    if not 0 <= pct <= 100:
        raise ValueError(f"a percentile must be within 0 to 100, not {pct}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Stat:
    """A figure's samples, one per repetition."""

    samples: list[float]

    @property
    def median(self) -> float:
        return median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


@dataclass
class Target:
    """What a figure must reach: `value OP bound`, where value is the ratio or the figure itself."""

    op: str  # ">=" or "<="
    bound: float
    of: str  # "ratio" or "value"

    def met(self, value: float) -> bool:
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def describe(self, unit: str) -> str:
        if self.of == "ratio":
            return f"{self.op} {self.bound:g}×"
        return f"{self.op} {_number(self.bound)} {unit}".rstrip()


@dataclass
class Row:
    """One line of the table."""

    key: str
    figure: str
    unit: str
    stat: Stat | None = None
    ceiling_name: str | None = None
    ceiling: float | None = None
    target: Target | None = None
    note: str = ""
    error: str | None = None
    ratio: float | None = field(default=None, init=False)
    passed: bool | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.stat is not None and self.ceiling:
            self.ratio = self.stat.median / self.ceiling
        if self.target is not None and self.stat is not None:
            value = self.ratio if self.target.of == "ratio" else self.stat.median
            if value is not None:
                self.passed = self.target.met(value)
        if self.target is not None and self.stat is None:
            self.passed = False

    def cells(self) -> list[str]:
        if self.stat is None:
            error = self.error if len(self.error or "") <= 100 else self.error[:99] + "…"
            value = f"n/a: {error}" if error else "n/a"
        elif len(self.stat.samples) == 1:
            value = f"{_number(self.stat.median)} {self.unit}".rstrip()
        else:
            value = (
                f"{_number(self.stat.median)} {self.unit} "
                f"({_number(self.stat.min)}–{_number(self.stat.max)})"
            )
        ceiling = ""
        if self.ceiling_name and self.ceiling is not None:
            ceiling = f"{self.ceiling_name} {_number(self.ceiling)}"
        ratio = f"{self.ratio:.2f}" if self.ratio is not None else ""
        target = self.target.describe(self.unit) if self.target else ""
        verdict = {True: "pass", False: "FAIL", None: ""}[self.passed]
        return [self.figure, value, ceiling, ratio, target, verdict]

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.stat is not None:
            data["stat"] = {
                "median": self.stat.median,
                "min": self.stat.min,
                "max": self.stat.max,
                "samples": self.stat.samples,
            }
        return data


HEADERS = ["figure", "value: median (min–max)", "ceiling", "ratio", "target", "result"]


def _number(value: float) -> str:
    """A figure for people: thousands separated, decimals only where they mean something."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:,.2f}"


def text_table(rows: Sequence[Row]) -> str:
    """The table for a terminal: aligned columns."""
    lines = [HEADERS] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * width for width in widths))
    return "\n".join(out)


def markdown_table(rows: Sequence[Row]) -> str:
    """The table in Markdown, for the README and results/bench-*.md."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    out = [line(HEADERS), line(["---"] * len(HEADERS))]
    out += [line(row.cells()) for row in rows]
    return "\n".join(out)


def notes(rows: Sequence[Row]) -> list[str]:
    """The rows' notes (how each figure was measured), one line each."""
    return [f"{row.figure}: {row.note}" for row in rows if row.note]


def write_results(
    directory: Path, stamp: str, meta: dict[str, Any], rows: Sequence[Row]
) -> tuple[Path, Path]:
    """Write results/bench-<stamp>.json and .md, and copy the .md to bench-latest.md."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"bench-{stamp}.json"
    md_path = directory / f"bench-{stamp}.md"
    json_path.write_text(
        json.dumps({"meta": meta, "rows": [row.as_json() for row in rows]}, indent=2) + "\n"
    )
    header = [f"# taskpool bench, {meta['started_at']}", ""]
    header += [f"- {key}: {value}" for key, value in meta.items() if key != "started_at"]
    body = header + ["", markdown_table(rows), ""]
    if notes(rows):
        body += ["How each figure was measured:", ""] + [f"- {n}" for n in notes(rows)] + [""]
    md_path.write_text("\n".join(body))
    (directory / "bench-latest.md").write_text("\n".join(body))
    return json_path, md_path
