-- Verify taskpool:claim_token on pg

BEGIN;

SELECT claim_token FROM worker_tasks WHERE false;
SELECT claim_token FROM worker_task_attempts WHERE false;
SELECT 1/COUNT(*) FROM pg_catalog.pg_attribute
WHERE attrelid = 'worker_tasks'::regclass AND attname = 'claim_token'
  AND atttypid = 'uuid'::regtype AND NOT attisdropped;

ROLLBACK;
