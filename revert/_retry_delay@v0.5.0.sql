-- Revert taskpool:_retry_delay from pg

BEGIN;

DROP FUNCTION _retry_delay(text, integer);

COMMIT;
