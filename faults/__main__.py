"""`python -m faults [--quick] [--only 1,2] [--soak-minutes N] [--worker-arg ARG ...]`: run the suite.

Prints one table, writes it to results/ (JSON and Markdown), exits 1 when a scenario failed.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from pathlib import Path

import click

from faults import report, scenarios
from faults.harness import REPO_ROOT, Context, ScenarioError, project_cluster_restarter, server_url
from testkit import databases

TEMPLATE = "taskpool_faults_template"
PREFIX = "taskpool_faults_"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--quick", is_flag=True, help="The short form (what `make test` runs): scaled down.")
@click.option("--only", metavar="N,M", help="Run only these scenario numbers.")
@click.option("--soak-minutes", type=float, help="Length of the soak (scenario 17); default 10, quick 1.")
@click.option(
    "--worker-arg", "worker_args", multiple=True, metavar="ARG",
    help="Pass ARG to every worker's command line (repeatable), e.g. --worker-arg=--prefetch=4.",
)
@click.option(
    "--results", type=click.Path(file_okay=False, path_type=Path), default=REPO_ROOT / "results",
    show_default=True, help="Where to write the table.",
)
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the processes' logs here.")
def main(quick: bool, only: str | None, soak_minutes: float | None, worker_args: tuple[str, ...],
         results: Path, logs: Path | None) -> None:
    """Run the fault and abuse scenarios against the real system and print the table."""
    registry = scenarios.load()
    numbers = [int(n) for n in only.split(",")] if only else list(registry)
    unknown = [n for n in numbers if n not in registry]
    if unknown:
        raise click.UsageError(f"no scenario {unknown}; there are {list(registry)}")
    server = server_url()
    log_root = logs or Path(tempfile.mkdtemp(prefix="taskpool-faults-"))
    form = "quick" if quick else "full"
    click.echo(f"faults: {form} form, scenarios {numbers}, server {server}, logs in {log_root}")
    try:
        template = databases.template(server, TEMPLATE)
    except databases.DatabaseError as error:
        raise ScenarioError(f"the scenarios' template could not be made: {error}") from error
    restart_server = project_cluster_restarter(server)
    done: list[report.Result] = []
    try:
        for number in numbers:
            log_dir = log_root / f"{number:02d}"
            log_dir.mkdir(parents=True, exist_ok=True)
            with databases.copy(server, TEMPLATE, f"{PREFIX}{number}_{secrets.token_hex(3)}") as url:
                ctx = Context(url, log_dir, quick=quick, worker_args=worker_args,
                              soak_seconds=None if soak_minutes is None else soak_minutes * 60,
                              restart_server=restart_server)
                result = scenarios.run(number, ctx)
            done.append(result)
            click.echo(f"faults: {number}. {result.name}: {result.verdict} in {result.seconds:.0f} s"
                       + (f" ({result.notes()})" if result.verdict != "PASS" else ""))
    finally:
        template.drop()
        if done:
            click.echo()
            click.echo(report.text_table(done))
            json_path, md_path = report.write(done, results, form)
            click.echo(f"\nfaults: wrote {md_path} and {json_path}")
    sys.exit(0 if all(r.verdict in ("PASS", "SKIP", "PARTIAL") for r in done) else 1)


if __name__ == "__main__":
    main()
