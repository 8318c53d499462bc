-- Deploy taskpool:task_role_recoveries to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_role_recoveries
-- When the stale tasks of a role were last recovered by one of its workers: where neither
-- pg_cron nor `pyworker scheduler` runs the tick, workers recover their own role's tasks, and
-- this row lets one of them do it per interval, however many call. A row per role, written once
-- per interval: not task_roles, whose rows are the role's settings.
CREATE TABLE task_role_recoveries (
    role        text        PRIMARY KEY REFERENCES task_roles (role) ON DELETE CASCADE,
    last_run_at timestamptz NOT NULL
);

COMMENT ON TABLE task_role_recoveries IS
    'When a worker last recovered the stale tasks of each role (recover_stale_tasks_of_role), which '
    'does it again only half the role''s stale_threshold later.';

COMMIT;
