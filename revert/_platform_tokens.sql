-- Revert taskpool:_platform_tokens from pg

BEGIN;

DROP FUNCTION _platform_tokens(double precision, timestamptz, integer, timestamptz);

COMMIT;
