"""docs/sql-reference.md against the schema it documents, deployed fresh:

- its function rows (a table row whose first cell is `name(argument type, ...) → ...` in
  backticks) name every public function, an overload as a row of its own, with its input
  arguments in order, and no function or overload the schema lacks; public means in the
  `public` schema, not named `_...` (helpers) or `tg_...` (trigger functions), and not a
  member of an extension (pg_depend deptype 'e');
- the rows its functions marked *worker* are exactly those granted to `taskpool_worker`;
- the rows of its Views section name every view and materialized view of `public`, and no other;
- docs/concepts.md's state diagram draws exactly the rows of `task_status_transitions`.
"""

from __future__ import annotations

import re

import psycopg
from core_fixtures import REPO_ROOT
from markdown_it import MarkdownIt

REFERENCE = REPO_ROOT / "docs" / "sql-reference.md"
CONCEPTS = REPO_ROOT / "docs" / "concepts.md"
FUNCTION_ROW = re.compile(r"^\|\s*`(?P<name>[a-z_][a-z0-9_]*)\((?P<arguments>[^`]*?)\)(?:\s*→[^`]*)?`\s*\|(?P<rest>.*)$")
VIEW_ROW = re.compile(r"^\|\s*`(?P<name>[a-z_][a-z0-9_]*)`\s*\|")
ARGUMENT_MODES = {"IN", "INOUT", "VARIADIC"}

PUBLIC_FUNCTIONS = """
SELECT p.proname,
       CASE WHEN p.proargmodes IS NULL THEN coalesce(p.proargnames, '{}')  -- every argument is IN
            ELSE ARRAY(SELECT a.name FROM unnest(p.proargnames, p.proargmodes::text[])
                                          WITH ORDINALITY AS a(name, mode, n)
                       WHERE a.mode IN ('i', 'b', 'v') ORDER BY a.n)
       END AS arguments,
       has_function_privilege('taskpool_worker', p.oid, 'EXECUTE') AS granted_to_worker
FROM pg_catalog.pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
  AND p.proname !~ '^(_|tg_)'
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                  WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
"""

PUBLIC_VIEWS = """
SELECT c.relname FROM pg_catalog.pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                  WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
"""


def argument_names(arguments: str) -> tuple[str, ...]:
    """The input arguments' names of a written signature: `a text, b int = 1, INOUT c bigint`."""
    names = []
    for argument in filter(None, (part.strip() for part in arguments.split(","))):
        words = argument.split()
        if words[0] == "OUT":
            continue
        if words[0] in ARGUMENT_MODES:
            words = words[1:]
        names.append(words[0])
    return tuple(names)


def documented_functions(markdown: str) -> dict[tuple[str, tuple[str, ...]], bool]:
    """(name, input argument names) of each function row, and whether it is marked *worker*."""
    rows: dict[tuple[str, tuple[str, ...]], bool] = {}
    for line in markdown.splitlines():
        row = FUNCTION_ROW.match(line)
        if row:
            key = (row["name"], argument_names(row["arguments"]))
            assert key not in rows, f"docs/sql-reference.md documents {key[0]}{key[1]} twice"
            rows[key] = row["rest"].lstrip().startswith("*worker*")
    return rows


def documented_views(markdown: str) -> set[str]:
    """The first cells of the table rows under the `## Views` heading."""
    views: set[str] = set()
    in_views = False
    for line in markdown.splitlines():
        if line.startswith("## "):
            in_views = line.strip() == "## Views"
        elif in_views and (row := VIEW_ROW.match(line)):
            views.add(row["name"])
    return views


def deployed_functions(conn: psycopg.Connection) -> dict[tuple[str, tuple[str, ...]], bool]:
    return {(name, tuple(arguments)): granted for name, arguments, granted in conn.execute(PUBLIC_FUNCTIONS)}


def missing_and_unknown(documented: set, deployed: set) -> tuple[list, list]:
    return sorted(deployed - documented), sorted(documented - deployed)


def test_the_reference_documents_every_public_function_and_no_other(conn: psycopg.Connection) -> None:
    documented = documented_functions(REFERENCE.read_text())
    missing, unknown = missing_and_unknown(set(documented), set(deployed_functions(conn)))
    assert (missing, unknown) == ([], []), (
        f"docs/sql-reference.md lacks a row for {missing} and has rows for {unknown}, which the"
        " schema does not have (name, input arguments)"
    )


def test_the_functions_marked_worker_are_those_granted_to_taskpool_worker(conn: psycopg.Connection) -> None:
    documented = documented_functions(REFERENCE.read_text())
    marked = {key for key, worker in documented.items() if worker}
    granted = {key for key, worker in deployed_functions(conn).items() if worker}
    assert sorted(marked ^ granted) == [], (
        f"marked *worker* but not granted: {sorted(marked - granted)}; granted but not marked: {sorted(granted - marked)}"
    )


def test_the_reference_documents_every_public_view_and_no_other(conn: psycopg.Connection) -> None:
    documented = documented_views(REFERENCE.read_text())
    deployed = {name for (name,) in conn.execute(PUBLIC_VIEWS)}
    missing, unknown = missing_and_unknown(documented, deployed)
    assert (missing, unknown) == ([], []), (
        f"the Views of docs/sql-reference.md lack a row for {missing} and have rows for {unknown},"
        " which the schema does not have"
    )


def test_the_state_diagram_is_the_transition_table(conn: psycopg.Connection) -> None:
    diagrams = [
        token.content
        for token in MarkdownIt("commonmark").parse(CONCEPTS.read_text())
        if token.type == "fence" and token.info.strip() == "mermaid" and "stateDiagram-v2" in token.content
    ]
    assert len(diagrams) == 1, "docs/concepts.md should hold one mermaid stateDiagram-v2 block"
    drawn = {
        (edge["from"], edge["to"]): (edge["label"] or "").strip()
        for edge in re.finditer(r"^\s*(?P<from>\w+)\s*-->\s*(?P<to>\w+)\s*(?::(?P<label>.*))?$", diagrams[0], re.M)
    }
    table = {(f, t): meaning for f, t, meaning in conn.execute("SELECT from_status, to_status, meaning FROM task_status_transitions")}
    assert drawn == table, (
        f"drawn but not in task_status_transitions: {sorted(drawn.items() - table.items())};"
        f" in the table but not drawn so: {sorted(table.items() - drawn.items())}"
    )


def test_the_parsers_read_what_they_should() -> None:
    text = (
        "| function | what |\n| --- | --- |\n"
        "| `f(a text, b integer = 1, INOUT c bigint = NULL)` | *worker*: does |\n"
        "| `g(x bigint, OUT y integer) → record` | does not |\n"
        "| `h()` → jsonb | not a row: the result is outside the code span |\n"
        "prose naming `k(z)` is not a row\n\n"
        "## Views\n\n| view | what |\n| --- | --- |\n| `v_one` | one |\n\n## After\n\n| `v_two` | no |\n"
    )
    assert documented_functions(text) == {("f", ("a", "b", "c")): True, ("g", ("x",)): False}
    assert documented_views(text) == {"v_one"}
