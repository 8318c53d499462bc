"""`python -m faults.ha [--quick] [--only switchover,frozen] [--url haproxy|multi-host] [--dcs etcd|etcd3]
[--ports LOW-HIGH]`.

Runs the failover scenarios, each on a Patroni pair of its own; prints one table, writes it to
results/ (faults-ha-<form>-*.json and .md), exits 1 when a scenario failed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from faults import report
from faults.ha.scenarios import SCENARIOS, Options, run
from testkit.env import REPO_ROOT
from testkit.patroni import DCS_APIS, Ports, missing_programs


def _ports(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Ports:
    try:
        return Ports.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--quick", is_flag=True, help="The short form: fewer tasks, shorter waits.")
@click.option("--only", metavar="NAME,NAME", help=f"Run only these scenarios, of: {', '.join(SCENARIOS)}.")
@click.option("--url", "url_kind", type=click.Choice(["haproxy", "multi-host"]), default="haproxy",
              show_default=True,
              help="How the workers reach the primary: HAProxy on Patroni's /primary, or a multi-host URL"
              " with target_session_attrs=read-write.")
@click.option("--dcs", type=click.Choice(DCS_APIS), default="etcd", show_default=True,
              help="The etcd API Patroni uses: v2 (etcd), or v3 (etcd3; Patroni 3.0.2 lets a thawed leader"
              " take its key back).")
@click.option("--ports", envvar="FAULTS_HA_PORTS", show_envvar=True, metavar="LOW-HIGH", callback=_ports,
              help="Take the pair's ports (etcd, Patroni, PostgreSQL, HAProxy) from this range; default: any free.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=REPO_ROOT / "results",
              show_default=True, help="Where to write the table.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the processes' logs here.")
def main(quick: bool, only: str | None, url_kind: str, dcs: str, ports: Ports, results: Path,
         logs: Path | None) -> None:
    """Run the failover scenarios on a real Patroni pair and print the table."""
    names = only.split(",") if only else list(SCENARIOS)
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        raise click.UsageError(f"no scenario {', '.join(unknown)}; there are {', '.join(SCENARIOS)}")
    missing = missing_programs()
    if missing:
        raise click.UsageError(f"missing Debian packages: {' '.join(missing)} (make faults-ha installs them)")
    options = Options(quick=quick, url_kind=url_kind, dcs=dcs, ports=ports)
    form = "quick" if quick else "full"
    log_root = logs or Path(tempfile.mkdtemp(prefix="taskpool-faults-ha-"))
    click.echo(f"faults-ha: {form} form, scenarios {', '.join(names)}, workers through {url_kind},"
               f" Patroni on the {dcs} API, logs in {log_root}")
    done: list[report.Result] = []
    try:
        for number, name in enumerate(names, 1):
            log_dir = log_root / f"{number:02d}-{name}"
            log_dir.mkdir(parents=True, exist_ok=True)
            result = run(number, name, options, log_dir)
            done.append(result)
            click.echo(f"faults-ha: {name}: {result.verdict} in {result.seconds:.0f} s ({result.notes()})")
    finally:
        if done:
            click.echo()
            click.echo(report.text_table(done))
            json_path, md_path = report.write(done, results, form, suite="faults-ha")
            click.echo(f"\nfaults-ha: wrote {md_path} and {json_path}")
    sys.exit(0 if all(r.verdict in ("PASS", "PARTIAL") for r in done) else 1)


if __name__ == "__main__":
    main()
