-- Revert taskpool:enqueue_task from pg

BEGIN;

DROP FUNCTION enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text);

COMMIT;
