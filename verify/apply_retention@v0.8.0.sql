-- Verify taskpool:apply_retention on pg

BEGIN;

SELECT has_function_privilege('_retention_pruner(retention_policies)', 'execute');
SELECT has_function_privilege('apply_retention(integer)', 'execute');
SELECT has_function_privilege('apply_retention_in_batches(integer, numeric, numeric, jsonb)', 'execute');
SELECT has_function_privilege('count_retention()', 'execute');

ROLLBACK;
