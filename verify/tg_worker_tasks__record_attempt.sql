-- Verify taskpool:tg_worker_tasks__record_attempt on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_600_record_attempt';

ROLLBACK;
