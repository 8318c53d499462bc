-- Revert taskpool:enqueue_tasks from pg

BEGIN;

DROP FUNCTION enqueue_tasks(jsonb);

COMMIT;
