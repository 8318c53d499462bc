"""The rooms of pyworker and their one-way doors (docs/architecture.md): each room imports only the
rooms below it, no module imports itself back through others, and none imports the crawler (which
builds on pyworker through its entry points). An import counts wherever it stands: one inside a
function is a dependency all the same (it only runs later), and so is `importlib.import_module`
with a literal name."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from core_fixtures import REPO_ROOT

PACKAGE = REPO_ROOT / "pyworker"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.module is None or node.level:
        return set()
    return {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_module_name(node: ast.AST) -> str | None:
    """The literal name of an `importlib.import_module("…")` call, or None."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return None
    function = node.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return node.args[0].value if called == "import_module" and isinstance(node.args[0].value, str) else None


def runtime_imports(path: Path) -> set[str]:
    """The modules `path` imports when it runs: at module level or inside a function alike (a lazy
    import hides a cycle, it does not break it); only an `if TYPE_CHECKING:` block, which never
    runs, is left out (its `else:` runs, and counts)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(imported_names(node))
        if (literal := _import_module_name(node)) is not None:
            names.add(literal)
        children = node.orelse if _is_type_checking_block(node) else ast.iter_child_nodes(node)
        for child in children:
            visit(child)

    visit(ast.parse(path.read_text()))
    return names


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {imported for imported in runtime_imports(path) if imported in modules and imported != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (a path that comes back to its start), or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        for imported in sorted(graph[name]):
            if imported in path:
                return [*path[path.index(imported):], imported]
            if imported not in done and (cycle := visit(imported, [*path, imported])):
                return cycle
        done.add(name)
        return None

    for name in sorted(graph):
        if name not in done and (cycle := visit(name, [name])):
            return cycle
    return None


# The rooms, top floor first, and what each may import besides its own room: the core and the
# client as whole rooms, any other room only through the modules named. A module's room is the first room its name falls
# in (pyworker.admin.cli is in pyworker.admin); the core is every other module of pyworker.
# `python -m pyworker` (__main__) is the CLI's door, in admin.
ROOM_DOORS = {
    "pyworker.testing": {"core", "pyworker.client", "pyworker.admin.schema"},
    # The dashboard follows the stream of task changes as `pyworker tasks watch` does, serves the
    # pool's metrics and answers its own /readyz within a probe's time, as a worker's probes do.
    "pyworker.contrib": {
        "core",
        "pyworker.client",
        "pyworker.admin",
        "pyworker.admin.metrics",
        "pyworker.admin.output",
        "pyworker.admin.probes",
        "pyworker.admin.queries",
        "pyworker.admin.task_changes",
    },
    "pyworker.admin": {"core", "pyworker.client"},
    "pyworker.client": {"core"},
    "core": set(),
}
ROOMS_OF_MODULES = {"pyworker.__main__": "pyworker.admin"}


def room_of(module: str) -> str:
    if module in ROOMS_OF_MODULES:
        return ROOMS_OF_MODULES[module]
    return next((room for room in ROOM_DOORS if module == room or module.startswith(f"{room}.")), "core")


def may_import(importer: str, imported: str) -> bool:
    room, imported_room = room_of(importer), room_of(imported)
    doors = ROOM_DOORS[room]
    whole_room = imported_room in doors and imported_room in ("core", "pyworker.client")
    return imported_room == room or whole_room or imported in doors


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{importer} ({room_of(importer)}) imports {imported} ({room_of(imported)})"
        for importer, imports in graph.items()
        for imported in imports
        if not may_import(importer, imported)
    )


def test_each_room_imports_only_through_its_doors() -> None:
    """The core imports no outer room (it reaches the extras through its hooks: entry points,
    runtime.on_stop, an error's error_data); the client only the core; admin the core and the
    client; contrib and testing those and the few admin modules named above."""
    assert forbidden_imports(import_graph()) == []


def test_a_door_the_wrong_way_is_found(tmp_path: Path) -> None:
    graph = {
        "pyworker.worker": {"pyworker.contrib.commands", "pyworker.errors"},
        "pyworker.client": {"pyworker.admin.output"},
        "pyworker.contrib.dashboard.app": {"pyworker.admin.output", "pyworker.admin.cli", "pyworker.admin"},
        "pyworker.admin.cli": {"pyworker.client", "pyworker.worker"},
        "pyworker.__main__": {"pyworker.admin.cli"},
    }
    assert forbidden_imports(graph) == [
        "pyworker.client (pyworker.client) imports pyworker.admin.output (pyworker.admin)",
        "pyworker.contrib.dashboard.app (pyworker.contrib) imports pyworker.admin.cli (pyworker.admin)",
        "pyworker.worker (core) imports pyworker.contrib.commands (pyworker.contrib)",
    ]
    (tmp_path / "a.py").write_text("import importlib\ndef g():\n    importlib.import_module('pyworker.admin.cli')\n")
    assert runtime_imports(tmp_path / "a.py") == {"importlib", "pyworker.admin.cli"}


def test_the_core_never_imports_the_crawler() -> None:
    importers = [
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, (ast.Import, ast.ImportFrom))
            and any(name.split(".")[0] == "taskpool_crawler" for name in imported_names(node))
            for node in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert importers == []


def test_no_module_of_pyworker_imports_itself_back_through_others() -> None:
    assert find_cycle(import_graph()) is None


def test_no_module_imports_the_command_protocol() -> None:
    """The protocol plugs in through the hooks pyworker.handlers defines: the entry point that
    names its handler class, and on_exit_now."""
    importers = [name for name, imported in import_graph().items() if "pyworker.contrib.commands" in imported]
    assert importers == []


def test_a_lazy_import_closes_a_cycle_and_a_type_checking_one_does_not(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from b import x\n")
    (tmp_path / "b.py").write_text("import c\n")
    (tmp_path / "c.py").write_text("def g():\n    import a\n")
    graph = {name: runtime_imports(tmp_path / f"{name}.py") & {"a", "b", "c"} for name in "abc"}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n")
    graph["c"] = runtime_imports(tmp_path / "c.py") & {"a", "b", "c"}
    assert find_cycle(graph) is None


# What a package built on pyworker may import: the public names (pyworker), the plug-in surface of
# the CLI (pyworker.admin) and of the dashboard (pyworker.contrib.dashboard), each its __all__.
EXPORTING_MODULES = ("pyworker", "pyworker.admin", "pyworker.contrib.dashboard")


def unexported_imports(source: str) -> list[str]:
    """The imports of pyworker in `source` that are not an exported name of an exporting module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("pyworker.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pyworker":
            if node.module not in EXPORTING_MODULES:
                found.append(node.module)
                continue
            exported = importlib.import_module(node.module).__all__
            found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name not in exported]
    return found


def test_the_crawler_imports_only_names_pyworker_exports() -> None:
    """The reference crawler builds on pyworker as any package would: a rename inside pyworker
    cannot break it unless an exported name changes."""
    crawler = REPO_ROOT / "crawler" / "taskpool_crawler"
    unexported = {
        str(path.relative_to(crawler)): imports
        for path in sorted(crawler.rglob("*.py"))
        if (imports := unexported_imports(path.read_text()))
    }
    assert unexported == {}


def test_an_import_of_an_inner_module_is_found() -> None:
    assert unexported_imports(
        "from pyworker import Task, handler\nfrom pyworker.admin import prints\n"
        "from pyworker.admin.cli import Settings\nfrom pyworker import Worker\nimport pyworker.db\n"
    ) == ["pyworker.admin.cli", "pyworker.Worker", "pyworker.db"]
