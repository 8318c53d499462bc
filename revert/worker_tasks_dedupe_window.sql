-- Revert taskpool:worker_tasks_dedupe_window from pg

BEGIN;

DROP INDEX worker_tasks_one_per_dedupe_period_idx;
DROP FUNCTION _dedupe_period_start(timestamptz, interval);
ALTER TABLE worker_tasks DROP COLUMN dedupe_window;

COMMIT;
