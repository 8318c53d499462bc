-- Verify taskpool:_prune_finished_tasks on pg

BEGIN;

SELECT has_function_privilege('_prune_finished_tasks(text[], timestamptz, integer)', 'execute');

ROLLBACK;
