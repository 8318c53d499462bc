"""The crawler plugs into pyworker through its entry points (crawler/pyproject.toml), installed.

Its commands show in `pyworker --help` and take the global options; every worker registers its
handlers, for the roles that a --handlers module has not taken first. Each case runs `python` in
a subprocess: a fresh handler registry and command group, as a worker and a command start.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from pyworker.admin import cli

CRAWLER_ROLES = [
    "analytics_refresh",
    "entry_point_discovery",
    "image_download",
    "payload_file_removal",
    "payload_storage_sweep",
    "product_discovery",
    "product_refresh",
    "product_resync",
    "store_discovery",
]


def python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_crawler_s_commands_show_in_pyworker_s_help() -> None:
    result = CliRunner().invoke(cli.main, ["--help"])
    assert result.exit_code == 0, result.output
    commands = result.stdout.split("Commands:")[1]
    assert "payloads       List, show and compare the menu payloads the crawler saved." in commands
    assert "resync         Plan product resyncs." in commands
    assert "simulator      Serve the simulated menu platform" in commands
    assert cli.main.broken_plugins == {}
    # The global options after a plug-in command's name, as after a core one.
    for path in (["payloads"], ["payloads", "list"], ["payloads", "show"], ["payloads", "diff"],
                 ["resync"], ["resync", "generate"], ["simulator"]):
        shown = CliRunner().invoke(cli.main, [*path, "--help"])
        assert shown.exit_code == 0, (path, shown.output)
        for option in ("--database-url URL", "-v, --verbose", "--wide"):
            assert option in shown.stdout, f"{' '.join(path)} --help does not show {option}"


def test_a_worker_registers_the_crawler_s_handlers_and_a_handlers_module_keeps_its_roles(
    tmp_path: Path,
) -> None:
    (tmp_path / "user_tasks.py").write_text(
        "from pyworker.handlers import handler\n"
        "@handler('product_resync')\n"
        "def resync(task):\n"
        "    return {'mine': True}\n"
    )
    code = (
        "from pyworker import handlers\n"
        "handlers.load(['user_tasks'])\n"
        "print(handlers.registry.roles)\n"
        "print({role: handlers.registry.get(role).__module__ for role in handlers.registry.roles})\n"
    )
    result = python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    roles, modules = result.stdout.splitlines()
    assert roles == repr(CRAWLER_ROLES)
    expected = {role: "taskpool_crawler.handlers" for role in CRAWLER_ROLES}
    expected["product_resync"] = "user_tasks"
    assert modules == repr(expected)


def test_a_worker_s_command_takes_a_role_the_crawler_has_a_handler_for(tmp_path: Path) -> None:
    # `pyworker --role product_resync --command 'python3 resync.py'` (README, docs/commands.md).
    code = (
        "from pyworker import handlers\n"
        "handlers.load([])\n"
        "assert handlers.registry.get('product_resync').__module__ == 'taskpool_crawler.handlers'\n"
        "handlers.registry.command('product_resync', ['python3', 'resync.py'])\n"
        "print(type(handlers.registry.get('product_resync')).__name__)\n"
    )
    result = python(code, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "CommandHandler\n", "")
