-- Revert taskpool:count_prunable_tasks from pg

BEGIN;

DROP FUNCTION count_prunable_tasks(interval);

COMMIT;
