-- Revert taskpool_crawler:payload_storage_sweep from pg
-- A role with tasks cannot go (worker_tasks references it): revert the crawler's tasks first.

BEGIN;

DELETE FROM task_schedules WHERE name = 'payload_storage_sweep';
DELETE FROM task_roles WHERE role = 'payload_storage_sweep';

COMMIT;
