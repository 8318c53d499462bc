-- Revert taskpool:tg_worker_tasks__record_attempt from pg

BEGIN;

DROP TRIGGER _600_record_attempt ON worker_tasks;
DROP FUNCTION tg_worker_tasks__record_attempt();

COMMIT;
