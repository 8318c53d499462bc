"""`pyworker simulator`: serve the simulated menu platform until SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click


def _csv(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


@click.command("simulator")
@click.option("--host", default="127.0.0.1", show_default=True, help="Listen on this address.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Listen on this port (0: a free one; see --port-file).",
)
@click.option("--seed", type=int, default=42, show_default=True, help="The platform's seed.")
@click.option(
    "--stores",
    type=click.IntRange(min=0),
    default=300,
    show_default=True,
    help="How many stores, spread over the platforms and states.",
)
@click.option(
    "--states",
    default="AZ,CA,CO,MI",
    show_default=True,
    callback=_csv,
    metavar="XX,YY",
    help="The stores' states, comma-separated.",
)
@click.option(
    "--platforms",
    default="dutchie,jane",
    show_default=True,
    callback=_csv,
    metavar="P,Q",
    help="The platforms, comma-separated.",
)
@click.option(
    "--error-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of platform requests that fail (500, 429 or a 30 s timeout), on every platform.",
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Delay every platform request this long.",
)
@click.option(
    "--corrupt-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of platform requests answered 200 with a truncated or non-JSON body.",
)
@click.option(
    "--broken-images",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of product images that are broken (404, not an image, or cut short), every time.",
)
@click.option(
    "--id-less",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of products listed without an id (id null), the same ones in every crawl.",
)
@click.option(
    "--port-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Write the port to PATH once listening (removed again at a clean stop).",
)
def simulator(
    host: str,
    port: int,
    seed: int,
    stores: int,
    states: tuple[str, ...],
    platforms: tuple[str, ...],
    error_rate: float,
    latency_ms: float,
    corrupt_rate: float,
    broken_images: float,
    id_less: float,
    port_file: Path | None,
) -> None:
    """Serve the simulated menu platform (stores and drifting menus) over HTTP.

    Deterministic from --seed: the same seed and clock give the same stores and menus. The clock
    starts at hour 0 and moves only through POST /admin/clock; POST /admin/faults changes a
    platform's faults, GET /admin/state shows everything. Serves until SIGTERM or SIGINT (exit 0).
    """
    # Imported here: the other pyworker commands need none of this.
    from taskpool_crawler.simulator.model import Simulator
    from taskpool_crawler.simulator.server import serve

    try:
        platform = Simulator(
            seed=seed,
            stores=stores,
            states=states,
            platforms=platforms,
            broken_image_share=broken_images,
            id_less_share=id_less,
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from error

    # The stop signals are blocked before any thread starts (threads inherit the mask) and taken
    # with sigwait: no handler runs at an arbitrary point of the main thread. Both stop it, even
    # where SIGINT came in ignored (a script's background job): blocked, it is still delivered.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    try:
        try:
            server = serve(platform, host, port)
        except OSError as error:
            raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from error
        try:
            if error_rate or latency_ms or corrupt_rate:
                for name in platform.platforms:
                    server.set_faults(
                        name, error_rate=error_rate, latency_ms=latency_ms,
                        corrupt_rate=corrupt_rate,
                    )
            if port_file is not None:
                _write_atomically(port_file, f"{server.port}\n")
            click.echo(f"Simulator listening on {server.url}", err=True)
            received = signal.sigwait(stop_signals)
            click.echo(f"Simulator: {signal.Signals(received).name}, stopping", err=True)
        finally:
            server.stop()
            if port_file is not None:
                _remove_if_ours(port_file, server.port)
        # A second signal during the stop is not a reason to die by it once unblocked.
        while signal.sigtimedwait(stop_signals, 0) is not None:
            pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it: readers see all or none."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise click.ClickException(f"cannot write the port file {path}: {error}") from error


def _remove_if_ours(path: Path, port: int) -> None:
    try:
        if path.read_text().strip() == str(port):
            path.unlink()
    except OSError:
        pass
