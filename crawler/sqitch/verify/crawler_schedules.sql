-- Verify taskpool_crawler:crawler_schedules on pg

BEGIN;

-- The rows may have been changed or removed by an operator since: check only what they need.
SELECT name, role, kind FROM task_schedules WHERE FALSE;

ROLLBACK;
