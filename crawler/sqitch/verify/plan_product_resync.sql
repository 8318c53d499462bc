-- Verify taskpool_crawler:plan_product_resync on pg

BEGIN;

SELECT has_function_privilege('plan_product_resync(task_schedules, date)', 'execute');

ROLLBACK;
