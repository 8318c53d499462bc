-- Revert taskpool:mark_payload_corrupt from pg

BEGIN;

DROP FUNCTION mark_payload_corrupt(bigint, text);

COMMIT;
