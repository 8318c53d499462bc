"""`pyworker roles sync`: the roles the handlers declare (@handler's settings), applied to the
database through create_role and update_role, and what that changes, read back from diff_role.

A declared role the database lacks is created (the settings it does not name at their defaults);
one whose declared settings differ is updated (the settings it does not name keep their value); a
role of the database that no handler declares is reported, and removed (remove_role) only when
asked. Everything happens in one transaction: all of it or, on the first refusal, none. A dry run
makes the same calls and rolls them back, so it reports exactly what a sync would do and refuses
exactly what a sync would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pyworker.admin.declarations import declared_settings
from pyworker.admin.queries import AdminDatabase
from pyworker.errors import InvalidInput, TaskpoolError
from pyworker.handlers import RoleDeclaration

# What became of each role: created, changed or unchanged (declared); undeclared or removed.
CREATED, CHANGED, UNCHANGED, UNDECLARED, REMOVED = "created", "changed", "unchanged", "undeclared", "removed"
INTERVAL_SETTINGS = ("stale_threshold", "run_timeout", "backoff_base", "backoff_cap")


@dataclass
class RoleChange:
    """What a sync does to one role: `action`, and for a created or changed role the fields
    declared, each with its value in the database before (None when created) and its new one."""

    role: str
    action: str
    module: str | None = None
    fields: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "action": self.action, "module": self.module, "fields": self.fields}


def sync_roles(
    db: AdminDatabase,
    declarations: Iterable[RoleDeclaration],
    *,
    dry_run: bool = False,
    remove_missing: bool = False,
    force: bool = False,
) -> list[RoleChange]:
    """Apply the declarations (see the module's docstring); each role's change, declared roles
    first, by name. InvalidInput names the role and its field when a value is refused; Refused
    when a role to remove has live tasks or workers and not `force`."""
    declarations = sorted(declarations, key=lambda declaration: declaration.role)
    for declaration in declarations:
        _check_intervals(db, declaration)
    changes: list[RoleChange] = []
    with db.transaction():
        existing = set(db.roles())
        for declaration in declarations:
            changes.append(_apply(db, declaration, existing))
        declared = {declaration.role for declaration in declarations}
        for role in sorted(existing - declared):
            if remove_missing:
                db.remove_role(role, force)
            changes.append(RoleChange(role, REMOVED if remove_missing else UNDECLARED))
        if dry_run:
            # conn.transaction() takes it: the block's calls are rolled back, and no error raised.
            raise psycopg.Rollback()
    return changes


def _apply(db: AdminDatabase, declaration: RoleDeclaration, existing: set[str]) -> RoleChange:
    role, settings = declaration.role, declared_settings(declaration)
    if role not in existing:
        _refused_naming(role, declaration.module, lambda: db.create_role(role, **settings))
        fields = [{"field": name, "in_database": None, "declared": _text(value)} for name, value in settings.items()]
        return RoleChange(role, CREATED, declaration.module, fields)
    differences = _refused_naming(role, declaration.module, lambda: db.diff_role(role, **settings))
    if not differences:
        return RoleChange(role, UNCHANGED, declaration.module)
    _refused_naming(role, declaration.module, lambda: db.update_role(role, **settings))
    return RoleChange(role, CHANGED, declaration.module, differences)


def _refused_naming(role: str, module: str, call: Any) -> Any:
    """`call()`, its refusal (a TaskpoolError) said again with the role and where it is declared."""
    try:
        return call()
    except TaskpoolError as error:
        raise type(error)(f"role {role!r} (declared in {module}): {error}") from error


def _check_intervals(db: AdminDatabase, declaration: RoleDeclaration) -> None:
    """InvalidInput naming the role and the setting when an interval given as text is not one
    PostgreSQL reads (a call with it would fail with no field named)."""
    settings = declared_settings(declaration)
    for name in INTERVAL_SETTINGS:
        value = settings.get(name)
        if isinstance(value, str):
            try:
                db.parse_interval(value)
            except InvalidInput as error:
                raise InvalidInput(
                    f"role {declaration.role!r} (declared in {declaration.module}): {name} {value!r} is not an"
                    f" interval: {error}",
                    hint="An interval as PostgreSQL reads it ('5 min', '1 hour 30 minutes', '00:05:00'), or a timedelta.",
                ) from error


def _text(value: Any) -> str:
    """A declared setting as diff_role gives one: text (true and false for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def describe(change: RoleChange) -> str:
    """One line per role, and one more per field changed, for a person."""
    where = f" ({change.module})" if change.module else ""
    if change.action == UNDECLARED:
        return f"undeclared {change.role}: no handler declares it (kept; --remove-missing removes it)"
    if change.action == REMOVED:
        return f"removed    {change.role}"
    lines = [f"{change.action:<10} {change.role}{where}"]
    for row in change.fields:
        if row["in_database"] is None:
            lines.append(f"    {row['field']}: {row['declared']}")
        else:
            lines.append(f"    {row['field']}: {row['in_database']} → {row['declared']}")
    return "\n".join(lines)
