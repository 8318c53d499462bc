"""The taskpool schema from the package: `pyworker schema apply | upgrade | status`, with no Sqitch.

Sqitch stays the source of truth: sqitch.plan and its deploy/, revert/ and verify/ scripts. The
wheel carries a copy of them (pyworker/sqitch/, written by setup.py at build time); from a source
checkout (an editable install) they are read from the checkout's root. This module deploys that
plan the way `sqitch deploy --verify --mode change` does, and records every change in Sqitch's own
registry (the `sqitch` schema: projects, releases, changes, tags, dependencies, events) with the
ids, script hashes and tag ids Sqitch computes, so either tool takes over where the other stopped:
`sqitch status`, `sqitch verify`, `sqitch deploy` and `sqitch revert` work on a database this
module deployed, and `pyworker schema upgrade` on one Sqitch deployed (to a tag, say).

How Sqitch names things (App::Sqitch 1.x, Plan.pm, Plan/Change.pm, Plan/Tag.pm, Engine/pg.pm):
- a change's id is the SHA-1 of "change <length>\\0<info>", where info is the lines `project`,
  `uri` (when the plan has one), `change`, `parent` (the id of the change on the plan line before
  it), `planner`, `date`, then `requires` / `conflicts` lists and the note; a tag's id is the same
  over `project`, `uri`, `tag`, `change` (its change's id), `planner`, `date`, note;
- a change's script hash is the SHA-1 of its deploy script's bytes;
- a change declared again later (`sqitch rework`) leaves its earlier instances to the scripts
  named `<change>@<tag>.sql`: of the tags between an instance and the next one (latest first),
  then the instance's own tags, the first whose file exists, else the first of them.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import click
import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from pyworker.config import default_database_url
from pyworker.deadlines import connection_options
from pyworker.errors import ConfigurationError, DatabaseUnavailable, Refused
from pyworker.admin.output import Shown, prints

REGISTRY = "sqitch"
# The registry release this module writes and reads (App::Sqitch::Engine registry_release).
REGISTRY_RELEASE = 1.1
# The advisory lock every Sqitch deploy and revert holds (App::Sqitch::Engine::pg try_lock).
SQITCH_LOCK = 75474063
LOCK_TIMEOUT_SECONDS = 60


def database_url_for(url: str, dbname: str) -> str:
    """The same server, user and options as `url` (a URL or a key=value string), another database."""
    if "://" in url:
        # Not urlunsplit(): it drops the "//" of an empty host (postgresql:///db?host=/socket).
        parts = urlsplit(url)
        # A dbname query parameter would override the path: drop it.
        params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "dbname"]
        query = f"?{urlencode(params, safe='/', quote_via=quote)}" if params else ""
        return f"{parts.scheme}://{parts.netloc}/{quote(dbname, safe='')}{query}"
    return make_conninfo(url, dbname=dbname)


class SchemaRefused(Refused):
    """The database's registry does not fit this package's plan: nothing was deployed."""


# The plan


@dataclass(frozen=True)
class Dependency:
    """One entry of a change's [dependencies]: `name`, `name@tag`, `!name` (a conflict),
    `project:name`, or a change id."""

    conflicts: bool
    project: str | None
    change: str | None
    tag: str | None
    id: str | None

    @property
    def type(self) -> str:
        return "conflict" if self.conflicts else "require"

    def key_name(self) -> str:
        key = (self.change or "") + (f"@{self.tag}" if self.tag else "")
        return key or (self.id or "")

    def as_string(self, plan_project: str) -> str:
        """How Sqitch writes it in the registry: the project only when it is another one."""
        if self.project is None or self.project == plan_project:
            return self.key_name()
        return f"{self.project}:{self.key_name()}"


@dataclass(eq=False)
class Tag:
    name: str  # with its @
    change: Change
    planned_at: str  # as the plan writes it: 2026-11-22T03:20:00Z
    planner_name: str
    planner_email: str
    note: str
    id: str = ""

    def info(self, plan: Plan) -> str:
        lines = [f"project {plan.project}"]
        if plan.uri:
            lines.append(f"uri {_canonical_uri(plan.uri)}")
        lines += [
            f"tag {self.name}",
            f"change {self.change.id}",
            f"planner {self.planner_name} <{self.planner_email}>",
            f"date {self.planned_at}",
        ]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


@dataclass(eq=False)
class Change:
    name: str
    requires: list[Dependency]
    conflicts: list[Dependency]
    planned_at: str
    planner_name: str
    planner_email: str
    note: str
    parent: Change | None
    tags: list[Tag] = field(default_factory=list)
    rework_tags: list[Tag] = field(default_factory=list)
    id: str = ""

    def info(self, plan: Plan) -> str:
        lines = [f"project {plan.project}"]
        if plan.uri:
            lines.append(f"uri {_canonical_uri(plan.uri)}")
        lines.append(f"change {self.name}")
        if self.parent is not None:
            lines.append(f"parent {self.parent.id}")
        lines += [f"planner {self.planner_name} <{self.planner_email}>", f"date {self.planned_at}"]
        if self.requires:
            lines.append("requires\n  + " + "\n  + ".join(d.as_string(plan.project) for d in self.requires))
        if self.conflicts:
            lines.append("conflicts\n  - " + "\n  - ".join(d.as_string(plan.project) for d in self.conflicts))
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

    def script(self, plan: Plan, kind: str) -> Path:
        """deploy/NAME.sql, revert/..., verify/...; deploy/NAME@TAG.sql for a reworked instance."""
        if not self.rework_tags:
            return plan.top_dir / kind / f"{self.name}.sql"
        names = [f"{self.name}{tag.name}.sql" for tag in self.rework_tags]
        for name in names:
            # Sqitch looks for the file in deploy/ and uses that name for all three scripts.
            if (plan.top_dir / "deploy" / name).exists():
                return plan.top_dir / kind / name
        return plan.top_dir / kind / names[0]

    def script_hash(self, plan: Plan) -> str | None:
        path = self.script(plan, "deploy")
        return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else None

    def format_name_with_tags(self) -> str:
        return " ".join([self.name, *(tag.name for tag in self.tags)])


def _canonical_uri(uri: str) -> str:
    """The %uri as Sqitch's info text writes it (Perl's URI->canonical, for http and https: the
    scheme and host in lower case, no default port, `/` for an empty path)."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or parts.hostname is None:
        return uri
    host = parts.hostname
    if parts.port is not None and parts.port != {"http": 80, "https": 443}[scheme]:
        host += f":{parts.port}"
    if "@" in parts.netloc:
        host = parts.netloc.rsplit("@", 1)[0] + "@" + host
    return urlunsplit((scheme, host, parts.path or "/", parts.query, parts.fragment))


