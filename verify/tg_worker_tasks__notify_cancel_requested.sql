-- Verify taskpool:tg_worker_tasks__notify_cancel_requested on pg

BEGIN;

SELECT 'tg_worker_tasks__notify_cancel_requested()'::regprocedure;

ROLLBACK;
