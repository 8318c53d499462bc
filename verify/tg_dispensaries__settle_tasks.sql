-- Verify taskpool:tg_dispensaries__settle_tasks on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_trigger
WHERE tgrelid = 'dispensaries'::regclass AND tgname = '_100_settle_tasks';

ROLLBACK;
