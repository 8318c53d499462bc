-- Verify taskpool:worker_tasks_with_history on pg

BEGIN;

SELECT id, status, completed_at, in_history FROM worker_tasks_with_history WHERE false;

ROLLBACK;
