-- Revert taskpool:retry_tasks from pg

BEGIN;

DROP FUNCTION retry_tasks(text, text, bigint, text, text, timestamptz, timestamptz, integer);

COMMIT;
