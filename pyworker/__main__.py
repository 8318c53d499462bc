"""Run the CLI as `python -m pyworker`."""

from pyworker.admin.cli import main

main(prog_name="pyworker")
