-- Revert taskpool:tg_worker_tasks__chain_follow_ups from pg

BEGIN;

DROP TRIGGER _700_chain_follow_ups ON worker_tasks;
DROP FUNCTION tg_worker_tasks__chain_follow_ups();

COMMIT;
