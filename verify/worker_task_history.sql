-- Verify taskpool:worker_task_history on pg

BEGIN;

SELECT id, role, status, completed_at, spec_hash FROM worker_task_history WHERE false;
SELECT task_id, attempt, task_completed_at, task_status FROM worker_task_attempt_history WHERE false;
SELECT day, status, role, tasks FROM task_history_counts WHERE false;
SELECT 1/(SELECT count(*)::integer FROM pg_partitioned_table p WHERE p.partrelid = 'worker_task_history'::regclass);

ROLLBACK;
