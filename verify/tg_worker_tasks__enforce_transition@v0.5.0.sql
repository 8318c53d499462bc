-- Verify taskpool:tg_worker_tasks__enforce_transition on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_500_enforce_transition';

ROLLBACK;
