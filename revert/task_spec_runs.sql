-- Revert taskpool:task_spec_runs from pg

BEGIN;

DROP FUNCTION task_spec_runs(text, integer, jsonb, integer);

COMMIT;
