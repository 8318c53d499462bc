-- Deploy taskpool:v_active_workers to pg
-- requires: task_workers
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- v_active_workers
-- Health: registered workers seen in the last 2 minutes, with the task each holds (NULL: idle).
CREATE VIEW v_active_workers AS
SELECT w.worker_id, w.role, w.host, w.pid, w.started_at, w.last_seen_at,
       t.id AS task_id, t.status AS task_status, t.dispensary_id
FROM task_workers w
LEFT JOIN worker_tasks t ON t.worker_id = w.worker_id AND t.status IN ('claimed', 'running')
WHERE w.last_seen_at > taskpool_now() - interval '2 minutes';

COMMENT ON VIEW v_active_workers IS
    'Workers seen in the last 2 minutes (the window v_worker_capacity counts), busy or idle.';

COMMIT;
