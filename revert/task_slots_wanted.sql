-- Revert taskpool:task_slots_wanted from pg

BEGIN;

DROP FUNCTION task_slots_wanted(text, numeric);

COMMIT;
