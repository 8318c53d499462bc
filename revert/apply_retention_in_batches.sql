-- Revert taskpool:apply_retention_in_batches from pg

-- Nothing to undo: deploy/apply_retention_in_batches.sql redefined apply_retention_in_batches as apply_retention had left it.

BEGIN;
COMMIT;
