-- Revert taskpool:_prune_policy_workers from pg

-- Nothing to undo: deploy/_prune_policy_workers.sql redefined _prune_policy_workers as retention_core_pruners had left it.

BEGIN;
COMMIT;
