-- Revert taskpool:generate_resync_tasks from pg

BEGIN;

DROP FUNCTION generate_resync_tasks(integer, date, text, integer);

COMMIT;
