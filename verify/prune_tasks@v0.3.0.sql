-- Verify taskpool:prune_tasks on pg

BEGIN;

SELECT has_function_privilege('prune_tasks(interval, integer)', 'execute');

ROLLBACK;
