-- Revert taskpool:_prune_finished_tasks from pg

BEGIN;

DROP FUNCTION _prune_finished_tasks(text[], timestamptz, integer);

COMMIT;
