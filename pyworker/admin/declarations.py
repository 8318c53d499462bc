"""The roles the handlers declare (@handler's settings) against the database's: what `pyworker
roles sync` applies (pyworker/admin/roles.py), and what a starting worker compares. The worker
reaches this module through its hook (`run_worker(..., compare_declarations=...)`, which the CLI
passes), and loads it only when a role it serves is declared.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pyworker.db import Database
from pyworker.errors import ConfigurationError, InvalidInput, NotFound
from pyworker.handlers import Backoff, RoleDeclaration
from pyworker.logs import event

log = logging.getLogger("pyworker")

# A role's settings, as create_role, update_role and diff_role take them (task_roles' columns).
ROLE_FIELDS = {
    "description": "text",
    "max_retries": "integer",
    "stale_threshold": "interval",
    "run_timeout": "interval",
    "backoff_base": "interval",
    "backoff_cap": "interval",
    "backoff_multiplier": "numeric",
    "backoff_jitter": "text",
    "max_payload_bytes": "integer",
    "requires_store": "boolean",
}
# diff_role with every setting named, NULL for those not declared (which it does not compare).
DIFF_ROLE = (
    "SELECT * FROM diff_role(%(role)s::text, "
    + ", ".join(f"{name} => %({name})s::{sql_type}" for name, sql_type in ROLE_FIELDS.items())
    + ")"
)


def declared_settings(declaration: RoleDeclaration) -> dict[str, Any]:
    """The settings `declaration` names, by task_roles column, as create_role, update_role and
    diff_role take them."""
    backoff = declaration.backoff if declaration.backoff is not None else Backoff()
    every = {
        "description": declaration.description,
        "max_retries": declaration.max_retries,
        "stale_threshold": declaration.stale_threshold,
        "run_timeout": declaration.run_timeout,
        "backoff_base": backoff.base,
        "backoff_cap": backoff.cap,
        "backoff_multiplier": backoff.multiplier,
        "backoff_jitter": backoff.jitter,
        "max_payload_bytes": declaration.max_payload_bytes,
        "requires_store": declaration.requires_store,
    }
    return {name: value for name, value in every.items() if value is not None}


def diff_role(db: Database, role: str, **fields: Any) -> list[dict[str, Any]]:
    """diff_role(role, ...): a row (field, in_database, declared) per ROLE_FIELD given that
    differs from the database's; NotFound for an unknown role."""
    unknown = set(fields) - set(ROLE_FIELDS)
    if unknown:
        raise TypeError(f"diff_role takes no {', '.join(sorted(unknown))}")
    return db.query(DIFF_ROLE, {"role": role, **dict.fromkeys(ROLE_FIELDS), **fields})


def sync_command(declarations: Iterable[RoleDeclaration]) -> str:
    """The command that applies `declarations` to the database."""
    modules = dict.fromkeys(declaration.module for declaration in declarations)
    return " ".join(["pyworker roles sync", *(f"--handlers {module}" for module in modules)])


def compare_declarations(db: Database, declarations: list[RoleDeclaration]) -> None:
    """A starting worker's check of the roles its handlers declare against the database's
    (diff_role): a role missing there refuses the start, a role whose settings differ is warned
    about; either way saying the command that applies the declarations. The worker runs by the
    database's settings."""
    missing: list[tuple[RoleDeclaration, NotFound]] = []
    for declaration in declarations:
        role = declaration.role
        try:
            differences = diff_role(db, role, **declared_settings(declaration))
        except NotFound as error:
            missing.append((declaration, error))
            continue
        except InvalidInput as error:
            raise ConfigurationError(f"role {role!r}, declared in {declaration.module}: {error}") from error
        if differences:
            log.warning(
                "Role %s differs from its declaration in %s: %s. This worker runs by the database's"
                " settings; apply the declaration with `%s`",
                role,
                declaration.module,
                "; ".join(
                    f"{row['field']} is {row['in_database']} in the database, {row['declared']} declared"
                    for row in differences
                ),
                sync_command([declaration]),
                extra=event("role_declaration_differs"),
            )
    if missing:
        # diff_role's own words first (the role, and the roles there are), then what to run.
        unknown = "; ".join(str(error) for _, error in missing)
        declared = [declaration for declaration, _ in missing]
        raise ConfigurationError(
            f"{unknown}: the handlers declare {'it' if len(missing) == 1 else 'them'}; create"
            f" {'it' if len(missing) == 1 else 'them'} with `{sync_command(declared)}`,"
            " then start the worker again"
        )
