-- Deploy taskpool:task_worker_waits_per_role to pg
-- requires: task_worker_waits

BEGIN;
SET client_min_messages = 'warning';

-- A worker that serves several roles waits for each of them apart: a wake-up for one role (or a
-- claim of one) ends the wait for that role alone.
ALTER TABLE task_worker_waits DROP CONSTRAINT task_worker_waits_pkey;
ALTER TABLE task_worker_waits ADD CONSTRAINT task_worker_waits_pkey PRIMARY KEY (worker_id, role);

COMMENT ON TABLE task_worker_waits IS
    'Workers asleep until woken, one row per role they wait for: mark_worker_waiting adds rows, a wake-up '
    'for the role (or the worker''s next successful claim of it) removes its row.';

COMMIT;
