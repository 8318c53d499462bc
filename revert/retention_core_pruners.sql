-- Revert taskpool:retention_core_pruners from pg

BEGIN;

DROP FUNCTION _prune_policy_tasks(retention_policies, integer, boolean);
DROP FUNCTION _prune_policy_attempts(retention_policies, integer, boolean);
DROP FUNCTION _prune_policy_workers(retention_policies, integer, boolean);

COMMIT;
