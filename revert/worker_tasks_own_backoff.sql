-- Revert taskpool:worker_tasks_own_backoff from pg

BEGIN;

ALTER TABLE worker_tasks
    DROP COLUMN backoff_base,
    DROP COLUMN backoff_cap;

COMMIT;
