"""No import cycle in the core: the modules of pyworker import one another in one direction only,
wherever the import stands (an import inside a function is a dependency all the same: it only runs
later), and never the crawler (which builds on the core through its entry points)."""

from __future__ import annotations

import ast
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


def runtime_imports(path: Path) -> set[str]:
    """The modules `path` imports when it runs: at module level or inside a function alike (a lazy
    import hides a cycle, it does not break it); only an `if TYPE_CHECKING:` block, which never
    runs, is left out (its `else:` runs, and counts)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(imported_names(node))
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
