-- Revert taskpool:task_wake_requests from pg

BEGIN;

DROP TABLE task_wake_requests;
DROP FUNCTION tg_task_wake_requests__wake_at_commit();

COMMIT;
