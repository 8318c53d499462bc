"""The scenario registry: `@scenario(number, name)` registers `fn(ctx, result)`; run() runs one.

A scenario injects its faults into ctx's world and fills `result`: the faults (one line), the
checker's metrics (result.hold), its own invariants (result.check) and figures reported but never
asserted (result.figure). Scale comes from ctx.scale(quick, full).
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from faults.harness import Context
from faults.report import Result

MODULES = ("crashes", "races", "clock", "poison", "abuse", "depth", "soak", "stops")


@dataclass(frozen=True)
class Scenario:
    number: int
    name: str
    run: Callable[[Context, Result], None]
    # It restarts the server (ctx.restart_server), so it wants a server that no one else uses.
    restarts_server: bool = False


SCENARIOS: dict[int, Scenario] = {}


def scenario(
    number: int, name: str, *, restarts_server: bool = False
) -> Callable[[Callable[[Context, Result], None]], Callable[[Context, Result], None]]:
    def register(fn: Callable[[Context, Result], None]) -> Callable[[Context, Result], None]:
        SCENARIOS[number] = Scenario(number, name, fn, restarts_server)
        return fn

    return register


def load() -> dict[int, Scenario]:
    for module in MODULES:
        importlib.import_module(f"faults.scenarios.{module}")
    return dict(sorted(SCENARIOS.items()))


def run(number: int, ctx: Context) -> Result:
    """Run scenario `number` in `ctx`, whatever happens: an exception is an ERROR verdict."""
    entry = load()[number]
    result = Result(number, entry.name, form="quick" if ctx.quick else "full")
    started = time.monotonic()
    try:
        entry.run(ctx, result)
    except Exception as error:  # noqa: BLE001 - any failure is the scenario's verdict
        result.error = f"{type(error).__name__}: {error}"
        (ctx.log_dir / "error.txt").write_text(traceback.format_exc() + "\n" + ctx.logs())
    finally:
        result.workers = " + ".join(ctx.fleet_shapes) or "-"
        try:
            ctx.close()
        finally:
            result.seconds = time.monotonic() - started
    return result
