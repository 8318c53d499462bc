-- Revert taskpool:diff_latest_payloads from pg

BEGIN;

DROP FUNCTION diff_latest_payloads(integer);

COMMIT;
