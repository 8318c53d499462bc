-- Revert taskpool:refresh_analytics from pg

BEGIN;

DROP FUNCTION refresh_analytics();

COMMIT;
