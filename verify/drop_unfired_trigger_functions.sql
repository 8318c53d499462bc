-- Verify taskpool:drop_unfired_trigger_functions on pg

BEGIN;

SELECT 1 / (to_regprocedure('tg_worker_tasks__touch_updated_at()') IS NULL)::integer;
SELECT 1 / (to_regprocedure('tg_worker_tasks__limit_idle_transaction()') IS NULL)::integer;
SELECT 1 / (to_regprocedure('tg_worker_tasks__record_attempt()') IS NULL)::integer;
SELECT 1 / (to_regprocedure('tg_worker_tasks__chain_follow_ups()') IS NULL)::integer;
SELECT 1 / (to_regprocedure('tg_worker_tasks__notify_requeued()') IS NULL)::integer;
SELECT 1 / (to_regprocedure('tg_worker_tasks__wake_for_freed_store()') IS NULL)::integer;

ROLLBACK;
