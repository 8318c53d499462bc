-- Deploy taskpool:v_workers to pg
-- requires: task_workers
-- requires: task_roles
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- v_workers
-- Every registered worker, how long since it was last seen, whether it is live or silent, and the tasks it holds.
CREATE VIEW v_workers AS
-- A worker killed by SIGKILL, the OOM killer or a lost node never deregisters: its row stays,
-- with the tasks it held still claimed or running until the tick recovers them. Silent means
-- what it means for those tasks: nothing heard from the worker for longer than its role's
-- stale_threshold (a live worker heartbeats every 30 s by default, busy or idle).
SELECT w.worker_id, w.role, w.host, w.pid, w.started_at, w.last_seen_at,
       c.now - w.last_seen_at AS last_seen_age,
       r.stale_threshold,
       CASE WHEN w.last_seen_at < c.now - r.stale_threshold THEN 'silent' ELSE 'live' END AS liveness,
       coalesce(held.task_ids, '{}') AS task_ids
FROM task_workers w
JOIN task_roles r ON r.role = w.role
CROSS JOIN (SELECT taskpool_now() AS now) c
CROSS JOIN LATERAL (
    SELECT array_agg(t.id ORDER BY t.id) AS task_ids
    FROM worker_tasks t
    WHERE t.worker_id = w.worker_id AND t.status IN ('claimed', 'running')
) held;

COMMENT ON VIEW v_workers IS
    'Registered workers. liveness: silent when last_seen_at is older than the role''s stale_threshold '
    '(probably dead: deregister_worker(worker_id) removes the row), else live. task_ids: the tasks it '
    'holds (claimed or running), ascending; empty when idle.';

COMMIT;
