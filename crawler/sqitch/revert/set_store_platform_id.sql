-- Revert taskpool:set_store_platform_id from pg

BEGIN;

DROP FUNCTION set_store_platform_id(integer, text);

COMMIT;
