-- Revert taskpool:_retention_pruner from pg

-- Nothing to undo: deploy/_retention_pruner.sql redefined _retention_pruner as apply_retention had left it.

BEGIN;
COMMIT;
