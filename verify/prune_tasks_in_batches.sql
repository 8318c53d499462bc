-- Verify taskpool:prune_tasks_in_batches on pg

BEGIN;

SELECT has_function_privilege('prune_tasks_in_batches(interval, integer, integer, bigint)', 'execute');

ROLLBACK;
