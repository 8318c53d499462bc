-- Verify taskpool:tg_worker_tasks__after_status_change on pg

BEGIN;

SELECT 'tg_worker_tasks__after_status_change()'::regprocedure;

ROLLBACK;