def _sqitch_id(kind: str, info: str) -> str:
    content = info.encode("utf-8")
    return hashlib.sha1(f"{kind} {len(content)}\0".encode() + content).hexdigest()


# Sqitch's plan syntax (App::Sqitch::Plan::_parse), for what a plan file can hold.
_NOTE = re.compile(r"[ \t]*(?:#[ \t]*(?P<note>.*))?$")
_LINE = re.compile(
    r"""^[ \t]*(?P<tag>@)?(?P<name>[^ \t\[#@:]+)[ \t]*
        (?:\[(?P<dependencies>[^\]]+)\][ \t]*)?
        (?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)[ \t]*
        (?P<planner_name>[^<]+)[ \t]+<(?P<planner_email>[^>]+)>$""",
    re.X,
)
_DEPENDENCY = re.compile(
    r"^(?P<conflicts>!?)(?:(?P<project>[^:@!\s]+):)?"
    r"(?:(?P<id>[0-9a-f]{40})|(?P<change>[^:@\s]+)(?:@(?P<tag>[^:@\s]+))?|@(?P<tag_only>[^:@\s]+))$"
)
_UNESCAPE = {"\\n": "\n", "\\r": "\r", "\\\\": "\\"}


def _unescape_note(note: str | None) -> str:
    return re.sub(r"\\[\\nr]", lambda m: _UNESCAPE[m.group(0)], note or "")


