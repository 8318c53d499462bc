-- Revert taskpool_crawler:crawler_schedules from pg

BEGIN;

DELETE FROM task_schedules
WHERE name IN ('store_discovery', 'daily_resync_plan', 'analytics_refresh');
COMMIT;
