-- Revert taskpool:resync_plan_entries from pg

BEGIN;

DROP TABLE resync_plan_entries;

COMMIT;