@dataclass
class Plan:
    top_dir: Path
    project: str
    uri: str | None
    changes: list[Change]
    tags: list[Tag]

    @classmethod
    def load(cls, top_dir: Path) -> Plan:
        path = top_dir / "sqitch.plan"
        pragmas: dict[str, str] = {}
        changes: list[Change] = []
        tags: list[Tag] = []
        by_name: dict[str, Change] = {}
        in_header = True
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"^[ \t]*(#.*)?$", raw):
                in_header = in_header and raw.strip() != ""
                continue
            match = _NOTE.search(raw)
            note, line = _unescape_note(match.group("note")), raw[: match.start()]
            if in_header:
                pragma = re.match(r"^[ \t]*%[ \t]*([^=\s]+)[ \t]*(?:=[ \t]*(.+))?$", line)
                if pragma is None:
                    raise ConfigurationError(f"{path}:{number}: a pragma was expected: {raw!r}")
                pragmas[pragma.group(1)] = pragma.group(2) or "1"
                continue
            parsed = _LINE.match(line)
            if parsed is None:
                raise ConfigurationError(f"{path}:{number}: not a change or tag line Sqitch reads: {raw!r}")
            planner = (parsed["ts"], parsed["planner_name"], parsed["planner_email"])
            if parsed["tag"]:
                if not changes:
                    raise ConfigurationError(f"{path}:{number}: a tag before any change")
                tag = Tag(f"@{parsed['name']}", changes[-1], *planner, note)
                changes[-1].tags.append(tag)
                tags.append(tag)
                continue
            requires, conflicts = [], []
            for text in (parsed["dependencies"] or "").split():
                dep = _DEPENDENCY.match(text)
                if dep is None:
                    raise ConfigurationError(f"{path}:{number}: {text!r} is not a dependency Sqitch reads")
                dependency = Dependency(
                    conflicts=bool(dep["conflicts"]),
                    project=dep["project"],
                    change=dep["change"],
                    tag=dep["tag"] or dep["tag_only"],
                    id=dep["id"],
                )
                (conflicts if dependency.conflicts else requires).append(dependency)
            change = Change(
                parsed["name"], requires, conflicts, *planner, note, parent=changes[-1] if changes else None
            )
            earlier = by_name.get(change.name)
            if earlier is not None:
                # The tags between the earlier instance and this one, latest first, then its own.
                between = changes[changes.index(earlier) + 1 :]
                earlier.rework_tags = [t for c in reversed(between) for t in c.tags] + earlier.tags
            by_name[change.name] = change
            changes.append(change)
        if "project" not in pragmas:
            raise ConfigurationError(f"{path}: no %project pragma")
        plan = cls(top_dir, pragmas["project"], pragmas.get("uri"), changes, tags)
        for change in changes:
            change.id = _sqitch_id("change", change.info(plan))
            for tag in change.tags:
                tag.id = _sqitch_id("tag", tag.info(plan))
        return plan

    def index_of(self, change_id: str) -> int | None:
        for index, change in enumerate(self.changes):
            if change.id == change_id:
                return index
        return None

    def position(self, target: str) -> int:
        """The index of the change `target` names: `@tag` (the change it tags), a change id, or a
        change name (its last instance in the plan); ConfigurationError when none."""
        for index, change in reversed(list(enumerate(self.changes))):
            if target in (change.id, change.name) or any(tag.name == target for tag in change.tags):
                return index
        raise ConfigurationError(f"the plan has no change or tag {target!r}")


