-- Verify taskpool:schema_version_0_7_0 on pg

BEGIN;

SELECT 1 / (taskpool_schema_version() = '0.7.0')::integer;

ROLLBACK;
