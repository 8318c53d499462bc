-- Revert taskpool:taskpool_metrics from pg

-- Nothing to undo: deploy/taskpool_metrics.sql redefined taskpool_metrics as taskpool_metrics_capacity_units had left it.

BEGIN;
COMMIT;
