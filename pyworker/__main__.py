"""Run the CLI as `python -m pyworker`."""

from pyworker.cli import main

main(prog_name="pyworker")
