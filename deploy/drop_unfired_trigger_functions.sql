-- Deploy taskpool:drop_unfired_trigger_functions to pg
-- requires: tg_worker_tasks__enforce_transition
-- requires: tg_worker_tasks__after_status_change

-- The trigger functions no trigger fires: tg_worker_tasks__enforce_transition and
-- tg_worker_tasks__after_status_change took over their work and their triggers were dropped, but
-- the functions stayed. scripts/check-sql-homes fails on a trigger function no trigger fires.

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION tg_worker_tasks__touch_updated_at();
DROP FUNCTION tg_worker_tasks__limit_idle_transaction();
DROP FUNCTION tg_worker_tasks__record_attempt();
DROP FUNCTION tg_worker_tasks__chain_follow_ups();
DROP FUNCTION tg_worker_tasks__notify_requeued();
DROP FUNCTION tg_worker_tasks__wake_for_freed_store();

COMMIT;
