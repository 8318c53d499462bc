-- Revert taskpool:task_spec_hash from pg

BEGIN;

DROP FUNCTION task_spec_hash(text, integer, jsonb);

COMMIT;
