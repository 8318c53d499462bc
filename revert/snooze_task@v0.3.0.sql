-- Revert taskpool:snooze_task from pg

BEGIN;

DROP FUNCTION snooze_task(bigint, text, integer, timestamptz);

COMMIT;
