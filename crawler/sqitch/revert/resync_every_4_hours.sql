-- Revert taskpool_crawler:resync_every_4_hours from pg

BEGIN;

DELETE FROM task_schedules WHERE name = 'resync_every_4_hours';
UPDATE task_schedules SET enabled = true WHERE name = 'daily_resync_plan';

COMMIT;