def packaged_project() -> Path:
    """Where the Sqitch project is: the copy in the wheel (pyworker/sqitch/), else the root of the
    source checkout that holds this package (an editable install)."""
    packaged = Path(str(resources.files("pyworker").joinpath("sqitch")))
    if (packaged / "sqitch.plan").is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "sqitch.plan").is_file():
        return checkout
    raise ConfigurationError(
        f"this pyworker holds no Sqitch plan (neither {packaged} nor {checkout}/sqitch.plan):"
        " reinstall the package, or deploy from a taskpool checkout with `make deploy`"
    )


# The registry


def _committer() -> tuple[str, str]:
    """Who deploys, as Sqitch finds it: SQITCH_FULLNAME / SQITCH_EMAIL, else the system user."""
    user = os.environ.get("SQITCH_ORIG_SYSUSER") or getpass.getuser()
    name = os.environ.get("SQITCH_FULLNAME") or os.environ.get("SQITCH_ORIG_FULLNAME")
    if not name:
        try:
            import pwd

            name = pwd.getpwnam(user).pw_gecos.split(",")[0] or user
        except (ImportError, KeyError):
            name = user
    email = os.environ.get("SQITCH_EMAIL") or os.environ.get("SQITCH_ORIG_EMAIL")
    return name, email or f"{user}@{socket.gethostname()}"


