"""Sqitch plans as Python data: parse a plan file and compute its change and tag ids.

The ids are Sqitch's (App::Sqitch::Plan::Change and ::Tag, v1.x): the SHA-1 of
"change <length>\\0<info>", where the info text names the project, its URI, the change, the id
of the change before it in the plan (its parent), the planner, the planned date, the requires,
the conflicts and the note. scripts/split-registry uses them to map a registry deployed with the
combined plan (project taskpool, before the crawler had a project of its own) onto the split plans.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(
    r"^(?P<name>[^\s\[@#]+)\s*(?:\[(?P<deps>[^\]]*)\])?\s*"
    r"(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\s+(?P<planner>[^<]*?)\s*<(?P<email>[^>]*)>"
    r"\s*(?:#\s?(?P<note>.*))?$"
)


def _sha1(kind: str, info: str) -> str:
    data = info.encode("utf-8")
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


@dataclass
class Change:
    name: str
    requires: list[str]
    conflicts: list[str]
    date: str
    planner: str
    email: str
    note: str
    line: str
    id: str = ""
    tags: list["Tag"] = field(default_factory=list)
    rework_tags: list[str] = field(default_factory=list)
    occurrence: int = 0  # 0 for the first change of this name in the plan, 1 for its rework, ...


@dataclass
class Tag:
    name: str  # with its @
    change: Change
    date: str
    planner: str
    email: str
    note: str
    line: str
    id: str = ""


@dataclass
class Plan:
    project: str
    uri: str | None
    header: list[str]
    changes: list[Change]
    tags: list[Tag]
    entries: list  # Change, Tag or str (a blank line or comment), in file order

    def by_id(self) -> dict[str, Change]:
        return {c.id: c for c in self.changes}

    def at(self, name: str, tag: str | None = None) -> Change:
        """The change `name` as of `tag` (Sqitch's name@tag), else its last instance."""
        if tag is None:
            return [c for c in self.changes if c.name == name][-1]
        t = next(t for t in self.tags if t.name == tag)
        upto = self.changes[: self.changes.index(t.change) + 1]
        return [c for c in upto if c.name == name][-1]


def parse(path: str | Path) -> Plan:
    text = Path(path).read_text(encoding="utf-8")
    project, uri, header, entries = None, None, [], []
    changes: list[Change] = []
    tags: list[Tag] = []
    seen: dict[str, int] = {}
    for raw in text.split("\n"):
        if raw.startswith("%"):
            header.append(raw)
            key, _, value = raw[1:].partition("=")
            if key.strip() == "project":
                project = value.strip()
            elif key.strip() == "uri":
                uri = value.strip()
            continue
        if not raw.strip() or raw.lstrip().startswith("#"):
            entries.append(raw)
            continue
        is_tag = raw.startswith("@")
        m = _LINE.match(raw[1:] if is_tag else raw)
        if not m:
            raise ValueError(f"{path}: cannot parse plan line: {raw!r}")
        note = (m["note"] or "").strip()
        if is_tag:
            tag = Tag("@" + m["name"], changes[-1], m["date"], m["planner"], m["email"], note, raw)
            changes[-1].tags.append(tag)
            tags.append(tag)
            entries.append(tag)
            continue
        deps = (m["deps"] or "").split()
        change = Change(
            m["name"], [d for d in deps if not d.startswith("!")],
            [d[1:] for d in deps if d.startswith("!")],
            m["date"], m["planner"], m["email"], note, raw,
        )
        change.occurrence = seen.get(change.name, 0)
        seen[change.name] = change.occurrence + 1
        if change.occurrence:
            # A rework: the earlier instance's scripts are named after the tags since it.
            earlier = [c for c in changes if c.name == change.name][-1]
            earlier.rework_tags = [t.name for c in changes[changes.index(earlier):] for t in c.tags]
        changes.append(change)
        entries.append(change)
    if project is None:
        raise ValueError(f"{path}: no %project pragma")
    plan = Plan(project, uri, header, changes, tags, entries)
    _assign_ids(plan)
    return plan


def _dep_string(dep: str, project: str) -> str:
    """Depend->as_string: the project prefix only when it names another project."""
    proj, sep, key = dep.partition(":")
    if sep and proj == project:
        return key
    return dep


def _assign_ids(plan: Plan) -> None:
    parent = None
    for c in plan.changes:
        lines = [f"project {plan.project}"]
        if plan.uri:
            lines.append(f"uri {plan.uri}")
        lines.append(f"change {c.name}")
        if parent is not None:
            lines.append(f"parent {parent.id}")
        lines.append(f"planner {c.planner} <{c.email}>")
        lines.append(f"date {c.date}")
        if c.requires:
            lines.append("requires\n  + " + "\n  + ".join(_dep_string(d, plan.project) for d in c.requires))
        if c.conflicts:
            lines.append("conflicts\n  - " + "\n  - ".join(_dep_string(d, plan.project) for d in c.conflicts))
        if c.note:
            lines += ["", c.note]
        c.id = _sha1("change", "\n".join(lines))
        parent = c
    for t in plan.tags:
        lines = [f"project {plan.project}"]
        if plan.uri:
            lines.append(f"uri {plan.uri}")
        lines += [f"tag {t.name}", f"change {t.change.id}", f"planner {t.planner} <{t.email}>", f"date {t.date}"]
        if t.note:
            lines += ["", t.note]
        t.id = _sha1("tag", "\n".join(lines))


def deploy_file(top: Path, change: Change) -> Path:
    """The deploy script Sqitch runs for `change` (a reworked one's is name@TAG.sql)."""
    for tag in change.rework_tags:
        candidate = top / "deploy" / f"{change.name}{tag}.sql"
        if candidate.exists():
            return candidate
    if change.rework_tags:
        return top / "deploy" / f"{change.name}{change.rework_tags[0]}.sql"
    return top / "deploy" / f"{change.name}.sql"


def script_hash(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()
