"""Commands from other packages: each entry point of the `pyworker.commands` group names a click
command (or group), added to the main group under the entry point's name. The crawler's
`payloads`, `resync` and `simulator` come this way (crawler/pyproject.toml). Loaded the first
time the main group lists or looks up a command (TaskpoolGroup.load_plugins), never by a worker.
"""

from __future__ import annotations

from collections.abc import Container
from importlib.metadata import EntryPoint, entry_points

import click

from pyworker.errors import ConfigurationError

COMMANDS_ENTRY_POINT_GROUP = "pyworker.commands"


def add_commands(group: click.Group, reserved: Container[str]) -> dict[str, str]:
    """Add the commands of the `pyworker.commands` entry points to `group`; the plug-ins that
    could not be added, by name: why (broken_plugin). One that fails to import, is not a click
    command or would replace a command of `group` or a `reserved` name is left out: the core
    commands work whatever an installed package does."""
    broken = {}
    for entry_point in entry_points(group=COMMANDS_ENTRY_POINT_GROUP):
        try:
            if entry_point.name in group.commands or entry_point.name in reserved:
                raise ConfigurationError(f"pyworker has a command {entry_point.name!r} already")
            command = entry_point.load()
            if not isinstance(command, click.Command):
                raise ConfigurationError(
                    f"it names an object of type {type(command).__name__}, not a click command"
                )
        except Exception as error:
            broken[entry_point.name] = broken_plugin(entry_point, error)
            continue
        group.add_command(command, entry_point.name)
    return broken


def broken_plugin(entry_point: EntryPoint, error: Exception) -> str:
    """Why a command plug-in could not be added, naming it, its package and what to do."""
    dist = getattr(entry_point, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else "its package"
    cause = f"{type(error).__name__}: {error}" if not isinstance(error, ConfigurationError) else str(error)
    return (
        f"the command plug-in {entry_point.name!r} ({entry_point.value}, from {package}, entry point"
        f" group {COMMANDS_ENTRY_POINT_GROUP}) cannot be loaded: {cause}; reinstall or uninstall"
        f" {dist.name if dist is not None else 'that package'}"
    )
