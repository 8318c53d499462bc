-- Deploy taskpool:v_stuck_tasks to pg
-- requires: worker_tasks
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- v_stuck_tasks
-- Health: claimed or running tasks silent past their role's stale threshold, which the next tick recovers.
CREATE VIEW v_stuck_tasks AS
SELECT t.id, t.role, t.dispensary_id, t.status, t.worker_id, t.attempt, t.claimed_at,
       t.last_heartbeat_at, taskpool_now() - t.last_heartbeat_at AS silent_for, r.stale_threshold
FROM worker_tasks t
JOIN task_roles r ON r.role = t.role
WHERE t.status IN ('claimed', 'running')
  AND t.last_heartbeat_at < taskpool_now() - r.stale_threshold;

COMMENT ON VIEW v_stuck_tasks IS
    'Tasks whose worker went silent. Rows that stay here across ticks mean the tick is not running.';

COMMIT;
