-- Revert taskpool:_check_platform from pg

BEGIN;

DROP FUNCTION _check_platform(text);

COMMIT;
