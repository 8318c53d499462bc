-- Deploy taskpool:v_task_counts to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- v_task_counts
-- Health: how many tasks each role has in each status (roles and statuses with none are absent).
CREATE VIEW v_task_counts AS
SELECT t.role, t.status, count(*) AS tasks
FROM worker_tasks t
GROUP BY t.role, t.status;

COMMENT ON VIEW v_task_counts IS 'Tasks per role and status. Reads the whole table: prune finished tasks.';

COMMIT;
