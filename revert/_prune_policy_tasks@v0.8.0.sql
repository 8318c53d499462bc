-- Revert taskpool:_prune_policy_tasks from pg

-- Nothing to undo: deploy/_prune_policy_tasks.sql redefined _prune_policy_tasks as retention_core_pruners had left it.

BEGIN;
COMMIT;
