-- Revert taskpool:diff_payloads from pg

BEGIN;

DROP FUNCTION diff_payloads(bigint, bigint);

COMMIT;
