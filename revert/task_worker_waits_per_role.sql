-- Revert taskpool:task_worker_waits_per_role from pg

BEGIN;
SET client_min_messages = 'warning';

-- One wait per worker again: keep the oldest of each worker's rows.
DELETE FROM task_worker_waits w
USING task_worker_waits o
WHERE o.worker_id = w.worker_id
  AND (o.waiting_since, o.role) < (w.waiting_since, w.role);
ALTER TABLE task_worker_waits DROP CONSTRAINT task_worker_waits_pkey;
ALTER TABLE task_worker_waits ADD CONSTRAINT task_worker_waits_pkey PRIMARY KEY (worker_id);

COMMENT ON TABLE task_worker_waits IS
    'Workers asleep until woken: mark_worker_waiting adds a row, a wake-up (or the worker''s next successful claim) removes it.';

COMMIT;
