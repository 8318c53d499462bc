-- Verify taskpool:tg_worker_tasks__release_concurrency_slots on pg

BEGIN;

SELECT 1 / count(*)::integer FROM pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_900_release_concurrency_slots';

ROLLBACK;
