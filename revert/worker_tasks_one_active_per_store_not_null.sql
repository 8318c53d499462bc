-- Revert taskpool:worker_tasks_one_active_per_store_not_null from pg

BEGIN;
SET client_min_messages = 'warning';

DROP INDEX worker_tasks_one_active_per_dispensary_idx;
CREATE UNIQUE INDEX worker_tasks_one_active_per_dispensary_idx
    ON worker_tasks (dispensary_id)
    WHERE status IN ('claimed', 'running');
COMMENT ON INDEX worker_tasks_one_active_per_dispensary_idx IS
    'Rule: at most one claimed or running task per store; also the claim''s busy-store probe.';

COMMIT;
