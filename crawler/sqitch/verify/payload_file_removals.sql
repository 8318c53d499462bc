-- Verify taskpool_crawler:payload_file_removals on pg

BEGIN;

SELECT storage_path, payload_id, queued_at FROM payload_file_removals WHERE false;
SELECT 1/count(*) FROM task_roles WHERE role = 'payload_file_removal';

ROLLBACK;
