-- Revert taskpool_crawler:plan_product_resync from pg

BEGIN;

DROP FUNCTION plan_product_resync(task_schedules, date);

COMMIT;
