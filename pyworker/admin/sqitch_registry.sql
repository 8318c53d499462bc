-- Sqitch's registry, as App::Sqitch::Engine::pg creates it: App/Sqitch/Engine/pg.sql of
-- App::Sqitch 1.3.1 (registry release 1.1), with the registry schema `sqitch` and no table
-- options in place of its psql variables. pyworker/admin/schema.py runs it where a database has no
-- registry, so that the one it makes is the one `sqitch deploy` would.
-- Copyright (c) 2012-2022 iovation Inc., David E. Wheeler. MIT License.

BEGIN;

SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS "sqitch";

COMMENT ON SCHEMA "sqitch" IS 'Sqitch database deployment metadata v1.1.';

CREATE TABLE "sqitch".releases (
    version         REAL        PRIMARY KEY,
    installed_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    installer_name  TEXT        NOT NULL,
    installer_email TEXT        NOT NULL
);

COMMENT ON TABLE  "sqitch".releases                 IS 'Sqitch registry releases.';
COMMENT ON COLUMN "sqitch".releases.version         IS 'Version of the Sqitch registry.';
COMMENT ON COLUMN "sqitch".releases.installed_at    IS 'Date the registry release was installed.';
COMMENT ON COLUMN "sqitch".releases.installer_name  IS 'Name of the user who installed the registry release.';
COMMENT ON COLUMN "sqitch".releases.installer_email IS 'Email address of the user who installed the registry release.';

CREATE TABLE "sqitch".projects (
    project         TEXT        PRIMARY KEY,
    uri             TEXT            NULL UNIQUE,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    creator_name    TEXT        NOT NULL,
    creator_email   TEXT        NOT NULL
);

COMMENT ON TABLE  "sqitch".projects                IS 'Sqitch projects deployed to this database.';
COMMENT ON COLUMN "sqitch".projects.project        IS 'Unique Name of a project.';
COMMENT ON COLUMN "sqitch".projects.uri            IS 'Optional project URI';
COMMENT ON COLUMN "sqitch".projects.created_at     IS 'Date the project was added to the database.';
COMMENT ON COLUMN "sqitch".projects.creator_name   IS 'Name of the user who added the project.';
COMMENT ON COLUMN "sqitch".projects.creator_email  IS 'Email address of the user who added the project.';

CREATE TABLE "sqitch".changes (
    change_id       TEXT        PRIMARY KEY,
    script_hash     TEXT            NULL,
    change          TEXT        NOT NULL,
    project         TEXT        NOT NULL REFERENCES "sqitch".projects(project) ON UPDATE CASCADE,
    note            TEXT        NOT NULL DEFAULT '',
    committed_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    committer_name  TEXT        NOT NULL,
    committer_email TEXT        NOT NULL,
    planned_at      TIMESTAMPTZ NOT NULL,
    planner_name    TEXT        NOT NULL,
    planner_email   TEXT        NOT NULL,
    UNIQUE(project, script_hash)
);

COMMENT ON TABLE  "sqitch".changes                 IS 'Tracks the changes currently deployed to the database.';
COMMENT ON COLUMN "sqitch".changes.change_id       IS 'Change primary key.';
COMMENT ON COLUMN "sqitch".changes.script_hash     IS 'Deploy script SHA-1 hash.';
COMMENT ON COLUMN "sqitch".changes.change          IS 'Name of a deployed change.';
COMMENT ON COLUMN "sqitch".changes.project         IS 'Name of the Sqitch project to which the change belongs.';
COMMENT ON COLUMN "sqitch".changes.note            IS 'Description of the change.';
COMMENT ON COLUMN "sqitch".changes.committed_at    IS 'Date the change was deployed.';
COMMENT ON COLUMN "sqitch".changes.committer_name  IS 'Name of the user who deployed the change.';
COMMENT ON COLUMN "sqitch".changes.committer_email IS 'Email address of the user who deployed the change.';
COMMENT ON COLUMN "sqitch".changes.planned_at      IS 'Date the change was added to the plan.';
COMMENT ON COLUMN "sqitch".changes.planner_name    IS 'Name of the user who planed the change.';
COMMENT ON COLUMN "sqitch".changes.planner_email   IS 'Email address of the user who planned the change.';

CREATE TABLE "sqitch".tags (
    tag_id          TEXT        PRIMARY KEY,
    tag             TEXT        NOT NULL,
    project         TEXT        NOT NULL REFERENCES "sqitch".projects(project) ON UPDATE CASCADE,
    change_id       TEXT        NOT NULL REFERENCES "sqitch".changes(change_id) ON UPDATE CASCADE,
    note            TEXT        NOT NULL DEFAULT '',
    committed_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    committer_name  TEXT        NOT NULL,
    committer_email TEXT        NOT NULL,
    planned_at      TIMESTAMPTZ NOT NULL,
    planner_name    TEXT        NOT NULL,
    planner_email   TEXT        NOT NULL,
    UNIQUE(project, tag)
);

