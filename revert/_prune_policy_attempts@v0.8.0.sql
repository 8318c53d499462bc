-- Revert taskpool:_prune_policy_attempts from pg

-- Nothing to undo: deploy/_prune_policy_attempts.sql redefined _prune_policy_attempts as retention_core_pruners had left it.

BEGIN;
COMMIT;
