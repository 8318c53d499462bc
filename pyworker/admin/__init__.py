"""The operator's room: the `pyworker` command line by noun, its output, the schema installer,
pg_cron, the scheduler loop and the supervisor. It may import the core and the client; the core
never imports it (tests/test_import_graph.py).

What this module lists is the plug-in surface: a package that adds commands to `pyworker`
(through the `pyworker.commands` entry points) builds on these names only, each loaded on first
use (`import pyworker.admin` loads none of the CLI):

    from pyworker.admin import Column, Shown, pass_db, prints
"""

from typing import TYPE_CHECKING

_EXPORTS = {
    "pyworker.admin.cli": ("main", "Settings", "pass_settings", "pass_db"),
    "pyworker.admin.output": (
        "Column", "Shown", "prints", "counted", "echo_fields", "echo_page", "echo_table", "render_table",
        "CAPACITY_COLUMNS",
    ),
    "pyworker.admin.queries": ("AdminDatabase",),
    "pyworker.admin.cron": ("CronMissing",),
    "pyworker.config": ("default_database_url",),
}
# Exported under another name than the module's: exported name -> (module, name there).
_RENAMED = {
    "install_cron": ("pyworker.admin.cron", "install"),
    "uninstall_cron": ("pyworker.admin.cron", "uninstall"),
}
_SOURCE_OF = {name: (module, name) for module, names in _EXPORTS.items() for name in names} | _RENAMED
__all__ = list(_SOURCE_OF)

if TYPE_CHECKING:
    from pyworker.admin.cli import Settings as Settings
    from pyworker.admin.cli import main as main
    from pyworker.admin.cli import pass_db as pass_db
    from pyworker.admin.cli import pass_settings as pass_settings
    from pyworker.admin.queries import AdminDatabase as AdminDatabase
    from pyworker.admin.cron import CronMissing as CronMissing
    from pyworker.admin.cron import install as install_cron
    from pyworker.admin.cron import uninstall as uninstall_cron
    from pyworker.admin.output import CAPACITY_COLUMNS as CAPACITY_COLUMNS
    from pyworker.admin.output import Column as Column
    from pyworker.admin.output import Shown as Shown
    from pyworker.admin.output import counted as counted
    from pyworker.admin.output import echo_fields as echo_fields
    from pyworker.admin.output import echo_page as echo_page
    from pyworker.admin.output import echo_table as echo_table
    from pyworker.admin.output import prints as prints
    from pyworker.admin.output import render_table as render_table
    from pyworker.config import default_database_url as default_database_url


def __getattr__(name: str) -> object:
    if name not in _SOURCE_OF:
        raise AttributeError(f"module 'pyworker.admin' has no attribute {name!r}")
    import importlib

    module, attribute = _SOURCE_OF[name]
    return getattr(importlib.import_module(module), attribute)
