-- Verify taskpool:worker_task_attempts_error_data on pg

BEGIN;

SELECT task_id, attempt, error_data
FROM worker_task_attempts
WHERE FALSE;

SELECT 1/(format_type(atttypid, atttypmod) = 'jsonb')::int
FROM pg_catalog.pg_attribute
WHERE attrelid = 'worker_task_attempts'::regclass AND attname = 'error_data';

ROLLBACK;
