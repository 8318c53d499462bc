-- Revert taskpool:taskpool_schema_version from pg

BEGIN;

DROP FUNCTION taskpool_schema_version();

COMMIT;
