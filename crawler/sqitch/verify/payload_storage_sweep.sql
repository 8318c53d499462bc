-- Verify taskpool_crawler:payload_storage_sweep on pg

BEGIN;

SELECT 1 / count(*) FROM task_roles WHERE role = 'payload_storage_sweep';
SELECT 1 / count(*) FROM task_schedules WHERE name = 'payload_storage_sweep' AND role = 'payload_storage_sweep';

ROLLBACK;