def _planned_at(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


# Sqitch's registry DDL (its Engine/pg.sql, release 1.1), shipped beside this module.
REGISTRY_DDL = "sqitch_registry.sql"


@dataclass
class Status:
    """Where a database stands against the plan."""

    project: str
    source: str
    registry: bool  # the sqitch registry exists
    deployed: list[dict[str, Any]]  # the project's changes in the registry, oldest first
    pending: list[Change]
    last_tag: str | None

    @property
    def last_change(self) -> dict[str, Any] | None:
        return self.deployed[-1] if self.deployed else None

    def as_json(self) -> dict[str, Any]:
        last = self.last_change
        return {
            "project": self.project,
            "plan": self.source,
            "registry": self.registry,
            "deployed_changes": len(self.deployed),
            "last_change": None
            if last is None
            else {
                "change": last["change"],
                "change_id": last["change_id"],
                "tags": last["tags"],
                "committed_at": last["committed_at"].isoformat(),
                "committer": f"{last['committer_name']} <{last['committer_email']}>",
            },
            "last_tag": self.last_tag,
            "pending": [change.format_name_with_tags() for change in self.pending],
            "up_to_date": bool(self.deployed) and not self.pending,
        }


class Deployer:
    """Deploys `plan` into the database of `url` and keeps Sqitch's registry there."""

    def __init__(self, url: str, plan: Plan, *, verify: bool = True, echo: Any = None) -> None:
        self.url = url
        self.plan = plan
        self.verify = verify
        self.echo = echo or (lambda text: None)
        self.committer_name, self.committer_email = _committer()

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        try:
            # Connection parameters that notice a dead peer, and no call deadline: applying a
            # schema takes as long as it takes.
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                row_factory=dict_row,
                application_name="pyworker-schema",
                **connection_options(self.url),
            )
        except psycopg.OperationalError as error:
            raise DatabaseUnavailable(f"cannot connect to the database: {str(error).strip()}") from error
        with conn:
            conn.execute("SET client_min_messages = warning")
            yield conn

    # Reading

    def status(self, conn: psycopg.Connection[dict[str, Any]] | None = None) -> Status:
        if conn is None:
            with self.connect() as conn:
                return self.status(conn)
        registry = self._has_registry(conn)
        deployed: list[dict[str, Any]] = []
        last_tag = None
        if registry:
            deployed = conn.execute(
                """
                SELECT c.change_id, c.change, c.script_hash, c.committed_at, c.committer_name,
                       c.committer_email,
                       ARRAY(SELECT tag FROM sqitch.tags t WHERE t.change_id = c.change_id
                             ORDER BY t.committed_at) AS tags
                  FROM sqitch.changes c
                 WHERE c.project = %s
                 ORDER BY c.committed_at, c.change_id
                """,
                [self.plan.project],
            ).fetchall()
            row = conn.execute(
                "SELECT tag FROM sqitch.tags WHERE project = %s ORDER BY committed_at DESC LIMIT 1",
                [self.plan.project],
            ).fetchone()
            last_tag = row["tag"] if row else None
        self._check_known(deployed)
        return Status(
            project=self.plan.project,
            source=str(self.plan.top_dir),
            registry=registry,
            deployed=deployed,
            pending=self.plan.changes[len(deployed) :],
            last_tag=last_tag,
        )

    def _has_registry(self, conn: psycopg.Connection[dict[str, Any]]) -> bool:
        return conn.execute(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_tables"
            " WHERE schemaname = %s AND tablename = 'changes') AS e",
            [REGISTRY],
        ).fetchone()["e"]

    def _check_known(self, deployed: Sequence[dict[str, Any]]) -> None:
        """SchemaRefused unless the deployed changes are the plan's first changes, in its order."""
        unknown = [row for row in deployed if self.plan.index_of(row["change_id"]) is None]
        if unknown:
            names = ", ".join(f"{row['change']} ({row['change_id'][:8]})" for row in unknown[:5])
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise SchemaRefused(
                f"this database has {len(unknown)} {self.plan.project} change(s) that this package's"
                f" plan does not know: {names}{more}. It was deployed from another plan (a newer"
                " taskpool, or a checkout with changes of its own): upgrade pyworker, or deploy from"
                " that checkout with `sqitch deploy`"
            )
        for index, row in enumerate(deployed):
            if self.plan.changes[index].id != row["change_id"]:
                raise SchemaRefused(
                    f"this database's {self.plan.project} changes are not deployed in the plan's"
                    f" order: change {index + 1} is {row['change']}, the plan's is"
                    f" {self.plan.changes[index].name}; check it with `sqitch status` from a checkout"
                )

    # Deploying

    def deploy(self, *, install: bool, to: str | None = None) -> list[Change]:
        """Deploy every pending change (up to `to`, a tag or change, when given); the ones
        deployed. With install false (an upgrade), a database without the project is refused
        instead of installed."""
        last = len(self.plan.changes) if to is None else self.plan.position(to) + 1
        with self.connect() as conn:
            self._lock(conn)
            try:
                if not self._has_registry(conn):
                    if not install:
                        raise SchemaRefused(
                            "this database has no taskpool schema (no Sqitch registry): install it with"
                            " `pyworker schema apply`"
                        )
                    self.echo(f"Adding registry tables to {REGISTRY}")
                    conn.execute(resources.files("pyworker.admin").joinpath(REGISTRY_DDL).read_bytes())
                    conn.execute(
                        "INSERT INTO sqitch.releases (version, installed_at, installer_name, installer_email)"
                        " VALUES (%s, clock_timestamp(), %s, %s)",
                        [REGISTRY_RELEASE, self.committer_name, self.committer_email],
                    )
                self._check_release(conn)
                self._move_registry(conn)
                if not install and not self._project_registered(conn):
                    raise SchemaRefused(
                        f"this database's Sqitch registry has no {self.plan.project} project: install"
                        " it with `pyworker schema apply`"
                    )
                self._register_project(conn)
                status = self.status(conn)
                pending = self.plan.changes[len(status.deployed) : last]
                if not pending:
                    self.echo("Nothing to deploy (up-to-date)")
                    return []
                self.echo(f"Deploying changes to {conn.info.dbname}")
                for change in pending:
                    self._deploy_change(conn, change)
                return pending
            except psycopg.Error as error:
                raise SchemaRefused(f"the database refused: {str(error).strip()}") from error
            finally:
                try:
                    self._recover(conn)
                    conn.execute("SELECT pg_advisory_unlock(%s)", [SQITCH_LOCK])
                except psycopg.Error:
                    pass  # the session's end releases the lock

    def _move_registry(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        """Run the registry moves the project carries (registry/*.sql, as `make deploy` runs them):
        a database deployed with an older layout of the plans (the one plan of before the
        crawler's project of its own) is moved in place onto this one; a no-op elsewhere."""
        for script in sorted((self.plan.top_dir / "registry").glob("*.sql")):
            # psql's meta-commands (\set ON_ERROR_STOP) aside, the script is plain SQL.
            text = "\n".join(line for line in script.read_text().splitlines() if not line.startswith("\\"))
            conn.execute(text.encode())

    def _lock(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        """The lock Sqitch holds while it deploys: one deploy at a time, whichever tool runs it."""
        if conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", [SQITCH_LOCK]).fetchone()["ok"]:
            return
        self.echo(f"Blocked by another deploy (Sqitch's lock); waiting {LOCK_TIMEOUT_SECONDS} seconds...")
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT_SECONDS}s'")
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", [SQITCH_LOCK])
        except psycopg.errors.LockNotAvailable as error:
            raise SchemaRefused(
                "another deploy holds Sqitch's lock on this database; try again later"
            ) from error
        finally:
            conn.execute("RESET lock_timeout")

    def _check_release(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        version = conn.execute("SELECT max(version) AS v FROM sqitch.releases").fetchone()["v"]
        if version is None or abs(version - REGISTRY_RELEASE) > 1e-6:
            raise SchemaRefused(
                f"this database's Sqitch registry is release {version}; pyworker writes release"
                f" {REGISTRY_RELEASE}: upgrade it with `sqitch upgrade` (or a newer pyworker)"
            )

    def _project_registered(self, conn: psycopg.Connection[dict[str, Any]]) -> bool:
        return conn.execute(
            "SELECT EXISTS (SELECT FROM sqitch.projects WHERE project = %s) AS e", [self.plan.project]
        ).fetchone()["e"]

    def _register_project(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        """As Sqitch's register_project: the project once, its URI the plan's."""
        plan = self.plan
        row = conn.execute("SELECT uri FROM sqitch.projects WHERE project = %s", [plan.project]).fetchone()
        if row is not None:
            if row["uri"] != plan.uri:
                raise SchemaRefused(
                    f"project {plan.project} is registered with URI {row['uri']}, the plan has {plan.uri}"
                )
            return
        if plan.uri is not None:
            other = conn.execute("SELECT project FROM sqitch.projects WHERE uri = %s", [plan.uri]).fetchone()
            if other is not None:
                raise SchemaRefused(
                    f"cannot register {plan.project} with URI {plan.uri}: project {other['project']} uses it"
                )
        conn.execute(
            "INSERT INTO sqitch.projects (project, uri, creator_name, creator_email, created_at)"
            " VALUES (%s, %s, %s, %s, clock_timestamp())",
            [plan.project, plan.uri, self.committer_name, self.committer_email],
        )

    def _run_script(self, conn: psycopg.Connection[dict[str, Any]], path: Path) -> None:
        # No parameters: psycopg sends the file with the simple query protocol, as psql sends each
        # statement, so the script's own BEGIN ... COMMIT is its transaction.
        conn.execute(path.read_text(encoding="utf-8").encode("utf-8"))

    def _deploy_change(self, conn: psycopg.Connection[dict[str, Any]], change: Change) -> None:
        """Sqitch's deploy_change: the deploy script in its own transaction, then the verify
        script, then the record; a failed verify or record runs the revert script."""
        name = change.format_name_with_tags()
        self.echo(f"  + {name}")
        plan = self.plan
        try:
            self._run_script(conn, change.script(plan, "deploy"))
        except psycopg.Error as error:
            self._recover(conn)
            self._log_event(conn, "fail", change)
            raise SchemaRefused(f"deploy/{change.name} failed: {str(error).strip()}") from error
        try:
            verify = change.script(plan, "verify")
            if self.verify and verify.is_file():
                self._run_script(conn, verify)
                self._recover(conn)
            with conn.transaction():
                conn.execute("LOCK TABLE sqitch.changes IN EXCLUSIVE MODE")
                self._log_deploy(conn, change)
        except (psycopg.Error, SchemaRefused) as error:
            self._recover(conn)
            revert = change.script(plan, "revert")
            try:
                if revert.is_file():
                    self._run_script(conn, revert)
            except psycopg.Error:
                self._recover(conn)
            self._log_event(conn, "fail", change)
            raise SchemaRefused(
                f"{change.name} did not verify or could not be recorded: {str(error).strip()}"
            ) from error

    @staticmethod
    def _recover(conn: psycopg.Connection[dict[str, Any]]) -> None:
        """Back out of a script that stopped inside its transaction (or one a verify left open)."""
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")

    def _resolve(self, conn: psycopg.Connection[dict[str, Any]], dep: Dependency) -> str | None:
        """The deployed change a dependency names, as Sqitch's change_id_for(first => 1) finds it."""
        project = dep.project or self.plan.project
        if dep.id:
            row = conn.execute(
                "SELECT change_id FROM sqitch.changes WHERE change_id = %s", [dep.id]
            ).fetchone()
        elif dep.change and dep.tag:
            row = conn.execute(
                """
                SELECT changes.change_id
                  FROM sqitch.changes
                  JOIN sqitch.tags
                    ON changes.committed_at <= tags.committed_at
                   AND changes.project = tags.project
                 WHERE changes.project = %s AND changes.change = %s AND tags.tag = %s
                 ORDER BY changes.committed_at DESC
                 LIMIT 1
                """,
                [project, dep.change, f"@{dep.tag}"],
            ).fetchone()
        elif dep.change:
            row = conn.execute(
                "SELECT change_id FROM sqitch.changes WHERE project = %s AND change = %s"
                " ORDER BY committed_at LIMIT 1",
                [project, dep.change],
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT change_id FROM sqitch.tags WHERE project = %s AND tag = %s", [project, f"@{dep.tag}"]
            ).fetchone()
        return row["change_id"] if row else None

    def _log_deploy(self, conn: psycopg.Connection[dict[str, Any]], change: Change) -> None:
        plan = self.plan
        rows = []
        for dep in change.requires:
            resolved = self._resolve(conn, dep)
            if resolved is None:
                raise SchemaRefused(
                    f"{change.name} requires {dep.as_string(plan.project)}, which is not deployed"
                )
            rows.append((dep, resolved))
        for dep in change.conflicts:
            if self._resolve(conn, dep) is not None:
                raise SchemaRefused(
                    f"{change.name} conflicts with {dep.as_string(plan.project)}, which is deployed"
                )
            rows.append((dep, None))
        conn.execute(
            """
            INSERT INTO sqitch.changes (change_id, script_hash, change, project, note,
                                        committer_name, committer_email, planned_at,
                                        planner_name, planner_email, committed_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp())
            """,
            [
                change.id,
                change.script_hash(plan),
                change.name,
                plan.project,
                change.note,
                self.committer_name,
                self.committer_email,
                _planned_at(change.planned_at),
                change.planner_name,
                change.planner_email,
            ],
        )
        for dep, resolved in rows:
            conn.execute(
                "INSERT INTO sqitch.dependencies (change_id, type, dependency, dependency_id)"
                " VALUES (%s, %s, %s, %s)",
                [change.id, dep.type, dep.as_string(plan.project), resolved],
            )
        for tag in change.tags:
            conn.execute(
                """
                INSERT INTO sqitch.tags (tag_id, tag, project, change_id, note, committer_name,
                                         committer_email, planned_at, planner_name, planner_email,
                                         committed_at)
                VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp())
                """,
                [
                    tag.id,
                    tag.name,
                    plan.project,
                    change.id,
                    tag.note,
                    self.committer_name,
                    self.committer_email,
                    _planned_at(tag.planned_at),
                    tag.planner_name,
                    tag.planner_email,
                ],
            )
        self._log_event(conn, "deploy", change)

    def _log_event(self, conn: psycopg.Connection[dict[str, Any]], event: str, change: Change) -> None:
        plan = self.plan
        conn.execute(
            """
            INSERT INTO sqitch.events (event, change_id, change, project, note, tags, requires, conflicts,
                                       committer_name, committer_email, planned_at, planner_name,
                                       planner_email, committed_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp())
            """,
            [
                event,
                change.id,
                change.name,
                plan.project,
                change.note,
                [tag.name for tag in change.tags],
                [dep.as_string(plan.project) for dep in change.requires],
                [dep.as_string(plan.project) for dep in change.conflicts],
                self.committer_name,
                self.committer_email,
                _planned_at(change.planned_at),
                change.planner_name,
                change.planner_email,
            ],
        )


# The commands


def _deployer(ctx: click.Context, verify: bool = True) -> Deployer:
    url = getattr(ctx.obj, "database_url", None) or default_database_url()
    if getattr(ctx.obj, "pooled", False):
        # Sqitch's lock is a session advisory lock: through a transaction pooler it would be
        # taken on one server connection and released (or not) on another.
        raise ConfigurationError(
            "pyworker schema needs a session of its own (it holds Sqitch's advisory lock across"
            " transactions): give the server's own URL, not a transaction pooler's (--pooled)"
        )
    return Deployer(url, Plan.load(packaged_project()), verify=verify, echo=click.echo)


@click.group()
def schema() -> None:
    """Install, upgrade and inspect the taskpool schema from this package, with no Sqitch.

    The package carries taskpool's Sqitch plan and scripts and records what it deploys in
    Sqitch's registry (the `sqitch` schema), exactly as `sqitch deploy` would: from a checkout,
    `sqitch status`, `sqitch deploy` and `sqitch revert` carry on from where these commands
    stopped, and the other way round.
    """


to_option = click.option("--to", metavar="@TAG|CHANGE", help="Deploy up to this tag or change only.")
no_verify_option = click.option("--no-verify", is_flag=True, help="Skip each change's verify script.")


@schema.command()
@to_option
@no_verify_option
@click.pass_context
def apply(ctx: click.Context, no_verify: bool, to: str | None) -> None:
    """Install the schema into this database, or bring it up to date: every change not deployed
    yet, each in its own transaction (safe to run at every start)."""
    _deployer(ctx, not no_verify).deploy(install=True, to=to)


@schema.command()
@to_option
@no_verify_option
@click.pass_context
def upgrade(ctx: click.Context, no_verify: bool, to: str | None) -> None:
    """Deploy the changes this database lacks; refuse a database with no taskpool schema (install
    it with `apply`) or one deployed from a plan this package does not know."""
    _deployer(ctx, not no_verify).deploy(install=False, to=to)


@schema.command()
@prints()
@click.pass_context
def status(ctx: click.Context) -> Shown:
    """Show the project, the last change and tag deployed, and the changes not deployed yet."""
    report = _deployer(ctx).status().as_json()
    return Shown(report, lambda: echo_status(report))


def echo_status(report: dict[str, Any]) -> None:
    click.echo(f"project: {report['project']} (plan: {report['plan']})")
    last = report["last_change"]
    if last is None:
        click.echo("deployed: nothing (install it with `pyworker schema apply`)")
    else:
        tags = f" {' '.join(last['tags'])}" if last["tags"] else ""
        click.echo(
            f"last change: {last['change']}{tags} ({last['change_id'][:12]}),"
            f" {last['committed_at']} by {last['committer']}"
        )
        click.echo(f"last tag: {report['last_tag'] or 'none'}")
    if report["pending"]:
        click.echo(f"pending: {len(report['pending'])} change(s): {', '.join(report['pending'])}")
        if last is not None:
            click.echo("deploy them with `pyworker schema upgrade`")
    elif last is not None:
        click.echo("up to date: nothing to deploy")
