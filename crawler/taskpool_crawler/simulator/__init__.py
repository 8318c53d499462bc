"""The reference workload's simulated menu platform: stores and drifting menus over HTTP.

Apart from the worker core: the crawler's handlers and the demo talk to it like to a real menu
platform, on loopback. `model` is the deterministic platform (stores and menus from a seed and
a clock), `server` its HTTP API with injectable faults, `cli` the `pyworker simulator` command.

    from taskpool_crawler.simulator import Simulator, serve

    with serve(Simulator(seed=42)) as server:
        ...  # GET f"{server.url}/platforms/dutchie/stores?state=AZ"
        server.advance(4)
        server.set_faults("dutchie", error_rate=0.2, error_kinds=["500", "429"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskpool_crawler.simulator.model import Simulator
    from taskpool_crawler.simulator.server import SimulatorServer, serve

__all__ = ["Simulator", "SimulatorServer", "serve"]


def __getattr__(name: str) -> Any:
    # Imported on first use: `pyworker` loads the CLI command without the HTTP server.
    if name == "Simulator":
        from taskpool_crawler.simulator.model import Simulator

        return Simulator
    if name in ("SimulatorServer", "serve"):
        from taskpool_crawler.simulator import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
