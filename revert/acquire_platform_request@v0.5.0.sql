-- Revert taskpool:acquire_platform_request from pg

BEGIN;

DROP FUNCTION acquire_platform_request(text);

COMMIT;
