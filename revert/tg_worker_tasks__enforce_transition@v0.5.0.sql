-- Revert taskpool:tg_worker_tasks__enforce_transition from pg

BEGIN;

DROP TRIGGER _500_enforce_transition ON worker_tasks;
DROP FUNCTION tg_worker_tasks__enforce_transition();

COMMIT;
