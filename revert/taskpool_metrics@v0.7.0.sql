-- Revert taskpool:taskpool_metrics from pg

BEGIN;

DROP FUNCTION taskpool_metrics();

COMMIT;
