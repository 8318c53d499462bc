-- Revert taskpool:_check_repeated_call from pg

BEGIN;

DROP FUNCTION _check_repeated_call(bigint, text, integer, text);

COMMIT;
