-- Revert taskpool:platform_governance_requests_total from pg

BEGIN;

ALTER TABLE platform_governance DROP COLUMN requests_total;

COMMIT;
