-- Revert taskpool:apply_menu_payload from pg

BEGIN;

DROP FUNCTION apply_menu_payload(bigint, jsonb);

COMMIT;
