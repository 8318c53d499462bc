-- Verify taskpool:retention_core_pruners on pg

BEGIN;

SELECT has_function_privilege('_prune_policy_tasks(retention_policies, integer, boolean)', 'execute');
SELECT has_function_privilege('_prune_policy_attempts(retention_policies, integer, boolean)', 'execute');
SELECT has_function_privilege('_prune_policy_workers(retention_policies, integer, boolean)', 'execute');

ROLLBACK;
