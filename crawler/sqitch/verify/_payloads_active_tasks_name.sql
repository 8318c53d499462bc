-- Verify taskpool_crawler:_payloads_active_tasks_name on pg

BEGIN;

SELECT '_payloads_active_tasks_name()'::regprocedure;

ROLLBACK;
