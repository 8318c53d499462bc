-- Verify taskpool:task_roles_backoff_jitter on pg

BEGIN;

SELECT backoff_multiplier, backoff_jitter FROM task_roles WHERE false;
SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conrelid = 'task_roles'::regclass AND conname = 'task_roles_backoff_jitter_known';

ROLLBACK;
