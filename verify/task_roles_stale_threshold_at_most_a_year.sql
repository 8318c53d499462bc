-- Verify taskpool:task_roles_stale_threshold_at_most_a_year on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conrelid = 'task_roles'::regclass AND conname = 'task_roles_stale_threshold_at_most_a_year' AND convalidated;

ROLLBACK;
