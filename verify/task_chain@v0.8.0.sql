-- Verify taskpool:task_chain on pg

BEGIN;

SELECT id, parent_id, depth, role, status, dispensary_id, created_at, completed_at, error_message
FROM task_chain(0);

ROLLBACK;
