-- Verify taskpool:tg_worker_tasks__chain_follow_ups on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'worker_tasks'::regclass AND tgname = '_700_chain_follow_ups';

ROLLBACK;
