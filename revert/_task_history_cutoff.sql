-- Revert taskpool:_task_history_cutoff from pg

BEGIN;

DROP FUNCTION _task_history_cutoff(timestamptz);

COMMIT;
