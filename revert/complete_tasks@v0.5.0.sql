-- Revert taskpool:complete_tasks from pg

BEGIN;

DROP FUNCTION complete_tasks(text, jsonb);

COMMIT;
