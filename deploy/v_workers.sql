-- Deploy taskpool:v_workers to pg
-- requires: v_workers@v0.5.0
-- requires: task_worker_roles

BEGIN;
SET client_min_messages = 'warning';

-- A worker killed by SIGKILL, the OOM killer or a lost node never deregisters: its row stays,
-- with the tasks it held still claimed or running until the tick recovers them. Silent means
-- what it means for those tasks: nothing heard from the worker for longer than its role's
-- stale_threshold (a live worker heartbeats every 30 s by default, busy or idle).
-- roles: every role the worker serves. Its stale_threshold is the shortest of theirs: stale
-- recovery of that role takes back its tasks first.
CREATE OR REPLACE VIEW v_workers AS
SELECT w.worker_id, w.role, w.host, w.pid, w.started_at, w.last_seen_at,
       c.now - w.last_seen_at AS last_seen_age,
       served.stale_threshold,
       CASE WHEN w.last_seen_at < c.now - served.stale_threshold THEN 'silent' ELSE 'live' END AS liveness,
       coalesce(held.task_ids, '{}') AS task_ids,
       served.roles
FROM task_workers w
CROSS JOIN (SELECT taskpool_now() AS now) c
CROSS JOIN LATERAL (
    SELECT array_agg(r.role ORDER BY r.role = w.role DESC, r.role) AS roles,
           min(r.stale_threshold) AS stale_threshold
    FROM task_roles r
    WHERE r.role = w.role
       OR r.role IN (SELECT wr.role FROM task_worker_roles wr WHERE wr.worker_id = w.worker_id)
) served
CROSS JOIN LATERAL (
    SELECT array_agg(t.id ORDER BY t.id) AS task_ids
    FROM worker_tasks t
    WHERE t.worker_id = w.worker_id AND t.status IN ('claimed', 'running')
) held;

COMMENT ON VIEW v_workers IS
    'Registered workers. role: the first role it serves; roles: all of them (the first first). '
    'liveness: silent when last_seen_at is older than the shortest stale_threshold of its roles '
    '(probably dead: deregister_worker(worker_id) removes the row), else live. task_ids: the tasks it '
    'holds (claimed or running), ascending; empty when idle.';

COMMIT;
