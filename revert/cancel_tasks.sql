-- Revert taskpool:cancel_tasks from pg

BEGIN;

DROP FUNCTION cancel_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer);

COMMIT;
