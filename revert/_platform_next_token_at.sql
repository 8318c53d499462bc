-- Revert taskpool:_platform_next_token_at from pg

BEGIN;

DROP FUNCTION _platform_next_token_at(double precision, timestamptz, integer);

COMMIT;
