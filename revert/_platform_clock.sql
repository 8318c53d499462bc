-- Revert taskpool:_platform_clock from pg

BEGIN;

DROP FUNCTION _platform_clock();

COMMIT;