COMMENT ON TABLE  "sqitch".tags                 IS 'Tracks the tags currently applied to the database.';
COMMENT ON COLUMN "sqitch".tags.tag_id          IS 'Tag primary key.';
COMMENT ON COLUMN "sqitch".tags.tag             IS 'Project-unique tag name.';
COMMENT ON COLUMN "sqitch".tags.project         IS 'Name of the Sqitch project to which the tag belongs.';
COMMENT ON COLUMN "sqitch".tags.change_id       IS 'ID of last change deployed before the tag was applied.';
COMMENT ON COLUMN "sqitch".tags.note            IS 'Description of the tag.';
COMMENT ON COLUMN "sqitch".tags.committed_at    IS 'Date the tag was applied to the database.';
COMMENT ON COLUMN "sqitch".tags.committer_name  IS 'Name of the user who applied the tag.';
COMMENT ON COLUMN "sqitch".tags.committer_email IS 'Email address of the user who applied the tag.';
COMMENT ON COLUMN "sqitch".tags.planned_at      IS 'Date the tag was added to the plan.';
COMMENT ON COLUMN "sqitch".tags.planner_name    IS 'Name of the user who planed the tag.';
COMMENT ON COLUMN "sqitch".tags.planner_email   IS 'Email address of the user who planned the tag.';

CREATE TABLE "sqitch".dependencies (
    change_id       TEXT        NOT NULL REFERENCES "sqitch".changes(change_id) ON UPDATE CASCADE ON DELETE CASCADE,
    type            TEXT        NOT NULL,
    dependency      TEXT        NOT NULL,
    dependency_id   TEXT            NULL REFERENCES "sqitch".changes(change_id) ON UPDATE CASCADE CONSTRAINT dependencies_check CHECK (
            (type = 'require'  AND dependency_id IS NOT NULL)
         OR (type = 'conflict' AND dependency_id IS NULL)
    ),
    PRIMARY KEY (change_id, dependency)
);

COMMENT ON TABLE  "sqitch".dependencies               IS 'Tracks the currently satisfied dependencies.';
COMMENT ON COLUMN "sqitch".dependencies.change_id     IS 'ID of the depending change.';
COMMENT ON COLUMN "sqitch".dependencies.type          IS 'Type of dependency.';
COMMENT ON COLUMN "sqitch".dependencies.dependency    IS 'Dependency name.';
COMMENT ON COLUMN "sqitch".dependencies.dependency_id IS 'Change ID the dependency resolves to.';

CREATE TABLE "sqitch".events (
    event           TEXT        NOT NULL CONSTRAINT events_event_check CHECK (
        event IN ('deploy', 'revert', 'fail', 'merge')
    ),
    change_id       TEXT        NOT NULL,
    change          TEXT        NOT NULL,
    project         TEXT        NOT NULL REFERENCES "sqitch".projects(project) ON UPDATE CASCADE,
    note            TEXT        NOT NULL DEFAULT '',
    requires        TEXT[]      NOT NULL DEFAULT '{}',
    conflicts       TEXT[]      NOT NULL DEFAULT '{}',
    tags            TEXT[]      NOT NULL DEFAULT '{}',
    committed_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    committer_name  TEXT        NOT NULL,
    committer_email TEXT        NOT NULL,
    planned_at      TIMESTAMPTZ NOT NULL,
    planner_name    TEXT        NOT NULL,
    planner_email   TEXT        NOT NULL,
    PRIMARY KEY (change_id, committed_at)
);

COMMENT ON TABLE  "sqitch".events                 IS 'Contains full history of all deployment events.';
COMMENT ON COLUMN "sqitch".events.event           IS 'Type of event.';
COMMENT ON COLUMN "sqitch".events.change_id       IS 'Change ID.';
COMMENT ON COLUMN "sqitch".events.change          IS 'Change name.';
COMMENT ON COLUMN "sqitch".events.project         IS 'Name of the Sqitch project to which the change belongs.';
COMMENT ON COLUMN "sqitch".events.note            IS 'Description of the change.';
COMMENT ON COLUMN "sqitch".events.requires        IS 'Array of the names of required changes.';
COMMENT ON COLUMN "sqitch".events.conflicts       IS 'Array of the names of conflicting changes.';
COMMENT ON COLUMN "sqitch".events.tags            IS 'Tags associated with the change.';
COMMENT ON COLUMN "sqitch".events.committed_at    IS 'Date the event was committed.';
COMMENT ON COLUMN "sqitch".events.committer_name  IS 'Name of the user who committed the event.';
COMMENT ON COLUMN "sqitch".events.committer_email IS 'Email address of the user who committed the event.';
COMMENT ON COLUMN "sqitch".events.planned_at      IS 'Date the event was added to the plan.';
COMMENT ON COLUMN "sqitch".events.planner_name    IS 'Name of the user who planed the change.';
COMMENT ON COLUMN "sqitch".events.planner_email   IS 'Email address of the user who plan planned the change.';

COMMIT;
