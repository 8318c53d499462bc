"""Commands from other packages (the `pyworker.commands` entry points), and the core without them.

The core (pyworker) never imports the crawler: it imports, runs its CLI and loads its handlers in
an environment where the crawler's distribution is absent. A package that names a command in the
group adds it to `pyworker`; one whose command cannot be loaded is named in a warning, and the
core commands still work. Each case runs `python` in a subprocess, so that the entry points it
sees are the ones it sets up.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from pyworker.admin.cli.plugins import COMMANDS_ENTRY_POINT_GROUP
from pyworker.contrib.dashboard.plugins import DASHBOARD_ENTRY_POINT_GROUP
from pyworker.testing.database import SCHEMAS_ENTRY_POINT_GROUP

CORE_COMMANDS = ("enqueue", "list", "health", "schedules", "schema", "cron", "version")
CRAWLER_COMMANDS = ("payloads", "resync", "simulator", "stores")


def python(code: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -S -c code` with `site` as its only site directory (its .pth files processed)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    script = f"import site; site.addsitedir({str(site)!r})\n{code}"
    return subprocess.run(
        [sys.executable, "-S", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def site_without_the_crawler(tmp_path: Path) -> Path:
    """This environment's site-packages as symlinks, less the crawler's distribution (its
    dist-info, the editable install's .pth and finder): the core installed alone."""
    site = tmp_path / "site-packages"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "taskpool_crawler" not in entry.name:
            (site / entry.name).symlink_to(entry)
    return site


def fake_distribution(
    site: Path,
    name: str,
    modules: dict[str, str],
    commands: dict[str, str],
    group: str = COMMANDS_ENTRY_POINT_GROUP,
) -> None:
    """An installed distribution in `site`: its modules and a dist-info whose entry points name
    `commands` (name -> "module:attribute") in `group` (pyworker.commands unless told)."""
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source)
    dist_info = site / f"{name}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{command} = {target}\n" for command, target in commands.items())
    (dist_info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


def test_the_core_imports_runs_its_cli_and_loads_handlers_without_the_crawler(tmp_path: Path) -> None:
    site = site_without_the_crawler(tmp_path)
    code = """
import importlib, pkgutil, sys
from importlib.metadata import entry_points
try:
    import taskpool_crawler
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("the crawler is still importable")
# pyworker's own (the dashboard, of its extra) and no other.
assert {ep.value for ep in entry_points(group="pyworker.commands")} == {"pyworker.contrib.dashboard_command:dashboard"}
import pyworker
for module in pkgutil.walk_packages(pyworker.__path__, "pyworker."):
    if module.name != "pyworker.__main__":
        importlib.import_module(module.name)
from pyworker import handlers
handlers.load([])
from pyworker.admin.cli import main
try:
    main(["--help"], prog_name="pyworker")
finally:
    crawler = sorted(name for name in sys.modules if name.startswith("taskpool_crawler"))
    print("crawler modules:", crawler)
"""
    result = python(code, site, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    commands = result.stdout.split("Commands:")[1].split()
    assert all(command in commands for command in CORE_COMMANDS), result.stdout
    assert not any(command in commands for command in CRAWLER_COMMANDS), result.stdout
    assert result.stdout.rstrip().endswith("crawler modules: []")


def test_a_package_s_command_shows_in_help_and_runs_with_the_global_options(tmp_path: Path) -> None:
    site = site_without_the_crawler(tmp_path)
    hello = (
        "import click\n"
        "from pyworker.admin.cli import Settings, pass_settings\n"
        "@click.command()\n"
        "@pass_settings\n"
        "def hello(settings: Settings) -> None:\n"
        '    """Say hello from a plug-in."""\n'
        '    click.echo(f"hello, wide={settings.wide}")\n'
    )
    fake_distribution(site, "acme-commands", {"acme_commands": hello}, {"hello": "acme_commands:hello"})
    shown = python("from pyworker.admin.cli import main\nmain(['--help'], prog_name='pyworker')", site, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "hello          Say hello from a plug-in." in shown.stdout
    ran = python("from pyworker.admin.cli import main\nmain(['hello', '--wide'], prog_name='pyworker')", site, tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "hello, wide=True\n", "")


def test_a_broken_plug_in_is_named_and_the_core_commands_still_run(tmp_path: Path) -> None:
    site = site_without_the_crawler(tmp_path)
    fake_distribution(
        site,
        "acme-broken",
        {"acme_broken": "import no_such_dependency\n", "acme_not_a_command": "hello = 42\n"},
        {
            "broken": "acme_broken:command",
            "answer": "acme_not_a_command:hello",
            "list": "acme_not_a_command:hello",
        },
    )
    shown = python("from pyworker.admin.cli import main\nmain(['--help'], prog_name='pyworker')", site, tmp_path)
    assert shown.returncode == 0, shown.stderr
    commands = shown.stdout.split("Commands:")[1].split()
    assert all(command in commands for command in CORE_COMMANDS)
    assert "broken" not in commands and "answer" not in commands
    warnings = shown.stderr.splitlines()
    assert len(warnings) == 3 and "Traceback" not in shown.stderr, shown.stderr
    assert warnings[0] == (
        "warning: the command plug-in 'broken' (acme_broken:command, from acme-broken 1.0, entry"
        f" point group {COMMANDS_ENTRY_POINT_GROUP}) cannot be loaded: ModuleNotFoundError: No"
        " module named 'no_such_dependency'; reinstall or uninstall acme-broken"
    )
    assert "'answer'" in warnings[1] and "it names an object of type int, not a click command" in warnings[1]
    assert "'list'" in warnings[2] and "pyworker has a command 'list' already" in warnings[2]

    ran = python("from pyworker.admin.cli import main\nmain(['broken'], prog_name='pyworker')", site, tmp_path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert "the command plug-in 'broken' (acme_broken:command, from acme-broken 1.0" in ran.stderr

    # The core's own command of that name is untouched.
    core = python("from pyworker.admin.cli import main\nmain(['list', '--help'], prog_name='pyworker')", site, tmp_path)
    assert core.returncode == 0 and "List tasks, newest first" in core.stdout, core.stderr


def test_a_dashboard_plugin_adds_its_pages_and_one_that_cannot_is_named(tmp_path: Path) -> None:
    """The `pyworker.dashboard` entry points: pages added with their menu links; one that does not
    import, is not a DashboardPages or claims a core path is left out and named, the rest work."""
    site = site_without_the_crawler(tmp_path)
    pages = """
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from pyworker.contrib.dashboard import DashboardPages

def hello(request):
    return PlainTextResponse("hello")

PAGES = DashboardPages(routes=[Route("/hello", hello)], menu=[("Hello", "/hello")])
CLASH = DashboardPages(routes=[Route("/tasks", hello)], menu=[("Tasks again", "/tasks")])
NOT_PAGES = 42
"""
    fake_distribution(
        site,
        "acme-pages",
        {"acme_pages": pages},
        {"good": "acme_pages:PAGES", "clash": "acme_pages:CLASH", "wrong": "acme_pages:NOT_PAGES",
         "gone": "acme_missing:PAGES"},
        group=DASHBOARD_ENTRY_POINT_GROUP,
    )
    code = """
from pyworker.contrib.dashboard import create_app
app = create_app("postgresql://nowhere.invalid/taskpool")
print("menu:", [label for label, _ in app.state.menu])
print("paths:", sorted(route.path for route in app.routes if route.path in ("/hello", "/tasks")))
for problem in sorted(app.state.broken_plugins):
    print("broken:", problem)
"""
    result = python(code, site, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "menu: ['Overview', 'Tasks', 'Workers', 'Schedules', 'Platforms', 'Health', 'Hello']"
    assert lines[1] == "paths: ['/hello', '/tasks']"
    broken = lines[2:]
    assert len(broken) == 3
    assert "'clash' (acme_pages:CLASH, from acme-pages 1.0, entry point group pyworker.dashboard)" in broken[0]
    assert broken[0].endswith("the dashboard has /tasks already")
    assert "'gone'" in broken[1] and "ModuleNotFoundError: No module named 'acme_missing'" in broken[1]
    assert "'wrong'" in broken[2] and broken[2].endswith("it names an object of type int, not a DashboardPages")


def test_a_package_s_sqitch_project_is_found_through_its_entry_point(tmp_path: Path) -> None:
    """The `pyworker.schemas` entry points: the test databases deploy each project they name
    after the core's; one that cannot be found is named, with why."""
    site = site_without_the_crawler(tmp_path)
    project = tmp_path / "acme_sqitch"
    project.mkdir()
    (project / "sqitch.plan").write_text("%syntax-version=1.0.0\n%project=acme\n\n")
    fake_distribution(
        site, "acme-schema", {"acme_schema": f"def project():\n    return {str(project)!r}\n"},
        {"acme": "acme_schema:project"}, group=SCHEMAS_ENTRY_POINT_GROUP,
    )
    code = (
        "from pyworker.testing.database import TestDatabaseError, plugin_projects\n"
        "try:\n    print([str(found) for found in plugin_projects()])\n"
        "except TestDatabaseError as error:\n    print(error)\n"
    )
    assert python(code, site, tmp_path).stdout == f"[{str(project)!r}]\n"
    fake_distribution(
        site, "gone-schema", {"gone_schema": "def project():\n    raise FileNotFoundError('no sqitch.plan here')\n"},
        {"gone": "gone_schema:project"}, group=SCHEMAS_ENTRY_POINT_GROUP,
    )
    assert python(code, site, tmp_path).stdout == (
        "the Sqitch project of 'gone' (gone_schema:project, entry point group pyworker.schemas)"
        " cannot be found: no sqitch.plan here\n"
    )
