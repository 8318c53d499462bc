-- Verify taskpool:worker_tasks_parent_id_unenforced on pg

BEGIN;

SELECT 1/(NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conname = 'worker_tasks_parent_id_fkey'))::integer;

ROLLBACK;
