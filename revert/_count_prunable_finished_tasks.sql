-- Revert taskpool:_count_prunable_finished_tasks from pg

BEGIN;

DROP FUNCTION _count_prunable_finished_tasks(text[], timestamptz);

COMMIT;
