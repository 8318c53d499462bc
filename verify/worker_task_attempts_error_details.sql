-- Verify taskpool:worker_task_attempts_error_details on pg

BEGIN;

SELECT task_id, attempt, error_details
FROM worker_task_attempts
WHERE FALSE;

ROLLBACK;
