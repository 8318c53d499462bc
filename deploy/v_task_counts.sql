-- Deploy taskpool:v_task_counts to pg
-- requires: v_task_counts@v0.8.0
-- requires: worker_task_history

BEGIN;
SET client_min_messages = 'warning';

-- v_task_counts
-- Health: how many tasks each role has in each status (roles and statuses with none are absent).
-- worker_tasks is counted row by row (live work and the last minutes' finished tasks); the history
-- by its per-day counts (task_history_counts), which its writers keep: never its rows.
CREATE OR REPLACE VIEW v_task_counts AS
SELECT c.role, c.status, sum(c.tasks)::bigint AS tasks
FROM (SELECT t.role, t.status, count(*) AS tasks
      FROM worker_tasks t
      GROUP BY t.role, t.status
      UNION ALL
      SELECT h.role, h.status, sum(h.tasks)
      FROM task_history_counts h
      GROUP BY h.role, h.status) c
GROUP BY c.role, c.status
HAVING sum(c.tasks) > 0;

COMMENT ON VIEW v_task_counts IS
    'Tasks per role and status, in worker_tasks and in the history (worker_task_history, by its '
    'counts in task_history_counts): fast whatever the history holds.';

COMMIT;
