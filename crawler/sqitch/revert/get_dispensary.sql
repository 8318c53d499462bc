-- Revert taskpool:get_dispensary from pg

BEGIN;

DROP FUNCTION get_dispensary(integer);

COMMIT;
