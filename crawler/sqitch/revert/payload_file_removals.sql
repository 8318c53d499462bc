-- Revert taskpool_crawler:payload_file_removals from pg
-- A role with tasks cannot go (worker_tasks references it): revert the crawler's tasks first.

BEGIN;

DELETE FROM task_roles WHERE role = 'payload_file_removal';
DROP TABLE payload_file_removals;

COMMIT;
