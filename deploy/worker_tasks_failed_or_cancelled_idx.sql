-- Deploy taskpool:worker_tasks_failed_or_cancelled_idx to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- Only a task that fails for good or is cancelled writes an entry: a claim, a heartbeat or a
-- completion does not, so the hot path pays nothing for it (a heartbeat stays a HOT update).
CREATE INDEX worker_tasks_failed_or_cancelled_idx
    ON worker_tasks (role)
    WHERE status IN ('failed', 'cancelled');
COMMENT ON INDEX worker_tasks_failed_or_cancelled_idx IS
    'Serves taskpool_metrics: failed and cancelled tasks by role, counted without reading the completed ones.';

COMMIT;
