-- Revert taskpool:worker_tasks_failed_or_cancelled_idx from pg

BEGIN;

DROP INDEX worker_tasks_failed_or_cancelled_idx;

COMMIT;
