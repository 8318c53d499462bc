-- Verify taskpool:retention_policies on pg

BEGIN;

SELECT name, pruner, keep, statuses, enabled, batch_size, description, last_run_at, last_pruned,
       pruned_total, last_error
FROM retention_policies
WHERE false;

ROLLBACK;
