-- Verify taskpool_crawler:resync_every_4_hours on pg

BEGIN;

SELECT 1 / count(*) FROM task_schedules WHERE name = 'resync_every_4_hours';

ROLLBACK;
