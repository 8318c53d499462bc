-- Revert taskpool:worker_tasks_parent_id from pg

BEGIN;

ALTER TABLE worker_tasks DROP COLUMN parent_id;

COMMIT;
