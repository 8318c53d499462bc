-- Revert taskpool:tg_worker_tasks__limit_idle_transaction from pg

BEGIN;

DROP TRIGGER _300_limit_idle_transaction ON worker_tasks;
DROP FUNCTION tg_worker_tasks__limit_idle_transaction();

COMMIT;
