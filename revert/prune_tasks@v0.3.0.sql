-- Revert taskpool:prune_tasks from pg

BEGIN;

DROP FUNCTION prune_tasks(interval, integer);

COMMIT;
