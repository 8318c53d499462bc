-- Verify taskpool:task_result_waits on pg

BEGIN;

SELECT task_id, backend_pid, registered_at FROM task_result_waits WHERE false;
SELECT waited FROM worker_tasks WHERE false;

ROLLBACK;
