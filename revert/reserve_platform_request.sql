-- Revert taskpool:reserve_platform_request from pg

BEGIN;

DROP FUNCTION reserve_platform_request(text);

COMMIT;
