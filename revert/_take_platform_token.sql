-- Revert taskpool:_take_platform_token from pg

BEGIN;

DROP FUNCTION _take_platform_token(text, boolean);

COMMIT;
